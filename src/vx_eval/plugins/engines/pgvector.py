"""PostgreSQL with pgvector as a target, through psycopg 3: a real server over TCP.

What a table holds, one row per chunk (the same chunks, ids and vectors every engine gets from `prepare`):
``chunk_id`` (key), ``doc_id``, ``page``, ``ord``, ``body``; ``tsv``, the body's ``tsvector`` in the
``language`` configuration (generated, GIN-indexed); a ``vector`` column per dense model (``emb_<model>``
unless ``vectors`` names it), with an HNSW index for cosine distance (none with ``exact: true``: every
search then compares every chunk); and on each document's first chunk its ``title``, ``doc_text`` and
``metadata``. vx-eval builds it under a temporary name, swaps it in, and writes the fingerprint (a comment on
the table) last, so a build that died is built again; a table somebody else filled is opened as it is.

Searches:
- ``keyword``: PostgreSQL full text, ``ts_rank`` (or ``ts_rank_cd``) over ``tsv @@ to_tsquery`` with the
  question's words joined by OR. It is not BM25: no document-frequency weight (the label says so).
  ``keyword: trigram`` ranks by ``word_similarity`` (pg_trgm) instead.
- ``dense:<model>``: ``ORDER BY column <=> q`` (cosine), through HNSW or exact.
- ``fusion``: keyword and dense (or several dense) fused in one SQL statement, RRF or convex over min-max
  normalised scores, with the run's weights: the engine fuses its own searches.

Every search runs on read-only connections (one per calling thread) with a ``statement_timeout``; every
call goes through the remote policy (timeouts, bounded retries on a lost connection, a cancelled statement or
a server that is starting or shutting down, one clear error for refused credentials), and a lost connection
is opened again by the retry. The server's own time for each search statement is taken with
``clock_timestamp()`` around it in the same round trip and reported beside the time the caller saw.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from vx_eval import hookimpl
from vx_eval.plugin import (
    DENSE,
    DENSE_PREFIX,
    FUSION,
    KEYWORD,
    ConfigError,
    Discovered,
    Document,
    Engine,
    EngineError,
    EngineOptions,
    Hit,
    OpenContext,
    Query,
    SecretRef,
    on_first_use,
    quoted,
    record_server_time,
)
from vx_eval.plugins.engines.pgcalls import (
    FORMAT,
    Connections,
    build,
    policy,
    stored_fingerprint,
    table_columns,
    table_counts,
    table_exists,
    vector_text,
)
from vx_eval.plugins.engines.remote import (
    RemoteHandle,
    RemoteOptions,
    collection_name,
    ensure_built,
    need,
    options_for,
    stored_documents,
    target_parts,
)

sql = on_first_use("psycopg.sql", "pgvector")

IDENTIFIER = r"^[a-z_][a-z0-9_]{0,50}$"
WORD = re.compile(r"\w+", re.UNICODE)


def column_of(model: str) -> str:
    return "emb_" + re.sub(r"[^a-z0-9]+", "_", model.lower()).strip("_")


class PgvectorOptions(RemoteOptions):
    dsn: SecretRef | None = None
    """A connection string by reference (``{env: PG_DSN}``): it may hold a password."""
    host: str | None = None
    port: int = Field(5432, ge=1, le=65535)
    user: str | None = None
    password: SecretRef | None = None
    dbname: str = "postgres"
    search_path: str = Field("public", pattern=IDENTIFIER)
    """The schema the table lives in."""
    language: str = Field("english", pattern=IDENTIFIER)
    """The text search configuration of the keyword search (``english``, ``simple``, ``german``…)."""
    keyword: Literal["fts", "trigram"] = "fts"
    ranking: Literal["ts_rank", "ts_rank_cd"] = "ts_rank"
    """How full text ranks: term frequency (``ts_rank``) or cover density (``ts_rank_cd``). On SciFact with
    `normalization` 1, ts_rank reaches nDCG@10 0.598 and ts_rank_cd 0.372 (BM25: 0.687)."""
    normalization: int = Field(1, ge=0, le=63)
    """PostgreSQL's rank normalization bits: 1 divides by 1 + log(document length)."""
    exact: bool = False
    """Exact cosine search over every chunk (no HNSW index) instead of HNSW."""
    hnsw_m: int = Field(16, ge=2, le=100)
    ef_construction: int = Field(64, ge=4, le=1000)
    ef_search: int = Field(40, ge=1, le=1000)
    vectors: dict[str, str] = Field(default_factory=dict)
    """Model -> column, where a table names its vector columns otherwise (default ``emb_<model>``)."""

    @model_validator(mode="after")
    def _somewhere(self) -> PgvectorOptions:
        if (self.dsn is None) == (self.host is None):
            raise ValueError(
                "name the server once: dsn: {env: VARIABLE} (a connection string) or host: (with port, user)"
            )
        if self.collection is not None and not re.match(IDENTIFIER, self.collection):
            raise ValueError(f"collection (the table) {self.collection!r} must be a lower-case SQL name: a-z, 0-9, _")
        return self

    def column(self, model: str) -> str:
        return self.vectors.get(model, column_of(model))

    def indexing(self) -> dict[str, Any]:
        return {
            **super().indexing(),
            "language": self.language,
            "exact": self.exact,
            "hnsw": None if self.exact else [self.hnsw_m, self.ef_construction],
            "vectors": {m: self.column(m) for m in self.dense_models},
            "trigram": self.keyword == "trigram",
        }


