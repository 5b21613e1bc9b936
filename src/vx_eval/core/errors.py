"""One small error hierarchy: every `VxEvalError` is a user-facing message, anything else is a bug."""

from __future__ import annotations

import base64
import difflib
import json
import re
import reprlib
import sys
import threading
import traceback
from collections.abc import Iterable
from urllib.parse import quote, quote_plus


class VxEvalError(Exception):
    """An error the user can fix: the CLI prints its message and exits with code 2."""

    exit_code = 2


SEARCHES_FAILED = 4
"""The exit code of a run that finished and kept its report, but where some searches still failed after every
try: the averages of those setups leave the failed questions out, so a CI gate must not pass on them
(``vx-eval run --allow-failures`` exits 0 instead). 1 is a run that could score no setup at all, 2 bad input."""


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

    close = difflib.get_close_matches(word, sorted(set(choices)), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


# Secret values read in this process (`SecretRef.value()` adds them), each with the forms a client library or
# a server may echo it in: `redact` masks them in anything shown or saved, so a credential that comes back in
# an error never reaches a report, a page or a log.
_SECRETS: set[str] = set()

_SCHEME_VALUE = re.compile(r"\b(Basic|Bearer|Digest|basic|bearer|BASIC|BEARER)(\s+)([A-Za-z0-9+/=._~-]{8,})")
"""An HTTP credential written out (``Basic dXNlcjpwYXNz``, ``Bearer eyJ…``), whoever's it is."""
_HEADER = re.compile(
    r"(?i)((?:proxy-)?authorization|x-api-key|api-key|apikey|x-auth-token|cookie|set-cookie)"
    r"([\"']?\s*[:=]\s*[\"']?)([^\"'\r\n,;}]+)"
)
"""A header or field that holds a credential, with its value (``Authorization: …``, ``"api-key": "…"``)."""
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]*):([^@/\s]+)@")
"""The password of an address that carries one (``https://user:password@host``)."""
SERVICE_TEXT = 300
"""The most of a service's own words (an error's body) kept in a report, a page or a line printed."""


def _forms(value: str) -> set[str]:
    """The ways `value` may be written where it is echoed: as it is, URL-encoded, escaped in JSON, and base64
    (alone, or inside a longer encoded text such as ``Basic base64(user:password)``: at each of the three
    alignments base64 may meet it, the part of its encoding that no neighbouring byte changes)."""

    raw = value.encode()
    forms = {value, quote(value, safe=""), quote_plus(value), json.dumps(value)[1:-1]}
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        forms.add(encode(raw).decode().rstrip("="))
        for offset in range(3):  # the secret starts `offset` bytes into a three-byte group
            rest = raw[(3 - offset) % 3 :]
            core = encode(rest[: len(rest) // 3 * 3]).decode()
            if len(core) >= 8:  # shorter runs of base64 letters would mask ordinary words
                forms.add(core)
    return {form for form in forms if len(form) >= 4}


def remember_secret(value: str) -> str:
    if len(value) >= 4:  # masking shorter strings would garble ordinary words
        _SECRETS.update(_forms(value))
    return value


def _looks_secret(value: str) -> bool:
    """Whether a word after ``Basic``/``Bearer`` is a credential (mixed case, a digit or base64's own signs)
    rather than an ordinary word (``Basic retrieval``)."""
    return any(c.isdigit() or c in "+/=_-." for c in value) or value[1:] != value[1:].lower()


def redact(text: str) -> str:
    """`text` with every secret read in this process masked as ``***`` in every form it may be echoed in, and
    any credential it carries whoever's it is: a ``Basic``/``Bearer`` value, an ``Authorization``,
    ``api-key`` or cookie header's value, an address's password."""
    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(secret, "***")
    text = _HEADER.sub(lambda m: f"{m[1]}{m[2]}***", text)
    text = _SCHEME_VALUE.sub(lambda m: f"{m[1]}{m[2]}***" if _looks_secret(m[3]) else m[0], text)
    return _USERINFO.sub(lambda m: f"{m[1]}:***@", text)


def service_text(exc: BaseException, limit: int = SERVICE_TEXT) -> str:
    """What a failed call to a service says, fit to keep and show: its kind and message, every credential
    masked (`redact`), cut to `limit` characters (a server's error body may echo the whole request)."""
    text = redact(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def install_redacting_excepthook() -> None:
    """Make the traceback of any uncaught exception (a bug) print with every remembered secret masked: a
    client library's message may carry a password a server echoed back. Threads are covered too."""

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
