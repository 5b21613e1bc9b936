"""`vx-eval eval --trec-format` prints what trec_eval prints, so scripts written for trec_eval keep working.

tests/data/trec_eval holds twelve TREC DL 2019 questions' graded judgements (from the shared collection), a
run over them (ties in score, a judged question with no results, a question nobody judged) and what the
real trec_eval 10.0 printed for them, made with::

    trec_eval -c -q $(cat measures.txt) qrels.txt run.txt > expected-q.txt
    trec_eval -c -l 2 $(cat measures.txt) qrels.txt run.txt > expected-l2.txt
"""

from __future__ import annotations

import gzip
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import pytrec_eval

from ...test_cli import call

DATA = Path(__file__).parents[2] / "data" / "trec_eval"
MEASURES = (DATA / "measures.txt").read_text().split()


def ours(capsys, *extra: str) -> str:
    # the run leaves judged questions unanswered: trec_eval 9's averaging over those it answers (trec_eval 10 stops)
    code, out, err = call(
        capsys, "eval", str(DATA / "qrels.txt"), str(DATA / "run.txt"), "--trec-format", "--answered-only", *extra
    )
    assert code == 0, err
    return out


@pytest.mark.parametrize(("flags", "expected"), [(("-q",), "expected-q.txt"), (("-l", "2"), "expected-l2.txt")])
def test_the_output_is_trec_evals_byte_for_byte(capsys, flags, expected):
    printed = ours(capsys, "-c", *flags, *MEASURES)  # the files were made with trec_eval -c
    assert printed == (DATA / expected).read_text()


def test_a_measure_trec_eval_lacks_is_refused_in_its_format(capsys):
    code, _, err = call(capsys, "eval", str(DATA / "qrels.txt"), str(DATA / "run.txt"), "--trec-format", "-m", "f1@10")
    assert code == 2 and "f1@10 has no trec_eval name" in err


def test_vx_evals_own_names_are_printed_in_trec_evals(capsys):
    printed = ours(capsys, "-m", "ndcg@10", "-m", "found@5", "-m", "mrr")
    # in trec_eval's own order (its measure table), not the order -m named them in
    assert [line.split("\t")[0].strip() for line in printed.splitlines()] == ["recip_rank", "ndcg_cut_10", "success_5"]


UPSTREAM = Path(__file__).parents[2] / "data" / "trec_eval10"


def theirs(expected: str, mine: list[str]) -> list[str]:
    """The lines of trec_eval's own output file `expected` for the measures `mine` prints, in its order."""
    names = {line.split()[0] for line in mine}
    return [line for line in (UPSTREAM / expected).read_text().splitlines() if line.split()[0] in names]


QUICKTEST = [
    ("qrels.test", "results.test", (), "out.test"),
    ("qrels.test.with-comments", "results.test", (), "out.test"),
    ("qrels.comment.test.gz", "results.comment.test.gz", (), "out.comment.test"),
    ("qrels.test", "results.test", ("-m", "all_trec"), "out.test.a"),
    ("qrels.test", "results.test", ("-m", "all_trec", "-q"), "out.test.aq"),
    ("qrels.test", "results.trunc", ("-m", "all_trec", "-q", "-c"), "out.test.aqc"),
    ("qrels.test", "results.trunc", ("-m", "all_trec", "-q", "-c", "-M100"), "out.test.aqcM"),
    ("qrels.rel_level", "results.test", ("-m", "all_trec", "-mrelstring.20", "-q", "-l2"), "out.test.aql"),
    ("prefs.test", "prefs.results.test", ("-m", "all_prefs", "-q", "-R", "prefs"), "out.test.prefs"),
    ("prefs.comment.test", "prefs.results.test", ("-m", "all_prefs", "-q", "-R", "prefs"), "out.test.prefs"),
    ("qrels.test", "results.test", ("-m", "all_prefs", "-q", "-R", "qrels_prefs"), "out.test.qrels_prefs"),
    ("qrels.123", "results.test", ("-m", "qrels_jg", "-q", "-R", "qrels_jg"), "out.test.qrels_jg"),
    ("qrels.comments.123", "results.test", ("-m", "qrels_jg", "-q", "-R", "qrels_jg"), "out.test.qrels_jg"),
    (
        "qrels.test",
        "results.test",
        (
            *("-q", "-miprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m", "recall.20,2000"),
            *("-m", "Rprec_mult.5.0,0.2,0.35", "-mutility.2,-1,0,0", "-m", "11pt_avg..25,.5,.75"),
            *("-mndcg.1=3,2=9,4=4.5", "-mndcg_cut.10,20,23.4", "-msuccess.2,5,20"),
        ),
        "out.test.meas_params",
    ),
    ("qrels.test", "results.test", ("-q", "-m", "all_trec", "-Z", str(UPSTREAM / "zscores_file")), "out.test.aqZ"),
]
"""All fifteen lines of trec_eval 10.0's `make quicktest`, with the same options (the comment test's 2.8 MB
run kept gzipped here)."""


