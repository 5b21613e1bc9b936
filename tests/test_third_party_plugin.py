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
"""A toy engine, written against `vx_eval.plugin` only: keyword by counting the question's words, dense by
exact cosine over the vectors every engine of a run shares; with passages and hybrid, the shared setup
providers add fused and cross-encoder-reranked setups."""

import numpy as np

from vx_eval.plugin import (
    DENSE_PREFIX,
    HYBRID,
    KEYWORD,
    PASSAGES,
    RERANKER_PREFIX,
    Document,
    Engine,
    EngineError,
    Hit,
    IndexOptions,
    TargetDescription,
    hookimpl,
    prepare,
)


class ToyOptions(IndexOptions):
    boost_title: bool = False
    reranker: str | None = "ms-marco-minilm"


class ToyHandle:
    def __init__(self, built, models, options):
        self.chunks, self.dense, self.models, self.options = built.chunks, built.dense, models, options
        self.docs = built.documents
        self.body = {c.chunk_id: c.body for c in self.chunks}

    def capabilities(self):
        caps = {KEYWORD, PASSAGES, HYBRID} | {DENSE_PREFIX + m for m in self.dense}
        if self.options.reranker:
            caps.add(RERANKER_PREFIX + self.options.reranker)
        return frozenset(caps)

    def describe(self):
        return TargetDescription(
            collection="toy", documents=len(self.docs), chunks=len(self.chunks), models=sorted(self.dense),
            version="toy 0.2",
        )

    def _hits(self, scores, k):
        order = np.lexsort((np.arange(len(scores)), -scores))[:k]
        return [
            Hit(self.chunks[i].doc_id, float(scores[i]), self.chunks[i].page, self.chunks[i].chunk_id)
            for i in order
            if scores[i] > 0 or not np.isclose(scores[i], 0)
        ]

    def search(self, query):
        if query.capability == KEYWORD:
            words = set(query.text.lower().split())
            scores = np.array([len(words & set(c.body.lower().split())) for c in self.chunks], dtype=float)
            return [h for h in self._hits(scores, query.k) if h.score > 0]
        model = query.capability.removeprefix(DENSE_PREFIX)
        if query.capability.startswith(DENSE_PREFIX) and model in self.dense:
            vector = self.models.dense(model).encode_queries([query.text])[0]
            return self._hits(self.dense[model] @ vector, query.k)
        raise EngineError(f"the toy engine has no capability '{query.capability}'")

    def passages(self, hits):
        return [self.body.get(h.chunk_id or "", "") for h in hits]

    def missing(self, ids):
        return set(ids) - set(self.docs)

    def document_ids(self):
        return sorted(self.docs)

    def documents(self, ids):
        return [Document(id=i, text=self.docs[i]["text"], title=self.docs[i]["title"]) for i in ids if i in self.docs]

    def close(self):
        pass


class ToyEngine(Engine):
    name = "toy"
    Options = ToyOptions

    def open(self, options, context):
        if context.corpus is None:
            raise EngineError("the toy engine holds nothing until the config declares a corpus")
        return ToyHandle(prepare(context.corpus, options, context), context.models, options)


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
            {"name": "Toy Engine", "engine": "toy", "options": {"boost_title": True, "dense_models": []}},
        ]
    )
    done = vx_eval(toy_site, "run", str(config), "--json", cwd=project.root)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    toy = next(s for s in report["setups"] if s["engine"] == "toy")
    assert toy["key"] == "toy-engine.keyword" and toy["error"] is None  # the built-in keyword setup composes
    assert toy["summary"]["found@10"] > 0
    assert report["targets"]["Toy Engine"]["version"] == "toy 0.2"
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
    options = {"boost_title": True, "chunk_words": 0, "dense_models": ["minilm"]}
    absent_options = {}
    same_ranking = ("dense.minilm",)  # exact cosine over the same vectors: the embedded engine's top 10
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
    assert "11 passed" in done.stdout and "skipped" not in done.stdout


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
