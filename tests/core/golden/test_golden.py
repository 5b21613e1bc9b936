"""Golden data: every defect on every line at once, counts and sha256, BEIR import, saving."""

from __future__ import annotations

import hashlib
import json

import pytest

from vx_eval.core.errors import GoldenError
from vx_eval.core.golden.files import default_id, dump_rows, lint, parse_golden
from vx_eval.core.golden.sources import beir_golden_bytes, read_golden
from vx_eval.core.stores import Stores

BAD = b"""{"id": "q1", "question": "Can I defer?", "expected": ["deferment"]}
{"id": "q2", "question": "can i  DEFER?", "expected": ["x"], "expect": ["y"]}
{"id": "q1", "question": "Another", "expected": []}
{"id": "q3", "question": "Broken", "expected": ["a"],}
{"id": "q4", "question": 5, "expected": "a", "grades": {"a": "high"}, "draft": "maybe"}
[1, 2]

{"id": "q6", "question": "", "expected": ["t"]}
{"id": "q7", "question": "Graded", "expected": ["a"], "grades": {"a": 42}}
"""


def test_lint_reports_every_defect_on_every_line_at_once():
    defects, _ = lint(BAD)
    rendered = [d.render("g.jsonl") for d in defects]
    assert rendered == [
        "g.jsonl:2: unknown field 'expect'; did you mean 'expected'? (fields: id, question, expected, grades, "
        "reference, hint, evidence, draft, type, metadata)",
        "g.jsonl:2: the same question as line 1",
        "g.jsonl:3: expected is empty: name the ids of the documents that answer it (or give a reference answer "
        "to keep it unscored until it is labelled, or name a judge in the config's evaluation.judge to grade its "
        "results)",
        "g.jsonl:3: id 'q1' is already used on line 1",
        "g.jsonl:4:54: invalid JSON: Expecting property name enclosed in double quotes",
        "g.jsonl:5: question: Input should be a valid string (got 5)",
        "g.jsonl:5: expected: Input should be a valid list (got 'a')",
        "g.jsonl:5: grades.a: Input should be a valid integer, unable to parse string as an integer (got 'high')",
        "g.jsonl:5: draft: Input should be a valid boolean, unable to interpret input (got 'maybe')",
        'g.jsonl:6: each line is one JSON object: {"question": …, "expected": […]}',
        "g.jsonl:9: grades: grade of 'a' is 42; grades run from 0 (not relevant) to 3 or 5 (got {'a': 42})",
    ]


def test_parse_raises_all_defects_in_one_error():
    with pytest.raises(GoldenError) as info:
        parse_golden(BAD, "g.jsonl")
    assert str(info.value).count("g.jsonl:") == 11
    assert "`vx-eval golden check g.jsonl` lists them all" in str(info.value)


@pytest.mark.parametrize(
    ("raw", "message"),
    [(b"", "the file holds no rows"), (b"\xff\xfe{}", "not UTF-8 text"), (b"\n\n", "the file holds no rows")],
)
def test_empty_or_undecodable_files(raw, message):
    with pytest.raises(GoldenError, match=message):
        parse_golden(raw, "g.jsonl")


def test_counts_sha256_and_relevance():
    raw = (
        b'{"id": "a", "question": "Q one", "expected": ["d1", "d2"], "grades": {"d1": 3, "d9": 0}}\n'
        b'{"question": "Q two", "expected": ["d3"], "draft": true}\n'
        b'{"question": "", "expected": ["d4"], "hint": "start of d4"}\n'
    )
    golden = parse_golden(raw, "g.jsonl")
    assert golden.sha256 == hashlib.sha256(raw).hexdigest()
    assert (golden.labelled, golden.unfilled, golden.drafts) == (2, 1, 1)
    first, second = golden.questions
    assert first.relevance() == {"d1": 3, "d2": 1, "d9": 0}
    assert second.id == default_id("Q two") == default_id("  q   TWO ")