def _unpacked(name: str, folder: Path) -> Path:
    """A test file as trec_eval reads it: gunzipped into `folder` where this repository keeps it gzipped."""
    if not name.endswith(".gz"):
        return UPSTREAM / name
    target = folder / name.removesuffix(".gz")
    target.write_bytes(gzip.decompress((UPSTREAM / name).read_bytes()))
    return target


@pytest.mark.parametrize(("qrels", "run", "flags", "expected"), QUICKTEST)
def test_trec_evals_quicktest_lines_give_its_bytes(capsys, tmp_path, qrels, run, flags, expected):
    judged, ranked = _unpacked(qrels, tmp_path), _unpacked(run, tmp_path)
    code, out, err = call(capsys, "eval", str(judged), str(ranked), "--trec-format", *flags)
    assert code == 0, err
    assert out == (UPSTREAM / expected).read_text()


def test_without_c_only_the_questions_the_run_answers_count_as_trec_eval_counts_them(capsys):
    """results.trunc answers fewer questions than qrels.test judges: with -c the others score 0 and count
    (trec_eval's own -c -q lines, among its all_trec ones), without -c they are left out."""
    qrels, run = str(UPSTREAM / "qrels.test"), str(UPSTREAM / "results.trunc")
    code, out, err = call(capsys, "eval", qrels, run, "--trec-format", "-c", "-q")
    assert code == 0, err
    expected = theirs("out.test.aqc", out.splitlines())
    assert out.splitlines() == expected
    code, out, err = call(capsys, "eval", qrels, run, "--trec-format", "-m", "num_q", "-m", "map", "-q")
    assert (code, out) == (2, "")  # trec_eval 10 stops at the first judged question the run does not answer
    assert "does not answer judged question" in err and "add -c" in err and "--answered-only" in err
    code, out, err = call(
        capsys, "eval", qrels, run, "--trec-format", "--answered-only", "-m", "num_q", "-m", "map", "-q"
    )
    assert code == 0, err
    answered = {line.split()[0] for line in (UPSTREAM / "results.trunc").read_text().splitlines() if line.strip()}
    asked = sorted({line.split()[1] for line in out.splitlines()} - {"all"})
    assert asked == sorted(answered & {line.split()[0] for line in (UPSTREAM / "qrels.test").read_text().splitlines()})
    lines = dict((line.split()[0], line.split()[2]) for line in out.splitlines() if line.split()[1] == "all")
    per_question = [float(line.split()[2]) for line in out.splitlines() if line.split()[1] != "all"]
    assert int(lines["num_q"]) == len(asked) < 3
    assert float(lines["map"]) == pytest.approx(sum(per_question) / len(per_question), abs=5e-5)


@pytest.mark.parametrize("qrels", ["qrels.test", "qrels.test.with-comments"])
def test_with_no_measure_named_the_output_is_trec_evals_default_byte_for_byte(capsys, qrels):
    """`make quicktest`'s first lines: `trec_eval QRELS RUN` with no -m prints trec_eval's official set
    (map, gm_map, Rprec, bpref, recip_rank, the eleven iprec_at_recall levels, P at nine cut-offs)."""
    code, out, err = call(capsys, "eval", str(UPSTREAM / qrels), str(UPSTREAM / "results.test"), "--trec-format")
    assert code == 0, err
    assert out == (UPSTREAM / "out.test").read_text()


