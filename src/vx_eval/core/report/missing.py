"""Expected documents a target lacks, in the words the command line, the report and its page use (also for
reports of the oldest format, which kept no such words: `core.report.upgrade`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol


class Absent(Protocol):
    """What a target lacks (`core.report.schema.Missing`, or an old report's record of it)."""

    @property
    def documents(self) -> Sequence[str]: ...

    @property
    def questions(self) -> Sequence[str]: ...

    @property
    def nearest(self) -> Mapping[str, str]: ...


def missing_notes(missing: Mapping[str, Absent]) -> list[str]:
    """The missing documents in the words the command line and the report page use."""
    notes = []
    for target, info in missing.items():
        docs = info.documents
        shown = ", ".join(f"{d} (did you mean {info.nearest[d]}?)" if d in info.nearest else d for d in docs[:10]) + (
            f" and {len(docs) - 10} more" if len(docs) > 10 else ""
        )
        line = f"{target} does not hold {len(docs)} expected document{'s' * (len(docs) != 1)}: {shown}."
        if info.questions:
            qs = info.questions
            line += (
                f" {len(qs)} question{'s' * (len(qs) != 1)} cannot be found there: "
                + ", ".join(qs[:10])
                + (" …" if len(qs) > 10 else "")
                + "."
            )
        line += " They stay in and score 0; correct the ids in the golden file, or add the documents."
        notes.append(line)
    return notes
