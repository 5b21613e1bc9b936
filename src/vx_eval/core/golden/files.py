"""Golden data: JSONL questions with the units that answer them; read, lint, save."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from vx_eval.core.config.jsonio import JsonInputError, jsonl_lines, read_json
from vx_eval.core.errors import GoldenError, brief, did_you_mean, quoted


class GoldenRow(BaseModel):
    """One line of a golden file, as written."""

    model_config = ConfigDict(extra="forbid", strict=False)

    id: str | None = None
    question: str = ""
    expected: list[str] = Field(default_factory=list)
    grades: dict[str, int] = Field(default_factory=dict)
    reference: str | None = None
    hint: str | None = None
    evidence: list[str] | None = None
    draft: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id", mode="before")
    @classmethod
    def _id_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("grades")
    @classmethod
    def _grade_range(cls, value: dict[str, int]) -> dict[str, int]:
        for unit, grade in value.items():
            if not 0 <= grade <= 10:
                raise ValueError(f"grade of '{unit}' is {grade}; grades run from 0 (not relevant) to 3 or 5")
        return value


FIELDS = tuple(GoldenRow.model_fields)


@dataclass(frozen=True)
class Question:
    """A filled golden question: what is asked and which units answer it, with optional grades."""

    id: str
    question: str
    expected: tuple[str, ...]
    grades: Mapping[str, int] = field(default_factory=dict)
    reference: str | None = None
    draft: bool = False
    kind: str | None = None
    """What kind of question it is (``metadata.kind``: the writer records fact, why, keyword, …), for the
    report's view per kind."""

    def relevance(self) -> dict[str, int]:
        """Every judged unit and its grade: expected units default to 1; `grades` may add grade-0 units."""
        judged = {unit: self.grades.get(unit, 1) for unit in self.expected}
        judged.update({unit: g for unit, g in self.grades.items() if unit not in judged})
        return judged


@dataclass(frozen=True)
class LeftOut:
    """Queries an import of a collection left out, and why: every import says so."""

    reason: str
    ids: tuple[str, ...]

    def render(self) -> str:
        shown = ", ".join(quoted(i) for i in self.ids[:5]) + (", …" if len(self.ids) > 5 else "")
        return f"left out {len(self.ids)} quer{'y' if len(self.ids) == 1 else 'ies'} {self.reason}: {shown}"


@dataclass(frozen=True)
class Defect:
    line: int
    column: int | None
    message: str

    def render(self, source: str) -> str:
        where = f"{source}:{self.line}" + (f":{self.column}" if self.column else "")
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class GoldenSet:
    """What reading a golden file gives: the filled questions, the file's identity and its counts."""

    questions: tuple[Question, ...]
    sha256: str
    raw: bytes
    source: str
    unfilled: int = 0
    drafts: int = 0
    unlabelled: int = 0
    """Questions with a reference answer and no expected ids yet (imported from Bedrock, say): counted,
    not scored, until somebody labels them or a judge grades their results."""
    waiting: tuple[Question, ...] = ()
    """Those unlabelled questions themselves (expected empty), for a run with a judge."""
    left_out: tuple[LeftOut, ...] = ()
    """What was left out of a collection read as golden questions (a BEIR folder's queries nobody judged)."""

    @property
    def labelled(self) -> int:
        return len(self.questions)

    @property
    def max_grade(self) -> int:
        """The highest grade any question gives (1 for binary labels): above 1, the run is graded."""
        return max((g for q in self.questions for g in q.relevance().values()), default=0)


def question_key(question: str) -> str:
    """A question as the golden file compares it: two rows with the same key are the same question."""
    return re.sub(r"\s+", " ", question).strip().casefold()


def default_id(question: str) -> str:
    """A stable id for a row written without one: the start of the question's SHA-1."""
    return "q-" + hashlib.sha1(question_key(question).encode()).hexdigest()[:10]


def _row(number: int, line: str) -> tuple[GoldenRow | None, list[Defect]]:
    """One line read as a golden row, and what is wrong with it as a line (JSON, fields, types)."""
    try:
        data = read_json(line)
    except JsonInputError as exc:
        return None, [Defect(number, exc.column, exc.message)]
    if not isinstance(data, dict):
        return None, [Defect(number, None, 'each line is one JSON object: {"question": …, "expected": […]}')]
    defects = [
        Defect(number, None, f"unknown field {quoted(key)}{did_you_mean(key, FIELDS)} (fields: {', '.join(FIELDS)})")
        for key in data
        if key not in FIELDS
    ]
    try:
        return GoldenRow.model_validate({k: v for k, v in data.items() if k in FIELDS}), defects
    except ValidationError as exc:
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            defects.append(Defect(number, None, f"{where}: {msg} (got {brief(err.get('input'))})"))
        return None, defects


