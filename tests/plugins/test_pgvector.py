"""PostgreSQL + pgvector, a real server on 127.0.0.1: the conformance suite (exact and HNSW), fusion in SQL,
the server's own times, and faults survived: a killed connection, a statement timeout, a restart mid-run."""

from __future__ import annotations

import os

import psycopg
import pytest
import yaml

from vx_eval.core.contracts.engine import DENSE_PREFIX, FUSION, KEYWORD, Query, server_time
from vx_eval.core.errors import EngineError
from vx_eval.python.commands import run
from vx_eval.testing.conformance import EngineConformance, Opened

DSN_ENV = "VX_TEST_PG_DSN"


@pytest.fixture(scope="module", autouse=True)
def _dsn(postgres):
    os.environ[DSN_ENV] = postgres.dsn
    yield
    os.environ.pop(DSN_ENV, None)


class TestPgvectorExact(EngineConformance):
    """Exact search: the dense top 10 must equal the embedded engine's (the same vectors, cosine)."""

    engine = "pgvector"
    options = {
        "dsn": {"env": DSN_ENV},
        "collection": "conformance_exact",
        "mode": "hybrid",
        "dense_models": ["minilm"],
        "exact": True,
    }
    absent_options = {"dsn": {"env": DSN_ENV}, "collection": "absent_table", "build": "never"}


@pytest.mark.slow
class TestPgvectorHnsw(EngineConformance):
    """HNSW: approximate, on 52 documents still the same top 10 nearly always."""

    engine = "pgvector"
    options = {"dsn": {"env": DSN_ENV}, "collection": "conformance_hnsw", "mode": "hybrid", "dense_models": ["minilm"]}
    agreement = 0.9


@pytest.fixture(scope="module")
def opened(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pg")
    options = {
        "dsn": {"env": DSN_ENV},
        "collection": "faults",
        "mode": "hybrid",
        "dense_models": ["minilm"],
        "exact": True,
    }
    made = Opened(folder, "pgvector", options, {"mode": "hybrid", "dense_models": ["minilm"], "chunk_words": 0})
    yield made
    made.close()


def test_the_engine_fuses_in_sql_with_the_runs_weights_and_reports_its_own_time(opened):
    handle = opened.candidate.handle
    assert FUSION in handle.capabilities() and handle.describe()["version"].startswith("PostgreSQL 18")
    text = "Can a customer postpone a loan payment after a wildfire?"
    keyword = handle.search(Query(text, 20, KEYWORD))
    dense = handle.search(Query(text, 20, DENSE_PREFIX + "minilm"))
    parts = (KEYWORD, DENSE_PREFIX + "minilm")
    only_dense = handle.search(Query(text, 20, FUSION, parts=parts, fusion="convex", weights=(0.0, 1.0)))
    # all weight on dense: its order (the last place ties at 0 with keyword-only hits, so up to there)
    assert [h.chunk_id for h in only_dense][:19] == [h.chunk_id for h in dense][:19]
    rrf = handle.search(Query(text, 20, FUSION, parts=parts, fusion="rrf", weights=(1.0, 1.0), rrf_k=60))[:10]
    expected: dict[str, float] = {}
    for ranking in (keyword, dense):
        for rank, hit in enumerate(ranking, start=1):
            expected[hit.chunk_id] = expected.get(hit.chunk_id, 0.0) + 1 / (60 + rank)
    assert [h.score for h in rrf] == pytest.approx(sorted(expected.values(), reverse=True)[:10])
    spent: list[float] = []
    token = server_time.set(spent)
    try:
        handle.search(Query(text, 10, KEYWORD))
    finally:
        server_time.reset(token)
    assert len(spent) == 1 and 0 < spent[0] < 1000
    assert handle.search(Query("the of and", 5, KEYWORD)) == []  # nothing but stop words
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):  # searches read only
        handle.connections.reader().execute("CREATE TABLE nope (x int)")


@pytest.mark.slow
def test_a_killed_connection_and_a_restarted_server_are_survived(opened, postgres):
    handle = opened.candidate.handle
    text = "What does a wire transfer abroad cost?"
    before = handle.search(Query(text, 10, DENSE_PREFIX + "minilm"))
    with psycopg.connect(postgres.dsn, autocommit=True) as admin:  # kill every other session
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND application_name = 'vx-eval'"
        )
    assert handle.search(Query(text, 10, DENSE_PREFIX + "minilm")) == before
    postgres.restart()
    assert handle.search(Query(text, 10, DENSE_PREFIX + "minilm")) == before
    calls = handle.connections.policy.calls
    assert calls < 50


