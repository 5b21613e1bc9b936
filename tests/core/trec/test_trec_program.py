"""`vx-eval eval --trec-format` against the trec_eval 10.0 program itself, line by line, on 2,000 generated
cases (`vx_eval.testing.trec_cases`: grades -3 to 5, ties, documents listed twice, unanswered and unjudged
questions, ids in any script) and every option set trec_eval takes (17 of them, -Z with a drawn z-score file).

Where the program is found (``VX_EVAL_TREC_EVAL``, or ``trec_eval`` on the PATH) or can be built from a source
tree (``VX_EVAL_TREC_EVAL_SRC``: make runs there), each case is run by both. Everywhere else, CI included
(no package registry carries trec_eval's source), vx-eval's answers are compared with the program's own,
recorded by ``benchmarks/trec_differential.py --record`` in ``tests/data/trec_program/``: whether it answered
or refused, and a digest of every line it printed. Lines whose value trec_eval's C code leaves undefined are
left out on both sides, read from the input files alone (`trec_cases.undefined_lines`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from vx_eval.testing import trec_cases

RECORDED = Path(__file__).parents[2] / "data" / "trec_program" / "answers.jsonl.gz"
CASES = range(2000)
LIVE = range(300)
"""The cases run by both where the program is here (each takes it a few milliseconds)."""


def _program(tmp_path_factory: pytest.TempPathFactory) -> str | None:
    found = os.environ.get("VX_EVAL_TREC_EVAL") or shutil.which("trec_eval")
    source = os.environ.get("VX_EVAL_TREC_EVAL_SRC")
    if found or not source:
        return found
    build = tmp_path_factory.mktemp("trec_eval")
    shutil.copytree(source, build, dirs_exist_ok=True)
    subprocess.run(["make", "-s"], cwd=build, check=True, capture_output=True, timeout=300)
    return str(build / "trec_eval")


@pytest.mark.slow
@pytest.mark.parametrize("option_set", list(trec_cases.OPTION_SETS))
def test_every_line_is_the_trec_eval_programs(option_set, tmp_path_factory):
    program = _program(tmp_path_factory)
    recorded = trec_cases.read_recorded(RECORDED)
    assert recorded is not None, f"{RECORDED} is missing: run benchmarks/trec_differential.py --record"
    folder = tmp_path_factory.mktemp("cases")
    tally = trec_cases.Tally()
    found: list[str] = []
    flags, which = trec_cases.OPTION_SETS[option_set]
    for n in CASES:
        case = trec_cases.draw_case(n)
        if program is not None and n in LIVE:
            rel, run = trec_cases.files(case, which, folder)
            differing = tally.compare(case, option_set, trec_cases.program_answer(program, flags, rel, run), folder)
        else:
            differing = tally.compare_recorded(case, option_set, recorded[n, option_set], folder)
        found += [f"case {n}: {line}" for line in differing[:2]]
    assert tally.compared == len(CASES)
    assert tally.lines > len(CASES)
    assert not found, f"{tally.differing} lines differ from trec_eval's; first: {found[:5]}"


def test_the_recorded_answers_cover_every_case_and_option_set():
    recorded = trec_cases.read_recorded(RECORDED)
    assert recorded is not None
    assert set(recorded) == {(n, name) for n in CASES for name in trec_cases.OPTION_SETS}
    answered = sum(r.answered for r in recorded.values())
    assert len(recorded) / 4 < answered < len(recorded)  # refusals and answers both drawn often


def test_a_case_is_the_same_bytes_whatever_draws_it():
    assert trec_cases.draw_case(7) == trec_cases.draw_case(7) != trec_cases.draw_case(8)
    case = trec_cases.draw_case(1234)
    assert case.qrels.endswith(b"\n") and case.run.count(b" Q0 ") == case.run.count(b"\n")


def test_a_difference_is_caught_by_the_digest(tmp_path):
    """The comparison with recorded answers fails on a changed line, and on a refusal where trec_eval answered."""
    case = trec_cases.draw_case(3)
    name = "all_trec -q -c"
    recorded = trec_cases.read_recorded(RECORDED)
    assert recorded is not None
    right = recorded[3, name]
    tally = trec_cases.Tally()
    assert tally.compare_recorded(case, name, right, tmp_path) == []
    wrong = trec_cases.Recorded(3, name, right.answered, right.lines, "0" * 16)
    assert tally.compare_recorded(case, name, wrong, tmp_path)
    refused = trec_cases.Recorded(3, name, not right.answered, 0, right.digest)
    assert "trec_eval" in tally.compare_recorded(case, name, refused, tmp_path)[0]
