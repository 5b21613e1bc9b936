"""TREC files read as trec_eval reads them, and what is odd said: refused with both lines named where
trec_eval refuses, read its way with a warning where it reads a line its own way."""

from __future__ import annotations

import pytest

from vx_eval.core.errors import VxEvalError
from vx_eval.core.trec.files import evaluate_run, read_judgements, read_run

from ...test_cli import call


def files(tmp_path, qrels: str, run: str):
    q, r = tmp_path / "qrels", tmp_path / "run"
    q.write_text(qrels)
    r.write_text(run)
    return q, r


def test_a_document_judged_twice_is_refused_naming_both_lines(tmp_path):
    q, _ = files(tmp_path, "q1 0 d1 1\nq1 0 d2 1\nq1 0 d3 1\nq1 0 d3 0\n", "q1 Q0 d1 1 3 r\n")
    with pytest.raises(VxEvalError) as caught:
        read_judgements(q)
    assert str(caught.value) == (
        f"{q}:4: document 'd3' is judged twice for question 'q1' (lines 3 and 4); trec_eval refuses such a file "
        '("duplicate docs"): keep one line'
    )


def test_a_document_listed_twice_in_one_questions_run_is_refused(tmp_path):
    q, r = files(tmp_path, "q1 0 d1 1\nq2 0 d1 1\n", "q1 Q0 d1 1 3 r\nq2 Q0 d1 1 3 r\nq1 Q0 d2 2 2 r\nq1 Q0 d1 3 1 r\n")
    with pytest.raises(VxEvalError, match=r"run:4: document 'd1' is listed twice for question 'q1' \(lines 1 and 4\)"):
        evaluate_run(read_judgements(q), read_run(r), ["map"])


def test_fractional_grades_are_cut_as_trec_eval_cuts_them_and_said(tmp_path):
    q, r = files(tmp_path, "q1 0 d1 1.5\nq1 0 d2 2\n", "q1 Q0 d1 1 3 r\nq1 Q0 d2 2 2 r\n")
    whole = files(tmp_path / "..", "q1 0 d1 1\nq1 0 d2 2\n", "q1 Q0 d1 1 3 r\nq1 Q0 d2 2 2 r\n")[0]
    cut = evaluate_run(read_judgements(q), read_run(r), ["ndcg@10"])
    assert cut.means() == evaluate_run(read_judgements(whole), read_run(r), ["ndcg@10"]).means()
    assert any("1 grade is not whole (lines 1); read as whole numbers (1.5 as 1)" in w for w in cut.warnings)


def test_nan_scores_sort_last_with_a_warning_naming_the_line(tmp_path, capsys):
    q, r = files(tmp_path, "q1 0 d1 1\nq1 0 d2 1\n", "q1 Q0 d1 1 nan r\nq1 Q0 x 2 1 r\nq1 Q0 d2 3 0.5 r\n")
    evaluation = evaluate_run(read_judgements(q), read_run(r), ["mrr"])
    assert evaluation.means()["mrr"] == 0.5  # x, then d2 at rank 2: d1's nan sorts last
    code, _, err = call(capsys, "eval", str(q), str(r), "-m", "mrr")
    assert code == 0 and "warning: " in err and "1 score is not a number (nan, lines 1)" in err


def test_trec_evals_own_measure_syntax_is_accepted(tmp_path):
    q, r = files(tmp_path, "q1 0 d1 1\nq1 0 d2 1\n", "q1 Q0 d1 1 3 r\nq1 Q0 x 2 2 r\nq1 Q0 d2 3 1 r\n")
    evaluation = evaluate_run(read_judgements(q), read_run(r), ["ndcg_cut.10", "P.5,10", "success", "ndcg_cut"])
    # as in trec_eval, a measure named again without parameters keeps those it was given (ndcg_cut.10)
    assert evaluation.measures == ["ndcg@10", "p@5", "p@10", "found@1", "found@5", "found@10"]
    assert evaluation.means()["p@5"] == pytest.approx(0.4)
    again = evaluate_run(read_judgements(q), read_run(r), ["recall", "recall.7,3", "recall.2"])
    assert again.measures == ["recall@2"]  # the last parameters given win


def test_runs_from_other_tools_read_with_comments_and_extra_columns(tmp_path):
    q, r = files(tmp_path, "# judged by hand\nq1 0 d1 1\n", "# ranx export\nq1 Q0 d1 1 3 run extra\n")
    assert evaluate_run(read_judgements(q), read_run(r), ["map"]).means() == {"map": 1.0}


def test_a_non_utf8_id_tied_with_another_result_is_ordered_by_its_bytes(tmp_path):
    q, r = tmp_path / "qrels", tmp_path / "run"
    q.write_bytes(b"q1 0 d\xff 1\n")
    r.write_bytes(b"q1 Q0 d\xff 1 1 r\nq1 Q0 da 2 1 r\n")  # tied: id descending as bytes puts d\xff first
    assert evaluate_run(read_judgements(q), read_run(r), ["mrr"]).means() == {"mrr": 1.0}