def test_a_statement_timeout_is_retried_a_bounded_number_of_times_then_one_clear_error(opened):
    handle = opened.candidate.handle
    conn = handle.connections.reader()
    conn.execute("SET statement_timeout = 1")  # every statement on this thread's connection is cancelled
    conn.execute("SET default_transaction_read_only = on")
    slow = "SELECT pg_sleep(0.05), 'd', 'c', 1, 1.0"
    from psycopg import sql

    policy = handle.connections.policy
    policy.sleep = lambda seconds: None
    start = policy.calls
    with pytest.raises(EngineError, match="failed after 4 tries while searching"):
        handle._timed(sql.SQL(slow))
    assert policy.calls - start == 4  # retries: 3
    conn.execute("SET statement_timeout = 30000")


def test_a_wrong_password_is_one_clear_error_naming_the_target(tmp_path, postgres):
    with psycopg.connect(postgres.dsn, autocommit=True) as admin:
        admin.execute("DROP ROLE IF EXISTS guarded")
        admin.execute("CREATE ROLE guarded LOGIN PASSWORD 'right-one'")
    postgres.require_password("guarded")
    os.environ["VX_TEST_PG_PASSWORD"] = "wrong-one"
    config = {
        "name": "pw",
        "golden": "g.jsonl",
        "targets": [
            {
                "name": "PG",
                "engine": "pgvector",
                "options": {
                    "host": "127.0.0.1",
                    "port": postgres.port,
                    "user": "guarded",
                    "password": {"env": "VX_TEST_PG_PASSWORD"},
                },
            }
        ],
    }
    (tmp_path / "g.jsonl").write_text('{"id": "q", "question": "x", "expected": ["d"]}\n')
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(EngineError) as caught:
        run(tmp_path / "c.yaml", save=False)
    message = str(caught.value)
    assert message.startswith("PG: postgresql://127.0.0.1:") and "refused the user and password" in message
    assert "wrong-one" not in message


def test_discover_reads_a_table_and_its_options_search_it_as_it_is(opened, postgres, tmp_path, plugins):
    from vx_eval.core.contracts.engine import OpenContext
    from vx_eval.core.models.loading import Models
    from vx_eval.plugins.engines.pgvector import PgvectorEngine, PgvectorOptions

    found = PgvectorEngine().discover(f"{postgres.dsn}/faults")
    options = found.options
    assert isinstance(options, PgvectorOptions) and found.name == "faults"
    assert (options.host, options.user, options.collection, options.build) == ("127.0.0.1", "vx", "faults", "never")
    assert options.dense_models == ["minilm"] and options.dsn is None and options.password is None
    assert found.found[0] == "95 documents in 95 chunks in table faults (built by vx-eval)"
    assert found.found[1] == "vector columns: emb_minilm (vector(384))"
    assert found.found[2].startswith("full text (tsv): yes; PostgreSQL 18")
    handle = PgvectorEngine().open(options, OpenContext("faults", tmp_path, None, models=Models(plugins.models)))
    try:
        assert {KEYWORD, DENSE_PREFIX + "minilm", FUSION} <= handle.capabilities()
        assert len(handle.search(Query("loan payment after a wildfire", 5, DENSE_PREFIX + "minilm"))) == 5
    finally:
        handle.close()


def test_discover_says_what_is_wrong_with_a_table_in_one_line(postgres, monkeypatch):
    from vx_eval.core.errors import ConfigError
    from vx_eval.plugins.engines.pgvector import PgvectorEngine

    with pytest.raises(EngineError, match=r"has no table 'nosuch'"):
        PgvectorEngine().discover(f"{postgres.dsn}/nosuch")
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS notes (id int, note text)")
    with pytest.raises(EngineError, match=r"table 'notes' has no body, chunk_id, doc_id column"):
        PgvectorEngine().discover(f"{postgres.dsn}/notes")
    with pytest.raises(ConfigError, match=r"cannot name a table"):
        PgvectorEngine().discover(f"{postgres.dsn}/Bad-Name")
    with pytest.raises(ConfigError, match=r"carries a password") as caught:
        PgvectorEngine().discover(postgres.dsn.replace("vx@", "vx:Sekr3t-pw@") + "/faults")
    assert "Sekr3t-pw" not in str(caught.value)
    monkeypatch.setenv("PGPASSWORD", "not-needed-here")
    assert PgvectorEngine().discover(f"{postgres.dsn}/faults").options.password.env == "PGPASSWORD"
