"""`vx-eval eval` against the references on files nobody wrote by hand: run and qrels files generated with every
separator mix (spaces, tabs, both, several in a row, blanks before and after a line), questions graded only below
0, judged questions the run does not answer, questions the run answers that nobody judged, and tied scores.

Each generated pair is scored three ways that must agree to the last bit: the streamed reader, the whole-file
reader, and pytrec_eval (trec_eval's own C code) on what trec_eval's parser reads from the same bytes. Where a
`trec_eval` binary is on the PATH (or named by VX_EVAL_TREC_EVAL), `--trec-format` prints the same bytes it
prints. Then the cases found from outside, one test each."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from vx_eval.core.errors import VxEvalError
from vx_eval.core.measures.metrics import parse
from vx_eval.core.trec import stream as trecstream
from vx_eval.core.trec.files import read_judgements, read_run, score

from ...test_cli import call

# trec_eval's name -> vx-eval's, for the measures pytrec_eval computes as trec_eval 10.0 does (its gm_map is
# a log, and its iprec levels round as trec_eval 9 did)
PYTREC = {
    "map": "map", "P_5": "p@5", "P_10": "p@10", "recall_10": "recall@10", "ndcg": "ndcg", "ndcg_cut_10": "ndcg@10",
    "bpref": "bpref", "recip_rank": "mrr", "Rprec": "rprec", "set_F": "set_f", "set_P": "set_p",
    "success_1": "success@1", "Rndcg": "rndcg", "G": "g", "binG": "bin_g", "ndcg_rel": "ndcg_rel", "infAP": "infap",
}  # fmt: skip
MEASURES = [parse(name) for name in PYTREC.values()]
STREAMED = [m for m in MEASURES if m.definition.name != "infap"]  # infAP reads the pooled marks: never streamed
BLANKS = [" ", "\t", "  ", " \t", "\t ", "\t\t"]
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@st.composite
def trec_files(draw: st.DrawFn) -> tuple[str, str]:
    """A qrels and a run file as people and tools write them (see the module)."""
    mixed = draw(st.booleans())
    blank = st.sampled_from(BLANKS) if mixed else st.just(" ")
    questions = [f"q{i}" for i in range(draw(st.integers(1, 5)))]
    docs = [f"d{i}" for i in range(draw(st.integers(1, 40)))]

    def line(fields: list[str]) -> str:
        text = "".join(f + draw(blank) for f in fields[:-1]) + fields[-1]
        if mixed:
            text = draw(st.sampled_from(["", " ", "\t"])) + text + draw(st.sampled_from(["", " ", "\t", "\r"]))
        return text + "\n"

    qrels = []
    for q in questions:
        if draw(st.integers(0, 4)) == 0:
            continue  # a question nobody judged (the run may still answer it)
        below_only = draw(st.integers(0, 4)) == 0
        judged = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=len(docs), unique=True))
        grade = st.just(-1) if below_only else st.sampled_from([-1, 0, 0, 1, 1, 2, 3])
        qrels += [line([q, "0", d, str(draw(grade))]) for d in judged]
    if not qrels:
        qrels.append(line([questions[0], "0", docs[0], "1"]))
    run = []
    score_of = st.one_of(
        st.sampled_from(["1", "2", "2.5", "0.1", "-1", "3"]), st.integers(0, 999).map(lambda n: f"0.{n}")
    )
    for q in [*questions, "nobody-judged"]:
        if draw(st.integers(0, 4)) == 0:
            continue  # a judged question the run does not answer
        listed = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=len(docs), unique=True))
        run += [line([q, "Q0", d, str(rank), draw(score_of), "tag"]) for rank, d in enumerate(listed, start=1)]
    judged_questions = {row.split()[0] for row in qrels}
    if not any(row.split()[0] in judged_questions for row in run):
        q = qrels[0].split()[0]
        run.append(line([q, "Q0", docs[0], "1", "1", "tag"]))  # one judged question answered: else refused
    return "".join(qrels), "".join(run)


def _write(folder: Path, qrels: str, run: str) -> tuple[Path, Path]:
    q, r = folder / "qrels", folder / "run"
    q.write_bytes(qrels.encode())
    r.write_bytes(run.encode())
    return q, r


def _as_trec_eval_reads(text: str, value: int, cast: type) -> dict[str, dict[str, float]]:
    """What trec_eval's parser reads from a file: fields split at any run of blanks."""
    read: dict[str, dict[str, float]] = {}
    for row in text.splitlines():
        fields = row.split()
        if fields:
            read.setdefault(fields[0], {})[fields[2]] = cast(fields[value])
    return read


