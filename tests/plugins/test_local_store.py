"""The local store: atomic writes, not-found and denied told apart, names that cannot escape the root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vx_eval.core.contracts.store import StoreDenied, StoreNotFound
from vx_eval.core.errors import StoreError
from vx_eval.core.stores import Stores, join
from vx_eval.plugins.stores.local import LocalStore


def test_write_read_exists_list(tmp_path):
    store = LocalStore()
    target = str(tmp_path / "a" / "b" / "report.json")
    store.write(target, b"{}")
    assert store.read(target) == b"{}" and store.exists(target)
    assert store.list(str(tmp_path / "a" / "b")) == [target]
    assert store.list(str(tmp_path / "nothing")) == []
    assert store.read("file://" + target) == b"{}"
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(target).st_mode & 0o777 == 0o666 & ~mask  # not mkstemp's 0600


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "report.json"
    target.write_bytes(b"old")

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        LocalStore().write(str(target), b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_not_found_and_denied_are_told_apart(tmp_path, monkeypatch):
    with pytest.raises(StoreNotFound, match="does not exist"):
        LocalStore().read(str(tmp_path / "nope.jsonl"))
    with pytest.raises(StoreNotFound, match="is a folder, not a file"):
        LocalStore().read(str(tmp_path))

    def denied(self):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", denied)
    with pytest.raises(StoreDenied, match="no permission to read"):
        LocalStore().read(str(tmp_path / "x"))


@pytest.mark.parametrize("name", ["../escape", "a/../../b", "/etc/passwd", "..", "run id", "a\\b"])
def test_names_from_outside_cannot_climb_out_of_the_root(name):
    with pytest.raises(StoreError, match="is not a plain name below"):
        join("/data/evals", "retrieval", "runs", name)


def test_join_keeps_uris_and_paths_apart():
    assert join("s3://bucket/evals/", "retrieval", "runs") == "s3://bucket/evals/retrieval/runs"
    assert join("/data/evals", "golden_dataset", "abc.jsonl") == "/data/evals/golden_dataset/abc.jsonl"


def test_a_location_no_store_handles_names_the_installed_stores(plugins):
    with pytest.raises(
        StoreError, match=r"no store plugin handles gs://bucket/g.jsonl \(gs\); installed stores: azure-blob, local, s3"
    ):
        Stores(plugins).read("gs://bucket/g.jsonl")
