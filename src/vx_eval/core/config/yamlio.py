"""Reading a YAML config safely: dates stay text, nesting and alias expansion are bounded, and every value
that cannot be read is an error with its line, never an exception from the parser's insides.

PyYAML's safe loader raises `ValueError` (not `YAMLError`) for ``2001-13-45`` read as a date, a 4,301-digit
integer or ``!!float xyz``, `RecursionError` for deep nesting, and happily builds a self-referencing alias
or a few hundred bytes of aliases that expand a billion times in whatever walks the result next.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

MAX_DEPTH = 64
"""Levels of nesting a config may have (a real one has five)."""
MAX_EXPANDED = 100_000
"""Values a config may expand to once every alias (``*name``) is written out in full."""

_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class YamlInputError(ValueError):
    """A YAML text that cannot be read; `line` and `column` are 1-based (0 when unknown)."""

    def __init__(self, message: str, line: int = 0, column: int = 0) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


class _Loader(yaml.SafeLoader):
    """The safe loader without dates (``name: 2001-12-14`` is text), with bounded nesting, and with every
    value it cannot build reported at its node."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]  # PyYAML's stubs leave it untyped
                raise yaml.composer.ComposerError(
                    None, None, f"nested more than {MAX_DEPTH} levels deep; a config needs a handful", mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError, TypeError) as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read the value {_brief(node)} ({_reason(exc)})", node.start_mark
            ) from None


# dates stay text: the timestamp resolver is left out of this loader's own table (the safe loader keeps its)
_Loader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != _TIMESTAMP]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _brief(node: yaml.Node) -> str:
    value = node.value if isinstance(node, yaml.ScalarNode) else node.tag
    text = str(value)
    shown = text if len(text) <= 40 else f"{text[:20]}…{text[-8:]} ({len(text):,} characters)"
    return repr(shown) if isinstance(node, yaml.ScalarNode) else shown


def _reason(exc: BaseException) -> str:
    text = str(exc)
    if "Exceeds the limit" in text:
        return "a number too long to be one"
    return text.split(";")[0][:80]


@dataclass(frozen=True)
class Parsed:
    """A parsed YAML document: the data, and its node tree for finding the line of any value."""

    data: Any
    root: yaml.Node | None


def _expanded(root: yaml.Node) -> int:
    """How many values `root` stands for with every alias written out; an alias inside its own anchor (a
    cycle) or an expansion past `MAX_EXPANDED` is an error at the alias."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node, depth: int = 1) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if depth > MAX_DEPTH:  # aliases inside aliases can nest deeper than the text does
            raise YamlInputError(
                f"the aliases here nest more than {MAX_DEPTH} levels deep; write the config out",
                node.start_mark.line + 1,
                node.start_mark.column + 1,
            )
        if key in open_nodes:
            raise YamlInputError(
                "an alias refers to the value it is part of (a cycle); write the value out instead",
                node.start_mark.line + 1,
                node.start_mark.column + 1,
            )
        open_nodes.add(key)
        if isinstance(node, yaml.MappingNode):
            total = 1 + sum(size(k, depth + 1) + size(v, depth + 1) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total = 1 + sum(size(v, depth + 1) for v in node.value)
        else:
            total = 1
        open_nodes.discard(key)
        if total > MAX_EXPANDED:
            raise YamlInputError(
                f"aliases (*name) repeat values here until they expand to more than {MAX_EXPANDED:,}; write the "
                "config out",
                node.start_mark.line + 1,
                node.start_mark.column + 1,
            )
        sizes[key] = total
        return total

    return size(root)


def parse_yaml(text: str) -> Parsed:
    """The one document in `text`; `YamlInputError` with the line for anything that cannot be read."""
    try:
        loader = _Loader(text)  # its reader refuses control characters at once
    except yaml.reader.ReaderError as exc:
        line = text[: exc.position].count("\n") + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character or "\0")
        raise YamlInputError(f"a control character (U+{code:04X}) YAML does not allow", line, column) from None
    try:
        root = loader.get_single_node()
        if root is None:
            return Parsed(None, None)
        _expanded(root)
        data = loader.construct_document(root)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "not valid YAML"
        raise YamlInputError(str(problem), (mark.line + 1) if mark else 0, (mark.column + 1) if mark else 0) from None
    except yaml.YAMLError as exc:
        raise YamlInputError(str(exc).splitlines()[0][:200]) from None
    finally:
        loader.dispose()
    return Parsed(data, root)