def test_read_golden_through_the_store(plugins, tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_bytes(b'{"id": "1", "question": "q?", "expected": ["d"]}\n')
    golden = read_golden(str(path), Stores(plugins))
    assert golden.source == str(path) and golden.labelled == 1
    with pytest.raises(GoldenError, match="is a folder with neither queries.jsonl .BEIR. nor one topics"):
        read_golden(str(tmp_path), Stores(plugins))


def test_read_golden_missing_file_is_a_clear_error(plugins, tmp_path):
    with pytest.raises(Exception, match=r"nope\.jsonl does not exist"):
        read_golden(str(tmp_path / "nope.jsonl"), Stores(plugins))


def test_read_golden_through_a_fetcher(plugins):
    class Fetcher:
        def fetch(self, uri: str) -> bytes:
            assert uri == "s3://bucket/golden.jsonl"
            return b'{"id": "1", "question": "q?", "expected": ["d"]}\n'

    golden = read_golden("s3://bucket/golden.jsonl", Stores(plugins, fetcher=Fetcher()))
    assert golden.questions[0].expected == ("d",)


def test_dump_rows_round_trips():
    rows = [{"id": "q1", "question": "Why?", "expected": ["d"], "grades": {}, "reference": None, "hint": "x"}]
    raw = dump_rows(rows)
    assert json.loads(raw) == {"id": "q1", "question": "Why?", "expected": ["d"], "hint": "x"}
    assert parse_golden(raw, "g").questions[0].question == "Why?"


def test_beir_import_keeps_graded_and_zero_judgements(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "queries.jsonl").write_text(
        '{"_id": "1", "text": "first"}\n{"_id": "2", "text": "second"}\n{"_id": "3", "text": "unjudged"}\n'
    )
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n2\td2\t2\n2\td3\t0\n")
    raw, left_out = beir_golden_bytes(str(tmp_path), "test")
    golden = parse_golden(raw, "beir")
    assert [q.id for q in golden.questions] == ["1", "2"]
    assert [f.render() for f in left_out] == [
        "left out 1 query with no judgement in qrels/test.tsv (another split's, or never judged): '3'"
    ]
    assert golden.questions[1].relevance() == {"d2": 2, "d3": 0}
    with pytest.raises(GoldenError, match="this BEIR folder has splits: test"):
        beir_golden_bytes(str(tmp_path), "dev")


def test_beir_import_of_scifact(scifact, plugins):
    golden = read_golden(str(scifact), Stores(plugins))
    assert golden.labelled == 300
    assert sum(len(q.expected) for q in golden.questions) == 339


def test_a_golden_line_holding_a_line_separator_in_a_string_is_one_row():
    """JSON allows U+2028, U+2029 and U+0085 inside a string: a JSON Lines file breaks only at newlines (a
    Windows \\r\\n too), so such a question is one row, not an invalid line."""
    raw = '{"id": "1", "question": "first\u2028second\x85third\u2029fourth?", "expected": ["d"]}\r\n'.encode()
    golden = parse_golden(raw, "g.jsonl")
    [only] = golden.questions
    assert only.question == "first\u2028second\x85third\u2029fourth?" and only.expected == ("d",)


def test_a_question_with_no_expected_ids_waits_for_the_judge_where_one_grades_the_run():
    """The docs' promise: rows with a question and no expected ids are graded by the run's judge; without a
    judge they are a defect, as before."""
    raw = b'{"id": "a", "question": "How do I wire money?", "expected": ["d1"]}\n{"id": "b", "question": "Fees?"}\n'
    with pytest.raises(GoldenError, match="line|expected is empty"):
        parse_golden(raw, "g.jsonl")
    golden = parse_golden(raw, "g.jsonl", judged=True)
    assert [q.id for q in golden.questions] == ["a"] and [q.id for q in golden.waiting] == ["b"]
