"""What the server's tests share: the people the server knows, and Debian's headless Chromium (driven by
Playwright) with a fresh tab per test that fails the test when the page's script fails."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from vx_eval.serve.auth import Users
from vx_eval.testing.browser import FLAGS, chromium


@pytest.fixture(scope="session")
def _people_once(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    folder = tmp_path_factory.mktemp("people")
    users = Users(folder / "users.json")
    users.add_person("ada", "ada-password", "admin")
    users.add_person("rita", "rita-password", "reader")
    keys = {"ada": users.add_key("ada"), "rita": users.add_key("rita")}
    return folder / "users.json", keys


@pytest.fixture
def people(_people_once, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """Each test its own copy of the users file: a signout or a new password ends the person's keys."""
    made, keys = _people_once
    mine = tmp_path_factory.mktemp("people") / "users.json"
    shutil.copy(made, mine)
    return mine, dict(keys)


@pytest.fixture(scope="module")
def browser() -> Iterator:
    found = chromium()
    if found is None:
        pytest.fail("the browser tests need Debian's chromium: apt-get install -y chromium (CI installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium_browser = p.chromium.launch(executable_path=str(found), args=FLAGS)
        yield chromium_browser
        chromium_browser.close()


@pytest.fixture
def page(browser, tmp_path):
    context = browser.new_context(viewport={"width": 1100, "height": 900}, accept_downloads=True)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    yield tab
    context.close()
    assert not errors, f"the page's script failed: {errors}"
