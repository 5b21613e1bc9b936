"""The grading page in a real browser (Debian's Chromium, driven by Playwright) against `vx-eval serve` started
as its own process: a rater grades 20 pairs by keyboard alone, a second rater grades 10 of them, their
weighted kappa is on the page, and the experiment's next run says on its page how many grades it rests on."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from vx_eval.core.config.experiment import load_config
from vx_eval.core.golden.human import grades_location, read_grades
from vx_eval.core.plugins import load_plugins
from vx_eval.core.stores import Stores
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment
from vx_eval.serve.auth import Users
from vx_eval.testing.processes import free_port, start_server

from ..conftest import quickstart_copy


@pytest.fixture(scope="module")
def served(tmp_path_factory, shared_cache) -> Iterator[dict]:
    folder = tmp_path_factory.mktemp("grading-browser")
    config = quickstart_copy(folder, shared_cache)
    plugins = load_plugins()
    run_experiment(load_config(config, plugins), plugins, RunOptions())
    users = Users(folder / "users.json")
    users.add_person("rita", "rita-password", "rater")
    users.add_person("ada", "ada-password", "admin")
    port = free_port()
    argv = [sys.executable, "-m", "vx_eval", "serve", "--config", config, "--users", folder / "users.json"]
    with start_server(
        [*argv, "--port", str(port)], port=port, what="vx-eval serve", cwd=folder, env=dict(os.environ)
    ) as server:
        yield {"url": server.url, "config": config, "folder": folder}


def _sign_in_and_grade(browser, url: str, name: str, grades: list[int], tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.goto(url + "/grade/quickstart")
    expect(tab.locator("#username")).to_be_visible()  # a person signs in first, and comes back here
    tab.fill("#username", name)
    tab.fill("#password", f"{name}-password")
    tab.press("#password", "Enter")
    expect(tab.locator("#rater")).to_have_text(name)
    seen = set()
    if name == "rita":  # s skips a pair: the next is shown, nothing is kept
        pair = tab.locator("#pair")
        expect(pair).to_be_visible()
        skipped = (pair.get_attribute("data-question"), pair.get_attribute("data-unit"))
        tab.keyboard.press("s")
        expect(pair).not_to_have_attribute("data-unit", skipped[1])
        expect(tab.locator("#yours")).to_have_text("0")
        seen.add(skipped)
    for number, grade in enumerate(grades, start=1):
        pair = tab.locator("#pair")
        expect(pair).to_be_visible()
        shown = (pair.get_attribute("data-question"), pair.get_attribute("data-unit"))
        assert shown not in seen  # a graded pair is never shown to the same rater again
        seen.add(shown)
        tab.keyboard.press(str(grade))  # the keyboard alone: no click
        expect(tab.locator("#yours")).to_have_text(str(number))
    tab.screenshot(path=str(tmp_path / f"grading-{name}.png"))
    context.close()
    assert not errors, f"the page's script failed: {errors}"


def test_two_raters_grade_by_keyboard_their_kappa_shows_and_the_next_run_rests_on_it(served, browser, page, tmp_path):
    first = [0, 1, 2, 3, 3, 2, 1, 0, 2, 3, 0, 1, 2, 2, 3, 1, 0, 0, 1, 2]
    _sign_in_and_grade(browser, served["url"], "rita", first, tmp_path)
    second = [0, 1, 2, 3, 2, 2, 1, 1, 2, 3]  # rita's first ten come first to a second rater
    _sign_in_and_grade(browser, served["url"], "ada", second, tmp_path)

    stores = Stores(load_plugins())
    experiment = load_config(served["config"], load_plugins())
    kept = read_grades(stores, grades_location(experiment.config.golden_source.path)).grades
    assert len(kept) == 30 and len({(g.question, g.unit) for g in kept}) == 20
    rita = {(g.question, g.unit): g.grade for g in kept if g.rater == "rita"}
    ada = {(g.question, g.unit): g.grade for g in kept if g.rater == "ada"}
    assert set(ada) <= set(rita)  # the second rater graded pairs the first had graded

    page.goto(served["url"] + "/login")
    page.fill("#username", "ada")
    page.fill("#password", "ada-password")
    page.press("#password", "Enter")
    page.goto(served["url"] + "/grade/quickstart")
    agreement = page.locator("#agreement")
    expect(agreement).to_contain_text("weighted kappa")
    from sklearn.metrics import cohen_kappa_score

    pairs = sorted(ada)
    kappa = cohen_kappa_score([rita[p] for p in pairs], [ada[p] for p in pairs], weights="quadratic")
    assert agreement.get_attribute("data-kappa") == f"{kappa:.2f}"
    page.screenshot(path=str(tmp_path / "grading-agreement.png"))

    plugins = load_plugins()
    report = run_experiment(load_config(served["config"], plugins), plugins, RunOptions()).report
    assert report.golden.human_grades == 20
    page.goto(served["url"] + "/")
    expect(page.locator("#human-grades")).to_have_text("20")
    expect(page.locator("#golden-line")).to_contain_text("20 grades people gave on the grading page")