@dataclass
class _Seen:
    """What earlier lines held: their ids and questions, to name a repeat with the line it repeats."""

    ids: dict[str, int] = field(default_factory=dict)
    questions: dict[str, int] = field(default_factory=dict)

    def check(self, number: int, row: GoldenRow) -> list[Defect]:
        defects = []
        if row.question.strip():
            judged = [u for u in row.expected if u.strip()] or row.grades  # grades alone: judged, none relevant
            if not judged and not (row.reference or "").strip():
                defects.append(
                    Defect(
                        number,
                        None,
                        "expected is empty: name the ids of the documents that answer it "
                        "(or give a reference answer to keep it unscored until it is labelled)",
                    )
                )
            key = question_key(row.question)
            if key in self.questions:
                defects.append(Defect(number, None, f"the same question as line {self.questions[key]}"))
            else:
                self.questions[key] = number
        if any(not u.strip() for u in row.expected):
            defects.append(Defect(number, None, "expected holds an empty id"))
        row_id = row.id if row.id is not None else (default_id(row.question) if row.question.strip() else None)
        if row_id is not None:
            if row_id in self.ids:
                defects.append(Defect(number, None, f"id {quoted(row_id)} is already used on line {self.ids[row_id]}"))
            else:
                self.ids[row_id] = number
        return defects


def lint(raw: bytes) -> tuple[list[Defect], list[tuple[int, GoldenRow]]]:
    """Every defect on every line at once, and the rows that parsed, with their line numbers."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        at = raw[: exc.start].count(b"\n") + 1
        return [Defect(at, None, "not UTF-8 text; save the file as UTF-8")], []
    defects: list[Defect] = []
    rows: list[tuple[int, GoldenRow]] = []
    seen = _Seen()
    for number, line in enumerate(jsonl_lines(text), start=1):
        if not line.strip():
            continue
        row, problems = _row(number, line)
        defects += problems
        if row is None:
            continue
        defects += seen.check(number, row)
        rows.append((number, row))
    if not rows and not defects:
        defects.append(Defect(1, None, "the file holds no rows; write one JSON object a line"))
    return defects, rows


def parse_golden(raw: bytes, source: str) -> GoldenSet:
    """Parse golden bytes; every defect in the file is raised at once as one `GoldenError`."""
    defects, rows = lint(raw)
    if defects:
        shown = [d.render(source) for d in defects[:50]]
        more = f"\n… and {len(defects) - 50} more" if len(defects) > 50 else ""
        raise GoldenError("\n".join(shown) + more + f"\n(`vx-eval golden check {source}` lists them all)")
    questions, unfilled, drafts, waiting = [], 0, 0, []
    for _, row in rows:
        if not row.question.strip():
            unfilled += 1
            continue
        question = Question(
            id=row.id if row.id is not None else default_id(row.question),
            question=row.question.strip(),
            expected=tuple(dict.fromkeys(u.strip() for u in row.expected)),
            grades=dict(row.grades),
            reference=row.reference,
            draft=row.draft,
            kind=kind if isinstance(kind := row.metadata.get("kind"), str) and kind else None,
        )
        drafts += row.draft  # a draft waiting for labels (or a judge) is still a draft
        if not row.expected and not row.grades:  # judged by nobody yet (grades alone: judged, none relevant)
            waiting.append(question)
            continue
        questions.append(question)
    return GoldenSet(
        tuple(questions),
        hashlib.sha256(raw).hexdigest(),
        raw,
        source,
        unfilled,
        drafts,
        len(waiting),
        tuple(waiting),
    )


def dump_rows(rows: Iterable[GoldenRow | Mapping[str, Any]]) -> bytes:
    """JSONL bytes, one object a line, fields in the documented order, empty optional fields left out."""
    lines = []
    for given in rows:
        row = given.model_dump() if isinstance(given, GoldenRow) else given
        ordered = {k: row[k] for k in FIELDS if k in row and row[k] not in (None, {}, [], False)}
        ordered.setdefault("question", row.get("question", ""))
        ordered.setdefault("expected", list(row.get("expected", [])))
        lines.append(json.dumps(ordered, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode() if lines else b""


def question_row(q: Question) -> dict[str, Any]:
    return {
        "id": q.id,
        "question": q.question,
        "expected": list(q.expected),
        "grades": dict(q.grades),
        "reference": q.reference,
        "draft": q.draft or None,
        "metadata": {"kind": q.kind} if q.kind else None,
    }
