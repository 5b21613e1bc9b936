"""Tests that read ../shared's collections skip, saying why, on a contributor's clone without it, and fail
under CI's VX_EVAL_REQUIRE_SHARED=1: none is ever skipped unseen there."""

from __future__ import annotations

import pytest

from .conftest import SHARED, shared


def test_a_missing_collection_skips_with_its_path_on_a_contributors_clone(monkeypatch):
    monkeypatch.delenv("VX_EVAL_REQUIRE_SHARED", raising=False)
    with pytest.raises(pytest.skip.Exception, match="not at .*no-such-collection"):
        shared("no-such-collection")


def test_a_missing_collection_fails_where_ci_requires_the_shared_collections(monkeypatch):
    monkeypatch.setenv("VX_EVAL_REQUIRE_SHARED", "1")
    with pytest.raises(pytest.fail.Exception, match="no-such-collection"):
        shared("no-such-collection")


def test_a_present_collection_is_its_folder():
    assert shared("scifact") == SHARED / "scifact"
