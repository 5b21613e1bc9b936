"""A third party's engine, built and installed from a temp folder, is discovered and run with no core change."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PLUGIN = '''
"""A toy engine: counts the question's words in each document; registered through the entry point."""

from vx_eval import hookimpl
from vx_eval.core.engine import Engine, EngineOptions, Hit
from vx_eval.core.errors import EngineError


class ToyOptions(EngineOptions):
    boost_title: bool = False


class ToyHandle:
    def __init__(self, docs):
        self.docs = {d.id: d for d in docs}

    def capabilities(self):
        return frozenset({"keyword"})

    def describe(self):
        return {"collection": "toy", "documents": len(self.docs), "models": [], "version": "toy 0.1"}

    def search(self, query):
        if query.capability != "keyword":
            raise EngineError(f"the toy engine has no capability '{query.capability}'")
        words = set(query.text.lower().split())
        scored = [(len(words & set(d.text.lower().split())), d.id) for d in self.docs.values()]
        return [Hit(doc_id, float(s)) for s, doc_id in sorted(scored, reverse=True)[: query.k] if s]

    def missing(self, ids):
        return set(ids) - set(self.docs)

    def document_ids(self):
        return sorted(self.docs)

    def documents(self, ids):
        return [self.docs[i] for i in ids if i in self.docs]

    def close(self):
        pass


class ToyEngine(Engine):
    name = "toy"
    Options = ToyOptions

    def open(self, options, context):
        if context.corpus is None:
            raise EngineError("the toy engine holds nothing until the config declares a corpus")
        return ToyHandle(list(context.corpus))


@hookimpl
def vx_eval_register_engines(register):
    register.add(ToyEngine)
'''

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
    (root / "pkg" / "vx_eval_toy.py").write_text(textwrap.dedent(PLUGIN))
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
            {"name": "Toy Engine", "engine": "toy", "options": {"boost_title": True}},
        ]
    )
    done = vx_eval(toy_site, "run", str(config), "--json", cwd=project.root)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    toy = next(s for s in report["setups"] if s["engine"] == "toy")
    assert toy["key"] == "toy-engine.keyword" and toy["error"] is None  # the built-in keyword setup composes
    assert toy["summary"]["found@10"] > 0
    assert report["targets"]["Toy Engine"]["version"] == "toy 0.1"
    assert {"key": "local.keyword", "change": "the same search on Local"} in toy["neighbours"]


def test_the_third_party_engine_validates_its_own_options(toy_site, project):
    config = project.write_config(targets=[{"name": "Toy", "engine": "toy", "options": {"boost_titel": True}}])
    done = vx_eval(toy_site, "run", str(config), cwd=project.root)
    assert done.returncode == 2
    assert "targets[0].options.boost_titel: unknown key; did you mean 'boost_title'?" in done.stderr


CONFORMANCE = """
from vx_eval.testing.conformance import EngineConformance


class TestToy(EngineConformance):
    engine = "toy"
    options = {"boost_title": True}
    absent_options = {}
    same_ranking = ()  # word counting is no method the embedded engine has
"""


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
    assert "10 passed" in done.stdout and "skipped" not in done.stdout  # no ranking check: nothing to compare
