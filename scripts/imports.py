"""How vx-eval's modules import each other, read from the source (nothing is imported):

- every import between vx-eval's modules, at a module's top or inside a function (those under
  ``if TYPE_CHECKING:`` are left out: they never run), and any cycle among them;
- the imports inside functions, by package, and how many carry a comment on their line or the line above
  saying why they are lazy;
- the libraries declared at a module's top to load on first use (`core.optional.on_first_use`): optional
  extras' clients and slow libraries, imported when a name of theirs is first read.

    python scripts/imports.py [--list]

It exits 1 where the modules import each other in a cycle (`tests/test_layout.py` holds that at none).
"""

from __future__ import annotations

import argparse
import ast
import graphlib
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


@dataclass(frozen=True)
class Lazy:
    """An import inside a function: where, what, and whether a comment says why."""

    module: str
    line: int
    imported: str
    explained: bool


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((SRC / "vx_eval").rglob("*.py"))}


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> list[str]:
    """The vx-eval modules an import statement loads (a name imported from a package may be a module)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        names = [f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in known else prefix for alias in node.names]
    found = []
    for name in names:
        while name and name not in known and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in known and name != module:
            found.append(name)
    return found


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def on_first_use() -> list[str]:
    """Every ``on_first_use("module", …)`` declaration in the package, as ``vx_eval.x.y: module``."""
    found = []
    for module, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "on_first_use" and node.args:
                found.append(f"{module}: {ast.literal_eval(node.args[0])}")
    return found


def read() -> tuple[dict[str, set[str]], list[Lazy]]:
    """Every module's vx-eval imports that run (top and in functions), and the imports inside functions."""
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    lazy: list[Lazy] = []
    for module, path in modules.items():
        text = path.read_text(encoding="utf-8")
        _walk(
            ast.parse(text),
            False,
            _Reading(module, path.name == "__init__.py", text.splitlines(), set(modules)),
            graph,
            lazy,
        )
    return graph, lazy


@dataclass(frozen=True)
class _Reading:
    module: str
    is_package: bool
    lines: list[str]
    known: set[str]


def _walk(node: ast.AST, in_function: bool, at: _Reading, graph: dict[str, set[str]], lazy: list[Lazy]) -> None:
    for child in ast.iter_child_nodes(node):
        if _type_checking(child):
            continue
        inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
        if isinstance(child, ast.Import | ast.ImportFrom):
            graph[at.module].update(_targets(child, at.module, at.is_package, at.known))
            if in_function:
                here = at.lines[child.lineno - 1]
                above = at.lines[child.lineno - 2].strip() if child.lineno > 1 else ""
                explained = "#" in here or above.startswith("#")
                lazy.append(Lazy(at.module, child.lineno, ast.unparse(child), explained))
        _walk(child, inside, at, graph, lazy)


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle among the modules (each importing the next, the last the first), or None."""
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list every import inside a function")
    args = parser.parse_args()
    graph, lazy = read()
    edges = sum(len(v) for v in graph.values())
    print(f"{len(graph)} modules, {edges} imports between them (top and inside functions; TYPE_CHECKING left out)")
    loop = cycle(graph)
    print("import cycle: " + " -> ".join(loop) if loop else "no import cycle")
    explained = sum(item.explained for item in lazy)
    print(f"{len(lazy)} imports inside functions, {explained} with a comment saying why (goal: under 40, all said)")
    declared = on_first_use()
    print(f"{len(declared)} libraries declared at a module's top to load on first use (core.optional)")
    by_package = Counter(".".join(item.module.split(".")[:3]) for item in lazy)
    for package, count in by_package.most_common():
        print(f"  {count:4}  {package}")
    if args.list:
        for line in declared:
            print(f"{line}   (on first use)")
        for item in lazy:
            print(f"{item.module}:{item.line}: {item.imported}{'' if item.explained else '   (no reason given)'}")
    return 1 if loop else 0


if __name__ == "__main__":
    sys.exit(main())
