"""Golden data as every room reads it: a golden file's row as written (`GoldenRow`), a filled question
(`Question`), what reading a file gives (`GoldenSet`) and what an import left out (`LeftOut`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from vx_eval.core.errors import quoted


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
    type: str | None = Field(None, min_length=1, max_length=64)
    """The question's type (``keyword``, ``natural``, a team's own): the page's views per type read it, as they
    read a drafted question's ``metadata.kind``."""
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
    drafted_by: str | None = None
    """The model that drafted it (``metadata.drafted_by``), where a writer's model did: a setup of its family
    is favoured by the questions it wrote, as one of the judge's is by its grades."""

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
    human_grades: int = 0
    """Grades people gave on the grading page that were added to these questions (`core.golden.human`)."""
    human_grades_sha256: str | None = None
    damaged_grades: tuple[str, ...] = ()
    """Lines of the grades file that are no grades, named (``FILE:LINE: why``): left out, kept in the file."""
    left_out: tuple[LeftOut, ...] = ()
    """What was left out of a collection read as golden questions (a BEIR folder's queries nobody judged)."""

    @property
    def labelled(self) -> int:
        return len(self.questions)

    @property
    def max_grade(self) -> int:
        """The highest grade any question gives (1 for binary labels): above 1, the run is graded."""
        return max((g for q in self.questions for g in q.relevance().values()), default=0)
