"""Golden questions from Python, as the seed writes them: `Question("…", expected=[…])`, `save_questions`,
`read_golden` (``.unfilled``, ``.sha256``), `golden_template` and `write_golden` on handles.

A handle is anything `vx_eval.evaluate` searches that can list its documents: an engine opened with
`vx_eval.open_engine`, a `Target` around one, or a list of them (several collections into one file).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vx_eval.core.config.experiment import ModelsConfig
from vx_eval.core.contracts.engine import EngineHandle
from vx_eval.core.contracts.golden import GoldenSet
from vx_eval.core.contracts.golden import Question as Question_
from vx_eval.core.contracts.writer import WriteRequest
from vx_eval.core.errors import ConfigError, GoldenError
from vx_eval.core.golden.template import drafted, sample_units
from vx_eval.core.plugins import load_plugins
from vx_eval.python.commands import draft_rows, save_golden
from vx_eval.python.commands import read_golden as _read


def question_id(text: str) -> str:
    """The id a question without one gets: from its words alone, so the same question keeps it run after run
    (and a rerun's per-question results line up)."""
    return "q-" + hashlib.sha256(" ".join(text.split()).casefold().encode()).hexdigest()[:12]


class Question(Question_):
    """A golden question: what somebody asks and the ids (``doc`` or ``doc#page=N``) that answer it.

    ``Question("Can a customer postpone a loan payment?", expected=["deferment"])``; `id` is made from the
    question's words when not given (`question_id`). `grades` gives graded labels (``{"deferment": 3}``),
    `reference` the answer a person would accept.
    """

    def __init__(
        self,
        question: str,
        expected: Iterable[str] = (),
        id: str | None = None,
        *,
        grades: Mapping[str, int] | None = None,
        reference: str | None = None,
        draft: bool = False,
        kind: str | None = None,
    ) -> None:
        if isinstance(expected, str):
            expected = [expected]
        values = {
            "id": id if id is not None else question_id(question),
            "question": question,
            "expected": tuple(expected),
            "grades": dict(grades or {}),
            "reference": reference,
            "draft": draft,
            "kind": kind,
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class Target:
    """One collection to compare, with the name people read: ``Target(handle, name="Azure AI Search")``."""

    handle: Any
    name: str | None = None


def save_questions(
    questions: Iterable[Question_ | Mapping[str, Any]], path: str | Path, *, overwrite: bool = False
) -> str:
    """Write questions (or golden rows) as a golden JSONL file, atomically, to a path, ``s3://…`` or a Blob
    address; never over a file unless `overwrite`. Two questions with one id are refused."""

    rows = list(questions)
    ids = [q.id if isinstance(q, Question_) else q.get("id") for q in rows]
    seen = {i for i in ids if i is not None and ids.count(i) > 1}
    if seen:
        raise GoldenError(f"two questions have the id {sorted(seen)[0]!r}; give each question an id of its own")
    return save_golden(rows, path, overwrite=overwrite)


def read_golden(location: str | Path, *, fetcher: Any = None) -> GoldenSet:
    """A golden file read as a run reads it: ``.questions``, ``.sha256``, ``.unfilled`` (rows still to fill),
    ``.drafts``; from a path, ``s3://…``, a Blob address or a BEIR folder (`fetcher`: any ``fetch(uri)``)."""

    return _read(str(location), fetcher=fetcher)


def _handle(obj: Any) -> EngineHandle:
    handle = obj.handle if isinstance(obj, Target) else obj
    if not isinstance(handle, EngineHandle):
        raise ConfigError(
            f"a {type(handle).__name__} cannot list its documents; give an engine opened with "
            "vx_eval.open_engine (or a Target around one)"
        )
    return handle


def _name(obj: Any) -> str | None:
    return obj.name if isinstance(obj, Target) and obj.name else None


def collections_of(handles: Any) -> list[tuple[str, EngineHandle]]:
    """Named collections from one handle, a `Target`, or a list or mapping of them."""
    if isinstance(handles, Mapping):
        items = [(str(n), h) for n, h in handles.items()]
    elif isinstance(handles, list | tuple):
        items = [
            (h.name if isinstance(h, Target) and h.name else f"collection-{i + 1}", h) for i, h in enumerate(handles)
        ]
    else:
        items = [(_name(handles) or "collection", handles)]
    if not items:
        raise ConfigError("no collection given: pass a handle, a Target, or a list of them")
    return [(name, _handle(h)) for name, h in items]


def golden_template(
    handles: Any,
    path: str | Path,
    n: int = 50,
    *,
    seed: int = 0,
    by: str = "document",
    writer: Callable[[str], str] | None = None,
    overwrite: bool = False,
) -> list[dict[str, Any]]:
    """A golden file to fill in, written to `path`: a row per sampled document (``by="page"``: per page) with
    its id in ``expected``, the start of its text in ``hint`` and ``question`` empty. The same seed on the
    same collection gives the same rows. `writer`, any function from a text to a question, drafts them
    (rows marked ``draft: true``). Returns the rows as mappings."""

    if by not in ("document", "page"):
        raise ConfigError(f"by is 'document' or 'page', not {by!r}")
    plugins = load_plugins()
    cls = plugins.writers.get("template")
    units = sample_units(collections_of(handles), n, seed, by)
    rows = cls(cls.Options()).write(units, WriteRequest(n=n, seed=seed)).rows
    rows = drafted(rows, units, writer) if writer else rows
    mappings = [row.model_dump(mode="json", exclude_none=True) for row in rows]
    save_golden(mappings, path, overwrite=overwrite)
    return mappings


def write_golden(
    handles: Any,
    path: str | Path,
    n: int = 50,
    *,
    writer: str = "chat",
    options: Mapping[str, Any] | None = None,
    models: Mapping[str, Any] | None = None,
    seed: int = 0,
    by: str = "document",
    mix: Mapping[str, float] | None = None,
    threshold: int = 3,
    overwrite: bool = False,
) -> list[dict[str, Any]]:
    """Questions drafted by a writer plugin (``chat``: any OpenAI-compatible model; ``local``: SmolLM2 in
    process) from the collections' chunks, checked and judged by its critic, written to `path` marked
    ``draft: true``. `options` are the writer's (``{"model": {"url": …, "model": …}}``), `models` the
    config's ``models:`` block (served models under ``endpoints``). Returns the rows as mappings."""

    plugins = load_plugins()
    cls = plugins.writers.get(writer, where="writer")
    checked = cls.Options.model_validate(dict(options)) if options is not None else None
    config_models = ModelsConfig.model_validate(dict(models or {}), context={"base_dir": Path.cwd()})
    rows, _ = draft_rows(
        plugins,
        collections_of(handles),
        writer,
        checked,
        config_models,
        n,
        seed=seed,
        by=by,
        mix=mix,
        threshold=threshold,
    )
    mappings = [row.model_dump(mode="json", exclude_none=True) for row in rows]
    save_golden(mappings, path, overwrite=overwrite)
    return mappings
