"""A third party's engine, built and installed from a temp folder, is discovered and run with no core change."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def guide_blocks() -> list[str]:
    """The Python blocks of the plugin guide (docs/how-to/plugins.md): the engine a stranger would write, then
    its tests."""
    guide = (REPO / "docs" / "how-to" / "plugins.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.+?)\n```", guide, re.S)


PLUGIN = guide_blocks()[0]  # the guide's engine, installed and run as written: it is what we promise


PYPROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "vx-eval-toy"
version = "0.3.1"

[tool.setuptools]
py-modules = ["vx_eval_toy"]

[project.entry-points.vx_eval]
toy = "vx_eval_toy"
"""


@pytest.fixture(scope="module")
def toy_site(tmp_path_factory) -> Path:
    """The toy plugin package built from a temp folder and installed into its own site folder."""
    root = tmp_path_factory.mktemp("toy")
    (root / "pkg").mkdir()
    (root / "pkg" / "pyproject.toml").write_text(PYPROJECT)
    (root / "pkg" / "vx_eval_toy.py").write_text(PLUGIN)
    site = root / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(root / "pkg"),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return site


def vx_eval(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "vx_eval", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_plugin_is_listed_with_its_package_and_version(toy_site, tmp_path):
    done = vx_eval(toy_site, "plugins", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert {"sqlite", "toy"} <= set(listing["roles"]["engines"])
    toy = next(p for p in listing["plugins"] if p["name"] == "toy")
    assert (toy["package"], toy["version"], toy["module"]) == ("vx-eval-toy", "0.3.1", "vx_eval_toy")


def test_vx_eval_run_discovers_and_runs_the_third_party_engine(toy_site, project):
    config = project.write_config(
        targets=[
            {"name": "Local", "engine": "sqlite", "options": {"path": ".vx/tiny.db", "dense_models": []}},
            {"name": "Toy Engine", "engine": "toy", "options": {"dense_models": []}},
        ]
    )
    done = vx_eval(toy_site, "run", str(config), "--json", cwd=project.root)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    toy = next(s for s in report["setups"] if s["engine"] == "toy")
    assert toy["key"] == "toy-engine.keyword" and toy["error"] is None  # the built-in keyword setup composes
    assert toy["summary"]["found@10"] > 0
    assert report["targets"]["Toy Engine"]["collection"] == "toy"
    assert {"key": "local.keyword", "change": "the same search on Local"} in toy["neighbours"]


def test_the_third_party_engine_validates_its_own_options(toy_site, project):
    config = project.write_config(targets=[{"name": "Toy", "engine": "toy", "options": {"rerankr": "x"}}])
    done = vx_eval(toy_site, "run", str(config), cwd=project.root)
    assert done.returncode == 2
    assert "targets[0].options.rerankr: unknown key; did you mean 'reranker'?" in done.stderr


CONFORMANCE = guide_blocks()[1]


@pytest.mark.slow
def test_the_third_party_engine_passes_the_conformance_suite(toy_site, tmp_path):
    """What a third party does: subclass the suite in their own tests and run pytest."""
    (tmp_path / "test_toy_conformance.py").write_text(CONFORMANCE)
    env = {**os.environ, "PYTHONPATH": str(toy_site)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "test_toy_conformance.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "11 passed" in done.stdout and "skipped" not in done.stdout


@pytest.mark.slow
def test_the_sdk_engine_offers_dense_fused_and_reranked_setups(toy_site, project):
    """Capabilities are all it takes: the shared setup providers compose dense, hybrid and reranked."""
    config = project.write_config(
        targets=[{"name": "Toy", "engine": "toy", "options": {"chunk_words": 0, "dense_models": ["minilm"]}}],
        models={"threads": 1, "scores": str(project / "scores.db")},
    )
    done = vx_eval(toy_site, "run", str(config), "--json", "--no-save", cwd=project.root)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    by_key = {s["key"]: s for s in report["setups"]}
    assert {"toy.keyword", "toy.dense.minilm", "toy.hybrid.minilm", "toy.hybrid_reranked.minilm"} <= set(by_key)
    reranked = by_key["toy.hybrid_reranked.minilm"]
    assert reranked["ranker"] == "ms-marco-minilm" and reranked["error"] is None
    assert all(s["summary"]["found@10"] > 0 for s in by_key.values())
