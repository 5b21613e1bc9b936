"""History: runs listed newest first and paged, shown, given back; reports of earlier formats read."""

from __future__ import annotations

import hashlib
import json

import pytest

from vx_eval.core.contracts.store import StoreNotFound
from vx_eval.core.errors import StoreError
from vx_eval.core.report.history import golden_bytes, list_runs, read_report
from vx_eval.core.stores import Stores

GOLDEN = b"old name\n"
OLD = {  # a report as format 1 wrote it before `collections`, `status` and `server_ms` existed
    "format": 1,
    "id": "20250101T000000000000Z-aaaaaa",
    "name": "policies",
    "created_at": "2025-01-01T00:00:00+00:00",
    "golden": {"sha256": hashlib.sha256(GOLDEN).hexdigest(), "questions": 3},
    "targets": {"Local": {"collection": "policies", "documents": 3}, "Azure": {"documents": 3}},
    "picks": {"finds_the_most": "local.keyword", "best_for_balance": None, "best_for_time": None},
    "setups": [{"key": "local.keyword"}],
}


def put(root, report: dict) -> None:
    folder = root / "retrieval" / "runs" / report["id"]
    folder.mkdir(parents=True)
    (folder / "report.json").write_text(json.dumps(report))


def test_an_older_report_is_read_with_its_collections_taken_from_its_targets(tmp_path, plugins):
    put(tmp_path, OLD)
    put(tmp_path, {**OLD, "id": "20250102T000000000000Z-bbbbbb", "collections": ["new"], "status": "done"})
    (tmp_path / "retrieval" / "runs" / "20250103T000000000000Z-cccccc").mkdir()
    (tmp_path / "retrieval" / "runs" / "20250103T000000000000Z-cccccc" / "report.json").write_text("{not json")
    stores = Stores(plugins)
    entries, total = list_runs(stores, str(tmp_path))
    assert total == 3 and [e.id[:8] for e in entries] == ["20250103", "20250102", "20250101"]
    assert entries[0].status == "unreadable" and "not a readable report" in entries[0].reason
    assert entries[2].collections == ["Azure", "policies"] and entries[2].status == "completed"
    old = read_report(stores, str(tmp_path), OLD["id"])
    assert old.setups[0].server_ms is None and old.setups[0].target == "local" and old.setups[0].method == "keyword"
    page, _ = list_runs(stores, str(tmp_path), limit=1, offset=1)
    assert [e.id for e in page] == ["20250102T000000000000Z-bbbbbb"]


def test_missing_runs_and_golden_copies_are_named(tmp_path, plugins):
    stores = Stores(plugins)
    assert list_runs(stores, str(tmp_path / "nothing")) == ([], 0)
    with pytest.raises(StoreError, match="no finished runs are saved at"):
        read_report(stores, str(tmp_path), "latest")
    put(tmp_path, OLD)
    with pytest.raises(StoreNotFound, match="no run 'nope' at .*; the newest is 20250101T000000000000Z-aaaaaa"):
        read_report(stores, str(tmp_path), "nope")
    with pytest.raises(StoreNotFound, match="is not kept at"):
        golden_bytes(stores, str(tmp_path), read_report(stores, str(tmp_path), "latest"))
    (tmp_path / "golden").mkdir()
    sha = OLD["golden"]["sha256"]
    (tmp_path / "golden" / f"{sha}.jsonl").write_bytes(GOLDEN)  # where older versions kept it
    assert golden_bytes(stores, str(tmp_path), read_report(stores, str(tmp_path), "latest")) == GOLDEN
    (tmp_path / "golden" / f"{sha}.jsonl").write_bytes(b"changed\n")  # no longer the file the run read
    with pytest.raises(StoreError, match="is not the file the run read"):
        golden_bytes(stores, str(tmp_path), read_report(stores, str(tmp_path), "latest"))
    newer = {**OLD, "id": "20990101T000000000000Z-ffffff", "format": 99}
    put(tmp_path, newer)
    with pytest.raises(StoreError, match="written by a newer vx-eval"):
        read_report(stores, str(tmp_path), newer["id"])


def test_runs_show_and_list_on_the_command_line(project, capsys, monkeypatch):
    from vx_eval.cli import main

    def cli(*args: str) -> int:
        try:
            main(list(args))
        except SystemExit as exc:
            return int(exc.code or 0)
        return 0

    config = project.write_config()
    assert cli("run", str(config)) == 0
    capsys.readouterr()
    assert cli("runs", "show", "latest", "--config", str(config)) == 0
    shown = capsys.readouterr().out
    assert "Keyword (BM25)" in shown and "Finds the most" in shown
    assert cli("runs", "list", str(project.root / "runs")) == 0
    assert "tiny" in capsys.readouterr().out
    monkeypatch.chdir(project.root)  # ./runs holds the run: found with no location named
    assert cli("runs", "list") == 0
    assert "tiny" in capsys.readouterr().out
    assert cli("runs", "show", "latest") == 0
    assert "Finds the most" in capsys.readouterr().out
    monkeypatch.chdir(project.root / "runs")  # no ./runs here
    assert cli("runs", "list") == 2
    said = capsys.readouterr().err
    assert "name where the runs are kept" in said and "there is no ./runs with runs here" in said