def test_every_question_of_the_official_set_matches_trec_evals_own_lines(capsys):
    """With -q: every question's lines (questions sorted, measures in trec_eval's order, gm_map only over
    all) equal trec_eval's own, which `-m all_trec -q` printed among its other measures."""
    code, out, err = call(
        capsys, "eval", str(UPSTREAM / "qrels.test"), str(UPSTREAM / "results.test"), "--trec-format", "-q"
    )
    assert code == 0, err
    mine = out.splitlines()
    expected = theirs("out.test.aq", mine)
    assert mine == expected and len(mine) == 111


def test_measures_print_in_trec_evals_order_whatever_order_they_are_named_in(capsys):
    code, out, _ = call(
        capsys,
        "eval",
        str(UPSTREAM / "qrels.test"),
        str(UPSTREAM / "results.test"),
        "--trec-format",
        "-m",
        "P.10,5",
        "-m",
        "iprec_at_recall..50,.10",
        "-m",
        "bpref",
        "-m",
        "map",
    )
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == [
        "map",
        "bpref",
        "iprec_at_recall_0.10",
        "iprec_at_recall_0.50",
        "P_5",
        "P_10",
    ]


def test_a_grade_below_0_is_unjudged_as_trec_eval_reads_it_and_said_so(capsys):
    """qrels.rel_level marks 304 pooled documents -1: judged by nobody. bpref, num_rel and the rest follow
    trec_eval's lines at -l 2 (they once counted those documents as judged non-relevant)."""
    code, out, err = call(
        capsys,
        "eval",
        str(UPSTREAM / "qrels.rel_level"),
        str(UPSTREAM / "results.test"),
        "--trec-format",
        "-q",
        "-l",
        "2",
    )
    assert code == 0, err
    assert "304 grades are below 0" in err and "read as unjudged, as trec_eval reads them" in err
    mine = out.splitlines()
    expected = theirs("out.test.aql", mine)
    assert mine == expected and any(line.startswith("bpref") for line in mine)


def test_max_per_query_cuts_each_list_as_trec_evals_minus_M_does(capsys):
    """`make quicktest`'s -c -M100 line on the truncated run: the official lines equal trec_eval's own."""
    code, out, err = call(
        capsys,
        "eval",
        str(UPSTREAM / "qrels.test"),
        str(UPSTREAM / "results.trunc"),
        "--trec-format",
        "-c",
        "-q",
        "-M",
        "100",
    )
    assert code == 0, err
    expected = theirs("out.test.aqcM", out.splitlines())
    assert out.splitlines() == expected


def test_judged_only_scores_as_trec_evals_minus_J_per_question(capsys):
    """-J takes unjudged results out before measuring: every question's map, P_10, Rprec, bpref, recip_rank
    and ndcg equal pytrec_eval's with judged_docs_only_flag (trec_eval inside)."""
    import pytrec_eval

    qrels: dict[str, dict[str, int]] = {}
    for line in (UPSTREAM / "qrels.test").read_text().splitlines():
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
    run: dict[str, dict[str, float]] = {}
    for line in (UPSTREAM / "results.test").read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
    names = {"map": "map", "P_10": "P.10", "Rprec": "Rprec", "bpref": "bpref", "recip_rank": "recip_rank"}
    reference = pytrec_eval.RelevanceEvaluator(qrels, {*names, "ndcg"}, judged_docs_only_flag=True).evaluate(run)
    flags = [f for name in (*names.values(), "ndcg") for f in ("-m", name)]
    code, out, err = call(
        capsys,
        "eval",
        str(UPSTREAM / "qrels.test"),
        str(UPSTREAM / "results.test"),
        "--trec-format",
        "-q",
        "-J",
        *flags,
    )
    assert code == 0, err
    checked = 0
    for line in out.splitlines():
        name, qid, value = line.split()
        if qid != "all":
            assert float(value) == pytest.approx(reference[qid][name], abs=5e-5), (qid, name)
            checked += 1
    assert checked == 3 * 6


def test_no_summary_prints_the_questions_lines_only(capsys):
    code, out, _ = call(
        capsys, "eval", str(UPSTREAM / "qrels.test"), str(UPSTREAM / "results.test"), "--trec-format", "-q", "-n"
    )
    assert code == 0 and out and all(line.split("\t")[1] != "all" for line in out.splitlines())


