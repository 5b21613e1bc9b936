"""The conformance suite (`vx_eval.testing.conformance`) on every engine that runs here for real."""

from __future__ import annotations

from vx_eval.testing.conformance import EngineConformance


class TestSqlite(EngineConformance):
    engine = "sqlite"
    options = {"mode": "hybrid", "dense_models": ["minilm"], "path": "candidate.db"}
    absent_options = {"path": "absent.db"}


class TestQdrantInMemory(EngineConformance):
    engine = "qdrant"
    options = {"location": ":memory:", "mode": "hybrid", "dense_models": ["minilm"]}
    absent_options = {"location": ":memory:", "collection": "absent", "build": "never"}


class TestQdrantFolder(EngineConformance):
    engine = "qdrant"
    options = {"path": "qdrant", "mode": "ultimate", "dense_models": ["minilm"], "late_model": "colbert-small"}
    absent_options = {"path": "qdrant-empty", "collection": "absent", "build": "never"}
