"""Golden datasets the server keeps, by name, every version kept by its sha256.

A dataset arrives as vx-eval's golden rows, in Mixpeek's shape (``query_id``, ``query_input.query``,
``relevant_documents``, ``relevance_scores``, ``relevance_field``), or as the text of a BEIR folder's files
(``queries.jsonl`` and a ``qrels`` split) or of TREC topics and qrels: what an import leaves out (queries
with no judgement, or none above 0) is said in the answer. It is checked strictly (at least one query;
each with at least one relevant document; scores covering the relevant documents, whole numbers 0-5) and
then as any golden file is (`core.golden.files.parse_golden`: the same messages as ``vx-eval golden check``), and
is kept at ``<store>/datasets/<name>/<sha256>.jsonl`` with ``index.json`` beside (the versions and the
current one, written last). A run names a dataset and takes its current version, or a version by sha256.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from vx_eval.core.contracts.golden import LeftOut
from vx_eval.core.contracts.store import StoreNotFound
from vx_eval.core.errors import GoldenError, StoreError
from vx_eval.core.golden.files import dump_rows, parse_golden
from vx_eval.core.golden.sources import beir_text_bytes, trec_golden_bytes
from vx_eval.core.stores import Stores, join


class DamagedFile(StoreError):
    """A file the server keeps under the store cannot be read (its index.json): listed as damaged, with why."""


NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class MixpeekInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1)


class MixpeekQuery(BaseModel):
    """One query in Mixpeek's shape."""

    model_config = ConfigDict(extra="forbid")
    query_id: str = Field(min_length=1, max_length=200)
    query_input: MixpeekInput
    relevant_documents: list[str] = Field(min_length=1)
    relevance_scores: dict[str, int] = Field(default_factory=dict)
    relevance_field: str | None = None

    @field_validator("relevance_scores")
    @classmethod
    def _range(cls, scores: dict[str, int]) -> dict[str, int]:
        bad = [d for d, g in scores.items() if not 0 <= g <= 5]
        if bad:
            raise ValueError(f"relevance scores are whole numbers from 0 to 5 ({bad[0]!r} is not)")
        return scores

    @model_validator(mode="after")
    def _covered(self) -> MixpeekQuery:
        uncovered = [d for d in self.relevant_documents if self.relevance_scores and d not in self.relevance_scores]
        if uncovered:
            raise ValueError(f"relevance_scores must cover every relevant document; {uncovered[0]!r} has none")
        return self


class BeirFiles(BaseModel):
    """A BEIR folder's files, as text: ``queries.jsonl`` and one qrels split (``qrels/test.tsv``)."""

    model_config = ConfigDict(extra="forbid")
    queries: str = Field(min_length=1)
    qrels: str = Field(min_length=1)


class TrecFiles(BaseModel):
    """TREC topics (``<top>`` blocks or ``id<TAB>text`` lines) and qrels, as text; `field`: which topic field
    is the question."""

    model_config = ConfigDict(extra="forbid")
    topics: str = Field(min_length=1)
    qrels: str = Field(min_length=1)
    field: Literal["title", "desc"] = "title"


@dataclass(frozen=True)
class Converted:
    """A dataset as golden JSONL, the shape it came in, and what its import left out."""

    raw: bytes
    shape: Literal["vx-eval", "mixpeek", "beir", "trec"]
    left_out: tuple[LeftOut, ...] = ()


