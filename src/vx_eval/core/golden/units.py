"""From engine hits to the units a golden question names: documents, pages (``doc#page=N``) or field values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from vx_eval.core.contracts.engine import EngineHandle, Hit
from vx_eval.core.contracts.golden import Question
from vx_eval.core.measures.metrics import Judged

if TYPE_CHECKING:
    pass

PAGE = "#page="
_MISSING = object()


def document_of(unit: str) -> str:
    """The document a unit belongs to: ``report.pdf#page=41`` -> ``report.pdf``."""
    return unit.split(PAGE, 1)[0]


def page_level(question: Question) -> bool:
    """A question whose expected units name pages is judged page by page."""
    return any(PAGE in unit for unit in question.expected)


def judge(results: Sequence[tuple[str | None, float]], question: Question, threshold: int = 1) -> Judged:
    """Read one question's results (unit, score) against its judgements.

    `returned` keeps the results as they came back; `ranked` keeps each unit's first occurrence, ordered
    as trec_eval orders a run: score descending, then unit id descending. A result without a unit (it
    lacks the relevance field) keeps its place and matches nothing.
    """
    by_page = page_level(question)
    units = [
        (f"\x00no-unit-{i}" if u is None else (u if by_page else document_of(u)), s) for i, (u, s) in enumerate(results)
    ]
    first: dict[str, float] = {}
    for unit, score in units:
        first.setdefault(unit, score)
    ranked = sorted(first.items(), key=lambda item: (item[1], item[0]), reverse=True)
    return Judged(
        returned=tuple(u for u, _ in units),
        ranked=tuple(u for u, _ in ranked),
        scores=tuple(s for _, s in ranked),
        grades=question.relevance(),
        threshold=threshold,
    )


def first_position(judged: Judged) -> int | None:
    """1-based position of the first relevant result as results came back, or None."""
    return next((i for i, u in enumerate(judged.returned, start=1) if u in judged.relevant), None)


def _walk(record: Any, path: list[str]) -> Any:
    for part in path:
        if not isinstance(record, dict) or part not in record:
            return _MISSING
        record = record[part]
    return record


class FieldUnits:
    """Maps a hit to the value of a `relevance_field` (a dotted path): in the hit's own fields first, then
    in its document's record (``id``, ``title``, ``metadata.…``), looked up once per document."""

    def __init__(self, path: str, handles: dict[str, EngineHandle]) -> None:
        self.path = path
        self.parts = path.split(".")
        self.handles = handles
        self._documents: dict[tuple[str, str], dict[str, Any]] = {}

    def __call__(self, target: str, hit: Hit) -> str | None:
        value = _walk(hit.fields, self.parts)
        if value is _MISSING:
            value = _walk(self._record(target, hit.doc_id), self.parts)
        if value is _MISSING or value is None or isinstance(value, (dict, list)):
            return None
        return str(value)

    def _record(self, target: str, doc_id: str) -> dict[str, Any]:
        key = (target, doc_id)
        if key not in self._documents:
            docs = self.handles[target].documents([doc_id])
            doc = docs[0] if docs else None
            self._documents[key] = (
                {"id": doc.id, "title": doc.title, "metadata": doc.metadata} if doc else {"id": doc_id}
            )
        return self._documents[key]


def finest_unit(target: str, hit: Hit) -> str:
    """A hit's finest unit (``doc`` or ``doc#page=N``), whatever target it came from."""
    return hit.unit
