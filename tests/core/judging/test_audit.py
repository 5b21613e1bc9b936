"""Labels audited (`core.judging.audit`): a golden file whose labels point at the wrong documents is flagged
question by question, with the passage the judge graded highest, on the command line and on the page; where most
questions are like that the run's first line says the golden file looks wrong and it names no picks."""

from __future__ import annotations

import json

import yaml
from rich.console import Console

from vx_eval.core.config.experiment import load_config
from vx_eval.core.stores import Stores
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment
from vx_eval.html import page_for
from vx_eval.views.display import show_run

from ...conftest import quickstart_copy


def _judged_quickstart(tmp_path, cache, wrong):
    """The quickstart graded by the cross-encoder judge, the labels of the questions `wrong` picks moved to
    another question's documents (as an id mapping gone astray would)."""
    config = quickstart_copy(tmp_path, cache)
    golden = tmp_path / "quickstart" / "golden.jsonl"
    rows = [json.loads(line) for line in golden.read_text().splitlines()]
    moved = [i for i in range(len(rows)) if wrong(i)]
    labels = [rows[i]["expected"] for i in moved]
    for i, expected in zip(moved, labels[len(labels) // 2 :] + labels[: len(labels) // 2], strict=True):
        rows[i]["expected"] = expected  # another moved question's documents
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = yaml.safe_load(config.read_text())
    data["evaluation"] = {**data.get("evaluation", {}), "judge": "cross-encoder", "judge_depth": 5}
    config.write_text(yaml.safe_dump(data))
    return config, {rows[i]["id"] for i in moved}


def _shown(report):
    console = Console(record=True, width=400)
    show_run(console, report, None)
    return console.export_text()


def test_labels_pointing_at_the_wrong_documents_are_flagged_and_the_golden_file_said_to_look_wrong(
    tmp_path, plugins, shared_cache
):
    config, moved = _judged_quickstart(tmp_path, shared_cache, wrong=lambda i: True)
    report = run_experiment(load_config(config, plugins), plugins, RunOptions(save=False)).report
    audit = report.judge.audit
    assert audit is not None and audit.checked == len(moved)
    flagged = {s.id for s in audit.suspects}
    assert flagged and flagged <= moved and audit.looks_wrong
    assert audit.unfound * 2 > audit.checked and audit.disputed > 2 * audit.confirmed and audit.disputed >= 3
    for suspect in audit.suspects:
        assert suspect.grade >= 2 and suspect.unit not in suspect.labels and suspect.passage
        assert suspect.label_grade is not None and suspect.label_grade < suspect.grade
        assert suspect.found_by >= 1
    assert report.picks.finds_the_most is None and report.picks.best_for_time is None
    out = _shown(report)
    first = out.splitlines()[0]
    assert first.startswith("The golden file looks wrong: for ") and "no picks are named" in first
    assert "Probably mislabelled (" in out
    some = audit.suspects[0]
    assert f'{some.id} "{some.question}": its labels name {", ".join(some.labels)}' in " ".join(out.split())
    page = page_for(report, Stores(plugins), str(tmp_path / "runs"))
    assert 'id="golden-looks-wrong"' in page and page.count('class="suspect"') == min(len(flagged), 10)


def test_a_few_wrong_labels_are_flagged_one_by_one_and_the_picks_stand(tmp_path, plugins, shared_cache):
    config, moved = _judged_quickstart(tmp_path, shared_cache, wrong=lambda i: i in (2, 38, 39, 40, 41))
    report = run_experiment(load_config(config, plugins), plugins, RunOptions(save=False)).report
    audit = report.judge.audit
    flagged = {s.id for s in audit.suspects}
    assert flagged and flagged <= moved  # only questions whose labels were moved, and not every one need be
    assert not audit.looks_wrong and report.picks.finds_the_most is not None
    out = _shown(report)
    assert not out.startswith("The golden file looks wrong") and "Probably mislabelled (" in out


def test_the_shipped_labels_are_not_said_to_look_wrong(tmp_path, plugins, shared_cache):
    config, _ = _judged_quickstart(tmp_path, shared_cache, wrong=lambda i: False)
    report = run_experiment(load_config(config, plugins), plugins, RunOptions(save=False)).report
    audit = report.judge.audit
    assert audit is not None and audit.checked == 42 and not audit.looks_wrong
    # the judge grades a few hard paraphrases' right documents 0, as it grades what the setups returned: no
    # dispute either way, none listed
    assert audit.disputed <= audit.confirmed + 1 and audit.unfound * 2 < audit.checked
    assert len(audit.suspects) <= 2 and report.picks.finds_the_most is not None
