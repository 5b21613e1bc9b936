"""The rankings a run keeps, reused: exported as TREC files that pytrec_eval scores to the report's numbers,
and rescored with new measures, another threshold or a judge while the engine cannot even be opened."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import pytrec_eval
import yaml

import vx_eval
from vx_eval.cli import cli
from vx_eval.core.errors import ConfigError, StoreError
from vx_eval.core.golden.sources import read_qrels
from vx_eval.python.commands import run

from ...conftest import shared

TREC = {"ndcg@10": "ndcg_cut_10", "map": "map", "recall@100": "recall_100", "mrr": "recip_rank", "p@5": "P_5"}


@pytest.fixture(scope="module")
def scifact_run(tmp_path_factory):
    """A keyword run over a SciFact slice (60 questions, 800 documents plus every judged one), saved."""
    folder = tmp_path_factory.mktemp("scifact-slice")
    config = {
        "name": "scifact-slice",
        "golden": {"path": str(shared("scifact")), "limit": 60},
        "corpus": {"path": str(shared("scifact")), "limit": 800},
        "save_to": "runs",
        "targets": [
            {"name": "Local", "engine": "sqlite", "options": {"path": "s.db", "dense_models": [], "chunk_words": 0}}
        ],
        "evaluation": {"metrics": ["ndcg@10", "map", "recall@100", "mrr"], "depth": 100, "bootstrap": 100},
    }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    result = run(path)
    return folder, path, result.report


def read_run(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    return run


def _invoke(*args: str) -> str:
    from click.testing import CliRunner

    outcome = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert outcome.exit_code == 0, outcome.output
    return outcome.output


def test_rankings_are_kept_beside_the_report_and_read_back_only_when_asked(scifact_run):
    folder, _, report = scifact_run
    run_folder = folder / "runs" / "retrieval" / "runs" / report.id
    on_disk = json.loads((run_folder / "report.json").read_text(encoding="utf-8"))
    assert on_disk["rankings"]["file"] == "rankings.parquet" and (run_folder / "rankings.parquet").is_file()
    assert all(s["per_question"]["results"] == [] for s in on_disk["setups"])
    assert (run_folder / "report.json").stat().st_size < (run_folder / "rankings.parquet").stat().st_size * 2
    light = vx_eval.load_report(report.id, runs=folder / "runs", rankings=False)
    assert light.setup("local.keyword").per_question.results == []
    assert light.setup("local.keyword").summary == report.setup("local.keyword").summary
    full = vx_eval.load_report(report.id, runs=folder / "runs")
    assert full.setup("local.keyword").per_question.results == report.setup("local.keyword").per_question.results
    assert full == report
    copy = folder / "tampered"
    shutil.copytree(folder / "runs", copy)
    (copy / "retrieval" / "runs" / report.id / "rankings.parquet").write_bytes(b"PAR1 not the file")
    with pytest.raises(StoreError, match="not the ones it saved"):
        vx_eval.load_report(report.id, runs=copy)


def test_exported_files_score_to_the_reports_numbers_in_pytrec_eval(scifact_run):
    folder, _, report = scifact_run
    out = folder / "trec"
    _invoke("runs", "export", report.id, str(folder / "runs"), "--trec", str(out))
    assert sorted(p.name for p in out.iterdir()) == ["local.keyword.trec", "qrels.txt"]
    qrels = read_qrels((out / "qrels.txt").read_text(encoding="utf-8"), "qrels.txt")
    run = read_run(out / "local.keyword.trec")
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(TREC.values()) - {"P_5"}).evaluate(run)
    setup = report.setup("local.keyword")
    assert len(theirs) == setup.counts.evaluated == 60
    for measure, name in TREC.items():
        if measure == "p@5":
            continue
        ours = setup.per_question.metrics[measure]
        for i, qid in enumerate(report.question_ids):
            assert ours[i] == pytest.approx(theirs[qid][name], abs=1e-9), (measure, qid)


def test_a_measure_is_added_with_the_engine_gone_and_the_new_report_names_its_run(scifact_run, tmp_path):
    folder, _, report = scifact_run
    copy = tmp_path / "runs"
    shutil.copytree(folder / "runs", copy)
    index = folder / "s.db"
    hidden = index.rename(folder / "s.db.away")  # nothing can be searched, or even opened
    try:
        output = _invoke("runs", "rescore", report.id, str(copy), "-m", "p@5", "-m", "bpref", "-m", "err@10")
    finally:
        hidden.rename(index)
    assert "Rescored from run" in output
    new_id = max(p.name for p in (copy / "retrieval" / "runs").iterdir())
    new = vx_eval.load_report(new_id, runs=copy)
    assert new.id != report.id and new.derived_from.run == report.id
    old, now = report.setup("local.keyword"), new.setup("local.keyword")
    assert now.per_question.times_ms == old.per_question.times_ms and now.times_ms == old.times_ms
    for measure in ("ndcg@10", "map", "mrr"):
        assert now.per_question.metrics[measure] == old.per_question.metrics[measure]
    exported = tmp_path / "trec"
    vx_eval.export_trec(new, exported, runs=copy)
    qrels = read_qrels((exported / "qrels.txt").read_text(encoding="utf-8"), "qrels")
    run = read_run(exported / "local.keyword.trec")
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"P_5", "bpref"}).evaluate(run)
    for i, qid in enumerate(new.question_ids):
        assert now.per_question.metrics["p@5"][i] == pytest.approx(theirs[qid]["P_5"], abs=1e-12)
        assert now.per_question.metrics["bpref"][i] == pytest.approx(theirs[qid]["bpref"], abs=1e-12)
    assert now.summary["err@10"] is not None and "err@10" not in old.summary


def test_rescoring_from_python_changes_the_threshold_and_refuses_what_it_cannot_do(project):
    config = project.write_config()
    report = run(config).report
    runs = project / "runs"
    strict = vx_eval.rescore(report.id, runs=runs, relevance_threshold=2)
    assert strict.settings.relevance_threshold == 2
    # only q4 grades its answer 2: the others have nothing relevant at grade 2 and score 0 on found@10
    values = dict(zip(strict.question_ids, strict.setup("local.keyword").per_question.metrics["found@10"], strict=True))
    assert values["q1"] == 0.0 and values["q4"] == 1.0
    with pytest.raises(ConfigError, match="ndcg@ten|measure"):
        vx_eval.rescore(report.id, ["ndcg@ten"], runs=runs)
    with pytest.raises(ConfigError, match="judge reads the documents"):
        vx_eval.rescore(report.id, runs=runs, judge="cross-encoder")
    saved = vx_eval.rescore(report.id, ["p@5"], runs=runs, save=True)
    assert vx_eval.load_report(saved.id, runs=runs).derived_from.run == report.id


def test_a_judge_grades_the_kept_rankings_without_searching(project):
    config = project.write_config()
    report = run(config).report
    judged = vx_eval.rescore(report.id, runs=project / "runs", judge="cross-encoder", config=config)
    assert judged.judge is not None and judged.judge.judge == "cross-encoder"
    assert judged.judge.grades_from.judge > 0
    assert judged.setup("local.keyword").per_question.times_ms == report.setup("local.keyword").per_question.times_ms


def test_export_writes_csv_and_parquet_of_every_measure(project, tmp_path):
    report = run(project.write_config()).report
    out = tmp_path / "measures.csv"
    _invoke("runs", "export", report.id, str(project / "runs"), "--csv", str(out))
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "setup,question,status,time_ms,position,measure,value"
    assert len(lines) == 1 + len(report.setups) * len(report.question_ids) * len(report.settings.metrics)
    assert lines[1].split(",")[0] == "local.keyword"
    parquet = tmp_path / "measures.parquet"
    _invoke("runs", "export", report.id, str(project / "runs"), "--parquet", str(parquet))
    import pandas

    frame = pandas.read_parquet(parquet)
    assert len(frame) == len(lines) - 1 and frame.measure.iloc[0] == lines[1].split(",")[5]


def test_exporting_a_run_graded_by_a_judge_writes_its_grades_and_eval_gives_the_reports_numbers(tmp_path):
    """Questions with no expected documents, graded by the judge alone: the judge's grades are the qrels
    (they were once left out, and an empty qrels.txt scored nothing), so `vx-eval eval` on the export gives
    every setup's numbers in the report."""
    from vx_eval.core.trec.files import evaluate_run, read_judgements
    from vx_eval.testing.conformance import copy_collection

    copy_collection(tmp_path)
    rows = [
        {"id": "q1", "question": "Can I postpone a loan payment after a disaster?", "reference": "Yes."},
        {"id": "q2", "question": "How much does a wire abroad cost?", "reference": "35 dollars."},
        {"id": "q3", "question": "Can I freeze a lost card?", "expected": ["card-lost"]},
    ]
    report = vx_eval.evaluate(
        {"Local": {"engine": "sqlite", "options": {"path": str(tmp_path / "j.db"), "dense_models": ["minilm"]}}},
        rows,
        corpus=tmp_path / "docs.jsonl",
        metrics=["ndcg@10", "dcg@10", "found@10"],
        judge="cross-encoder",
        judge_depth=5,
        save_to=tmp_path / "runs",
        models={"scores": str(tmp_path / "scores.db"), "embeddings": str(tmp_path / "embeddings.db")},
    )
    assert report.judge is not None and report.judge.grades_from.judge > 0
    out = tmp_path / "trec"
    written = vx_eval.export_trec(report, out, runs=tmp_path / "runs", golden=rows)
    qrels = read_judgements(out / "qrels.txt")
    assert {"q1", "q2", "q3"} <= set(qrels.question_ids)  # the judge's grades, where no person labelled
    threshold = report.settings.relevance_threshold
    for setup in report.setups:
        run = next(Path(w) for w in written if Path(w).name == f"{setup.key}.trec")
        again = evaluate_run(qrels, run, ["ndcg@10", "dcg@10", "found@10"], threshold=threshold).means()
        for name in ("ndcg@10", "dcg@10", "found@10"):
            assert again[name] == pytest.approx(setup.summary[name], abs=1e-9), (setup.key, name)
