"""The conformance suite (`vx_eval.testing.conformance`) on every engine that runs here for real."""

from __future__ import annotations

import os

import pytest

from vx_eval.testing.conformance import EngineConformance


class TestSqlite(EngineConformance):
    engine = "sqlite"
    options = {"mode": "hybrid", "dense_models": ["minilm"], "path": "candidate.db"}
    absent_options = {"path": "absent.db"}


class TestQdrantEngineInMemory(EngineConformance):
    """Qdrant's own engine in process (qdrant-edge-py), exact: the dense top 10 equals the embedded engine's."""

    engine = "qdrant"
    options = {"location": ":memory:", "mode": "hybrid", "dense_models": ["minilm"], "exact": True}
    absent_options = {"location": ":memory:", "collection": "absent", "build": "never"}


@pytest.mark.slow
class TestQdrantEngineFolder(EngineConformance):
    """Qdrant's own engine with HNSW, sparse BM25 and a MaxSim multivector, kept in a folder."""

    engine = "qdrant"
    options = {"path": "qdrant", "mode": "ultimate", "dense_models": ["minilm"], "late_model": "colbert-small"}
    absent_options = {"path": "qdrant-empty", "collection": "absent", "build": "never"}
    agreement = 0.9


@pytest.mark.slow
class TestQdrantLocalMode(EngineConformance):
    """qdrant-client's local mode (a Python re-implementation), still offered as `embedded: local`."""

    engine = "qdrant"
    options = {"location": ":memory:", "embedded": "local", "mode": "hybrid", "dense_models": ["minilm"]}
    absent_options = {"location": ":memory:", "embedded": "local", "collection": "absent", "build": "never"}


class TestOpenSearchKeywordOnOsmem(EngineConformance):
    """OpenSearch's keyword paths over real HTTP. osmem runs no k-NN, pipelines or hybrid queries: those
    are checked as exact request bodies in test_opensearch.py, and live on OPENSEARCH_URL."""

    engine = "opensearch"
    same_ranking = ()  # osmem's BM25 is not Lucene's (nor FTS5's): compare the protocol, not the scores

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def _point_at_osmem(cls, osmem: str) -> None:
        cls.options = {"url": osmem, "mode": "hybrid", "dense_models": [], "collection": "conformance"}
        cls.absent_options = {"url": osmem, "collection": "absent", "build": "never"}


@pytest.mark.skipif(not os.environ.get("QDRANT_URL"), reason="live Qdrant test: set QDRANT_URL (+ QDRANT_API_KEY)")
class TestQdrantLive(EngineConformance):
    """The conformance suite on a Qdrant server (exact search, so dense top 10 must equal the embedded engine's)."""

    engine = "qdrant"
    options = {
        "url": os.environ.get("QDRANT_URL", ""),
        "collection": "vx-eval-conformance",
        "mode": "hybrid",
        "dense_models": ["minilm"],
        "exact": True,
        **({"api_key": {"env": "QDRANT_API_KEY"}} if os.environ.get("QDRANT_API_KEY") else {}),
    }
    absent_options = {**options, "collection": "vx-eval-absent", "build": "never"}


class TestLanceDB(EngineConformance):
    """LanceDB embedded, exact (flat) vector search: the dense top 10 equals the embedded engine's."""

    engine = "lancedb"
    options = {"path": "lance", "mode": "hybrid", "dense_models": ["minilm"]}
    absent_options = {"path": "lance-empty", "collection": "absent", "build": "never"}


class TestChroma(EngineConformance):
    """Chroma embedded (its Rust core in process), HNSW with ef_search past the collection's size: the dense
    top 10 equals the embedded engine's."""

    engine = "chroma"
    options = {"path": "chroma", "mode": "hybrid", "dense_models": ["minilm"]}
    absent_options = {"path": "chroma-empty", "collection": "absent", "build": "never"}


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory):
    """Chroma's own server (`chroma run`, shipped with chromadb) on 127.0.0.1, stopped by its pid."""
    import sys
    from pathlib import Path

    from vx_eval.testing.processes import free_port, start_server

    port = free_port()
    folder = tmp_path_factory.mktemp("chroma-server")
    binary = Path(sys.executable).parent / "chroma"
    argv = [binary, "run", "--path", folder / "data", "--host", "127.0.0.1", "--port", str(port)]
    with start_server(argv, port=port, what="chroma run", cwd=folder, seconds=60) as server:
        yield server.url


class TestChromaServer(EngineConformance):
    """The same suite over HTTP against Chroma's own server."""

    engine = "chroma"

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def _point_at_server(cls, chroma_server: str) -> None:
        cls.options = {"url": chroma_server, "mode": "hybrid", "dense_models": ["minilm"], "collection": "conf"}
        cls.absent_options = {"url": chroma_server, "collection": "absent", "build": "never"}


def test_a_chroma_server_that_is_not_there_is_one_line(tmp_path) -> None:
    from vx_eval.core.contracts.engine import OpenContext
    from vx_eval.core.errors import EngineError
    from vx_eval.plugins.engines.chroma import ChromaEngine, ChromaOptions
    from vx_eval.testing.processes import free_port

    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(EngineError, match=rf"target Chroma: cannot reach {url} .*is the Chroma server running"):
        ChromaEngine().open(ChromaOptions(url=url, build="never"), OpenContext("Chroma", tmp_path, None))
