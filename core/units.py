"""From engine hits to the units a golden question names: documents or pages (``doc#page=N``)."""

from __future__ import annotations

from collections.abc import Sequence

from vx_eval.core.golden import Question
from vx_eval.core.metrics import Judged

PAGE = "#page="


def document_of(unit: str) -> str:
    """The document a unit belongs to: ``report.pdf#page=41`` -> ``report.pdf``."""
    return unit.split(PAGE, 1)[0]


def page_level(question: Question) -> bool:
    """A question whose expected units name pages is judged page by page."""
    return any(PAGE in unit for unit in question.expected)


def judge(results: Sequence[tuple[str, float]], question: Question, threshold: int = 1) -> Judged:
    """Read one question's results (finest unit, score) against its judgements.

    `returned` keeps the results as they came back; `ranked` keeps each unit's first occurrence, ordered
    as trec_eval orders a run: score descending, then unit id descending.
    """
    by_page = page_level(question)
    units = [(u if by_page else document_of(u), s) for u, s in results]
    first: dict[str, float] = {}
    for unit, score in units:
        first.setdefault(unit, score)
    ranked = sorted(first.items(), key=lambda item: (item[1], item[0]), reverse=True)
    return Judged(
        returned=tuple(u for u, _ in units),
        ranked=tuple(u for u, _ in ranked),
        grades=question.relevance(),
        threshold=threshold,
    )


def first_position(judged: Judged) -> int | None:
    """1-based position of the first relevant result as results came back, or None."""
    return next((i for i, u in enumerate(judged.returned, start=1) if u in judged.relevant), None)
