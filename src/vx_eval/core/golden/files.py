"""Golden data: JSONL questions with the units that answer them; read, lint, save."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from vx_eval.core.config.jsonio import JsonInputError, jsonl_lines, read_json
from vx_eval.core.contracts.golden import FIELDS, GoldenRow, GoldenSet, Question
from vx_eval.core.errors import GoldenError, brief, did_you_mean, quoted


@dataclass(frozen=True)
class Defect:
    line: int
    column: int | None
    message: str

    def render(self, source: str) -> str:
        where = f"{source}:{self.line}" + (f":{self.column}" if self.column else "")
        return f"{where}: {self.message}"


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
    judged: bool = False
    """A judge grades the run: a question with no expected ids waits for its grades, not an error."""

    def check(self, number: int, row: GoldenRow) -> list[Defect]:
        defects = []
        if row.question.strip():
            judged = [u for u in row.expected if u.strip()] or row.grades  # grades alone: judged, none relevant
            if not judged and not (row.reference or "").strip() and not self.judged:
                defects.append(
                    Defect(
                        number,
                        None,
                        "expected is empty: name the ids of the documents that answer it (or give a reference "
                        "answer to keep it unscored until it is labelled, or name a judge in the config's "
                        "evaluation.judge to grade its results)",
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


def lint(raw: bytes, *, judged: bool = False) -> tuple[list[Defect], list[tuple[int, GoldenRow]]]:
    """Every defect on every line at once, and the rows that parsed, with their line numbers. `judged`: a
    judge grades the run, so a question with no expected ids is no defect (it waits for the judge's grades)."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        at = raw[: exc.start].count(b"\n") + 1
        return [Defect(at, None, "not UTF-8 text; save the file as UTF-8")], []
    defects: list[Defect] = []
    rows: list[tuple[int, GoldenRow]] = []
    seen = _Seen(judged=judged)
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


def parse_golden(raw: bytes, source: str, *, judged: bool = False) -> GoldenSet:
    """Parse golden bytes; every defect in the file is raised at once as one `GoldenError`. `judged`: as in
    `lint` (questions with no expected ids wait for the judge)."""
    defects, rows = lint(raw, judged=judged)
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
            kind=row.type or (kind if isinstance(kind := row.metadata.get("kind"), str) and kind else None),
            drafted_by=by if isinstance(by := row.metadata.get("drafted_by"), str) and by else None,
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
        "metadata": {k: v for k, v in (("kind", q.kind), ("drafted_by", q.drafted_by)) if v} or None,
    }
