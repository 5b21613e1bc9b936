"""The question-writer role: a plugin that writes golden rows (`QuestionWriter`) for sampled units (`Unit`),
as a `WriteRequest` asks, giving a `WriteOutcome`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel

from vx_eval.core.contracts.golden import GoldenRow


@dataclass(frozen=True)
class Unit:
    """What one template row is about: a document, or one page of it."""

    doc_id: str
    title: str
    text: str
    page: int | None = None
    printed: str | None = None
    """The page number printed on the page, where it differs from its place (roman numbers, offsets)."""
    heading: str | None = None
    """The nearest heading at or above the page's start."""
    collection: str | None = None

    @property
    def id(self) -> str:
        return self.doc_id if self.page is None else f"{self.doc_id}#page={self.page}"


@dataclass(frozen=True)
class WriteRequest:
    """What a question writer is asked for: how many rows, with which seed and mix of kinds, the critic's
    lowest score, where model answers are cached, the run's models (for a cross-encoder critic), and where
    to report progress: `advance` one step per accepted row, `tried` one per draft the model gave back
    (accepted or not), so a writer whose drafts fail its checks is seen working."""

    n: int
    seed: int = 0
    mix: Mapping[str, float] = field(default_factory=dict)
    threshold: int = 3
    answers: Path | None = None
    models: Any = None
    advance: Callable[[int], None] = lambda n: None
    tried: Callable[[int], None] = lambda n: None


@dataclass
class WriteOutcome:
    """What a writer gave back: the rows, and what happened on the way (tries, failed checks, refusals)."""

    rows: list[GoldenRow]
    tried: int = 0
    failed_checks: dict[str, int] = field(default_factory=dict)
    critic_refused: int = 0
    critic_unreadable: int = 0
    skipped_passages: dict[str, int] = field(default_factory=dict)
    asked: int | None = None
    """Model calls made (answers from the cache are not calls)."""


@dataclass(frozen=True)
class WriterDescription:
    writer: str
    model: str = ""
    critic: str = ""
    drafted_by: str | None = None
    """The drafting model's own name (its family is told from it), recorded on every row it drafts as
    ``metadata.drafted_by``; None where no model drafts."""


class QuestionWriter(Protocol):
    """A writer plugin, one shape for all: made from its validated `Options` (``writers: {name: {…}}``),
    it says what it is and writes rows for sampled units. `writes_questions` tells a writer that drafts
    questions (``golden write``) from one that leaves them to fill (``golden template``)."""

    name: ClassVar[str]
    writes_questions: ClassVar[bool]
    Options: ClassVar[type[BaseModel]]

    def __init__(self, options: BaseModel) -> None: ...

    def describe(self) -> WriterDescription: ...

    def write(self, units: Sequence[Unit], request: WriteRequest) -> WriteOutcome: ...