@seed(20261205)
@SETTINGS
@given(files=trec_files())
def test_the_streamed_reader_the_whole_file_reader_and_pytrec_eval_agree_to_the_bit(files, tmp_path_factory):
    folder = tmp_path_factory.mktemp("agree")
    q, r = _write(folder, *files)
    judgements = read_judgements(q)
    whole = score(judgements, read_run(r), MEASURES, 1)
    judged = trecstream.judged_of(
        judgements.columns, judgements.grades, judgements.rows_question, judgements.question_ids, 1
    )
    try:
        streamed = trecstream.score_stream(r, judged, STREAMED, 1)
    except trecstream.Unstreamable:
        assert "\t" in files[1] or files[1].startswith((" ", "\t")) or "\r" in files[1] or "  " in files[1]
    else:
        np.testing.assert_array_equal(streamed.values, whole.values[:, [MEASURES.index(m) for m in STREAMED]])
        np.testing.assert_array_equal(streamed.num_ret, whole.num_ret)
        np.testing.assert_array_equal(streamed.num_rel_ret, whole.num_rel_ret)
    qrels = _as_trec_eval_reads(files[0], 3, int)
    if any(all(g < 0 for g in docs.values()) for docs in qrels.values()):
        return  # pytrec_eval never returns on a question graded only below 0 (trec_eval reads it; see below)
    run = _as_trec_eval_reads(files[1], 4, float)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(PYTREC)).evaluate(run)
    for i, qid in enumerate(judgements.question_ids):
        if qid in theirs:
            ours = dict(zip(PYTREC, whole.values[i], strict=True))
            assert ours == {name: theirs[qid][name] for name in PYTREC}, qid


TREC_EVAL = os.environ.get("VX_EVAL_TREC_EVAL") or shutil.which("trec_eval")
SETS = {
    "all_trec, -c": ["-q", "-c", "-m", "all_trec"],  # infAP and relstring: the whole-file reader
    "streamed, -c": ["-q", "-c", "-m", "official", "-m", "ndcg_cut", "-m", "unj", "-m", "utility", "-m", "rbp_resid"],
    "streamed": ["-q", "-m", "official", "-m", "ndcg_cut", "-m", "unj", "-m", "utility", "-m", "num_ret"],
    "-J": ["-q", "-c", "-J", "-m", "all_trec"],
    "-M 3": ["-q", "-c", "-M", "3", "-m", "all_trec"],
}


@pytest.mark.skipif(TREC_EVAL is None, reason="no trec_eval binary on the PATH (nor VX_EVAL_TREC_EVAL)")
@pytest.mark.parametrize("flags", SETS.values(), ids=SETS.keys())
def test_trec_format_prints_what_the_trec_eval_binary_prints(flags, tmp_path_factory, capsys):
    @seed(20261205)
    @SETTINGS
    @given(files=trec_files())
    def check(files: tuple[str, str]) -> None:
        q, r = _write(tmp_path_factory.mktemp("binary"), *files)
        theirs = subprocess.run([TREC_EVAL, *flags, str(q), str(r)], capture_output=True, text=True)
        code, out, err = call(capsys, "eval", "--trec-format", *flags, str(q), str(r))
        if theirs.returncode != 0:  # trec_eval 10 stops (an unanswered judged question, one judged only below 0)
            assert code == 2, f"trec_eval refused ({theirs.stderr.strip()}), vx-eval answered"
            return
        assert code == 0, err
        for mine, line in zip(out.splitlines(), theirs.stdout.splitlines(), strict=True):
            if line.startswith("rbp "):
                continue  # trec_eval 10's rbp scales gains by a min and max it never sets (m_rbp.c): stack garbage
            assert mine == line  # -J's 0/0 included: both print -nan

    check()


# The cases found from outside


def test_blanks_around_a_tab_separated_field_are_separators(tmp_path, capsys):
    q, r = _write(tmp_path, "q1 0 d1 1\n", "q1\tQ0\td1 \t1\t3\tr\n")
    for flags in ([], ["-M", "5"]):
        code, out, _ = call(capsys, "eval", "--trec-format", "-m", "P.1", *flags, str(q), str(r))
        assert (code, out) == (0, "P_1                   \tall\t1.0000\n")


