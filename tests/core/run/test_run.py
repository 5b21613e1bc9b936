"""The run end to end on the embedded engine: report, missing documents, failures, order, saving."""

from __future__ import annotations

import json
import os
import types
from pathlib import Path

import pytest

from vx_eval import hookimpl
from vx_eval.core.config.experiment import load_config
from vx_eval.core.contracts.engine import Hit, Setup
from vx_eval.core.errors import GoldenError, VxEvalError
from vx_eval.core.plugins import get_plugin_manager, load_plugins
from vx_eval.core.report.saving import new_run_id
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment


class Notes:
    """A `Progress` that records notes and bar totals."""

    def __init__(self):
        self.notes, self.bars = [], []

    def start(self, description, total):
        self.bars.append((description, total))
        return lambda n: None

    def note(self, message):
        self.notes.append(message)


def run(config: Path, plugins, **options):
    progress = Notes()
    result = run_experiment(load_config(config, plugins), plugins, RunOptions(progress=progress, **options))
    return result, progress


def with_setups(*providers):
    """Plugins with extra setup providers registered the way a third party registers them."""
    module = types.SimpleNamespace(
        vx_eval_register_setups=hookimpl(lambda register: [register.add(p) for p in providers])
    )
    pm = get_plugin_manager()
    pm.register(module, name="test-setups")
    return load_plugins(pm)


def test_a_run_writes_a_complete_report_and_keeps_the_golden_file(project, plugins):
    result, progress = run(project.write_config(), plugins)
    report = result.report.model_dump(mode="json")
    assert result.location == str(project / "runs" / "retrieval" / "runs" / report["id"] / "report.json")
    saved = json.loads(Path(result.location).read_text())  # the rankings beside it, in rankings.parquet
    light = json.loads(json.dumps(report))
    for setup in light["setups"]:
        setup["per_question"]["results"] = []
    assert saved == light and (Path(result.location).parent / "rankings.parquet").is_file()
    golden_raw = (project / "golden.jsonl").read_bytes()
    kept = project / "runs" / "golden_dataset" / f"{report['golden']['sha256']}.jsonl"
    assert kept.read_bytes() == golden_raw
    assert report["golden"] | {"source": None} == {
        "source": None,
        "sha256": report["golden"]["sha256"],
        "questions": 6,
        "labelled": 5,
        "unfilled": 1,
        "unlabelled": 0,
        "drafts": 0,
        "max_grade": 2,  # q4 grades its document 2: a graded run
        "graded": 1,  # one question of five grades above 1
        "human_grades": 0,  # nobody graded on the grading page
        "human_grades_sha256": None,
    }
    assert report["question_ids"] == ["q1", "q2", "q3", "q4", "q5"]
    assert report["targets"]["Local"]["documents"] == 6
    assert report["targets"]["Local"]["capabilities"] == ["keyword", "passages"]
    (setup,) = report["setups"]
    assert setup["key"] == "local.keyword" and setup["rank"] == 1 and setup["error"] is None
    assert set(report["picks"].values()) == {"local.keyword"}
    assert report["frontier"] == ["local.keyword"]
    for k in (1, 3, 5, 10, 20):
        assert 0 <= setup["summary"][f"found@{k}"] <= 1
    lo, hi = setup["ci"]["mrr"]
    assert lo <= setup["summary"]["mrr"] <= hi
    per_q = setup["per_question"]
    assert len(per_q["positions"]) == len(per_q["times_ms"]) == len(per_q["results"]) == 5
    assert per_q["positions"][4] == 1 and per_q["results"][4][0][0] == "report.pdf#page=2"  # page-level question
    assert all(t > 0 for t in per_q["times_ms"])
    assert set(report["provenance"]) >= {"vx_eval", "python", "platform", "packages", "plugins", "models"}
    assert progress.bars == [("Indexing Local", 6), ("Searching", 5)]


