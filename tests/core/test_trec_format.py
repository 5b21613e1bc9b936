"""`vx-eval eval --trec-format` prints what trec_eval prints, so scripts written for trec_eval keep working.

tests/data/trec_eval holds twelve TREC DL 2019 questions' graded judgements (from the shared collection), a
run over them (ties in score, a judged question with no results, a question nobody judged) and what the
real trec_eval 10.0 printed for them, made with::

    trec_eval -c -q $(cat measures.txt) qrels.txt run.txt > expected-q.txt
    trec_eval -c -l 2 $(cat measures.txt) qrels.txt run.txt > expected-l2.txt
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..test_cli import call

DATA = Path(__file__).parents[1] / "data" / "trec_eval"
MEASURES = (DATA / "measures.txt").read_text().split()


def ours(capsys, *extra: str) -> str:
    code, out, err = call(capsys, "eval", str(DATA / "qrels.txt"), str(DATA / "run.txt"), "--trec-format", *extra)
    assert code == 0, err
    return out


@pytest.mark.parametrize(("flags", "expected"), [(("-q",), "expected-q.txt"), (("-l", "2"), "expected-l2.txt")])
def test_the_output_is_trec_evals_byte_for_byte_once_sorted(capsys, flags, expected):
    printed = ours(capsys, *flags, *MEASURES)
    assert sorted(printed.splitlines()) == sorted((DATA / expected).read_text().splitlines())


def test_a_measure_trec_eval_lacks_is_refused_in_its_format(capsys):
    code, _, err = call(capsys, "eval", str(DATA / "qrels.txt"), str(DATA / "run.txt"), "--trec-format", "-m", "f1@10")
    assert code == 2 and "f1@10 has no trec_eval name" in err


def test_vx_evals_own_names_are_printed_in_trec_evals(capsys):
    printed = ours(capsys, "-m", "ndcg@10", "-m", "found@5", "-m", "mrr")
    assert [line.split("\t")[0].strip() for line in printed.splitlines()] == ["ndcg_cut_10", "success_5", "recip_rank"]
