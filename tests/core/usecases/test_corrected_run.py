"""A run whose judge grades most questions and people some (`core.usecases.pipeline` with
`core.judging.corrected`): the judge grades people's questions' results too, each pickable setup's measure is
corrected by its error there, and the run says so, in its summary and on its page."""

from __future__ import annotations

import json

import yaml
from rich.console import Console

from vx_eval.core.config.experiment import load_config
from vx_eval.core.stores import Stores
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment
from vx_eval.html import page_for
from vx_eval.views.display import print_summary, show_run

from ...conftest import quickstart_copy


def test_a_run_with_people_on_some_questions_and_a_judge_on_the_rest_is_corrected(tmp_path, plugins, shared_cache):
    config = quickstart_copy(tmp_path, shared_cache)
    golden = tmp_path / "quickstart" / "golden.jsonl"
    rows = [json.loads(line) for line in golden.read_text().splitlines()]
    for row in rows[30:]:  # people graded the first 30; the judge alone grades the rest
        row["expected"], row["grades"], row["reference"] = [], {}, "the answer a person would accept"
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = yaml.safe_load(config.read_text())
    data["evaluation"] = {**data.get("evaluation", {}), "judge": "cross-encoder", "judge_depth": 5}
    # several setups, none of the judge's (MiniLM's) family: BGE
    data["targets"][0]["options"].update(mode="hybrid", dense_models=["bge-small"], reranker=None)
    config.write_text(yaml.safe_dump(data))

    report = run_experiment(load_config(config, plugins), plugins, RunOptions(save=False)).report
    fixed = report.picking.corrected
    assert fixed is not None
    assert (fixed.labelled, fixed.unlabelled) == (30, len(rows) - 30)
    # the picks follow people's correction: the corrected best finds the most, and no pick is one people's
    # grades tell from it
    assert fixed.best == report.picks.finds_the_most and fixed.measure == report.picking.measure
    assert report.picks.best_for_balance in fixed.level_with_best()
    assert report.picks.best_for_time in fixed.level_with_best()
    pickable = {s.key for s in report.setups if s.pickable} - set(report.judge.circular)
    assert set(fixed.setups) == pickable and set(fixed.leads) == pickable - {fixed.best}
    for mean in fixed.setups.values():
        assert mean.low <= mean.mean <= mean.high and 0 <= mean.weight <= 1
    assert report.judge.verdicts is None  # people's pairs graded by the judge too, but no verdict list kept

    console = Console(record=True, width=240)
    print_summary(console, report)
    assert "corrected by people:" in console.export_text()
    page = page_for(report, Stores(plugins), str(tmp_path / "runs"))
    assert 'id="corrected">Corrected by people: on the 30 questions people graded' in page


def test_a_run_where_people_graded_every_question_is_not_corrected(tmp_path, plugins, shared_cache):
    config = quickstart_copy(tmp_path, shared_cache)
    data = yaml.safe_load(config.read_text())
    data["evaluation"] = {**data.get("evaluation", {}), "judge": "cross-encoder", "judge_depth": 5}
    data["targets"][0]["options"].update(mode="hybrid", dense_models=["bge-small"], reranker=None)
    config.write_text(yaml.safe_dump(data))
    report = run_experiment(load_config(config, plugins), plugins, RunOptions(save=False)).report
    assert len([s for s in report.setups if s.pickable]) >= 2 and report.judge is not None
    assert report.picking.corrected is None  # no question was left to the judge alone: nothing to correct


def test_peoples_grades_re_admit_the_setups_the_judge_is_related_to(tmp_path, plugins, shared_cache):
    """With people on 30 questions, no setup is left out for its relation to the judge: MiniLM setups, which the
    MiniLM cross-encoder judge alone would grade circularly, are corrected, ranked and pickable with the rest;
    the table's order, its ties and its "not sure" follow the correction; the judge's agreement is measured on
    people's own questions of the run."""
    config = quickstart_copy(tmp_path, shared_cache)
    golden = tmp_path / "quickstart" / "golden.jsonl"
    rows = [json.loads(line) for line in golden.read_text().splitlines()]
    for row in rows[30:]:  # a question and no expected ids: the judge grades it (no reference answer needed)
        row["expected"], row["grades"] = [], {}
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = yaml.safe_load(config.read_text())
    data["evaluation"] = {**data.get("evaluation", {}), "judge": "cross-encoder", "judge_depth": 5}
    data["targets"][0]["options"].update(mode="hybrid", dense_models=["minilm", "bge-small"], reranker=None)
    config.write_text(yaml.safe_dump(data))

    report = run_experiment(load_config(config, plugins), plugins, RunOptions(save=False)).report
    fixed = report.picking.corrected
    pickable = {s.key for s in report.setups if s.pickable}
    related = set(report.judge.circular)
    assert related and related < pickable  # the MiniLM setups, and others
    assert fixed is not None and set(fixed.setups) == pickable
    assert set(fixed.readmitted) == related
    assert [s.key for s in report.setups if s.key in fixed.setups] == fixed.order  # the table in corrected order
    assert [s.rank for s in report.setups] == list(range(1, len(report.setups) + 1))
    level = set(fixed.level_with_best())
    assert {s.key for s in report.setups if s.tied_with_best} == level
    assert report.picks.finds_the_most == fixed.best == fixed.order[0]
    assert report.picks.best_for_time in level and report.picks.best_for_balance in level
    if len(level) > 1:
        assert report.picking.sure.startswith("not sure: people's grades on 30 questions")
    else:
        assert report.picking.sure is None

    here = report.judge.here
    assert here is not None and here.questions == 30 and here.pairs > 0
    assert here.kappa_quadratic is not None and -1 <= here.kappa_quadratic <= 1
    assert here.setups == len(pickable) and here.tau is not None
    assert here.tau_low <= here.tau <= here.tau_high

    console = Console(record=True, width=240)
    show_run(console, report, None)
    said = " ".join(console.export_text().split())
    assert "(related): re-admitted by people's grades" in said
    assert "are ranked and pickable with the rest on the corrected" in said
    assert "which agreed with people on this run's 30 person-graded questions at weighted kappa" in said
    assert "measured elsewhere, not on this run: on TREC DL 2019" in said
    # every MiniLM setup is related (the judge's family), none circular: no setup reranks with the judge's model
    assert set(report.judge.relations) == related and set(report.judge.relations.values()) == {"related"}
    assert "◌" in said and "(all related, by family or training lineage)" in said
    page = page_for(report, Stores(plugins), str(tmp_path / "runs"))
    assert page.count('class="relation related"') == len(related)