def test_trec_evals_other_measures_match_its_own_lines(capsys):
    """set_P, set_recall, set_relative_P, set_map, set_F, relative_P, gm_bpref, 11pt_avg, Rprec_mult, unj,
    utility, num_nonrel_judged_ret (a count, summed) and binG, every question and over all, as
    `trec_eval -m all_trec -q` printed them."""
    flags = (
        "set_P set_recall set_relative_P set_map set_F relative_P gm_bpref 11pt_avg Rprec_mult unj utility "
        "num_nonrel_judged_ret binG"
    ).split()
    code, out, err = call(
        capsys,
        "eval",
        str(UPSTREAM / "qrels.test"),
        str(UPSTREAM / "results.test"),
        "--trec-format",
        "-q",
        *[f for name in flags for f in ("-m", name)],
    )
    assert code == 0, err
    mine = out.splitlines()
    names = {line.split()[0] for line in mine}
    assert {"gm_bpref", "11pt_avg", "relative_P_1000", "set_F", "Rprec_mult_2.00", "unj_20", "binG"} <= names
    assert mine == theirs("out.test.aq", mine)


def test_trec_evals_parameter_syntax_gives_its_own_lines(capsys):
    """The parameters of `make quicktest`'s measure line that vx-eval has: cut-offs listed in any order (and
    23.4 read as 23), recall levels written ``..10,.20``; the lines equal trec_eval's own."""
    code, out, err = call(
        capsys,
        "eval",
        str(UPSTREAM / "qrels.test"),
        str(UPSTREAM / "results.test"),
        "--trec-format",
        "-q",
        *("-m", "iprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m", "recall.20,2000"),
        *("-m", "ndcg_cut.10,20,23.4", "-m", "success.2,5,20", "-m", "Rprec_mult.5.0,0.2,0.35"),
    )
    assert code == 0, err
    mine = out.splitlines()
    names = {line.split()[0] for line in mine}
    assert {"ndcg_cut_23", "P_3", "iprec_at_recall_0.25", "success_20", "recall_2000", "Rprec_mult_5.00"} <= names
    assert mine == theirs("out.test.meas_params", mine)


def test_a_measure_named_again_without_parameters_keeps_those_it_was_given(capsys):
    """trec_eval keeps the last parameters a measure was given, whatever comes after: ``-m relstring.20 -m
    relstring`` is relstring_20 (its own lines, among -m all_trec -mrelstring.20's)."""
    code, out, err = call(
        capsys,
        "eval",
        str(UPSTREAM / "qrels.rel_level"),
        str(UPSTREAM / "results.test"),
        "--trec-format",
        *("-q", "-l2", "-mrelstring.20", "-m", "relstring"),
    )
    assert code == 0, err
    mine = out.splitlines()
    assert len(mine) == 3 and all(line.startswith("relstring_20") for line in mine)
    assert mine == theirs("out.test.aql", mine)


def test_rbp_under_trec_evals_name_is_trec_evals_and_vx_evals_keeps_its_own(capsys):
    """trec_eval's rbp (persistence 0.9, graded gains scaled into [0, 1]) and rbp_resid, on binary and on graded
    judgements with unjudged marks, equal its own lines; vx-eval's own output keeps vx-eval's rbp (p 0.8)."""
    for qrels, run, expected, extra in (
        ("qrels.test", "results.test", "out.test.aq", ()),
        ("qrels.rel_level", "results.test", "out.test.aql", ("-l", "2")),
    ):
        code, out, err = call(
            capsys,
            "eval",
            str(UPSTREAM / qrels),
            str(UPSTREAM / run),
            "--trec-format",
            "-q",
            *extra,
            *("-m", "rbp", "-m", "rbp_resid"),
        )
        assert code == 0, err
        mine = out.splitlines()
        assert len(mine) == 8 and mine == theirs(expected, mine)
    code, out, _ = call(capsys, "eval", str(UPSTREAM / "qrels.test"), str(UPSTREAM / "results.test"), "-m", "rbp")
    assert code == 0 and "rbp " in out.replace("\t", " ")
    trec_all = next(line for line in theirs("out.test.aq", ["rbp"]) if "\tall\t" in line).split()[-1]
    ours_all = next(line for line in out.splitlines() if line.startswith("rbp")).split()[-1]
    assert ours_all != trec_all  # p 0.8 here, 0.9 there: a different measure under its own parameters


