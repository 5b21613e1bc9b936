"""The contracts every room and plugin shares (`core.contracts`), read directly: a registry refuses a second
class of the same name and names the installed ones, golden rows check their grades, a question's judgements
default expected units to grade 1, and the store failures are told apart; and the room imports nothing of
vx-eval but the errors."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from pydantic import ValidationError

import vx_eval.core.contracts as contracts
from vx_eval.core.contracts.golden import GoldenRow, Question
from vx_eval.core.contracts.registry import Registry
from vx_eval.core.contracts.store import StoreDenied, StoreFull, StoreNotFound
from vx_eval.core.errors import PluginError, StoreError


class _One:
    name = "one"


class _OneAgain:
    name = "one"


class _Nameless:
    pass


def test_a_registry_refuses_a_second_class_of_one_name_and_names_what_is_installed():
    registry: Registry[object] = Registry("engine")
    registry.add(_One)
    assert registry.get("one") is _One and "one" in registry and len(registry) == 1
    with pytest.raises(PluginError, match="two engine plugins are named 'one'"):
        registry.add(_OneAgain)
    with pytest.raises(PluginError, match="has no `name`"):
        registry.add(_Nameless)
    with pytest.raises(PluginError, match=r"no engine named 'onr'.*did you mean 'one'.*installed: one"):
        registry.get("onr")


def test_golden_rows_check_their_grades_and_take_numeric_ids_as_text():
    assert GoldenRow(id=7, question="q?").id == "7"
    with pytest.raises(ValidationError, match="grades run from 0"):
        GoldenRow(question="q?", grades={"d1": 11})
    with pytest.raises(ValidationError):
        GoldenRow(question="q?", colour="blue")  # a field the format does not have


def test_expected_units_default_to_grade_1_and_grades_may_add_grade_0_units():
    question = Question("q1", "q?", ("d1", "d2"), grades={"d2": 3, "d9": 0})
    assert question.relevance() == {"d1": 1, "d2": 3, "d9": 0}


def test_store_failures_are_told_apart_and_are_all_store_errors():
    for kind in (StoreNotFound, StoreDenied, StoreFull):
        assert issubclass(kind, StoreError)
    assert not issubclass(StoreNotFound, StoreDenied) and not issubclass(StoreFull, StoreNotFound)


def test_the_contracts_import_nothing_of_vx_eval_but_the_errors_and_each_other():
    folder = Path(contracts.__file__).parent
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("vx_eval"):
                allowed = node.module == "vx_eval.core.errors" or node.module.startswith("vx_eval.core.contracts")
                assert allowed, f"{path.name} imports {node.module}"
