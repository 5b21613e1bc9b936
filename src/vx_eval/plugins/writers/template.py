"""The template writer: one row per sampled unit (document or page), `expected` filled, the question left
to a person."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from vx_eval import hookimpl
from vx_eval.plugin import GoldenRow, Unit, WriteOutcome, WriterDescription, WriteRequest, hint


class TemplateQuestionWriter:
    """Rows to fill by hand: the unit's id in `expected`, where it is and the start of its text in `hint`."""

    name: ClassVar[str] = "template"
    writes_questions: ClassVar[bool] = False

    class Options(BaseModel):
        """The template writer has no settings."""

        model_config = ConfigDict(extra="forbid")

    def __init__(self, options: Options | None = None) -> None:
        self.options = options or self.Options()

    def describe(self) -> WriterDescription:
        return WriterDescription(writer=self.name)

    def write(self, units: Sequence[Unit], request: WriteRequest) -> WriteOutcome:
        rows = [
            GoldenRow(
                id=f"q-{unit.id}",
                question="",
                expected=[unit.id],
                hint=hint(unit),
                metadata={"collection": unit.collection} if unit.collection else {},
            )
            for unit in units
        ]
        request.advance(len(rows))
        return WriteOutcome(rows)


@hookimpl
def vx_eval_register_writers(register):
    register.add(TemplateQuestionWriter)
