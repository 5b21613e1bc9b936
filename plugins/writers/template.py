"""The template writer: one row per sampled unit (document or page), `expected` filled, the question left
to a person."""

from __future__ import annotations

from typing import Any, ClassVar

from vx_eval import hookimpl
from vx_eval.core.template import Unit, hint


class TemplateQuestionWriter:
    """Rows to fill by hand: the unit's id in `expected`, where it is and the start of its text in `hint`."""

    name: ClassVar[str] = "template"

    def rows(self, units: list[Unit]) -> list[dict[str, Any]]:
        rows = []
        for unit in units:
            row: dict[str, Any] = {"id": f"q-{unit.id}", "question": "", "expected": [unit.id], "hint": hint(unit)}
            if unit.collection:
                row["metadata"] = {"collection": unit.collection}
            rows.append(row)
        return rows


@hookimpl
def vx_eval_register_writers(register):
    register.add(TemplateQuestionWriter)
