"""What the server's tests share: the people the server knows."""

from __future__ import annotations

from pathlib import Path

import pytest

from vx_eval.serve.auth import Users


@pytest.fixture(scope="session")
def people(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    folder = tmp_path_factory.mktemp("people")
    users = Users(folder / "users.json")
    users.add_person("ada", "ada-password", "admin")
    users.add_person("rita", "rita-password", "reader")
    keys = {"ada": users.add_key("ada"), "rita": users.add_key("rita")}
    return folder / "users.json", keys