class DatasetIn(BaseModel):
    """A dataset to keep: ``rows`` (vx-eval golden rows), ``queries`` (Mixpeek's shape), ``beir`` or ``trec``
    (their files' text)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "name": "help-centre",
                    "queries": [
                        {
                            "query_id": "q1",
                            "query_input": {"query": "Can a customer postpone a loan payment after a wildfire?"},
                            "relevant_documents": ["deferment", "wildfire-relief"],
                            "relevance_scores": {"deferment": 3, "wildfire-relief": 2},
                        }
                    ],
                }
            ]
        },
    )
    name: str = Field(min_length=1, max_length=64, pattern=NAME.pattern)
    rows: list[dict[str, Any]] | None = None
    queries: list[MixpeekQuery] | None = None
    beir: BeirFiles | None = None
    trec: TrecFiles | None = None

    @model_validator(mode="after")
    def _one_shape(self) -> DatasetIn:
        given = [x for x in (self.rows, self.queries, self.beir, self.trec) if x is not None]
        if len(given) != 1:
            raise ValueError(
                "give the questions once: rows (vx-eval's golden rows), queries (Mixpeek's shape), beir "
                "(queries.jsonl and qrels text) or trec (topics and qrels text)"
            )
        if (self.rows is not None and not self.rows) or (self.queries is not None and not self.queries):
            raise ValueError("a dataset holds at least one query")
        return self

    @property
    def given_as(self) -> str:
        """The field the questions came in (where a message about them points)."""
        return next(n for n in ("rows", "queries", "beir", "trec") if getattr(self, n) is not None)

    def golden_rows(self) -> Converted:
        """The questions as golden JSONL (GoldenError: BEIR or TREC text that cannot be read)."""
        if self.rows is not None:
            return Converted(dump_rows(self.rows), "vx-eval")
        if self.beir is not None:
            data, left_out = beir_text_bytes(self.beir.queries, self.beir.qrels, "beir.queries", "beir.qrels")
            return Converted(data, "beir", left_out)
        if self.trec is not None:
            t = self.trec
            data, left_out = trec_golden_bytes(t.topics, t.qrels, "trec.topics", "trec.qrels", t.field)
            return Converted(data, "trec", left_out)
        rows = []
        for q in self.queries or []:
            row: dict[str, Any] = {"id": q.query_id, "question": q.query_input.query, "expected": q.relevant_documents}
            if q.relevance_scores:
                row["grades"] = dict(q.relevance_scores)
            if q.relevance_field:
                row["metadata"] = {"relevance_field": q.relevance_field}
            rows.append(row)
        return Converted(dump_rows(rows), "mixpeek")


class Version(BaseModel):
    sha256: str
    created_at: str
    questions: int
    shape: str


class DatasetInfo(BaseModel):
    name: str
    current: str
    versions: list[Version]


class Datasets:
    """The datasets kept under a store's ``datasets/`` folder."""

    def __init__(self, stores: Stores, store: str) -> None:
        self.stores, self.root = stores, join(store, "datasets")

    def _index(self, name: str) -> str:
        return join(self.root, name, "index.json")

    def location(self, name: str, sha: str) -> str:
        return join(self.root, name, f"{sha}.jsonl")

    def keep(self, given: DatasetIn) -> tuple[DatasetInfo, tuple[LeftOut, ...]]:
        """Check and keep a dataset's new version (the same bytes again are the same version); with what its
        import left out."""
        converted = given.golden_rows()
        shape, raw = converted.shape, converted.raw
        golden = parse_golden(raw, f"dataset {given.name}")  # GoldenError: the messages of `golden check`
        if not golden.questions:
            raise GoldenError(f"dataset {given.name} holds no labelled question")
        sha = hashlib.sha256(raw).hexdigest()
        if not self.stores.exists(self.location(given.name, sha)):
            self.stores.write(self.location(given.name, sha), raw)
        try:
            info = self.info(given.name)
            versions = [v for v in info.versions if v.sha256 != sha]
        except StoreNotFound:
            versions = []
        stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        versions.append(Version(sha256=sha, created_at=stamp, questions=len(golden.questions), shape=shape))
        info = DatasetInfo(name=given.name, current=sha, versions=versions)
        self.stores.write(self._index(given.name), info.model_dump_json(indent=1).encode())
        return info, converted.left_out

    def info(self, name: str) -> DatasetInfo:
        if not NAME.match(name):
            raise StoreNotFound(f"no dataset {name!r}: a name is letters, digits, '.', '_' and '-'")
        try:
            data = json.loads(self.stores.read(self._index(name)))
        except StoreNotFound:
            raise StoreNotFound(f"no dataset {name!r}") from None
        except ValueError:
            raise DamagedFile(f"dataset {name!r} is damaged: its index.json is not JSON") from None
        try:
            info = DatasetInfo.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(map(str, first["loc"])) or "(top)"
            raise DamagedFile(f"dataset {name!r} is damaged: its index.json has {where}: {first['msg']}") from None
        if info.current not in {v.sha256 for v in info.versions}:
            raise DamagedFile(f"dataset {name!r} is damaged: its index.json names a current version it does not list")
        return info

    def names(self) -> list[str]:
        try:
            listed = self.stores.list(self.root)
        except StoreNotFound:
            return []
        found = {loc.replace("\\", "/").rstrip("/").split("/datasets/", 1)[-1].split("/", 1)[0] for loc in listed}
        return sorted(n for n in found if NAME.match(n))

    def version(self, name: str, sha: str | None) -> tuple[str, str]:
        """The location and sha256 of a dataset's version (`sha`, or its current one)."""
        info = self.info(name)
        chosen = sha or info.current
        if chosen not in {v.sha256 for v in info.versions}:
            raise StoreNotFound(f"dataset {name!r} has no version {chosen[:12]}…")
        return self.location(name, chosen), chosen

    def rows(self, name: str, sha: str | None = None) -> bytes:
        location, chosen = self.version(name, sha)
        data = self.stores.read(location)
        if hashlib.sha256(data).hexdigest() != chosen:
            raise StoreError(f"dataset {name!r} version {chosen[:12]}… is not what was kept (its sha256 differs)")
        return data
