"""The README's two commands stay true: CI runs the README's test command verbatim."""

from __future__ import annotations

import re

from .conftest import REPO


def _commands() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    start = readme.index("## Start")
    return re.findall(r"```bash\n(.+?)\n```", readme[start : readme.index("\n## ", start + 1)])


def test_the_readme_starts_with_two_commands_and_ci_runs_the_test_one():
    run_command, test_command = _commands()
    assert run_command.endswith("vx-eval run configs/quickstart.yaml")
    assert test_command.endswith("pytest")
    assert test_command in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert (REPO / "configs" / "quickstart.yaml").is_file()
