"""The judge role: a plugin that grades (question, passage) pairs 0-3 (`GRADES`), one `Verdict` a pair."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel

from vx_eval.core.contracts.models import ModelSource

GRADES = (0, 1, 2, 3)


@dataclass(frozen=True)
class Verdict:
    """A judge's grade of one pair (None: its answer could not be read) and what it said (logit or text)."""

    grade: int | None
    raw: str


class Judge(Protocol):
    name: str
    Options: ClassVar[type[BaseModel]]
    """The judge's own settings (``judges: {name: {…}}`` in a config)."""

    def __init__(self, options: BaseModel, models: ModelSource) -> None: ...

    def fingerprint(self) -> str: ...

    def describe(self) -> dict[str, Any]: ...

    def grade(self, pairs: Sequence[tuple[str, str]]) -> list[Verdict]: ...


GradeOn = Callable[[Sequence[list[tuple[str, str]]]], Iterator[tuple[int, list[Verdict]]]]
"""Batches of (question, passage) pairs graded elsewhere: each batch's place with its verdicts, as they come."""
