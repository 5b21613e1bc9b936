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


def read_json(text: str | bytes) -> Any:
    """The value `text` holds, or `JsonInputError` saying why not."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonInputError(f"invalid JSON: {exc.msg}", exc.colno) from None
    except RecursionError:
        raise JsonInputError("invalid JSON: nested too deeply to read") from None
    except UnicodeDecodeError:
        raise JsonInputError("not UTF-8 text") from None
    except ValueError as exc:  # an integer too long to convert (Python's 4,300-digit limit)
        reason = "a number too long to be one" if "digits" in str(exc) else str(exc)[:80]
        raise JsonInputError(f"invalid JSON: {reason}") from None
