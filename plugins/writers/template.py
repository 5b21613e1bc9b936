"""The template writer: one row per sampled document, `expected` filled in, the question left to a person."""

from __future__ import annotations

from typing import Any, ClassVar

from vx_eval import hookimpl
from vx_eval.core.engine import Document
from vx_eval.core.template import hint


class TemplateQuestionWriter:
    """Rows to fill by hand: the document's id in `expected`, the start of its text in `hint`."""

    name: ClassVar[str] = "template"

    def rows(self, documents: list[Document]) -> list[dict[str, Any]]:
        return [{"id": f"q-{doc.id}", "question": "", "expected": [doc.id], "hint": hint(doc)} for doc in documents]


@hookimpl
def vx_eval_register_writers(register):
    register.add(TemplateQuestionWriter)