def test_the_report_holds_no_question_or_document_text(project, plugins):
    report = json.dumps(run(project.write_config(), plugins)[0].report.model_dump(mode="json"))
    for text in ("postpone a loan payment", "wildfire", "Expedited access", "Credit losses"):
        assert text not in report


def test_missing_documents_are_warned_recorded_and_their_questions_stay(project, plugins):
    rows = [json.loads(line) for line in (project / "golden.jsonl").read_text().splitlines()]
    rows[0]["expected"] = ["deferement"]
    rows[1]["expected"] = ["emergency-fund", "gone"]
    (project / "golden.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result, progress = run(project.write_config(), plugins)
    report = result.report.model_dump(mode="json")
    assert report["missing"] == {
        "Local": {
            "documents": ["deferement", "gone"],
            "questions": ["q1"],
            "partly": ["q2"],
            "nearest": {"deferement": "deferment"},  # the id most likely meant; nothing is near "gone"
        }
    }
    assert progress.notes == [
        "Local does not hold 2 expected documents: deferement (did you mean deferment?), gone. 1 question "
        "cannot be found there: q1. They stay in and score 0; correct the ids in the golden file, or add the "
        "documents."
    ]
    assert report["missing_notes"] == progress.notes
    setup = report["setups"][0]
    assert report["question_ids"][0] == "q1" and setup["per_question"]["metrics"]["found@10"][0] == 0.0


class FlakySetups:
    """A setup whose warm-up fails, and one that fails on one question only."""

    name = "flaky"

    def setups(self, target):
        def broken(text, k):
            raise RuntimeError("graph was never built")

        def sometimes(text, k):
            if "wire" in text:
                raise TimeoutError("engine timed out")
            return [Hit("deferment", 1.0)]

        yield Setup(f"{target.key}.graph", target.name, target.engine, "graph", "Graph", broken)
        yield Setup(f"{target.key}.flaky", target.name, target.engine, "flaky", "Flaky", sometimes)


def test_failing_setups_are_reported_with_their_error_and_never_picked(project):
    report = run(project.write_config(), with_setups(FlakySetups))[0].report.model_dump(mode="json")
    by_key = {s["key"]: s for s in report["setups"]}
    graph, flaky = by_key["local.graph"], by_key["local.flaky"]
    assert graph["error"] == "warm-up search failed: RuntimeError: graph was never built"
    assert graph["summary"] == {} and graph["rank"] == 3
    assert flaky["error"] == (
        "1 of 5 searches failed (its averages are over the other 4 questions: partial); first: TimeoutError: "
        "engine timed out"
    )
    assert flaky["per_question"]["status"] == ["evaluated", "evaluated", "evaluated", "failed", "evaluated"]
    assert flaky["per_question"]["times_ms"][3] is None
    assert set(report["picks"].values()) == {"local.keyword"}
    assert report["status"] == "completed"


class RecordingSetups:
    """Two setups that log the order in which they are called."""

    name = "recording"
    log: list[str] = []

    def setups(self, target):
        for key in ("a", "b", "c"):

            def search(text, k, key=key):
                RecordingSetups.log.append(key)
                return []

            yield Setup(f"{target.key}.{key}", target.name, target.engine, key, key.upper(), search)


def test_setups_are_interleaved_in_a_seeded_shuffle_after_one_warm_up_each(project):
    plugins = with_setups(RecordingSetups)
    orders = []
    for seed in (0, 0, 1):
        RecordingSetups.log = []
        run(project.write_config(evaluation={"seed": seed}), plugins, only=("local.[abc]",), save=False)
        assert RecordingSetups.log[:3] == ["a", "b", "c"]  # the untimed warm-ups
        orders.append(RecordingSetups.log[3:])
    assert len(orders[0]) == 15
    assert orders[0] == orders[1] != orders[2]
    per_question = [tuple(orders[0][i : i + 3]) for i in range(0, 15, 3)]
    assert len(set(per_question)) > 1  # not one fixed order


def test_only_and_skip_choose_setups_and_refuse_what_matches_nothing(project, plugins):
    config = project.write_config()
    with pytest.raises(VxEvalError, match="no setup matches 'local.dense' .*; setups: local.keyword"):
        run(config, plugins, only=("local.dense",))
    with pytest.raises(VxEvalError, match="'dense' .* is no method of these setups; methods: keyword"):
        run(config, plugins, skip=("dense",))
    with pytest.raises(VxEvalError, match="skipping those methods leaves no setup to run"):
        run(config, plugins, skip=("keyword",))


def test_a_golden_file_with_only_unfilled_rows_is_refused(project, plugins):
    (project / "golden.jsonl").write_text('{"question": "", "expected": ["wire"]}\n')
    with pytest.raises(
        GoldenError, match="has no labelled questions \\(1 rows wait for a question, 0 for expected ids\\)"
    ):
        run(project.write_config(), plugins)


def test_the_golden_copy_is_kept_once_per_version(project, plugins):
    config = project.write_config()
    run(config, plugins)
    kept = next((project / "runs" / "golden_dataset").iterdir())
    before = kept.stat().st_mtime_ns
    os.utime(kept, ns=(1, 1))
    run(config, plugins)
    assert kept.stat().st_mtime_ns == 1 != before  # not written again
    with (project / "golden.jsonl").open("a") as handle:
        handle.write('{"id": "q9", "question": "Is the loan book diversified?", "expected": ["report.pdf"]}\n')
    run(config, plugins)
    assert len(list((project / "runs" / "golden_dataset").iterdir())) == 2
    assert len(list((project / "runs" / "retrieval" / "runs").iterdir())) == 3


def test_run_ids_sort_by_time_and_never_collide():
    ids = [new_run_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    assert sorted(ids, key=lambda i: i.split("-")[0]) == ids


GROUPED = [
    {"id": "d1", "text": "defer loan payments after a wildfire", "metadata": {"frame": {"key": "loans"}}},
    {"id": "d2", "text": "loan payments can wait during a disaster", "metadata": {"frame": {"key": "loans"}}},
    {"id": "d3", "text": "freeze a lost card in the app", "metadata": {"frame": {"key": "cards"}}},
    {"id": "d4", "text": "opening hours of the branches"},
]


def grouped_project(project, golden):
    from ...conftest import write_jsonl

    write_jsonl(project / "docs.jsonl", GROUPED)
    write_jsonl(project / "golden.jsonl", golden)
    return project.write_config(
        evaluation={
            "relevance_field": "metadata.frame.key",
            "depth": 10,
            "metrics": ["found@1", "found@10", "mrr", "recall@10", "ndcg@10"],
        }
    )


def test_relevance_field_grades_by_value_and_skips_questions_without_it(project, plugins):
    config = grouped_project(
        project,
        [
            {"id": "loan", "question": "loan payments", "expected": ["loans"]},
            {"id": "card", "question": "lost card", "expected": ["cards"]},
            {"id": "hours", "question": "branches opening hours", "expected": ["loans"]},
        ],
    )
    report = run(config, plugins)[0].report.model_dump(mode="json")
    setup = report["setups"][0]
    per_q = setup["per_question"]
    assert per_q["results"][0][:2] == [
        ["loans", pytest.approx(per_q["results"][0][0][1])],
        ["loans", pytest.approx(per_q["results"][0][1][1])],
    ]
    assert per_q["metrics"]["recall@10"][0] == 1.0 and per_q["metrics"]["ndcg@10"][0] == 1.0  # "loans" counts once
    assert per_q["status"] == ["evaluated", "evaluated", "skipped"]
    assert per_q["errors"][2] == "none of the 1 results has the field 'metadata.frame.key'"
    assert per_q["metrics"]["mrr"][2] is None
    assert setup["counts"] == {"total": 3, "evaluated": 2, "skipped": 1, "failed": 0}
    assert setup["summary"]["mrr"] == 1.0  # the skipped question is left out, not scored 0
    assert report["missing"] == {}  # expected names field values, not documents
    assert report["settings"]["relevance_field"] == "metadata.frame.key"


def test_a_run_in_which_every_question_skips_fails_instead_of_scoring_zeros(project, plugins, capsys):
    from vx_eval.cli import main

    config = grouped_project(project, [{"id": "hours", "question": "branches opening hours", "expected": ["x"]}])
    report = run(config, plugins)[0].report.model_dump(mode="json")
    setup = report["setups"][0]
    assert report["status"] == "failed" and set(report["picks"].values()) == {None}
    assert setup["summary"] == {} and setup["error"].startswith("every question was skipped or failed; first: none of")
    with pytest.raises(SystemExit) as exit_info:
        main(["run", str(config)])
    assert exit_info.value.code == 1
    assert "the run failed: no setup could be scored" in capsys.readouterr().err


class CopySetups:
    """One setup that repeats keyword search, one that never finds anything."""

    name = "copies"

    def setups(self, target):
        from vx_eval.core.contracts.engine import Query

        def same(text, k):
            return target.handle.search(Query(text, k))

        yield Setup(f"{target.key}.copy", target.name, target.engine, "copy", "Copy of keyword", same)
        yield Setup(f"{target.key}.blind", target.name, target.engine, "blind", "Finds nothing", lambda t, k: [])


def test_setups_a_paired_test_cannot_tell_from_the_leader_are_marked_tied(tmp_path, shared_cache):
    from ...conftest import quickstart_copy

    config = quickstart_copy(tmp_path, shared_cache)
    report = run(config, with_setups(CopySetups), save=False)[0].report.model_dump(mode="json")
    by_key = {s["key"]: s for s in report["setups"]}
    assert by_key[report["picks"]["finds_the_most"]]["tied_with_best"]
    twin = by_key["local.copy"] if report["picks"]["finds_the_most"] == "local.keyword" else by_key["local.keyword"]
    assert twin["tied_with_best"] and twin["vs_best"]["p_holm"] == 1.0 and twin["vs_best"]["delta"] == 0.0
    blind = by_key["local.blind"]
    assert not blind["tied_with_best"] and blind["vs_best"]["p_holm"] < 0.001
    assert blind["vs_best"]["delta"] < 0 and blind["vs_best"]["ci"][1] < 0
    assert 0 < report["detectable_difference"]["value"] < 0.5


def test_a_reranker_that_reads_no_deeper_than_the_primary_cut_off_is_said_once_with_the_fix(plugins):
    from vx_eval.core.config.experiment import parse_config
    from vx_eval.core.run.selection import futile_setups

    def experiment(depth: int, primary: str):
        raw = (
            "name: x\ngolden: g.jsonl\ntargets: [{name: L, engine: sqlite, options: {path: x.db}}]\n"
            f"search: {{rerank_depth: {depth}}}\nevaluation: {{primary: {primary}}}\n"
        ).encode()
        return parse_config(raw, plugins, path=None)

    def setup(key: str, ranker: str | None) -> Setup:
        return Setup(key, "L", "sqlite", "dense", key, lambda text, k: [], ranker=ranker)

    setups = [setup("L.bm25", None), setup("L.bm25+ce", "ce"), setup("L.dense+ce", "ce")]
    (said,) = futile_setups(setups, experiment(10, "ndcg@10"))
    assert said.startswith("search.rerank_depth 10 is at or under the primary measure's cut-off (ndcg@10)")
    assert "L.bm25+ce, L.dense+ce" in said and "set search.rerank_depth above 10" in said
    assert futile_setups(setups, experiment(11, "ndcg@10")) == []  # it reads beyond the cut-off
    assert futile_setups(setups[:1], experiment(10, "ndcg@10")) == []  # nothing reranked
    assert futile_setups(setups, experiment(5, "mrr")) == []  # a measure with no cut-off
