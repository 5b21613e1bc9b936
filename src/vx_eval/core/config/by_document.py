"""How a corpus cut into chunks is scored by document (`evaluation.by_document`; `core.golden.chunks` reads
it)."""

from __future__ import annotations

from pydantic import Field, model_validator

from vx_eval.core.contracts.fields import Strict


class ByDocument(Strict):
    """How a corpus cut into chunks maps each chunk to its document, so that the measures count each document
    once (a hit is any chunk of it, at the place of its first): the id's part before a ``separator``
    (``acme-2023::c14`` is ``acme-2023`` with ``::``), or a ``field`` of the chunk's record
    (``metadata.report``). The golden file's labels may name chunks or documents."""

    separator: str | None = Field(None, min_length=1, max_length=16)
    field: str | None = Field(None, pattern=r"^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*$")

    @model_validator(mode="after")
    def _one_rule(self) -> ByDocument:
        if (self.separator is None) == (self.field is None):
            raise ValueError("by_document takes one rule: {separator: '::'} or {field: metadata.report}")
        return self

    def describe(self) -> str:
        return f"separator {self.separator!r}" if self.separator is not None else f"field {self.field}"
