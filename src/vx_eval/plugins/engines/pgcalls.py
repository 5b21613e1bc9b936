"""PostgreSQL calls for the pgvector engine: connections (one read-only connection per calling thread,
opened again after a failure broke it), the remote policy over psycopg's errors, and the table's build."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from vx_eval.plugin import RemotePolicy, on_first_use
from vx_eval.plugins.engines.remote import Built, is_first_chunk, need

psycopg = on_first_use("psycopg", "pgvector")
sql = on_first_use("psycopg.sql", "pgvector")

if TYPE_CHECKING:
    from vx_eval.plugins.engines.pgvector import PgvectorOptions

FORMAT = 1
COPY_BATCH = 500


def _sqlstate(exc: BaseException) -> str:
    return str(getattr(exc, "sqlstate", "") or "")


TRANSIENT_STATES = ("57014", "57P01", "57P02", "57P03", "40001", "40P01", "53300")
"""A cancelled statement (the timeout), the server shutting down or starting, serialisation failures, too
many connections: tried again."""


def policy(options: PgvectorOptions, target: str, where: str) -> RemotePolicy:
    psycopg = need("psycopg", "pgvector")
    refused_states = ("28P01", "28000")

    def transient(exc: BaseException) -> bool:
        return _sqlstate(exc) in TRANSIENT_STATES or (
            isinstance(exc, psycopg.OperationalError) and not _sqlstate(exc) and not _refused_text(exc)
        )

    return RemotePolicy(
        target=target,
        where=where,
        retries=options.retries,
        errors=(psycopg.OperationalError, psycopg.InterfaceError, psycopg.errors.QueryCanceled),
        transient=transient,
        refused=lambda exc: _sqlstate(exc) in refused_states or _refused_text(exc),
        unreachable=lambda exc: "connection refused" in str(exc).lower() or "could not connect" in str(exc).lower(),
        status=lambda exc: _sqlstate(exc) or "authentication",
        credentials="the user and password",
        check="check the dsn, user and password the target names",
    )


def _refused_text(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "password authentication failed" in text or "no pg_hba.conf entry" in text


class Connections:
    """One read-only connection per calling thread (opened when first needed, opened again after it broke),
    and writing connections for a build; every use under the remote policy."""

    def __init__(self, conninfo: str, options: PgvectorOptions, policy: RemotePolicy) -> None:
        self.conninfo, self.options, self.policy = conninfo, options, policy
        self.local = threading.local()
        self.opened: list[Any] = []
        self.lock = threading.Lock()

    def _connect(self, read_only: bool) -> Any:

        conn = psycopg.connect(self.conninfo, autocommit=True, connect_timeout=max(1, int(self.options.timeout)))
        conn.execute(f"SET statement_timeout = {int(self.options.timeout * 1000)}")
        conn.execute(f"SET search_path = {self.options.search_path}, public")
        if read_only:
            conn.execute("SET default_transaction_read_only = on")
            conn.execute(f"SET hnsw.ef_search = {self.options.ef_search}")
            if self.options.exact:  # exact: never an approximate index scan, whatever the table holds
                conn.execute("SET enable_indexscan = off")
        with self.lock:
            self.opened.append(conn)
        return conn

    def reader(self) -> Any:
        conn = getattr(self.local, "conn", None)
        if conn is None or conn.closed or conn.broken:
            conn = self.local.conn = self._connect(read_only=True)
        return conn

    def read(self, what: str, work: Any) -> Any:
        """`work(connection)` on this thread's read-only connection, under the policy; a connection the
        failure broke is dropped, so the next try opens a new one."""

        def attempt() -> Any:
            conn = self.reader()
            try:
                return work(conn)
            except Exception:
                if conn.broken or conn.closed:
                    self.local.conn = None
                raise

        return self.policy(what, attempt)

    @contextmanager
    def writer(self, what: str) -> Iterator[Any]:
        conn = self.policy(f"connecting to build ({what})", lambda: self._connect(read_only=False))
        try:
            yield conn
        finally:
            conn.close()

    def close(self) -> None:
        with self.lock:
            for conn in self.opened:
                conn.close()
            self.opened.clear()


def table_exists(conn: Any, table: str) -> bool:
    return conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()[0]


def table_columns(conn: Any, table: str) -> dict[str, str]:
    """Column -> its type as PostgreSQL writes it (``vector(384)``); empty when there is no such table."""
    rows = conn.execute(
        "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = to_regclass(%s) "
        "AND attnum > 0 AND NOT attisdropped",
        (table,),
    ).fetchall()
    return {name: kind for name, kind in rows}


def table_counts(conn: Any, table: str) -> tuple[int, int, str, str | None]:
    """Chunks, documents, the server's version and pgvector's (None when the extension is not there)."""

    chunks, documents = conn.execute(
        sql.SQL("SELECT count(*), count(DISTINCT doc_id) FROM {}").format(sql.Identifier(table))
    ).fetchone()
    version = conn.execute("SHOW server_version").fetchone()[0]
    extension = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return int(chunks), int(documents), str(version), extension[0] if extension else None


def stored_fingerprint(conn: Any, table: str) -> str | None:
    row = conn.execute("SELECT obj_description(to_regclass(%s), 'pg_class')", (table,)).fetchone()
    try:
        return json.loads(row[0])["vx_eval"]["fingerprint"] if row and row[0] else None
    except (ValueError, KeyError, TypeError):
        return None  # a comment of somebody else's


def vector_text(values: Any) -> str:
    return "[" + ",".join(f"{float(v):.8g}" for v in values) + "]"


def build(connections: Connections, table: str, options: PgvectorOptions, built: Built, wanted: str) -> None:
    """The table built under a temporary name, filled, indexed, swapped in; the fingerprint written last."""

    building = f"{table}__building"
    columns = {m: options.column(m) for m in options.dense_models}
    with connections.writer(f"table {table}") as conn:

        def run(statement: Any, params: Any = None) -> None:
            connections.policy(f"building table {table}", lambda: conn.execute(statement, params))

        run("CREATE EXTENSION IF NOT EXISTS vector")
        if options.keyword == "trigram":
            run("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        run(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(building)))
        vectors = sql.SQL("").join(
            sql.SQL(", {} vector({})").format(sql.Identifier(c), sql.Literal(int(built.dense[m].shape[1])))
            for m, c in columns.items()
        )
        run(
            sql.SQL(
                "CREATE TABLE {} (chunk_id text PRIMARY KEY, doc_id text NOT NULL, page integer, ord integer NOT NULL, "
                "body text NOT NULL, tsv tsvector GENERATED ALWAYS AS (to_tsvector({}::regconfig, body)) STORED, "
                "first boolean NOT NULL DEFAULT false, title text, doc_text text, metadata jsonb{})"
            ).format(sql.Identifier(building), sql.Literal(options.language), vectors)
        )
        names = ["chunk_id", "doc_id", "page", "ord", "body", "first", "title", "doc_text", "metadata"]
        names += columns.values()
        copy = sql.SQL("COPY {} ({}) FROM STDIN").format(
            sql.Identifier(building), sql.SQL(", ").join(sql.Identifier(n) for n in names)
        )
        advance = built.context.progress.start(f"Writing {built.context.target_name} · {table}", len(built.chunks))
        for start in range(0, len(built.chunks), COPY_BATCH):
            rows = []
            for i in range(start, min(start + COPY_BATCH, len(built.chunks))):
                chunk = built.chunks[i]
                first = is_first_chunk(chunk)
                fields = built.documents[chunk.doc_id] if first else {}
                rows.append(
                    (
                        chunk.chunk_id, chunk.doc_id, chunk.page, chunk.ord, chunk.body, first,
                        fields.get("title"), fields.get("text"),
                        json.dumps(fields.get("metadata") or {}, ensure_ascii=False) if first else None,
                        *(vector_text(built.dense[m][i]) for m in columns),
                    )
                )  # fmt: skip
            _copy(connections, conn, copy, rows, table)
            advance(len(rows))
        indexes = [
            sql.SQL("CREATE INDEX ON {} USING gin (tsv)").format(sql.Identifier(building)),
            sql.SQL("CREATE INDEX ON {} (doc_id)").format(sql.Identifier(building)),
        ]
        if options.keyword == "trigram":
            indexes.append(sql.SQL("CREATE INDEX ON {} USING gin (body gin_trgm_ops)").format(sql.Identifier(building)))
        if not options.exact:
            for column in columns.values():
                hnsw = "CREATE INDEX ON {} USING hnsw ({} vector_cosine_ops) WITH (m = {}, ef_construction = {})"
                indexes.append(
                    sql.SQL(hnsw).format(
                        sql.Identifier(building), sql.Identifier(column), sql.Literal(options.hnsw_m),
                        sql.Literal(options.ef_construction),
                    )
                )  # fmt: skip
        for statement in indexes:
            run(statement)
        run(sql.SQL("ANALYZE {}").format(sql.Identifier(building)))

        def swap() -> None:
            with conn.transaction():
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))
                conn.execute(
                    sql.SQL("ALTER TABLE {} RENAME TO {}").format(sql.Identifier(building), sql.Identifier(table))
                )

        connections.policy(f"swapping in table {table}", swap)
        note = json.dumps({"vx_eval": {"format": FORMAT, "fingerprint": wanted}})
        run(sql.SQL("COMMENT ON TABLE {} IS {}").format(sql.Identifier(table), sql.Literal(note)))


def _copy(connections: Connections, conn: Any, statement: Any, rows: list[tuple[Any, ...]], table: str) -> None:
    def write() -> None:
        with conn.cursor() as cursor, cursor.copy(statement) as copy:
            for row in rows:
                copy.write_row(row)

    connections.policy(f"writing chunks to {table}", write)
