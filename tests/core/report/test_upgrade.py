"""Reports saved by the previous main (format 1, before the typed model) read back through the model, with
every number as they saved it, and every reader (table, page, compare, history) takes them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from vx_eval.core.report.compare import compare_reports
from vx_eval.core.report.history import list_runs, read_report
from vx_eval.core.report.schema import FORMAT, load_report
from vx_eval.core.stores import Stores
from vx_eval.html.render import render_page
from vx_eval.views.display import show_run

SAVED = Path(__file__).resolve().parents[2] / "data" / "format1"


@pytest.mark.parametrize("name", ["keyword", "judged"])
def test_a_report_the_previous_main_saved_reads_with_its_numbers(name):
    raw = (SAVED / f"{name}.json").read_text()
    old = json.loads(raw)
    assert old["format"] == 1 and old["status"] == "done"
    report = load_report(raw, name)
    assert report.format == FORMAT and report.status == "completed"
    assert report.id == old["id"] and report.question_ids == old["question_ids"]
    assert dict(report.picks.items()) == old["picks"]
    for saved, setup in zip(old["setups"], report.setups, strict=True):
        assert setup.key == saved["key"] and setup.rank == saved["rank"]
        assert setup.summary == saved["summary"]
        assert setup.per_question.metrics == saved["per_question"]["metrics"]
        assert [list(map(list, r)) for r in setup.per_question.results] == saved["per_question"]["results"]
        if saved.get("graded"):
            assert setup.graded.dcg == saved["graded"]["dcg@10"]
            assert setup.graded.p_strict == saved["graded"]["p@10 (grade ≥ 2)"]
            assert list(setup.graded.ci["mrr_strict"]) == saved["graded"]["ci"]["mrr (grade ≥ 2)"]
    if old.get("judge"):
        assert report.judge.judge == old["judge"]["judge"] and report.judge.pairs == old["judge"]["pairs"]
        assert report.graded_questions.best.dcg == old["graded_questions"]["best"]["dcg@10"]
    # every reader takes it
    console = Console(record=True, width=200)
    show_run(console, report, None)
    assert "Finds the most" in console.export_text()
    assert f'data-run="{report.id}"' in render_page(report)
    assert compare_reports(report, report).rows


def test_old_reports_are_listed_beside_new_ones(tmp_path, plugins):
    for name in ("keyword", "judged"):
        saved = json.loads((SAVED / f"{name}.json").read_text())
        folder = tmp_path / "retrieval" / "runs" / saved["id"]
        folder.mkdir(parents=True)
        shutil.copy(SAVED / f"{name}.json", folder / "report.json")
    entries, total = list_runs(Stores(plugins), str(tmp_path))
    assert total == 2 and all(e.status == "completed" for e in entries)
    assert read_report(Stores(plugins), str(tmp_path), "latest").name == "judged"
