"""Scoring a corpus cut into chunks by document (`evaluation.by_document`): each hit counted as the document
its chunk belongs to, each label naming a chunk read as its document (the highest grade of its chunks), so
that the measures count each document once, as ``by="page"`` counts pages. And, where no rule is set, a
golden file whose labels name many chunks of one document said as such, with the rule that would fix it."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from vx_eval.core.contracts.engine import Hit
from vx_eval.core.contracts.golden import GoldenSet, Question
from vx_eval.core.errors import ConfigError
from vx_eval.core.golden.units import PAGE, FieldUnits, finest_unit

if TYPE_CHECKING:
    from vx_eval.core.config.by_document import ByDocument
    from vx_eval.core.contracts.engine import Target

SEPARATORS = ("::", "#", "__", "/", "|", ":", "_", "-", ".")
"""Where a chunk's id may end its document's: tried in this order when looking for chunked labels."""
MOST_SHOWN = 3


def units_for(
    relevance_field: str | None, targets: Sequence[Target], by_document: ByDocument | None = None
) -> Callable[[str, Hit], str | None]:
    """How the run names each hit: the `relevance_field`'s value where one is set, its document where the corpus
    is scored `by_document`, else its finest unit."""
    if by_document is not None:
        return chunk_units(by_document, targets)
    return FieldUnits(relevance_field, {t.name: t.handle for t in targets}) if relevance_field else finest_unit


def chunk_units(rule: ByDocument, targets: Sequence[Target]) -> Callable[[str, Hit], str | None]:
    """How the run names each hit under `rule`: its document."""
    if rule.field is not None:
        return FieldUnits(rule.field, {t.name: t.handle for t in targets})
    separator = str(rule.separator)
    return lambda target, hit: hit.doc_id.partition(separator)[0]


def by_document(golden: GoldenSet, rule: ByDocument, targets: Sequence[Target]) -> GoldenSet:
    """The questions with each labelled chunk read as its document (its grade the highest of its chunks'); a
    label that is a document already stays as it is."""
    if rule.field is not None:
        units = FieldUnits(rule.field, {t.name: t.handle for t in targets})
        target = targets[0].name if targets else ""

        def document(unit: str) -> str:
            value = units(target, Hit(doc_id=unit, score=0.0)) if targets else None
            return value if value is not None else unit
    else:
        separator = str(rule.separator)

        def document(unit: str) -> str:
            return unit.partition(separator)[0]

    return dataclasses.replace(golden, questions=tuple(_read_as_documents(q, document) for q in golden.questions))


def rescored_by_document(questions: Sequence[Question], rule: dict[str, str] | None) -> list[Question]:
    """A saved run's questions read as it read them (`Settings.by_document`), for scoring its kept rankings
    again; a field's rule needs the chunks' records, which a rescore does not open."""
    if not rule:
        return list(questions)
    separator = rule.get("separator")
    if separator is None:
        raise ConfigError(
            f"this run was scored by document through the field {rule.get('field')}, which needs each chunk's "
            "record: run the config again (vx-eval run) instead of rescoring it"
        )
    return [_read_as_documents(q, lambda unit: unit.partition(separator)[0]) for q in questions]


def _read_as_documents(question: Question, document: Callable[[str], str]) -> Question:
    grades: dict[str, int] = {}
    for unit, grade in question.relevance().items():
        doc = document(unit)
        grades[doc] = max(grade, grades.get(doc, grade))
    expected = tuple(dict.fromkeys(document(u) for u in question.expected))
    return dataclasses.replace(question, expected=expected, grades={d: g for d, g in grades.items()})


def chunked_labels(golden: GoldenSet) -> str | None:
    """Where labels name several chunks of one document each (ids sharing what comes before a separator), in
    words: how many questions, an example, what follows, and the rule that scores each document once."""
    best: tuple[int, str, Question, str, int] | None = None
    labelled = [q for q in golden.questions if len(q.expected) >= 2 and not any(PAGE in u for u in q.expected)]
    for separator in SEPARATORS:
        shared = []
        for q in labelled:
            if not all(separator in u.strip(separator) for u in q.expected):
                continue
            documents = Counter(u.partition(separator)[0] for u in q.expected)
            top, count = documents.most_common(1)[0]
            if count >= 2:
                shared.append((q, top, count))
        if shared and (best is None or len(shared) > best[0]):
            q, top, count = max(shared, key=lambda item: item[2])
            best = (len(shared), separator, q, top, count)
    if best is None or best[0] < max(2, len(golden.questions) // 10):
        return None
    questions, separator, example, document, count = best
    return (
        f"{questions} of {len(golden.questions)} questions name several chunks of one document each ({example.id}: "
        f"{count} chunks of {document!r}): each chunk counts as a relevant result of its own, so recall is capped "
        "well below 1 and one document's chunks can fill the top 10; to score each document once, set "
        f"evaluation.by_document: {{separator: {separator!r}}} (or {{field: …}}, a field of each chunk's record)"
    )
