"""Corpus files: documents read lazily, every defect named by file and line."""

from __future__ import annotations

import pytest

from vx_eval.core.golden.sources import CorpusError, FileCorpus, read_corpus
from vx_eval.core.stores import Stores


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"id": "a", "text": "x"}\n{"text": "no id"}\n', "docs.jsonl:2: the document has no id"),
        (b'{"id": "a", "text": "x"}\n{"id": "b", "text": "x",}\n', "docs.jsonl:2:25: invalid JSON"),
        (b'["a", "b"]\n', "docs.jsonl:1: each line is one JSON object with id and text"),
        (b'{"id": "a", "text": 5}\n', "docs.jsonl:1: text must be a string and pages a list of strings"),
        (b'{"id": "a", "text": "x"}\n{"_id": "a", "text": "y"}\n', "docs.jsonl:2: document id 'a' appears twice"),
    ],
)
def test_corpus_defects_name_the_line(raw, message):
    with pytest.raises(CorpusError, match=message):
        list(FileCorpus(raw, "docs.jsonl"))


def test_documents_pages_titles_and_fingerprint():
    corpus = FileCorpus(
        b'{"_id": 7, "title": "T", "text": "x", "metadata": {"k": 1}}\n\n{"id": "r", "pages": ["p1", "p2"]}\n', "c"
    )
    first, second = list(corpus)
    assert (first.id, first.title, first.metadata) == ("7", "T", {"k": 1})
    assert second.pages == ("p1", "p2") and second.text == "p1\n\np2"
    assert len(corpus) == 2 and len(corpus.fingerprint) == 64
    assert FileCorpus(b'{"id": "a", "text": "y"}\n', "c").fingerprint != corpus.fingerprint


def test_a_beir_folder_is_read_through_its_corpus_file(plugins, scifact, tmp_path):
    corpus = read_corpus(str(scifact), Stores(plugins))
    assert len(corpus) == 5183 and corpus.source.endswith("corpus.jsonl")
    with pytest.raises(CorpusError, match="is a folder without corpus.jsonl"):
        read_corpus(str(tmp_path), Stores(plugins))
