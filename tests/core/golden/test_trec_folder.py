"""A TREC folder (one topics file and one qrels file, as collections ship them) wherever a golden file goes:
`golden check`, `golden import --from trec`, and a config's `golden:`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import call
from vx_eval.core.errors import GoldenError
from vx_eval.core.golden.sources import read_golden, trec_folder
from vx_eval.core.stores import Stores

TOPICS = (
    "<top>\n<num>1</num><title>\nPOSTPONE A LOAN PAYMENT\n</title>\n</top>\n"
    "<top>\n<num>2</num><title>\nWIRE FEES ABROAD\n</title>\n</top>\n"
    "<top>\n<num>3</num><title>\nNOBODY JUDGED THIS\n</title>\n</top>\n"
)
QRELS = "1 0 deferment 1\n2 0 wire 2\n2 0 card-lost 0\n"


def _folder(root: Path) -> Path:
    folder = root / "bank-trec"
    folder.mkdir()
    (folder / "query-text.trec").write_text(TOPICS)
    (folder / "qrels").write_text(QRELS)
    (folder / "doc-text.trec").write_text("<DOC>\n<DOCNO>deferment</DOCNO>\nDefer payments.\n</DOC>\n")
    return folder


def test_a_trec_folder_is_its_one_topics_file_and_its_one_qrels_file(tmp_path, plugins):
    folder = _folder(tmp_path)
    assert trec_folder(str(folder)) == (folder / "query-text.trec", folder / "qrels")
    golden = read_golden(str(folder), Stores(plugins))
    assert [(q.id, q.question, q.expected) for q in golden.questions] == [
        ("1", "POSTPONE A LOAN PAYMENT", ("deferment",)),
        ("2", "WIRE FEES ABROAD", ("wire",)),
    ]
    assert [part.ids for part in golden.left_out] == [("3",)]
    (folder / "topics.401-450").write_text(TOPICS)  # two topics files: which one is meant cannot be told
    assert trec_folder(str(folder)) is None
    with pytest.raises(GoldenError, match="neither queries.jsonl .BEIR. nor one topics and one qrels file"):
        read_golden(str(folder), Stores(plugins))


def test_golden_check_and_import_take_a_trec_folder(tmp_path, capsys):
    folder = _folder(tmp_path)
    code, out, err = call(capsys, "golden", "check", str(folder))
    assert code == 0, err
    assert "2 questions ok" in out and "left out 1 query with no judgement in" in err and ": '3'" in err
    code, out, err = call(capsys, "golden", "import", "--from", "trec", str(folder), "--out", str(tmp_path / "g.jsonl"))
    assert code == 0, err
    assert "Wrote 2 questions" in out and "with no judgement" in out
    rows = [json.loads(line) for line in (tmp_path / "g.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["1", "2"]
    (folder / "topics.401-450").write_text(TOPICS)  # two topics files: golden check says why it reads none
    code, _, err = call(capsys, "golden", "check", str(folder))
    assert code == 2 and "neither queries.jsonl (BEIR) nor one topics and one qrels file (TREC)" in " ".join(
        err.split()
    )


def test_a_beir_query_holding_a_line_separator_is_one_query(tmp_path, plugins):
    """JSON allows U+2028 inside a string: the query is still one line of queries.jsonl."""
    (tmp_path / "qrels").mkdir()
    (tmp_path / "queries.jsonl").write_text('{"_id": "1", "text": "first\u2028second?"}\n', encoding="utf-8")
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n")
    [question] = read_golden(str(tmp_path), Stores(plugins)).questions
    assert question.question == "first\u2028second?"
