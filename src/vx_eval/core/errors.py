"""One small error hierarchy: every `VxEvalError` is a user-facing message, anything else is a bug."""

from __future__ import annotations

import re
import reprlib
from collections.abc import Iterable


class VxEvalError(Exception):
    """An error the user can fix: the CLI prints its message and exits with code 2."""

    exit_code = 2


class ConfigError(VxEvalError):
    """The experiment config (YAML) is wrong."""


class GoldenError(VxEvalError):
    """The golden file is wrong or cannot be read."""


class PluginError(VxEvalError):
    """A plugin is missing, misnamed or registered twice."""


class EngineError(VxEvalError):
    """An engine could not be opened, indexed or searched."""


class StoreError(VxEvalError):
    """A location could not be read or written."""


class MetricError(VxEvalError):
    """A measure name could not be parsed."""


def quoted(text: object, limit: int = 60) -> str:
    """User text as it may be shown: quoted, control characters (a terminal's escape sequences among them)
    written as escapes, and cut to `limit` characters with the length said."""
    value = str(text)
    if len(value) > limit:
        value = f"{value[: limit - 12]}…{value[-8:]}"
        return f"{_bytes_shown(repr(value))} ({len(str(text)):,} characters)"
    return _bytes_shown(repr(value))


_ESCAPED_BYTE = re.compile(r"\\udc([89a-f][0-9a-f])")


def _bytes_shown(text: str) -> str:
    """A byte that is not UTF-8 (read with surrogateescape, repr'd as ``\\udcff``) written as ``\\xff``."""
    return _ESCAPED_BYTE.sub(lambda m: "\\x" + m.group(1), text)


_BRIEF = reprlib.Repr()
_BRIEF.maxlevel, _BRIEF.maxdict, _BRIEF.maxlist, _BRIEF.maxtuple, _BRIEF.maxset = 2, 3, 4, 4, 4
_BRIEF.maxstring, _BRIEF.maxother, _BRIEF.maxlong = 50, 40, 40


def brief(value: object) -> str:
    """Any value as a short text for an error message: nested and long values abridged (an aliased config
    value that expands a billion times is never written out), strings escaped as `quoted` does."""
    text = _BRIEF.repr(value)
    return text if len(text) <= 100 else text[:96] + " ..."


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Return `"; did you mean 'x'?"` for the closest choice, or `""` when nothing is close."""
    import difflib

    close = difflib.get_close_matches(word, sorted(set(choices)), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


# Secret values read in this process (`SecretRef.value()` adds them): `redact` masks them in anything
# shown or saved, so a credential that a client library echoes in an error never reaches a report or log.
_SECRETS: set[str] = set()


def remember_secret(value: str) -> str:
    if len(value) >= 4:  # masking shorter strings would garble ordinary words
        _SECRETS.add(value)
    return value


def redact(text: str) -> str:
    """`text` with every secret read in this process replaced by ``***``."""
    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def install_redacting_excepthook() -> None:
    """Make the traceback of any uncaught exception (a bug) print with every remembered secret masked: a
    client library's message may carry a password a server echoed back. Threads are covered too."""
    import sys
    import threading
    import traceback

    def show(kind: type[BaseException], value: BaseException, tb: object) -> None:
        text = "".join(traceback.format_exception(kind, value, tb))  # type: ignore[call-overload]
        sys.stderr.write(redact(text))

    def show_thread(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit:
            return
        sys.stderr.write(f"Exception in thread {args.thread.name if args.thread else '?'}:\n")
        show(args.exc_type, args.exc_value or args.exc_type(), args.exc_traceback)

    sys.excepthook = show
    threading.excepthook = show_thread
