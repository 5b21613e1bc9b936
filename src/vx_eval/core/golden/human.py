"""Grades people gave on the grading page, kept beside the golden file (``golden.jsonl`` ->
``golden.grades.jsonl`` in the same place), never in a run: one JSON line per grade, appended (the newest
grade of a rater for a pair counts, the older stay in the file as its history). Each append is one step of
the store's (`Stores.update`: a file lock, or a write on condition that the object is unchanged), so people
grading at once never lose one another's grades; each grade carries an id, so an append tried again after a
lost answer is not kept twice. A damaged line (a hand edit, a half-written line of an older writer) is named,
left out of the grades and kept in the file as it is. What people agree on becomes the next run's human
labels for units the golden file does not grade (`with_human_grades`); how far two raters agree is their
quadratic-weighted Cohen's kappa (`agreement`)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import posixpath
import statistics
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vx_eval.core.config.experiment import GoldenSource
from vx_eval.core.config.jsonio import JsonInputError, jsonl_lines, read_json
from vx_eval.core.contracts.golden import GoldenSet, Question
from vx_eval.core.contracts.judge import GRADES
from vx_eval.core.contracts.store import StoreNotFound
from vx_eval.core.optional import on_first_use
from vx_eval.core.stores import Stores

SUFFIX = ".grades.jsonl"
_sklearn_metrics = on_first_use("sklearn.metrics")


class HumanGrade(BaseModel):
    """One person's grade (0-3) of one unit for one question."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: str = Field(min_length=1, max_length=500)
    unit: str = Field(min_length=1, max_length=500)
    grade: int = Field(ge=min(GRADES), le=max(GRADES))
    rater: str = Field(min_length=1, max_length=100)
    at: str = ""
    id: str = Field(default="", max_length=64)
    """A grade's own id (a new one for each grade given): an append tried again is recognised by it."""


def grades_location(golden: str) -> str:
    """Where the grades of the golden file at `golden` are kept: beside it, ``<name>.grades.jsonl``."""
    head, name = posixpath.split(golden) if "://" in golden else (None, golden)
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    return posixpath.join(head, stem + SUFFIX) if head is not None else stem + SUFFIX


@dataclass(frozen=True)
class KeptGrades:
    """The grades in a grades file, each rater's newest for each pair, and the lines that are not grades."""

    grades: list[HumanGrade]
    damaged: tuple[str, ...] = ()
    """Each damaged line, named: ``FILE:LINE: why``."""


def read_grades(stores: Stores, location: str) -> KeptGrades:
    """The grades kept at `location` (none where nothing is there yet): the newest of each rater for each
    pair, in the order first given; a line that is no grade is named in `damaged`, never the end of reading."""
    try:
        raw = stores.read(location)
    except StoreNotFound:
        return KeptGrades([])
    return parse_grades(raw, location)


def parse_grades(raw: bytes, location: str) -> KeptGrades:
    newest: dict[tuple[str, str, str], HumanGrade] = {}
    damaged = []
    for number, line in enumerate(jsonl_lines(raw.decode("utf-8", "replace")), start=1):
        if not line.strip():
            continue
        try:
            grade = HumanGrade.model_validate(read_json(line))
        except (JsonInputError, ValidationError) as exc:
            damaged.append(f"{location}:{number}: not a grade ({str(exc).splitlines()[0]}); left out")
            continue
        key = (grade.question, grade.unit, grade.rater)
        newest.pop(key, None)  # the newer grade takes the older one's place at the end
        newest[key] = grade
    return KeptGrades(list(newest.values()), tuple(damaged))


def add_grade(stores: Stores, location: str, grade: HumanGrade) -> HumanGrade:
    """Append `grade` (stamped with the time and an id where it has none) to the grades file, as one step no
    other rater can come between; the grade as kept."""
    kept = grade.model_copy(
        update={
            "at": grade.at or dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "id": grade.id or uuid.uuid4().hex,
        }
    )
    line = (json.dumps(kept.model_dump(), ensure_ascii=False) + "\n").encode()
    marker = f'"id": "{kept.id}"'.encode()

    def appended(raw: bytes | None) -> bytes:
        raw = raw or b""
        if marker in raw:  # kept already: an earlier try was written and its answer lost
            return raw
        return raw + (b"\n" if raw and not raw.endswith(b"\n") else b"") + line  # a cut line stays apart

    stores.update(location, appended)
    return kept