# ---------------------------------------------------------------------------------------------- engine


def _conninfo(options: PgvectorOptions) -> tuple[str, str]:
    """The connection string, and where it points as people read it (no user, no password)."""
    psycopg = need("psycopg", "pgvector")
    conninfo = psycopg.conninfo
    if options.dsn is not None:
        base = options.dsn.value()
        try:
            parts = conninfo.conninfo_to_dict(base)
        except psycopg.ProgrammingError:
            raise EngineError(f"the dsn in {options.dsn.env} is not a PostgreSQL connection string") from None
        built = conninfo.make_conninfo(base, application_name="vx-eval")
    else:
        password = options.password.value() if options.password else None
        parts = {"host": options.host, "port": options.port, "dbname": options.dbname}
        built = conninfo.make_conninfo(
            host=options.host,
            port=options.port,
            user=options.user,
            password=password,
            dbname=options.dbname,
            application_name="vx-eval",
        )
    where = f"postgresql://{parts.get('host') or 'localhost'}:{parts.get('port') or 5432}/{parts.get('dbname') or ''}"
    return built, where


class PgvectorEngine(Engine[PgvectorOptions]):
    """PostgreSQL + pgvector: full-text keyword search, dense per vector column (HNSW or exact), and
    hybrid fused in SQL."""

    name: ClassVar[str] = "pgvector"
    Options: ClassVar[type[EngineOptions]] = PgvectorOptions

    def open(self, options: PgvectorOptions, context: OpenContext) -> PgvectorHandle:
        conninfo, where = _conninfo(options)
        connections = Connections(conninfo, options, policy(options, context.target_name, where))
        table = collection_name(options, context).replace("-", "_")
        if not re.match(IDENTIFIER, table):
            raise EngineError(
                f"target {context.target_name}: {table!r} cannot name a table; set collection: to a lower-case SQL "
                "name (a-z, 0-9, _)"
            )
        try:
            stored = connections.read(f"reading table {table}", lambda c: stored_fingerprint(c, table))
            ensure_built(
                options,
                context,
                engine_format=FORMAT,
                stored=lambda: stored,
                build=lambda built, wanted: build(connections, table, options, built, wanted),
                exists=lambda: (
                    stored is not None
                    or connections.read(f"looking up table {table}", lambda c: table_exists(c, table))
                ),
                absent=f"{where} has no table {table!r}",
            )
            return PgvectorHandle(connections, table, options, context.models, where)
        except BaseException:
            connections.close()
            raise

    def discover(self, where: str) -> Discovered:
        """``postgresql://USER@HOST:PORT/DBNAME/TABLE`` (the password from ``PGPASSWORD`` when that is set): a
        table of the shape this engine builds (``chunk_id``, ``doc_id``, ``body``, ``tsv``), searched as it is:
        PostgreSQL full text, and a dense setup per vector column named after its model (``emb_<model>``)."""
        base, table = target_parts(where, self.name, "postgresql://me@localhost:5432/postgres/docs")
        psycopg = need("psycopg", "pgvector")
        spec = f"pgvector:{where}"
        try:
            parts = psycopg.conninfo.conninfo_to_dict(base)
            port = int(parts.get("port") or 5432)
        except (psycopg.ProgrammingError, ValueError):
            raise ConfigError(f"--target {spec}: write postgresql://USER@HOST:PORT/DBNAME/TABLE") from None
        if not re.match(IDENTIFIER, table):
            raise ConfigError(
                f"--target {spec}: {quoted(table)} cannot name a table; a lower-case SQL name (a-z, 0-9, _)"
            )
        fields: dict[str, Any] = {"host": parts.get("host") or "localhost", "port": port, "collection": table}
        fields |= {"dbname": parts.get("dbname") or "postgres", "build": "never"}
        fields |= {"user": parts["user"]} if parts.get("user") else {}
        fields |= {"password": {"env": "PGPASSWORD"}} if os.environ.get("PGPASSWORD") else {}
        options = options_for(PgvectorOptions, fields, spec)
        conninfo, said = _conninfo(options)
        connections = Connections(conninfo, options, policy(options, f"--target {spec}", said))
        try:
            columns = connections.read(f"reading table {table}", lambda c: table_columns(c, table))
            lacking = sorted({"chunk_id", "doc_id", "body"} - set(columns))
            if lacking:
                what = (
                    f"{said} has no table {table!r}"
                    if not columns
                    else f"table {table!r} has no "
                    + (f"{', '.join(lacking)} column: it is not of the shape this engine searches (see the README)")
                )
                raise EngineError(f"--target {spec}: {what}")
            built = connections.read(f"reading table {table}", lambda c: stored_fingerprint(c, table))
            chunks, documents, version, pgvector = connections.read(
                f"counting table {table}", lambda c: table_counts(c, table)
            )
        finally:
            connections.close()
        vectors = {c: kind for c, kind in columns.items() if kind.startswith("vector")}
        fields["dense_models"] = sorted(c.removeprefix("emb_") for c in vectors)
        fields["vectors"] = {c: c for c in vectors if not c.startswith("emb_")}
        found = (
            f"{documents} documents in {chunks} chunks in table {table}" + (" (built by vx-eval)" if built else ""),
            "vector columns: " + (", ".join(f"{c} ({kind})" for c, kind in vectors.items()) or "none"),
            f"full text (tsv): {'yes' if 'tsv' in columns else 'no'}; PostgreSQL {version}, pgvector {pgvector}",
        )
        return Discovered(options_for(PgvectorOptions, fields, spec), table, found)


