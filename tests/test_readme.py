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


def test_the_readme_picture_is_of_todays_quickstart_and_page():
    """docs/evaluate-page.png records what it was made from; any change to the quickstart or to the page's
    code since then makes it stale, and the message says how to make it again."""
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("screenshot", REPO / "scripts" / "screenshot.py")
    screenshot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(screenshot)
    recorded = json.loads((REPO / "docs" / "evaluate-page.json").read_text(encoding="utf-8"))["made_from"]
    now = screenshot.inputs()
    changed = sorted(set(now) ^ set(recorded) | {f for f in now if recorded.get(f) != now[f]})
    assert not changed, f"docs/evaluate-page.png is older than {changed}: run `python scripts/screenshot.py`"
    assert "![The Evaluate page of a quickstart run](docs/evaluate-page.png)" in (REPO / "README.md").read_text()


def test_the_readme_python_example_runs_as_written(tmp_path, monkeypatch):
    """The "From Python" example, executed as it stands in the README, from a folder holding the quickstart."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    start = readme.index("## From Python")
    (code,) = re.findall(r"```python\n(.+?)\n```", readme[start : readme.index("\n## ", start + 1)], re.DOTALL)
    import shutil

    shutil.copytree(REPO / "configs" / "quickstart", tmp_path / "configs" / "quickstart")
    monkeypatch.chdir(tmp_path)
    lines = code.splitlines()
    namespace: dict = {}
    exec(compile("\n".join(lines[:-1]), "README.md", "exec"), namespace)
    frame = eval(lines[-1], namespace)
    report = namespace["report"]
    assert set(frame.index) == {"mine.retriever", "local.keyword", "local.dense.minilm"}
    assert frame.loc["mine.retriever", "ndcg@10"] > frame.loc["local.keyword", "ndcg@10"] - 0.2
    assert report.picks.finds_the_most in frame.index
    assert (tmp_path / ".vx" / "embeddings.db").is_file()


def test_the_readme_is_a_first_read_and_the_manual_is_the_docs_site():
    """The README stays what a person reads first (under 12 KB); the manual is docs/, whose start page gives
    the README's two commands word for word."""
    readme = (REPO / "README.md").read_bytes()
    assert len(readme) < 12 * 1024
    start = (REPO / "docs" / "start.md").read_text(encoding="utf-8")
    section = start[start.index("## Start") : start.index("\n## ", start.index("## Start") + 1)]
    assert re.findall(r"```bash\n(.+?)\n```", section) == _commands()


def test_the_docs_site_builds_with_warnings_as_errors(tmp_path):
    """mkdocs.yml's site, its reference pages generated from the code (scripts/docs_hooks.py), built --strict:
    a broken link or a page left out of the navigation fails it."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    argv = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, env=env, check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    registry = (tmp_path / "site" / "reference" / "generated" / "measure-registry" / "index.html").read_text()
    assert "The measure registry (generated)" in registry and "ndcg_gains" in registry  # from the registry itself
    cli = (tmp_path / "site" / "reference" / "generated" / "cli" / "index.html").read_text()
    assert "--trec-format" in cli and "vx-eval eval" in cli