@pytest.mark.parametrize(
    ("spelled", "said"),
    [
        ("iprec_at_recall.1.2.3", "'1.2.3' is not a number"),
        ("iprec_at_recall..5,2", "recall must lie between 0 and 1"),
        ("Rprec_mult.0", "m must lie above 0"),
        ("utility.1,2,3", "give four"),
        ("utility.1,x,3,4", "is not a list of numbers"),
        ("ndcg.a=3", "write grade=gain pairs"),
        ("11pt_avg..5,1.5", "each must lie between 0 and 1"),
        ("P.five", "write its cut-offs as whole numbers, e.g. P.5,10"),
        ("map(1,2)", "map takes no list of values"),
    ],
)
def test_a_parameter_out_of_its_range_is_one_line_and_exit_2(capsys, spelled, said):
    code, _, err = call(
        capsys, "eval", str(UPSTREAM / "qrels.test"), str(UPSTREAM / "results.test"), "--trec-format", "-m", spelled
    )
    assert code == 2 and said in err and "Traceback" not in err


def _write(folder: Path, name: str, text: str) -> str:
    (folder / name).write_text(text)
    return str(folder / name)


@pytest.mark.parametrize(
    ("judged", "flags", "said"),
    [
        ("q 0 d 1\n", ("-R", "prefs"), "holds 5 fields (qid jg jsg docno rel_level)"),
        ("q 0 a b 1\n", ("-R", "prefs", "-m", "map"), "only its preference measures"),
        ("q u s1 a 2\nq u s1 b 1\nq u s2 b 2\nq u s2 a 1\n", ("-R", "prefs"), "prefers two documents each to"),
        ("q u s1 a 2\nq u s1 a 1\n", ("-R", "prefs"), "judged at two levels in one judgement sub-group"),
        ("q u s1 a 1\nq u s2 a 0\n", ("-R", "prefs"), "both level 0 and a level above 0"),
        ("q 0 a 1\n", ("-R", "qrels_jg", "-m", "ndcg"), "only its judgement-group measures"),
        ("q 0 a one\n", ("-R", "qrels_jg"), "a grade is a whole number"),
        ("q 0 a 1\n", ("-R", "qrels_jg", "-m", "P_avgjg.five"), "write its cut-offs as whole numbers"),
        ("q 0 a 1\n", ("-Z", "zscores"), "write 'question measure mean stddev'"),
    ],
)
def test_bad_preferences_groups_and_zscores_are_one_line_and_exit_2(capsys, tmp_path, judged, flags, said):
    judgements = _write(tmp_path, "judged", judged)
    run = _write(tmp_path, "run", "q Q0 a 1 2 r\nq Q0 b 2 1 r\n")
    _write(tmp_path, "zscores", "q map 0.5\n")
    flags = tuple(str(tmp_path / f) if f == "zscores" else f for f in flags)
    code, _, err = call(capsys, "eval", judgements, run, "--trec-format", *flags)
    assert code == 2 and said in err and "Traceback" not in err, err
    code, _, err = call(capsys, "eval", judgements, run, *flags)  # these are trec_eval's: its format only
    assert code == 2 and ("add --trec-format" in err or said in err) and "Traceback" not in err