class PgvectorHandle(RemoteHandle[PgvectorOptions]):
    """An opened PostgreSQL table."""

    keyword_ranking = "PostgreSQL full text, not BM25"

    def __init__(self, connections: Connections, table: str, options: PgvectorOptions, models: Any, where: str) -> None:
        self.connections, self.table, self.options, self.models, self.where = connections, table, options, models, where
        self.keyword_ranking = f"{options.ranking}: PostgreSQL full text, not BM25"
        if options.keyword == "trigram":
            self.keyword_ranking = "word_similarity: pg_trgm trigrams"
        columns = connections.read(f"reading table {table}", lambda c: table_columns(c, table))
        self.dense = {m: c for m, c in self._models(columns).items()}
        self.has_tsv = "tsv" in columns
        info = connections.read(f"counting table {table}", lambda c: table_counts(c, table))
        self.chunks, self.documents_count, self.version, self.pgvector = info

    def _models(self, columns: dict[str, str]) -> dict[str, str]:
        """Model -> vector column: the configured models whose columns the table has, and any other vector
        column by its own name (``emb_x`` is model ``x``)."""
        vector_columns = {c for c, kind in columns.items() if kind.startswith("vector")}
        out = {m: self.options.column(m) for m in self.options.dense_models if self.options.column(m) in vector_columns}
        named = set(out.values())
        for column in sorted(vector_columns - named):
            out[column.removeprefix("emb_")] = column
        return out

    def held(self) -> int:
        return int(self.chunks)

    def dense_models(self) -> list[str]:
        return list(self.dense)

    def own_capabilities(self) -> set[str]:
        return {KEYWORD, FUSION}

    def describe(self) -> dict[str, Any]:
        return {
            "collection": self.table,
            "documents": self.documents_count,
            "chunks": self.chunks,
            "models": sorted(self.dense),
            "version": f"PostgreSQL {self.version}, pgvector {self.pgvector or '?'}",
            "location": self.where,
            "mode": self.options.mode,
            "keyword": self.keyword_ranking,
            "index": "exact (every chunk compared)"
            if self.options.exact
            else f"HNSW (ef_search {self.options.ef_search})",
        }

    # ------------------------------------------------------------------------------------------ search

    def _part(self, capability: str, text: str, depth: int) -> Any | None:
        """The SQL of one ranked list: (doc_id, chunk_id, page, score), best first; None: nothing to ask."""

        table = sql.Identifier(self.table)
        if capability == KEYWORD:
            words = WORD.findall(text.lower())
            if not words:
                return None
            if self.options.keyword == "trigram":
                asked = sql.Literal(" ".join(words))
                return sql.SQL(
                    "SELECT doc_id, chunk_id, page, word_similarity({q}, body) AS score FROM {t} "
                    "WHERE {q} <% body ORDER BY score DESC, chunk_id LIMIT {k}"
                ).format(q=asked, t=table, k=sql.Literal(depth))
            terms = sql.Literal(" | ".join(f"'{w}'" for w in words))
            vector = (
                sql.SQL("tsv")
                if self.has_tsv
                else sql.SQL("to_tsvector({}::regconfig, body)").format(sql.Literal(self.options.language))
            )
            return sql.SQL(
                "SELECT doc_id, chunk_id, page, {rank}({v}, q, {norm}) AS score FROM {t}, "
                "to_tsquery({lang}::regconfig, {terms}) q WHERE {v} @@ q ORDER BY score DESC, chunk_id LIMIT {k}"
            ).format(
                rank=sql.SQL(self.options.ranking), v=vector, norm=sql.Literal(self.options.normalization), t=table,
                lang=sql.Literal(self.options.language), terms=terms, k=sql.Literal(depth),
            )  # fmt: skip
        model = capability.removeprefix(DENSE_PREFIX)
        if capability.startswith(DENSE_PREFIX) and model in self.dense:
            q = vector_text(self.models.get(model, DENSE).encode_queries([text])[0])
            column = sql.Identifier(self.dense[model])
            return sql.SQL(
                "SELECT doc_id, chunk_id, page, 1 - ({c} <=> {q}::vector) AS score FROM {t} "
                "ORDER BY {c} <=> {q}::vector LIMIT {k}"
            ).format(c=column, q=sql.Literal(q), t=table, k=sql.Literal(depth))
        held = ", ".join(sorted(self.capabilities()))
        raise EngineError(f"the pgvector target has no capability {quoted(capability)} (it has: {held})")

    def _fused(self, query: Query) -> Any | None:
        """The parts fused in one statement: RRF (weight / (k + rank)) or convex (each list's scores min-max
        normalised over what it returned, weighted), best first."""

        parts = [(p, self._part(p, query.text, query.k)) for p in query.parts]
        asked = [(i, statement) for i, (_, statement) in enumerate(parts) if statement is not None]
        if not asked:
            return None
        weights = list(query.weights) or [1.0 / len(parts)] * len(parts)
        lists = []
        for i, statement in asked:
            if query.fusion == "rrf":
                value = sql.SQL("{w} / ({k} + row_number() OVER (ORDER BY score DESC, chunk_id))").format(
                    w=sql.Literal(float(weights[i])), k=sql.Literal(int(query.rrf_k))
                )
            else:
                share = "(score - min(score) OVER ()) / nullif(max(score) OVER () - min(score) OVER (), 0)"
                value = sql.SQL("{w} * coalesce(" + share + ", 1)").format(w=sql.Literal(float(weights[i])))
            lists.append(sql.SQL("SELECT doc_id, chunk_id, page, {v} AS part FROM ({s}) p{i}").format(
                v=value, s=statement, i=sql.SQL(str(i))
            ))  # fmt: skip
        return sql.SQL(
            "SELECT doc_id, chunk_id, page, sum(part) AS score FROM ({u}) f GROUP BY doc_id, chunk_id, page "
            "ORDER BY score DESC, chunk_id LIMIT {k}"
        ).format(u=sql.SQL(" UNION ALL ").join(lists), k=sql.Literal(query.k))

    def _timed(self, statement: Any) -> list[Hit]:
        """Run `statement` between two readings of the server's clock, in one round trip; the server's time
        is recorded, the hits returned."""

        def work(conn: Any) -> list[Hit]:
            text = sql.SQL("SELECT clock_timestamp(); {}; SELECT clock_timestamp()").format(statement).as_string(conn)
            with conn.cursor() as cursor:
                cursor.execute(text)
                (start,) = cursor.fetchone()
                cursor.nextset()
                rows = cursor.fetchall()
                cursor.nextset()
                (end,) = cursor.fetchone()
            record_server_time((end - start).total_seconds() * 1000)
            return [Hit(str(d), float(s), int(p) if p is not None else None, c) for d, c, p, s in rows]

        return self.connections.read("searching", work)

    def search(self, query: Query) -> list[Hit]:
        if query.capability == FUSION:
            if not query.parts:
                raise EngineError("a fusion query names no parts to fuse")
            statement = self._fused(query)
        else:
            statement = self._part(query.capability, query.text, query.k)
        return self._timed(statement) if statement is not None else []

    def passages(self, hits: Sequence[Hit]) -> list[str]:

        ids = [h.chunk_id or "" for h in hits]
        statement = sql.SQL("SELECT chunk_id, body FROM {} WHERE chunk_id = ANY(%s)").format(sql.Identifier(self.table))
        body = dict(
            self.connections.read(
                f"reading passages from {self.table}", lambda c: c.execute(statement, (ids,)).fetchall()
            )
        )
        return [body.get(i, "") for i in ids]

    # ------------------------------------------------------------------------------------------ documents

    def _read_document_ids(self) -> list[str]:

        statement = sql.SQL("SELECT DISTINCT doc_id FROM {} ORDER BY doc_id").format(sql.Identifier(self.table))
        rows = self.connections.read(f"listing documents of {self.table}", lambda c: c.execute(statement).fetchall())
        return sorted(str(r[0]) for r in rows)

    def documents(self, doc_ids: Iterable[str]) -> list[Document]:

        wanted = list(doc_ids)
        if not wanted:
            return []
        statement = sql.SQL("SELECT doc_id, title, doc_text, metadata FROM {} WHERE first AND doc_id = ANY(%s)").format(
            sql.Identifier(self.table)
        )
        rows = self.connections.read(
            f"reading documents of {self.table}", lambda c: c.execute(statement, (wanted,)).fetchall()
        )
        found = {str(d): {"title": t, "text": x, "metadata": m} for d, t, x, m in rows}
        return stored_documents(wanted, found)

    def close(self) -> None:
        self.connections.close()


@hookimpl
def vx_eval_register_engines(register):
    register.add(PgvectorEngine)
