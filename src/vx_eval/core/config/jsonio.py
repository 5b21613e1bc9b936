"""Reading JSON that comes from outside (golden files, corpora, reports): every way it can fail is one
`JsonInputError` with a message a person can act on, never an exception from the parser's insides.

`json.loads` raises `JSONDecodeError` for bad syntax, but a plain `ValueError` for an integer of more than
4,300 digits and `RecursionError` for arrays nested a thousand deep.
"""

from __future__ import annotations

import json
from typing import Any


class JsonInputError(ValueError):
    """JSON that cannot be read; `column` is 1-based (None when it is about the whole text)."""

    def __init__(self, message: str, column: int | None = None) -> None:
        super().__init__(message)
        self.message, self.column = message, column


def jsonl_lines(text: str) -> list[str]:
    """The lines of JSON Lines text: split at each newline only (a ``\\r`` before it dropped), never at the
    other characters `str.splitlines` breaks at, which JSON allows in a string (U+2028, U+2029, U+0085)."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def read_json(text: str | bytes) -> Any:
    """The value `text` holds, or `JsonInputError` saying why not; a string holding a lone surrogate (an escape
    such as ``\\ud800`` that is half of a character) is refused, as no UTF-8 file or page can hold it."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonInputError(f"invalid JSON: {exc.msg}", exc.colno) from None
    except RecursionError:
        raise JsonInputError("invalid JSON: nested too deeply to read") from None
    except UnicodeDecodeError:
        raise JsonInputError("not UTF-8 text") from None
    except ValueError as exc:  # an integer too long to convert (Python's 4,300-digit limit)
        reason = "a number too long to be one" if "digits" in str(exc) else str(exc)[:80]
        raise JsonInputError(f"invalid JSON: {reason}") from None
    escaped = b"\\u" in text if isinstance(text, bytes) else "\\u" in text
    if escaped:  # only an escape can make a lone surrogate
        refuse_unwritable(value)
    return value


def unwritable(value: Any) -> str | None:
    """The first string in `value` (keys and nested values included) that cannot be written as UTF-8, or None."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return item
        elif isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, list | tuple):
            stack += item
    return None


def refuse_unwritable(value: Any) -> None:
    """`JsonInputError` naming the text that holds a lone surrogate, where `value` holds one."""
    found = unwritable(value)
    if found is not None:
        shown = found.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")[:60]
        raise JsonInputError(
            f"the text '{shown}' holds a lone surrogate escape (half of a character), which no UTF-8 file can "
            "hold: remove it, or write the whole character"
        )