def test_a_run_from_standard_input_and_the_collection_size_are_read_as_trec_eval_reads_them(tmp_path):
    """``-`` reads the run from standard input (trec_eval 10); -N gives utility's fourth coefficient the
    collection's size: 1 relevant retrieved, 1 not, R = 2, N = 10: 1 + 2 x 1 + 3 x 1 + 4 x (10 + 1 - 2 - 2)."""
    judged = _write(tmp_path, "judged", "q 0 a 1\nq 0 c 1\nq 0 b 0\n")
    done = subprocess.run(
        [sys.executable, "-m", "vx_eval", "eval", "--trec-format", "-m", "utility.1,2,3,4", "-N", "10", judged, "-"],
        input="q Q0 a 1 2 r\nq Q0 b 2 1 r\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "utility_1,2,3,4       \tall\t34.0000\n"
    assert not list(Path(tempfile.gettempdir()).glob("vx-eval-stdin-*"))  # the spooled run is removed


def _random_case(rng: random.Random, folder: Path) -> tuple[Path, Path, dict, dict]:
    """Judgements graded -1 (pooled, unjudged) to 3 and a run with tied scores, a question it leaves out and
    one nobody judged; as files and as pytrec_eval's dicts."""
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(7):
        qid = f"q{q}"
        docs = rng.sample(range(60), rng.randint(1, 25))
        qrels[qid] = {f"d{d}": rng.choice([-1, 0, 0, 0, 1, 1, 2, 3]) for d in docs}
        if q == 6:
            continue  # judged, not answered
        answered = rng.sample(range(60), rng.randint(1, 40))
        run[qid] = {f"d{d}": float(rng.choice([1, 2, 2, 3, 4, 5, 5, 6])) + rng.choice([0, 0.5]) for d in answered}
    run["nobody"] = {"d1": 1.0}
    (folder / "qrels").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    lines = [f"{q} Q0 {d} {i} {s} r\n" for q, docs in run.items() for i, (d, s) in enumerate(docs.items())]
    rng.shuffle(lines)  # trec_eval sorts by score; so must we
    (folder / "run").write_text("".join(lines))
    return folder / "qrels", folder / "run", qrels, run


def _printed(out: str) -> dict[tuple[str, str], float]:
    """Each question's printed values by (measure, question); relstring, which is text, left out."""
    rows = [line.split("\t") for line in out.splitlines()]
    return {(m.strip(), q): float(v) for m, q, v in rows if q != "all" and m.strip() != "relstring"}


NOT_NINE = ("runid", "num_q", "iprec_at_recall", "11pt_avg")
"""What pytrec_eval (trec_eval 9.0.8's code) computes otherwise than trec_eval 10.0, which rounds where 9 cut
(``lround(0.3 x 13)`` is 4 relevant, where 9 took 3): the recall levels; the quicktest lines check them."""


def test_random_cases_agree_with_trec_evals_code_per_question(capsys, tmp_path):
    """pytrec_eval runs trec_eval's own C code: on random graded judgements (with pooled-unjudged marks) and
    runs (ties, shuffled lines), every measure it has equals ours per question, at -l 1 and -l 2; where the
    real `trec_eval` is on the PATH, its whole output for all_trec and the parameter forms equals ours too."""
    rng = random.Random(11)
    binary = shutil.which("trec_eval")
    compared = set()
    for case in range(6):
        folder = tmp_path / str(case)
        folder.mkdir()
        qrels_path, run_path, qrels, run = _random_case(rng, folder)
        level = 1 + case % 2
        code, out, err = call(
            capsys, "eval", str(qrels_path), str(run_path), "--trec-format", "--answered-only", "-q", "-m", "all_trec",
            "-l", str(level),
        )  # fmt: skip
        assert code == 0, err
        ours = _printed(out)
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, pytrec_eval.supported_measures, relevance_level=level)
        for qid, values in evaluator.evaluate({q: r for q, r in run.items() if q in qrels}).items():
            for name, value in values.items():
                if (name, qid) in ours and not name.startswith(NOT_NINE):
                    assert ours[name, qid] == pytest.approx(value, abs=6e-5), (case, name, qid)
                    compared.add(name)
        if binary:
            for flags in (
                ("-c", "-m", "all_trec"),
                ("-c", "-m", "utility.2,-1,1,1", "-N", "100", "-m", "ndcg.0=1,2=5", "-m", "11pt_avg..2,.5,.8"),
                ("-c", "-M", "20", "-m", "dcg.3=1", "-m", "yaap", "-m", "P.3,7"),
                ("-c", "-m", "ideal_dcg.1=2", "-m", "Rprec_mult.0.5,1.5"),  # two of (n)dcg with gains crash it
            ):
                argv = [*flags, "-q", "-l", str(level), str(qrels_path), str(run_path)]
                code, out, err = call(capsys, "eval", "--trec-format", *argv)
                real = subprocess.run([binary, *argv], capture_output=True, text=True, check=False)
                assert code == 0 and out == real.stdout, (case, flags)
    assert len(compared) >= 78, " ".join(
        sorted(compared)
    )  # all but gm_map and gm_bpref (over all only)  # every measure pytrec_eval computes, at each cut-off
