"""docs/how-to/own-collection.md stays true: its commands run as written on a BEIR folder of 95 documents
(tests/data/help-centre-beir) and print the lines it shows."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO

HOWTO = REPO / "docs" / "how-to" / "own-collection.md"


def _steps() -> tuple[str, list[tuple[str, list[str]]]]:
    """The config it shows, and each command with the lines it says the command prints."""
    text = HOWTO.read_text(encoding="utf-8")
    (config,) = re.findall(r'```yaml title="my-collection.yaml"\n(.+?)\n```', text, re.DOTALL)
    steps = []
    for command, shown in re.findall(r"```bash\n(.+?)\n```\n(?:\n[^`]*?)?(?:```text\n(.+?)\n```)?", text, re.DOTALL):
        steps.append((command, shown.splitlines() if shown else []))
    return config, steps


def test_the_howto_shows_a_check_a_run_and_an_import_each_with_what_it_prints():
    _, steps = _steps()
    assert [c.split()[1:] for c, _ in steps] == [
        ["golden", "check", "my-collection", "--config", "my-collection.yaml"],
        ["run", "my-collection.yaml", "--dry-run"],
        ["run", "my-collection.yaml"],
        ["golden", "import", "--from", "beir", "my-collection", "--out", "golden.jsonl"],
    ]
    assert [bool(lines) for _, lines in steps] == [True, True, False, True]


@pytest.mark.slow
def test_the_howto_commands_run_as_written_and_print_what_it_shows(tmp_path):
    config, steps = _steps()
    shutil.copytree(REPO / "tests" / "data" / "help-centre-beir", tmp_path / "my-collection")
    (tmp_path / "my-collection.yaml").write_text(config + "\n", encoding="utf-8")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "COLUMNS": "200"}
    for command, shown in steps:
        done = subprocess.run(command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        said = " ".join((done.stdout + done.stderr).split())
        assert done.returncode == 0, (command, said)
        for line in shown:
            assert " ".join(line.split()) in said, (command, line, said)
        if "golden check" in command:
            assert not (tmp_path / ".vx").exists()  # the check indexed and embedded nothing
        if "--dry-run" in command:
            assert "plan: embed 95 chunks with MiniLM: about" in said and "measured here on" in said
            assert not (tmp_path / ".vx" / "my-collection.db").exists() and not (tmp_path / "runs").exists()
    # the run kept its report; the import wrote every judged question
    assert list((tmp_path / "runs").rglob("report.json"))
    assert (tmp_path / "golden.jsonl").read_text().count("\n") == 42
