"""trec_eval's printed lines (`core.trec.output`), read directly: the measures' values on files small enough to
score by hand, the per-question lines, the summary's order, and which questions count with and without -c."""

from __future__ import annotations

from pathlib import Path

import pytest

from vx_eval.core.errors import VxEvalError
from vx_eval.core.trec.files import read_judgements
from vx_eval.core.trec.output import Printing, trec_eval_output

QRELS = """q1 0 d1 1
q1 0 d2 0
q1 0 d3 1
q2 0 d4 2
q3 0 d9 1
"""
# q1: d1 relevant at 1, d2 not, d3 relevant at 3; q2: d4 relevant at 2; q3 is judged but not answered.
RUN = """q1 Q0 d1 1 3.0 r
q1 Q0 d2 2 2.0 r
q1 Q0 d3 3 1.0 r
q2 Q0 d5 1 2.0 r
q2 Q0 d4 2 1.0 r
"""
AP = {"q1": (1 / 1 + 2 / 3) / 2, "q2": (1 / 2) / 1}
P5 = {"q1": 2 / 5, "q2": 1 / 5}


def _lines(text: str) -> dict[tuple[str, str], str]:
    out = {}
    for line in text.splitlines():
        name, question, value = line.split("\t")
        out[(name.strip(), question)] = value
    return out


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "qrels").write_text(QRELS)
    (tmp_path / "run").write_text(RUN)
    return tmp_path / "qrels", tmp_path / "run"


def test_the_summary_is_the_mean_over_the_answered_questions_without_c(files):
    qrels, run = files
    judgements = read_judgements(qrels)
    with pytest.raises(VxEvalError, match="does not answer judged question 'q3'"):  # trec_eval 10 stops there
        trec_eval_output(judgements, run, ["map"], Printing())
    answered = Printing(runid="mine", answered_only=True)  # trec_eval 9 averaged over the answered ones
    text, warnings = trec_eval_output(judgements, run, ["runid", "num_q", "map", "P_5"], answered)
    lines = _lines(text)
    assert lines[("runid", "all")] == "mine"  # printed where asked (trec_eval's official set asks)
    assert lines[("num_q", "all")] == "2"  # q3 has no results: without -c it does not count
    assert float(lines[("map", "all")]) == pytest.approx((AP["q1"] + AP["q2"]) / 2, abs=5e-5)
    assert float(lines[("P_5", "all")]) == pytest.approx((P5["q1"] + P5["q2"]) / 2, abs=5e-5)
    assert [line.split("\t")[0].strip() for line in text.splitlines()] == ["runid", "num_q", "map", "P_5"]
    assert warnings == ()


def test_with_c_every_judged_question_counts_and_one_without_results_scores_zero(files):
    qrels, run = files
    text, _ = trec_eval_output(read_judgements(qrels), run, ["num_q", "map"], Printing(complete=True))
    lines = _lines(text)
    assert lines[("num_q", "all")] == "3"
    assert float(lines[("map", "all")]) == pytest.approx((AP["q1"] + AP["q2"] + 0) / 3, abs=5e-5)


def test_per_question_lines_come_first_each_question_in_trec_evals_order(files):
    qrels, run = files
    text, _ = trec_eval_output(read_judgements(qrels), run, ["map"], Printing(per_query=True, answered_only=True))
    rows = [line.split("\t") for line in text.splitlines()]
    assert [(n.strip(), q) for n, q, _ in rows] == [("map", "q1"), ("map", "q2"), ("map", "all")]
    assert float(rows[0][2]) == pytest.approx(AP["q1"], abs=5e-5)
    assert float(rows[1][2]) == pytest.approx(AP["q2"], abs=5e-5)
    assert rows[0][2] == f"{AP['q1']:.4f}"  # four places, as trec_eval prints
