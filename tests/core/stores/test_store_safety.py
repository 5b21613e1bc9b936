"""History and stores: links out of a local store are not followed, a golden copy is given out only with the
bytes its name promises, what a killed run left half-written is swept at the next run (a live run's never),
and a finished run cannot be resumed into a second report."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vx_eval.core.config.experiment import load_config
from vx_eval.core.contracts.store import StoreDenied
from vx_eval.core.corpus.leftovers import QUIET_FOR, is_stale, sweep
from vx_eval.core.corpus.prepare import building
from vx_eval.core.errors import VxEvalError
from vx_eval.core.report.history import golden_bytes, list_runs, read_report, run_ids
from vx_eval.core.stores import Stores
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment

from ...test_cli import call


def finished_run(project, plugins):
    config = project.write_config()
    result = run_experiment(load_config(config, plugins), plugins, RunOptions())
    return config, result.report, str(project / "runs")


def gone_pid() -> int:
    """The pid of a process that has ended."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def aged(path: Path, seconds: float) -> Path:
    past = time.time() - seconds
    os.utime(path, (past, past))
    return path


def test_a_run_folder_linked_from_outside_the_store_is_neither_listed_nor_read(project, plugins, tmp_path):
    _, report, store = finished_run(project, plugins)
    stores = Stores(plugins)
    outside = tmp_path / "elsewhere"
    (outside / "retrieval" / "runs").mkdir(parents=True)
    planted = Path(store) / "retrieval" / "runs" / "29991231T000000000000Z-linked"
    planted.symlink_to(Path(store) / "retrieval" / "runs" / report.id)  # inside: fine
    sneaky = Path(store) / "retrieval" / "runs" / "29991231T000000000001Z-sneaky"
    (outside / "run").mkdir()
    (outside / "run" / "report.json").write_text(report.to_json(), encoding="utf-8")
    sneaky.symlink_to(outside / "run")
    assert "29991231T000000000001Z-sneaky" not in run_ids(stores, store)
    assert "29991231T000000000000Z-linked" in run_ids(stores, store)
    with pytest.raises(StoreDenied, match="leads out of"):
        read_report(stores, store, "29991231T000000000001Z-sneaky")
    assert read_report(stores, store, "29991231T000000000000Z-linked").id == report.id  # a link inside: fine
    entries, _ = list_runs(stores, store)
    assert all(e.id != "29991231T000000000001Z-sneaky" for e in entries)


def test_a_golden_copy_is_given_out_only_if_its_bytes_hash_to_its_name_and_never_through_a_link(
    project, plugins, tmp_path
):
    _, report, store = finished_run(project, plugins)
    stores = Stores(plugins)
    copy = Path(store) / "golden_dataset" / f"{report.golden.sha256}.jsonl"
    assert hashlib.sha256(golden_bytes(stores, store, report)).hexdigest() == report.golden.sha256
    kept = copy.read_bytes()
    copy.write_bytes(kept + b'{"id": "planted", "question": "?", "expected": ["x"]}\n')
    with pytest.raises(StoreDenied, match="not the file the run read"):
        golden_bytes(stores, store, report)
    secret = tmp_path / "secret.jsonl"
    secret.write_bytes(kept)  # even with the right bytes, a link out of the store is not followed
    copy.unlink()
    copy.symlink_to(secret)
    with pytest.raises(StoreDenied, match="leads out of"):
        golden_bytes(stores, store, report)


def test_leftovers_of_a_process_that_is_gone_are_stale_and_a_live_ones_are_not(tmp_path):
    dead = tmp_path / f".docs.db.{gone_pid()}.building"
    dead.touch()
    aged(dead, QUIET_FOR + 5)
    fresh_dead = tmp_path / f".other.db.{gone_pid()}.building"
    fresh_dead.touch()  # its process is gone but it was written a moment ago: maybe another machine's
    mine = tmp_path / f".docs.db.{os.getpid()}.building"
    mine.touch()
    aged(mine, QUIET_FOR + 5)
    ancient = tmp_path / ".report.json.abc.tmp"
    ancient.touch()
    aged(ancient, 2 * 86400)
    assert is_stale(dead) and not is_stale(fresh_dead) and not is_stale(mine) and is_stale(ancient)
    removed = sweep(tmp_path, ".*.building")
    assert removed == [dead] and fresh_dead.exists() and mine.exists()


def test_the_next_run_sweeps_what_a_killed_run_left_and_no_live_file(project, plugins):
    config, report, store = finished_run(project, plugins)
    runs = Path(store) / "retrieval" / "runs"
    half_report = runs / report.id / f".report.json.{gone_pid()}.k2j3h4.tmp"
    half_report.write_bytes(b'{"id": ')
    aged(half_report, QUIET_FOR + 5)
    live_report = runs / report.id / f".report.json.{os.getpid()}.a1b2c3.tmp"
    live_report.write_bytes(b"{")
    aged(live_report, QUIET_FOR + 5)
    index = project / ".vx" / "tiny.db"
    half_index = index.with_name(f".tiny.db.{gone_pid()}.building")
    half_index.write_bytes(b"\0" * 4096)
    aged(half_index, QUIET_FOR + 5)
    run_experiment(load_config(config, plugins), plugins, RunOptions())  # the index is fresh: no build
    assert not half_report.exists() and not half_index.exists()
    assert live_report.exists()


def test_a_build_that_fails_leaves_nothing_and_the_index_as_it_was(tmp_path):
    target = tmp_path / "index.db"
    target.write_bytes(b"the old index")
    with pytest.raises(RuntimeError), building(target) as db:
        db.execute("CREATE TABLE t (x)")
        raise RuntimeError("killed half way")
    assert target.read_bytes() == b"the old index"
    assert [p.name for p in tmp_path.iterdir()] == ["index.db"]


def test_resuming_a_finished_run_says_it_is_finished_and_saves_nothing(project, plugins, capsys):
    config, report, store = finished_run(project, plugins)
    before = sorted(run_ids(Stores(plugins), store))
    with pytest.raises(VxEvalError, match=f"run {report.id} finished: its report is saved"):
        run_experiment(load_config(config, plugins), plugins, RunOptions(resume=report.id))
    code, _, err = call(capsys, "run", str(config), "--resume", report.id)
    assert code == 2 and "there is nothing to resume" in err
    assert sorted(run_ids(Stores(plugins), store)) == before
