"""`vx-eval eval` (TREC files, trec_eval semantics) and `vx-eval compare` (changes, significance, gates)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vx_eval.core.errors import VxEvalError
from vx_eval.core.report.compare import Gate

from .conftest import quickstart_copy
from .test_cli import call

QRELS = "q1 0 a 2\nq1 0 b 1\nq1 0 z 0\nq2 0 c 1\nq3 0 d 1\n"
RUN = "q1 Q0 x 1 3.0 t\nq1 Q0 a 2 2.0 t\nq1 Q0 b 3 2.0 t\nq2 Q0 c 1 9.0 t\nq9 Q0 c 1 9.0 t\n"


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "qrels").write_text(QRELS)
    (tmp_path / "run").write_text(RUN)
    return tmp_path / "qrels", tmp_path / "run"


def test_eval_prints_trec_eval_style_lines(capsys, files):
    code, out, _ = call(capsys, "eval", str(files[0]), str(files[1]), "-m", "P_2", "-m", "recip_rank")
    assert code == 0
    # q1: tie a/b at 2.0 -> b before a (id descending); q3 has no results and scores 0; q9 is not judged
    assert out.splitlines() == [
        "num_q           \tall\t3",
        "p@2             \tall\t0.3333",
        "mrr             \tall\t0.5000",
    ]


def test_eval_json_per_query_and_threshold(capsys, files):
    code, out, _ = call(capsys, "eval", str(files[0]), str(files[1]), "-m", "mrr", "-q", "--json", "-l", "2")
    assert code == 0
    result = json.loads(out)
    assert result["per_query"] == {"q1": {"mrr": 1 / 3}, "q2": {"mrr": 0.0}, "q3": {"mrr": 0.0}}
    assert result["all"]["mrr"] == pytest.approx(1 / 9)


def test_eval_reads_a_golden_file_as_judgements(capsys, files, tmp_path):
    golden = tmp_path / "golden.jsonl"
    golden.write_text(
        '{"id": "q1", "question": "?", "expected": ["a"]}\n{"id": "q2", "question": "!", "expected": ["c"]}\n'
    )
    code, out, _ = call(capsys, "eval", str(golden), str(files[1]), "-m", "mrr", "--json")
    assert code == 0 and json.loads(out) == {"mrr": pytest.approx((1 / 3 + 1) / 2)}


def test_eval_names_a_bad_line_or_a_missing_file(capsys, files, tmp_path):
    bad = tmp_path / "bad"
    bad.write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 high t\n")
    code, _, err = call(capsys, "eval", str(files[0]), str(bad))
    assert code == 2 and f"{bad}:2: score 'high' is not a number" in err
    short = tmp_path / "short"
    short.write_text("q1 Q0 a 1 2.0 t\nq1 a\n")
    assert (
        f"{short}:2: a run file line is 'qid Q0 doc rank score tag' (or 3 fields); this line has 2 fields, 6 or more expected"
        in call(capsys, "eval", str(files[0]), str(short))[2]
    )
    assert "run file" in call(capsys, "eval", str(files[0]), str(tmp_path / "nope"))[2]
    assert "unknown measure 'ndgc@10'" in call(capsys, "eval", str(files[0]), str(files[1]), "-m", "ndgc@10")[2]


@pytest.fixture
def two_runs(capsys, tmp_path: Path, shared_cache: Path) -> Path:
    """Two runs of the quickstart config (keyword only) that differ only in their seed."""
    for seed in (0, 7):
        config = quickstart_copy(tmp_path, shared_cache, name=f"seed{seed}.yaml")
        config.write_text(config.read_text().replace("seed: 0", f"seed: {seed}"))
        assert call(capsys, "run", str(config))[0] == 0
    return tmp_path / "runs"


def test_compare_two_seeds_of_one_config_finds_no_significant_change(capsys, two_runs):
    first, second = sorted(p.name for p in (two_runs / "retrieval" / "runs").iterdir())
    code, out, _ = call(
        capsys,
        "compare",
        first,
        "latest",
        "--runs",
        str(two_runs),
        "--json",
        "--fail-if",
        "ndcg@10 drops by more than 0.02",
    )
    result = json.loads(out)
    assert code == 0 and result["after"] == second and result["failed_gates"] == []
    assert result["rows"] and not any(r["significant"] for r in result["rows"])


def test_a_gate_fails_only_on_a_drop_beyond_tolerance_that_is_significant(capsys, two_runs, tmp_path):
    folder = two_runs / "retrieval" / "runs"
    first = sorted(folder.iterdir())[0] / "report.json"
    worse = json.loads(first.read_text())
    setup = worse["setups"][0]
    scores = setup["per_question"]["metrics"]["ndcg@10"]
    setup["per_question"]["metrics"]["ndcg@10"] = [0.0] * len(scores)  # every question lost
    worse["id"] = "worse"
    (tmp_path / "worse.json").write_text(json.dumps(worse))
    code, _, err = call(
        capsys, "compare", str(first), str(tmp_path / "worse.json"), "--fail-if", "ndcg@10 drops by more than 0.02"
    )
    assert code == 3 and "gate failed: local.keyword: ndcg@10 dropped by" in err
    # a drop within the tolerance passes
    code, out, _ = call(
        capsys, "compare", str(first), str(tmp_path / "worse.json"), "--fail-if", "ndcg@10 drops by more than 100%"
    )
    assert code == 0 and "Gate passed: “ndcg@10 drops by more than 100%” is true of none of the 1 setups" in out
    # a drop beyond the tolerance that a test cannot tell from noise passes too
    slightly = json.loads(first.read_text())
    values = slightly["setups"][0]["per_question"]["metrics"]["ndcg@10"]
    i = next(i for i, v in enumerate(values) if v > 0.5)
    values[i] = 0.0
    (tmp_path / "slightly.json").write_text(json.dumps(slightly))
    code, _, _ = call(
        capsys, "compare", str(first), str(tmp_path / "slightly.json"), "--fail-if", "ndcg@10 drops by more than 0.01"
    )
    assert code == 0


def test_no_gate_passes_on_a_run_whose_searches_failed(capsys, two_runs, tmp_path):
    """Averages over the questions that did not fail can look as good as ever: the gate trips instead."""
    first = sorted((two_runs / "retrieval" / "runs").iterdir())[0] / "report.json"
    partial = json.loads(first.read_text())
    setup = partial["setups"][0]
    setup["counts"]["failed"], setup["counts"]["evaluated"] = 2, setup["counts"]["evaluated"] - 2
    partial["id"] = "partial"
    (tmp_path / "partial.json").write_text(json.dumps(partial))
    gate = ["--fail-if", "ndcg@10 drops by more than 100%"]
    code, _, err = call(capsys, "compare", str(first), str(tmp_path / "partial.json"), *gate)
    assert code == 3 and "gate failed: local.keyword: 2 searches failed in the after run (partial)" in err
    assert call(capsys, "compare", str(first), str(tmp_path / "partial.json"))[0] == 0  # no gate: shown, not judged


def test_compare_refuses_runs_of_different_golden_files_unless_told(capsys, two_runs, tmp_path):
    first = sorted((two_runs / "retrieval" / "runs").iterdir())[0] / "report.json"
    other = json.loads(first.read_text())
    other["golden"]["sha256"] = "0" * 64
    (tmp_path / "other.json").write_text(json.dumps(other))
    code, _, err = call(capsys, "compare", str(first), str(tmp_path / "other.json"))
    assert code == 2 and "the runs read different golden files" in err and "--allow-different-golden" in err
    assert call(capsys, "compare", str(first), str(tmp_path / "other.json"), "--allow-different-golden")[0] == 0


@pytest.mark.parametrize(
    ("text", "measure", "tolerance"),
    [
        ("ndcg@10 drops by more than 0.02", "ndcg@10", 0.02),
        ("recall_100 drops by more than 2 points", "recall@100", 0.02),
        ("mrr drops by more than 10%", "mrr", 0.05),
    ],
)
def test_gates_parse(text, measure, tolerance):
    gate = Gate.parse(text)
    assert gate.measure == measure and gate.tolerance(0.5) == pytest.approx(tolerance)


def test_a_gate_that_is_not_one_says_how_to_write_it():
    with pytest.raises(VxEvalError, match='write e.g. "ndcg@10 drops by more than 0.02"'):
        Gate.parse("ndcg@10 < 0.5")


def test_compare_changed_shows_only_real_changes_with_latency_and_settings(capsys, two_runs, tmp_path):
    folder = two_runs / "retrieval" / "runs"
    first = sorted(folder.iterdir())[0] / "report.json"
    other = json.loads(first.read_text())
    setup = other["setups"][0]
    setup["per_question"]["metrics"]["ndcg@10"] = [0.0] * len(setup["per_question"]["metrics"]["ndcg@10"])
    setup["per_question"]["times_ms"] = [t * 3 if t is not None else None for t in setup["per_question"]["times_ms"]]
    other["settings"]["search"]["rerank_depth"] = 5
    other["settings"]["depth"] = 50
    other["id"] = "other"
    (tmp_path / "other.json").write_text(json.dumps(other))
    code, out, err = call(capsys, "compare", str(first), str(tmp_path / "other.json"), "--changed")
    assert code == 0, err
    assert "warning: the two runs searched differently (depth, search.rerank_depth)" in " ".join(out.split())
    assert "depth: 20 → 50 (changes the results)" in out and "search.rerank_depth: 20 → 5" in out
    table = out[out.index("shared questions") :]
    assert "ndcg@10" in table and "found@1 " not in table.split("search times")[0]  # only what changed
    assert "search times" in out and "3.00×" in out and "▲" in out
    code, _, err = call(capsys, "compare", str(first), str(tmp_path / "other.json"), "--same-settings")
    assert code == 2 and "the runs searched with different settings (depth: 20 → 50" in err
    code, out, _ = call(capsys, "compare", str(first), str(first), "--changed")
    assert code == 0 and "No measure changed beyond its 95% interval" in out and "Settings that differ" not in out
