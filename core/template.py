"""Golden templates: rows to fill in, sampled with a seed from a collection's own documents."""

from __future__ import annotations

import random
from typing import Any, ClassVar, Protocol

from vx_eval.core.engine import Document, EngineHandle

HINT_CHARS = 160


class QuestionWriter(Protocol):
    """A writer plugin: turns sampled documents into golden rows (a question, or an empty one to fill)."""

    name: ClassVar[str]

    def rows(self, documents: list[Document]) -> list[dict[str, Any]]: ...


def hint(document: Document, limit: int = HINT_CHARS) -> str:
    """The start of a document's text, cut at a word, for whoever writes the question."""
    head = f"{document.title}: {document.text}" if document.title else document.text
    text = " ".join(head.split())
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + "…"


def sample_documents(handle: EngineHandle, n: int, seed: int) -> list[Document]:
    """`n` documents drawn with `seed`: the same seed on the same collection gives the same documents."""
    ids = handle.document_ids()
    chosen = random.Random(seed).sample(ids, min(n, len(ids)))
    return handle.documents(chosen)
