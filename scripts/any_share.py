"""How loosely typed the core's joins are: the share of its functions' parameters whose annotation holds
`Any` (``Any``, ``dict[str, Any]``, ``Sequence[Any]``, …), or none at all, per room and in all.

    python scripts/any_share.py [FOLDER]      # default: src/vx_eval/core

`self` and `cls` are not counted; ``*args`` and ``**kwargs`` are.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path


def parameters(tree: ast.AST) -> list[ast.arg]:
    found: list[ast.arg] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            every = [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, [a.vararg, a.kwarg])]
            found += [p for p in every if p.arg not in ("self", "cls")]
    return found


def loose(p: ast.arg) -> bool:
    """No annotation, or one naming `Any` anywhere in it."""
    if p.annotation is None:
        return True
    return any(isinstance(n, ast.Name) and n.id == "Any" for n in ast.walk(p.annotation)) or "Any" in (
        p.annotation.value if isinstance(p.annotation, ast.Constant) and isinstance(p.annotation.value, str) else ""
    )


CORE = Path(__file__).parents[1] / "src" / "vx_eval" / "core"


def counts(root: Path = CORE) -> tuple[Counter[str], Counter[str]]:
    """Parameters, and those Any or untyped, per room of `root` and in ``all``."""
    total, anys = Counter[str](), Counter[str]()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).parts
        room = rel[0] if len(rel) > 1 else "(top)"
        for p in parameters(ast.parse(path.read_text(encoding="utf-8"))):
            total[room] += 1
            anys[room] += loose(p)
    total["all"], anys["all"] = sum(total.values()), sum(anys.values())
    return total, anys


def main() -> None:
    total, anys = counts(Path(sys.argv[1]) if len(sys.argv) > 1 else CORE)
    for room in sorted(total, key=lambda r: (r == "all", r)):
        share = anys[room] / total[room]
        print(f"{room:<10} {anys[room]:4d} of {total[room]:4d} parameters Any or untyped ({share:5.1%})")


if __name__ == "__main__":
    main()
