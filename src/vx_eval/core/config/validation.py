"""pydantic's errors as a config's messages: ``file:line: yaml.path: what is wrong; what to write instead``.

The line comes from the YAML node the error's location reaches; a location is cleaned of the union
members pydantic tried (told by the model's own annotations, never by how a key looks); an unknown key
gets a did-you-mean from the keys its model knows; a value is quoted briefly and escaped, and never at all
under a key that names a secret.
"""

from __future__ import annotations

import re
import types
import typing
from typing import Any, Union

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from vx_eval.core.errors import brief, did_you_mean, quoted

Loc = tuple[int | str, ...]
"""A place in a config: its keys and list indices from the top, as pydantic's error locations name it."""

SECRET_KEY = re.compile(r"(^|_)(key|api_key|password|secret|token|connection_string|credential|dsn)$", re.I)


def yaml_line(node: yaml.Node | None, loc: Loc) -> int | None:
    """1-based line of the deepest YAML node that `loc` reaches (the key's line for a mapping entry)."""
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if k.value == part), None)
            if match is None:
                break
            line = match[0].start_mark.line + 1
            node = match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


_PLAIN_KEY = re.compile(r"^[A-Za-z_][\w-]{0,59}$")


def _key(part: int | str) -> str:
    """A key as shown in a YAML path: as written where it is a plain word, else quoted and escaped."""
    text = str(part)
    return text if _PLAIN_KEY.match(text) else quoted(text)


def dotted(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{_key(part)}" if out else _key(part))
    return out or "(top level)"


def _members(annotation: Any) -> tuple[Any, ...]:
    """The types a union annotation admits, None left out (``X | None`` is no union to pydantic's errors)."""
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return tuple(a for a in typing.get_args(annotation) if a is not type(None))
    return (annotation,)


def _as_model(annotation: Any) -> type[BaseModel] | None:
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def clean_location(model: type[BaseModel], loc: Loc) -> tuple[Loc, type[BaseModel] | None]:
    """A pydantic error location as the user wrote it, and the model of the mapping it ends in.

    Where a field admits several types (``golden: str | GoldenSource``), pydantic puts the member it tried
    into the location (``golden.GoldenSource.limit``); the member is told by the model's own annotations,
    never by how a key looks, so a user's ``Name:`` stays in the message as written."""
    out: list[Any] = []
    current: Any = model
    parts = list(loc)
    while parts:
        part = parts.pop(0)
        out.append(part)
        cls = _as_model(current)
        if cls is None or isinstance(part, int) or part not in cls.model_fields:
            current = None
            continue
        annotation: Any = cls.model_fields[part].annotation
        if typing.get_origin(annotation) in (list, tuple) and parts and isinstance(parts[0], int):
            out.append(parts.pop(0))
            annotation = typing.get_args(annotation)[0]
        if typing.get_origin(annotation) is dict and parts:
            out.append(parts.pop(0))
            annotation = typing.get_args(annotation)[1]
        members = _members(annotation)
        if len(members) > 1 and parts:
            tag = parts.pop(0)  # the member pydantic tried: drop it, and follow it where it is a model
            annotation = next((m for m in members if getattr(m, "__name__", None) == tag), None)
        current = annotation
    return tuple(out), _as_model(current)


def format_validation_error(
    exc: ValidationError,
    model: type[BaseModel],
    *,
    prefix: Loc = (),
    source: str = "config",
    root: yaml.Node | None = None,
) -> list[tuple[int, str]]:
    """(line, message) per pydantic error: ``file:line: yaml.path: what is wrong; what to write instead``.

    An error about a whole value is dropped when another error explains a part of it (a union's members).
    """
    errors = []
    for err in exc.errors():
        loc, _ = clean_location(model, tuple(err["loc"]))
        errors.append((loc, err))
    out = []
    for loc, err in errors:
        if any(len(other) > len(loc) and other[: len(loc)] == loc for other, _ in errors):
            continue
        if _wrong_type(err) and any(
            other[: len(loc)] == loc and not _wrong_type(e) for other, e in errors if e is not err
        ):  # a union's member the value is not (a string) beside what the member it is says
            continue
        full = prefix + loc
        line = yaml_line(root, full) or 0
        where = f"{source}:{line}" if line else source
        if err["type"] == "extra_forbidden":
            _, parent = clean_location(model, tuple(err["loc"])[:-1])
            known = list(parent.model_fields) if parent else []
            hint = did_you_mean(str(loc[-1]), known) or (f"; known keys: {', '.join(known)}" if known else "")
            out.append((line, f"{where}: {dotted(full)}: unknown key{hint}"))
        elif err["type"] == "missing":
            out.append((line, f"{where}: {dotted(full)}: required but missing"))
        else:
            msg = err["msg"].removeprefix("Value error, ")
            hidden = _secret_path(full) or err["type"] == "credentials_in_url"
            shown = "" if hidden else f" (got {brief(err.get('input'))})"
            out.append((line, f"{where}: {dotted(full)}: {msg}{shown}"))
    # one problem a line at most: a union tried member by member says the same thing twice
    return list(dict.fromkeys(out))


def _wrong_type(err: ErrorDetails) -> bool:
    return err["type"].endswith("_type")


def _secret_path(loc: Loc) -> bool:
    return any(isinstance(p, str) and SECRET_KEY.search(p) for p in loc)
