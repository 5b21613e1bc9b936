"""The package stays in small modules: none over 500 lines (the structure issue's rule), so a module that
grows past it is split along its data flow before it lands."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import vx_eval

from .conftest import REPO

LIMIT = 500


def test_no_module_of_the_package_passes_500_lines():
    root = Path(vx_eval.__file__).resolve().parent
    modules = sorted(
        {(Path(folder) / name).resolve() for folder, _, names in os.walk(root, followlinks=True) for name in names}
    )
    modules = [p for p in modules if p.suffix == ".py"]
    assert len(modules) > 100  # the whole package, core/ and plugins/ included
    long = {str(p): n for p in modules if (n := len(p.read_text().splitlines())) > LIMIT}
    assert long == {}


def test_no_symbolic_link_is_checked_in_and_the_quickstart_copies_are_the_same():
    """docs/decisions/0001-layout.md: real folders only; the quickstart's files, kept both in configs/ and in
    the package (the conformance suite reads them installed), never drift apart."""
    import subprocess

    repo = Path(__file__).resolve().parents[1]
    staged = subprocess.run(["git", "ls-files", "-s"], cwd=repo, capture_output=True, text=True, check=True).stdout
    assert not [line for line in staged.splitlines() if line.startswith("120000")]  # a link's mode
    packaged = Path(vx_eval.__file__).resolve().parent / "testing" / "data"
    for name in ("docs.jsonl", "golden.jsonl"):
        assert (repo / "configs" / "quickstart" / name).read_bytes() == (packaged / name).read_bytes(), name


def test_under_three_percent_of_the_cores_parameters_are_any_or_untyped():
    import importlib.util

    script = Path(__file__).parents[1] / "scripts" / "any_share.py"
    spec = importlib.util.spec_from_file_location("any_share", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    total, anys = module.counts()
    assert total["all"] > 1000  # the script found the core
    assert anys["all"] / total["all"] < 0.03, f"{anys['all']} of {total['all']} parameters: python scripts/any_share.py"


def _imports_script() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("imports", REPO / "scripts" / "imports.py")
    assert spec is not None and spec.loader is not None
    imports = importlib.util.module_from_spec(spec)
    sys.modules["imports"] = imports  # its dataclasses read their own module
    spec.loader.exec_module(imports)
    return imports


LAZY_IMPORTS = 33
"""Imports inside functions today (each an optional dependency behind a message of its own, a class to
subclass, or start-up time); under 40, the structure issue's goal. The count may only fall: lower it with it."""


def test_every_import_inside_a_function_says_why_and_their_number_only_falls():
    """An import inside a function is there for a reason (an optional extra, a slow library, start-up time)
    that a comment on its line or the line above gives; `python scripts/imports.py --list` lists them."""
    _, lazy = _imports_script().read()
    unexplained = [f"{item.module}:{item.line}: {item.imported}" for item in lazy if not item.explained]
    assert not unexplained, "say why each is lazy (or import it at the top):\n" + "\n".join(unexplained)
    assert len(lazy) <= LAZY_IMPORTS, f"{len(lazy)} imports inside functions, more than {LAZY_IMPORTS}"


def test_no_two_modules_import_each_other_even_inside_a_function():
    """The import graph of the package, every import that runs (at a module's top or inside a function;
    those under TYPE_CHECKING never run), has no cycle: no room needs an import hidden in a function to
    load at all (`python scripts/imports.py` prints the graph's size and the imports inside functions)."""
    imports = _imports_script()
    graph, _ = imports.read()
    assert len(graph) > 150 and sum(map(len, graph.values())) > 500  # the whole package was read
    assert imports.cycle(graph) is None, " -> ".join(imports.cycle(graph))
    assert imports.cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) is not None  # a cycle is found where there is one


def test_no_function_is_above_complexity_20():
    """radon's cyclomatic complexity of every function and method of the package (and of a class's methods,
    radon counts each): none above 20, where pluggy's most complex function is."""
    from radon.complexity import cc_visit
    from radon.visitors import Function

    src = Path(vx_eval.__file__).parent.parent
    over = {
        f"{path.relative_to(src).as_posix()}::{block.fullname}": block.complexity
        for path in sorted(Path(vx_eval.__file__).parent.rglob("*.py"))
        for block in cc_visit(path.read_text(encoding="utf-8"))
        if isinstance(block, Function) and block.complexity > 20
    }
    assert not over, f"above complexity 20: {over}; split them along their steps"
    assert (
        max(
            b.complexity for b in cc_visit("def f(a):\n" + "".join(f"    if a == {i}: return {i}\n" for i in range(25)))
        )
        > 20
    )


def test_the_cores_tests_mirror_its_rooms():
    """Each room of the core (a package under `vx_eval/core/`) has its tests in `tests/core/<room>/`, and every
    folder there is a room or a module of the core (`stores`): a test of the measures is where the measures are."""
    core = Path(vx_eval.__file__).parent / "core"
    rooms = {p.name for p in core.iterdir() if (p / "__init__.py").is_file()}
    modules = {p.stem for p in core.glob("*.py") if p.stem != "__init__"}
    folders = {p.name for p in (REPO / "tests" / "core").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert not rooms - folders, f"rooms without a test folder: {sorted(rooms - folders)}"
    assert not folders - rooms - modules, f"test folders of no room: {sorted(folders - rooms - modules)}"
    empty = sorted(f for f in folders if not list((REPO / "tests" / "core" / f).glob("test_*.py")))
    assert not empty, f"no tests in tests/core/{empty}"
    assert not list((REPO / "tests" / "core").glob("test_*.py")), "a core test belongs in its room's folder"
