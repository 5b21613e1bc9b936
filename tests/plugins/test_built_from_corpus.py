"""What every engine that builds from the corpus shares (`plugins/engines/remote.py`: `ensure_built`,
`RemoteHandle`), through two embedded engines: built once, reused while the corpus and settings match,
built again (and said so) when one changes; an index that is not there refused in one line without a
corpus; capabilities by mode; `missing` against the document ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vx_eval.core.contracts.engine import HYBRID, KEYWORD, PASSAGES, OpenContext
from vx_eval.core.errors import EngineError
from vx_eval.core.golden.sources import FileCorpus
from vx_eval.core.models.loading import Models
from vx_eval.plugins.engines.chroma import ChromaEngine, ChromaOptions
from vx_eval.plugins.engines.lancedb import LanceEngine, LanceOptions
from vx_eval.testing.conformance import collection

from ..conftest import Recording

ENGINES = {"lancedb": (LanceEngine, LanceOptions), "chroma": (ChromaEngine, ChromaOptions)}


@pytest.fixture(scope="module")
def docs() -> list[dict]:
    return collection()[0][:8]


def corpus_of(docs: list[dict]) -> FileCorpus:
    return FileCorpus("".join(json.dumps(d) + "\n" for d in docs).encode(), "docs.jsonl")


def open_engine(name: str, tmp_path: Path, corpus, plugins, progress=None, **options):
    engine, model = ENGINES[name]
    opts = model.model_validate({"path": str(tmp_path / name), "cache": str(tmp_path / "emb.db"), **options})
    context = OpenContext("Here", tmp_path, corpus, progress or Recording(), Models(plugins.models))
    return engine().open(opts, context)


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_built_once_reused_while_nothing_changes_and_built_again_with_a_note_when_a_setting_does(
    name, tmp_path, docs, plugins
):
    first = Recording()
    open_engine(name, tmp_path, corpus_of(docs), plugins, first).close()
    assert any(s.startswith("Writing Here") for s in first.started) and not first.notes
    again = Recording()
    handle = open_engine(name, tmp_path, corpus_of(docs), plugins, again)
    assert not any(s.startswith("Writing") for s in again.started) and not again.notes
    assert handle.document_ids() == sorted(d["id"] for d in docs)
    assert handle.missing([docs[0]["id"], "nowhere-1"]) == {"nowhere-1"}
    handle.close()
    changed = Recording()
    open_engine(name, tmp_path, corpus_of(docs), plugins, changed, chunk_words=20, chunk_overlap=5).close()
    assert changed.notes == ["Here: the corpus or a setting changed; building again"]
    assert any(s.startswith("Writing") for s in changed.started)
    fewer = Recording()
    handle = open_engine(name, tmp_path, corpus_of(docs[:5]), plugins, fewer, chunk_words=20, chunk_overlap=5)
    assert fewer.notes and handle.missing([docs[6]["id"]]) == {docs[6]["id"]}
    handle.close()


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_an_index_that_is_not_there_is_refused_in_one_line_without_a_corpus(name, tmp_path, plugins):
    with pytest.raises(EngineError) as caught:
        open_engine(name, tmp_path, None, plugins)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("target Here: ")
    assert "'here'" in message and "the config declares no corpus; add `corpus:`" in message


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_capabilities_follow_the_mode(name, tmp_path, docs, plugins):
    hybrid = open_engine(name, tmp_path, corpus_of(docs), plugins)
    caps = hybrid.capabilities()
    assert {KEYWORD, PASSAGES, HYBRID, "dense:minilm", "reranker:ms-marco-minilm"} <= caps
    hybrid.close()
    dense = open_engine(name, tmp_path, corpus_of(docs), plugins, mode="dense")
    assert HYBRID not in dense.capabilities() and not any(c.startswith("reranker:") for c in dense.capabilities())
    assert {KEYWORD, PASSAGES, "dense:minilm"} <= dense.capabilities()
    dense.close()