def consensus(grades: Sequence[HumanGrade]) -> dict[tuple[str, str], int]:
    """Each graded pair's grade: the median of its raters' grades (the lower middle one of an even count)."""
    by_pair: dict[tuple[str, str], list[int]] = {}
    for g in grades:
        by_pair.setdefault((g.question, g.unit), []).append(g.grade)
    return {pair: int(statistics.median_low(values)) for pair, values in by_pair.items()}


@dataclass(frozen=True)
class Agreement:
    """How far the two raters who graded the most pairs in common agree on them."""

    raters: tuple[str, str] | None
    pairs: int
    kappa: float | None
    """Cohen's kappa with quadratic weights (None under two shared pairs, or where either rater gave one grade
    to all: kappa is undefined)."""
    exact: float | None
    """The share of shared pairs given the same grade."""


def agreement(grades: Sequence[HumanGrade]) -> Agreement:
    by_rater: dict[str, dict[tuple[str, str], int]] = {}
    for g in grades:
        by_rater.setdefault(g.rater, {})[(g.question, g.unit)] = g.grade
    names = sorted(by_rater)
    best: tuple[int, str, str] | None = None
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            shared = len(by_rater[a].keys() & by_rater[b].keys())
            if best is None or shared > best[0]:
                best = (shared, a, b)
    if best is None or best[0] == 0:
        return Agreement(None, 0, None, None)
    shared, a, b = best
    pairs = sorted(by_rater[a].keys() & by_rater[b].keys())
    first, second = [by_rater[a][p] for p in pairs], [by_rater[b][p] for p in pairs]
    exact = sum(x == y for x, y in zip(first, second, strict=True)) / shared
    kappa = None
    if shared >= 2 and len(set(first)) > 1 and len(set(second)) > 1:
        kappa = float(_sklearn_metrics.cohen_kappa_score(first, second, weights="quadratic", labels=list(GRADES)))
    return Agreement((a, b), shared, kappa, exact)


def with_human_grades(
    questions: Sequence[Question], agreed: Mapping[tuple[str, str], int]
) -> tuple[list[Question], int]:
    """The questions with people's grades from the grading page added for units the golden file does not
    grade (the golden file's own labels win); and how many grades were added."""
    out, added = [], 0
    for q in questions:
        labelled = q.relevance()
        extra = {unit: g for (qid, unit), g in agreed.items() if qid == q.id and unit not in labelled}
        added += len(extra)
        out.append(replace(q, grades={**q.grades, **extra}) if extra else q)
    return out, added


def with_page_grades(golden: GoldenSet, source: GoldenSource, stores: Stores) -> GoldenSet:
    """`golden` with the grades people gave on the grading page, where a grades file is kept beside a golden
    JSONL file: added to the units the file does not grade; a question that waited for labels and now has a
    grade of 1 or more is labelled (and scored)."""
    if source.format not in ("auto", "jsonl") or not source.path.endswith(".jsonl"):
        return golden
    location = grades_location(source.path)
    try:
        raw = stores.read(location)
    except StoreNotFound:
        return golden
    kept = parse_grades(raw, location)
    agreed = consensus(kept.grades)
    questions, added = with_human_grades(golden.questions, agreed)
    waiting, added_waiting = with_human_grades(golden.waiting, agreed)
    now_labelled = [q for q in waiting if any(g >= 1 for g in q.relevance().values())]
    return replace(
        golden,
        questions=(*questions, *now_labelled),
        waiting=tuple(q for q in waiting if q not in now_labelled),
        unlabelled=golden.unlabelled - len(now_labelled),
        human_grades=added + added_waiting,
        human_grades_sha256=hashlib.sha256(raw).hexdigest(),
        damaged_grades=kept.damaged,
    )