def test_a_question_graded_only_below_zero_keeps_its_results(tmp_path, capsys):
    q, r = _write(tmp_path, "q0 0 d1 1\nq1 0 d1 -1\n", "q0 Q0 d1 1 1 r\nq1 Q0 d1 1 2 r\nq1 Q0 d2 2 1 r\n")
    code, out, _ = call(capsys, "eval", "--trec-format", "-q", "-c", "-m", "num_ret", "-m", "unj.5", "-m", "utility",
                        str(q), str(r))  # fmt: skip
    assert code == 0
    assert [line for line in out.splitlines() if "\tq1\t" in line] == [
        "num_ret               \tq1\t2",
        "utility               \tq1\t-2.0000",
        "unj_5                 \tq1\t0.4000",
    ]


def test_bpref_is_summed_in_trec_evals_order(tmp_path, capsys):
    """32 relevant and 25 judged non-relevant documents in this order: numpy's pairwise sum gives bpref
    0.50374999…, printed 0.5037; trec_eval's loop 0.50375, printed 0.5038."""
    order = "101001011110000011111101011111101101000100000001110"
    relevant, other = iter(range(32)), iter(range(25))
    qrels = "".join(f"q1 0 r{i} 1\n" for i in range(32)) + "".join(f"q1 0 n{i} 0\n" for i in range(25))
    docs = [f"r{next(relevant)}" if c == "1" else f"n{next(other)}" for c in order]
    run = "".join(f"q1 Q0 {d} {i + 1} {1000 - i} r\n" for i, d in enumerate(docs))
    q, r = _write(tmp_path, qrels, run)
    code, out, _ = call(capsys, "eval", "--trec-format", "-m", "bpref", str(q), str(r))
    assert (code, out) == (0, "bpref                 \tall\t0.5038\n")


def test_an_empty_run_is_refused_as_trec_eval_refuses_it(tmp_path, capsys):
    q, r = _write(tmp_path, "q1 0 d1 1\n", "# only a comment\n\n")
    code, out, err = call(capsys, "eval", str(q), str(r), "-m", "map")
    assert (code, out) == (2, "")
    assert "holds no results" in err and "Traceback" not in err


def test_a_run_of_other_questions_is_refused_naming_both_sides(tmp_path, capsys):
    q, r = _write(tmp_path, "301 0 d1 1\n302 0 d1 1\n", "q1 Q0 d1 1 1 r\n")
    for flags in ([], ["--trec-format"], ["--trec-format", "-J"]):
        code, out, err = call(capsys, "eval", *flags, str(q), str(r))
        assert (code, out) == (2, "")
        assert "answers none of the 2 judged questions: the run asks 'q1', the qrels judge '301', '302'" in err
    # with -c trec_eval scores every judged question 0 (its bogus list of one unjudged document), and so here
    code, out, err = call(
        capsys, "eval", "--trec-format", "-c", "-m", "num_q", "-m", "map", "-m", "P.5", str(q), str(r)
    )
    assert code == 0, err
    assert out.splitlines() == [
        "num_q                 \tall\t2",
        "map                   \tall\t0.0000",
        "P_5                   \tall\t0.0000",
    ]


def test_a_nul_byte_is_refused_naming_its_line(tmp_path):
    _, r = _write(tmp_path, "q1 0 d1 1\n", "q1 Q0 d1 1 1 r\nq1 Q0 d\x002 2 0 r\n")
    with pytest.raises(VxEvalError, match=r"run:2: a NUL byte"):
        read_run(r)


def test_ids_that_are_not_utf8_are_written_back_as_read_by_every_format(tmp_path):
    q, r = tmp_path / "qrels", tmp_path / "run"
    q.write_bytes(b"q\xff1 0 d1 1\nq\xff1 0 d2 0\n")
    r.write_bytes(b"q\xff1 Q0 d1 1 3 r\nq\xff1 Q0 d\xfe2 2 2 r\n")
    for flags in (["-q"], ["-q", "-R", "qrels_jg"], ["-q", "-R", "qrels_prefs"]):
        done = subprocess.run(
            [sys.executable, "-m", "vx_eval", "eval", "--trec-format", *flags, str(q), str(r)],
            capture_output=True,
            env={**os.environ, "LC_ALL": "en_US.UTF-8", "PYTHONIOENCODING": "utf-8"},  # a strict UTF-8 stdout
        )
        assert done.returncode == 0, done.stderr.decode(errors="replace")
        assert b"\tq\xff1\t" in done.stdout
