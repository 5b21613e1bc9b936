"""The embedded engine: indexing once, re-indexing on change, never half an index, keyword search, SciFact."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from vx_eval.core.config.experiment import load_config
from vx_eval.core.contracts.engine import KEYWORD, PASSAGES, Hit, OpenContext, Query
from vx_eval.core.corpus.text import chunk_words, query_terms
from vx_eval.core.errors import EngineError
from vx_eval.core.golden.sources import CorpusError, FileCorpus
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment
from vx_eval.plugins.engines.sqlite import SqliteEngine, SqliteOptions


class Notes:
    def __init__(self):
        self.notes, self.bars = [], []

    def start(self, description, total):
        self.bars.append(description)
        return lambda n: None

    def note(self, message):
        self.notes.append(message)


def docs_bytes(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


ROWS = [
    {"id": "a", "title": "Loans", "text": "defer loan payments after a wildfire"},
    {"id": "b", "text": "wire money abroad"},
    {"id": "long", "text": " ".join(f"w{i}" for i in range(25)) + " needle"},
    {"id": "report", "pages": ["intro page", "credit losses were low", "renewable electricity"]},
]


def open_index(tmp_path: Path, rows=ROWS, progress=None, **options):
    corpus = FileCorpus(docs_bytes(rows), "docs.jsonl") if rows is not None else None
    context = OpenContext("Local", tmp_path, corpus, progress or Notes())
    options.setdefault("dense_models", [])
    opts = SqliteOptions(path=tmp_path / "idx.db", chunk_words=10, chunk_overlap=2, **options)
    return SqliteEngine().open(opts, context)


def test_search_maps_chunks_back_to_documents_and_pages(tmp_path):
    handle = open_index(tmp_path)
    assert handle.capabilities() == {KEYWORD, PASSAGES}
    assert handle.passages([Hit("long", 1.0, chunk_id="long::0::2")])[0].endswith("needle")
    assert handle.describe()["documents"] == 4 and handle.describe()["chunks"] == 8
    top = handle.search(Query("where is the needle", 5))
    assert [h.doc_id for h in top] == ["long"] and top[0].chunk_id.startswith("long::0::")
    page = handle.search(Query("credit losses", 5))[0]
    assert (page.doc_id, page.page, page.unit) == ("report", 2, "report#page=2")
    assert handle.search(Query("?!", 5)) == []
    assert [h.doc_id for h in handle.search(Query("the and of", 5))] == []  # stop words only: no match here
    assert handle.missing(["a", "zzz", "report"]) == {"zzz"}
    assert handle.document_ids() == ["a", "b", "long", "report"]
    assert [d.title for d in handle.documents(["a", "nope"])] == ["Loans"]
    with pytest.raises(EngineError, match="no capability 'dense:minilm'"):
        handle.search(Query("x", 5, capability="dense:minilm"))
    handle.close()


def test_an_index_is_reused_and_rebuilt_when_the_corpus_or_a_setting_changes(tmp_path):
    first = Notes()
    open_index(tmp_path, progress=first).close()
    assert first.bars == ["Indexing Local"]
    again = Notes()
    open_index(tmp_path, progress=again).close()
    assert again.bars == [] and again.notes == []
    changed = Notes()
    handle = open_index(tmp_path, rows=[*ROWS, {"id": "new", "text": "fresh words"}], progress=changed)
    assert changed.bars == ["Indexing Local"]
    assert "the corpus or an indexing setting changed since idx.db was built" in changed.notes[0]
    assert handle.describe()["documents"] == 5
    handle.close()
    tokenizer = Notes()
    open_index(
        tmp_path,
        rows=[*ROWS, {"id": "new", "text": "fresh words"}],
        progress=tokenizer,
        tokenizer="unicode61",
    ).close()
    assert tokenizer.bars == ["Indexing Local"]


def test_without_a_corpus_an_existing_index_is_searched_and_a_missing_one_is_an_error(tmp_path):
    open_index(tmp_path).close()
    handle = open_index(tmp_path, rows=None)
    assert handle.describe()["documents"] == 4
    handle.close()
    with pytest.raises(EngineError, match="no index at .*nothere.db and the config declares no corpus"):
        SqliteEngine().open(
            SqliteOptions(path=tmp_path / "nothere.db", dense_models=[]), OpenContext("Local", tmp_path)
        )


def test_a_failure_while_indexing_leaves_no_half_index_and_keeps_the_old_one(tmp_path):
    open_index(tmp_path).close()
    before = (tmp_path / "idx.db").read_bytes()
    broken = [*ROWS, {"id": "x", "text": "one"}, {"id": "x", "text": "twice"}]
    with pytest.raises(CorpusError, match="docs.jsonl:6: document id 'x' appears twice"):
        open_index(tmp_path, rows=broken)
    assert (tmp_path / "idx.db").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx.db"]


def test_a_file_that_is_not_an_index_is_named(tmp_path):
    (tmp_path / "idx.db").write_text("not sqlite")
    with pytest.raises(EngineError, match="is not a vx-eval SQLite index"):
        open_index(tmp_path, rows=None)


def test_query_terms_and_chunking():
    assert query_terms("What is the fee for a WIRE, the fee?") == ["fee", "wire"]
    assert query_terms("the and") == ["the", "and"]
    pieces = list(chunk_words(" ".join(str(i) for i in range(10)), 4, 1))
    assert pieces == ["0 1 2 3", "3 4 5 6", "6 7 8 9"]
    assert list(chunk_words("short text", 0, 0)) == ["short text"]


@pytest.mark.slow
def test_scifact_keyword_matches_lucene_and_pytrec_eval(scifact, plugins, tmp_path):
    config = tmp_path / "scifact.yaml"
    config.write_text(
        f"name: scifact\ngolden: {scifact}\ncorpus: {scifact}\nsave_to: runs\n"
        "targets: [{name: Local, engine: sqlite, options: {path: idx.db, chunk_words: 0, dense_models: []}}]\n"
        "evaluation: {metrics: [ndcg@10, recall@100, mrr, recall@10, found@10], depth: 100}\n"
    )
    report = run_experiment(load_config(config, plugins), plugins, RunOptions(save=False)).report.model_dump(
        mode="json"
    )
    setup = report["setups"][0]
    assert setup["summary"]["ndcg@10"] >= 0.665  # Lucene: 0.6647 multifield, 0.6789 flat
    qrels: dict[str, dict[str, int]] = {}
    for line in (scifact / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc, grade = line.split("\t")
        qrels.setdefault(qid, {})[doc] = int(grade)
    run = {
        q: dict(map(tuple, res))
        for q, res in zip(report["question_ids"], setup["per_question"]["results"], strict=True)
    }
    names = {
        "ndcg@10": "ndcg_cut_10",
        "recall@100": "recall_100",
        "mrr": "recip_rank",
        "recall@10": "recall_10",
    }
    reference = pytrec_eval.RelevanceEvaluator(qrels, set(names.values())).evaluate(run)
    for ours, theirs in names.items():
        expected = [reference.get(q, {}).get(theirs, 0.0) for q in report["question_ids"]]
        np.testing.assert_allclose(setup["per_question"]["metrics"][ours], expected, atol=1e-12)
