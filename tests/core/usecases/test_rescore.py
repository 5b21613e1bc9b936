"""Scoring a kept run again (`core.usecases.rescore`), read directly: the same measures give the same numbers,
a new measure's values are those of the kept rankings, a higher threshold lowers what counts, and what cannot
be rescored says why."""

from __future__ import annotations

import pytest

from vx_eval.core.config.experiment import load_config
from vx_eval.core.errors import ConfigError
from vx_eval.core.golden.sources import read_golden
from vx_eval.core.stores import Stores
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment
from vx_eval.core.usecases.rescore import Rescoring, rescore, searched_questions

from ...conftest import quickstart_copy


@pytest.fixture(scope="module")
def kept(tmp_path_factory, plugins, shared_cache):
    folder = tmp_path_factory.mktemp("rescore")
    experiment = load_config(quickstart_copy(folder, shared_cache), plugins)
    report = run_experiment(experiment, plugins, RunOptions()).report
    return report, read_golden(experiment.config.golden, Stores(plugins))


def test_the_same_measures_give_the_same_numbers_and_a_new_report_derived_from_the_run(kept):
    report, golden = kept
    again = rescore(report, golden, Rescoring())
    assert again.id != report.id and again.derived_from is not None and again.derived_from.run == report.id
    for before, after in zip(report.setups, again.setups, strict=True):
        assert after.summary == pytest.approx(before.summary)
        assert after.times_ms == before.times_ms  # as measured: a rescore searches nothing


def test_a_new_measure_is_computed_from_the_kept_rankings(kept):
    report, golden = kept
    again = rescore(report, golden, Rescoring(measures=["p@3"]))
    questions = searched_questions(report, golden)
    for setup in again.setups:
        values = []
        for question, results in zip(questions, setup.per_question.results, strict=True):
            top = [unit.split("#")[0] for unit, _ in results[:3]]
            values.append(sum(unit in question.relevance() for unit in top) / 3)
        assert setup.summary["p@3"] == pytest.approx(sum(values) / len(values))


def test_a_higher_threshold_never_raises_a_score_and_a_misspelt_measure_is_refused(kept):
    report, golden = kept
    strict = rescore(report, golden, Rescoring(relevance_threshold=2))
    assert strict.settings.relevance_threshold == 2
    for before, after in zip(report.setups, strict.setups, strict=True):
        assert after.summary["found@10"] <= before.summary["found@10"] + 1e-12
    with pytest.raises(ConfigError, match="ndcg@ten"):
        rescore(report, golden, Rescoring(measures=["ndcg@ten"]))
