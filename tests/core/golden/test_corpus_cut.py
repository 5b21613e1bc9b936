"""Part of a corpus: the first documents (``corpus: {limit: N}``) or a seeded sample (``{sample: N}``), with
the documents the questions expect kept unless told otherwise, and the report saying which part it scored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vx_eval.core.config.experiment import CorpusSource
from vx_eval.core.golden.sources import read_corpus
from vx_eval.core.stores import Stores

from ...conftest import call as run


@pytest.fixture
def corpus_file(tmp_path: Path) -> str:
    path = tmp_path / "docs.jsonl"
    rows = [{"id": f"d{i:02d}", "title": f"Doc {i}", "text": f"text number {i}"} for i in range(40)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def ids(corpus) -> list[str]:
    return [d.id for d in corpus]


def test_a_sample_is_drawn_with_its_seed_and_keeps_the_expected_documents_in_file_order(corpus_file, plugins):
    stores = Stores(plugins)
    keep = {"d03", "d37"}
    first = read_corpus(CorpusSource(path=corpus_file, sample=6), stores, keep)
    again = read_corpus(CorpusSource(path=corpus_file, sample=6), stores, keep)
    other = read_corpus(CorpusSource(path=corpus_file, sample=6, seed=7), stores, keep)
    assert ids(first) == ids(again) and ids(first) != ids(other)
    assert keep <= set(ids(first)) and len(ids(first)) == 8 and ids(first) == sorted(ids(first))
    cut = first.cut
    assert cut is not None and (cut.how, cut.documents, cut.of, cut.drawn, cut.expected_added) == (
        "sample",
        8,
        40,
        6,
        2,
    )
    assert cut.seed == 0 and cut.expected_left_out == 0
    assert first.source.endswith("(sample of 6, seed 0 + expected)")
    assert first.fingerprint != read_corpus(corpus_file, stores).fingerprint


def test_without_keep_expected_a_sample_leaves_expected_documents_out_and_counts_them(corpus_file, plugins):
    keep = {"d03", "d37", "d20"}
    corpus = read_corpus(CorpusSource(path=corpus_file, sample=5, keep_expected=False), Stores(plugins), keep)
    held = set(ids(corpus))
    assert len(held) == 5 and corpus.cut is not None
    assert corpus.cut.expected_left_out == len(keep - held) and corpus.cut.expected_added == 0


def test_a_limit_is_the_first_documents_plus_the_expected_ones(corpus_file, plugins):
    corpus = read_corpus(CorpusSource(path=corpus_file, limit=3), Stores(plugins), {"d30"})
    assert ids(corpus) == ["d00", "d01", "d02", "d30"]
    assert corpus.cut is not None and (corpus.cut.how, corpus.cut.expected_added, corpus.cut.seed) == ("first", 1, None)


def test_a_sample_larger_than_the_corpus_is_the_whole_corpus(corpus_file, plugins):
    corpus = read_corpus(CorpusSource(path=corpus_file, sample=1000), Stores(plugins), {"d01"})
    assert len(ids(corpus)) == 40 and corpus.cut is not None and corpus.cut.documents == 40


def test_a_run_on_a_sample_says_so_in_its_report_and_its_output(project, capsys):
    config = project.write_config(corpus={"path": "docs.jsonl", "sample": 1, "seed": 3})
    code, out, err = run(capsys, "run", str(config), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["corpus"]["how"] == "sample" and report["corpus"]["drawn"] == 1
    assert report["corpus"]["documents"] == report["targets"]["Local"]["documents"]
    code, out, err = run(capsys, "run", str(config))
    assert code == 0, err
    assert "corpus: scores are on a sample of the corpus: 1 of its" in " ".join(out.split())
    assert "compare these setups with each other" in " ".join(out.split())
    page = Path(out.split("Report: ")[1].split()[0]).with_name("page.html")
    assert 'id="corpus-note"' in page.read_text(encoding="utf-8")


def test_limit_and_sample_together_are_refused_in_one_line(project, capsys):
    config = project.write_config(corpus={"path": "docs.jsonl", "sample": 2, "limit": 2})
    code, out, err = run(capsys, "run", str(config))
    assert code == 2 and out == ""
    assert "give limit (the first documents) or sample (a seeded draw), not both" in err
    assert len(err.strip().splitlines()) == 1
