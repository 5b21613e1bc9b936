"""The Python API mirrors the command line."""

from __future__ import annotations

import pytest

from vx_eval.core.contracts.golden import Question
from vx_eval.core.errors import GoldenError
from vx_eval.python.commands import read_golden, run, save_golden


def test_save_read_and_evaluate(project):
    questions = [
        Question("a", "Can a customer postpone a loan payment?", ("deferment",), grades={"deferment": 3}),
        Question("b", "What does a wire abroad cost?", ("wire",), reference="35 dollars"),
    ]
    target = project / "mine.jsonl"
    save_golden(questions, target)
    golden = read_golden(target)
    assert golden.questions == tuple(questions)
    with pytest.raises(GoldenError, match="exists; pass overwrite=True"):
        save_golden(questions, target)
    result = run(project.write_config(golden="mine.jsonl"), save=False)
    assert result.location is None
    assert result.report.question_ids == ["a", "b"]
