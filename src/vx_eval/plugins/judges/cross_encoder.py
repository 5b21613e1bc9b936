"""The `cross-encoder` judge: the offline reranker's logit for (question, passage), cut into grades 0–3.

The cut points are settings and go into the report. The defaults lie halfway between the median logits
of neighbouring human grades on half of TREC DL 2019's graded queries (`benchmarks/judge_check.py`); on the
other half they agree with TREC's assessors at a quadratic-weighted kappa of 0.385. Measure your own with
`vx-eval judge check` where your documents differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from vx_eval import hookimpl
from vx_eval.plugin import RERANKER, RerankerModel, Verdict

DEFAULT_CUT_POINTS = (-1.0, 5.7, 7.2)


class CrossEncoderJudge:
    """Grades = how many cut points the cross-encoder's logit reaches: below the first 0, above the last 3."""

    name = "cross-encoder"

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid")
        model: RerankerModel = "ms-marco-minilm"
        cut_points: list[float] = Field(default_factory=lambda: list(DEFAULT_CUT_POINTS))

        @field_validator("cut_points")
        @classmethod
        def _three_rising(cls, value: list[float]) -> list[float]:
            if len(value) != 3 or sorted(value) != value:
                raise ValueError("give three rising logits: [grade-1 from, grade-2 from, grade-3 from]")
            return value

    def __init__(self, options: Options, models: Any) -> None:
        self.options = options
        self.models = models

    def fingerprint(self) -> str:
        tokens = self.models.settings.max_tokens
        cuts = ",".join(map(str, self.options.cut_points))
        return f"cross-encoder:{self.models.cache_space(self.options.model)}:{tokens}:{cuts}"

    def describe(self) -> dict[str, Any]:
        c1, c2, c3 = self.options.cut_points
        return {
            "judge": self.name,
            "model": self.options.model,
            "cut_points": self.options.cut_points,
            "meaning": f"logit < {c1:g}: 0; < {c2:g}: 1; < {c3:g}: 2; else 3",
        }

    def grade(self, pairs: Sequence[tuple[str, str]]) -> list[Verdict]:
        model = self.models.get(self.options.model, RERANKER)
        by_question: dict[str, list[int]] = {}
        for i, (question, _) in enumerate(pairs):
            by_question.setdefault(question, []).append(i)
        out: list[Verdict | None] = [None] * len(pairs)
        for question, where in by_question.items():
            logits = model.score(question, [pairs[i][1] for i in where])
            grades = np.searchsorted(np.asarray(self.options.cut_points), logits, side="right")
            for i, logit, grade in zip(where, logits, grades, strict=True):
                out[i] = Verdict(int(grade), f"{float(logit):.4f}")
        return [v for v in out if v is not None]


@hookimpl
def vx_eval_register_judges(register):
    register.add(CrossEncoderJudge)
