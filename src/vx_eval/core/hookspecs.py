"""Every hook vx-eval calls, typed and documented in one place (pluggy hookspecs).

Each hook receives a registry and adds plugin classes to it by their stable ``name``; all implementations
are called (none is first-result), in pluggy's order. A name registered twice is an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from vx_eval.core.contracts.endpoints import Provider
    from vx_eval.core.contracts.engine import Adapter, Engine, SetupProvider
    from vx_eval.core.contracts.judge import Judge
    from vx_eval.core.contracts.models import ModelPlugin
    from vx_eval.core.contracts.registry import Registry
    from vx_eval.core.contracts.store import Store
    from vx_eval.core.contracts.writer import QuestionWriter

PROJECT = "vx_eval"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def vx_eval_register_engines(register: Registry[Engine[Any]]) -> None:
    """Called once when plugins load. Add `Engine` classes: ``register.add(MyEngine)``.

    An engine class has a ``name`` (used as ``engine:`` in YAML), a nested pydantic ``Options`` model for its
    ``options:`` block, and ``open(options, context) -> EngineHandle``. Returns nothing.
    """


@hookspec
def vx_eval_register_setups(register: Registry[SetupProvider]) -> None:
    """Called once when plugins load. Add `SetupProvider` classes: ``register.add(MyFusion)``.

    A provider has a ``name`` and ``setups(target) -> Iterable[Setup]``: the ways it can search that target,
    composed from the target's capabilities (so one fusion or reranker provider serves every engine).
    Returns nothing.
    """


@hookspec
def vx_eval_register_stores(register: Registry[Store]) -> None:
    """Called once when plugins load. Add `Store` classes: ``register.add(S3Store)``.

    A store has a ``name``, a nested pydantic ``Options`` model (``stores: {name: {…}}``), is made as
    ``cls(options)``, and has ``handles(location) -> bool`` and read/write/exists/list on locations (optionally
    delete, and ``inside(root, location)`` where links could lead out of a root). Returns nothing.
    """


@hookspec
def vx_eval_register_writers(register: Registry[QuestionWriter]) -> None:
    """Called once when plugins load. Add `QuestionWriter` classes that write golden rows for documents.

    A writer has a ``name`` (used as ``--writer``), ``writes_questions`` (True: it drafts questions, for
    ``golden write``; False: rows to fill, for ``golden template``), a nested pydantic ``Options`` model
    (``writers: {name: {…}}``), is made as ``cls(options)``, and has ``describe() -> WriterDescription`` and
    ``write(units, request) -> WriteOutcome`` (see `vx_eval.core.golden.template`). Returns nothing.
    """


@hookspec
def vx_eval_register_models(register: Registry[ModelPlugin]) -> None:
    """Called once when plugins load. Add model classes: ``register.add(MiniLM)``.

    A model class has a short ``name`` (used in YAML: ``dense_models: [minilm]``), a ``kind`` (``dense``,
    ``reranker`` or ``late``), a ``label`` people read, and ``load(settings)`` returning the loaded model.
    Returns nothing.
    """


@hookspec
def vx_eval_register_judges(register: Registry[Judge]) -> None:
    """Called once when plugins load. Add `Judge` classes that grade (question, passage) pairs 0–3.

    A judge has a ``name`` (``evaluation.judge`` in YAML), a nested pydantic ``Options`` model (``judges:
    {name: {…}}``), ``__init__(options, models)``, ``fingerprint()``, ``describe()`` and ``grade(pairs) ->
    list[Verdict]`` (see `vx_eval.core.judging.grading`). Called for a run with a judge and by ``vx-eval judge
    check``. Returns nothing.
    """


@hookspec
def vx_eval_register_adapters(register: Registry[Adapter]) -> None:
    """Called once when plugins load. Add `Adapter` classes: ``register.add(MyRetrieverAdapter)``.

    An adapter has a ``name``, ``accepts(obj)`` and ``handle(obj, name, options) -> EngineHandle``: it lets
    `vx_eval.evaluate` search anything of its kind given from Python. The first adapter that accepts an
    object wraps it, in registration order. Returns nothing.
    """


@hookspec
def vx_eval_register_providers(register: Registry[Provider]) -> None:
    """Called once when plugins load. Add `Provider` classes that speak a served model's wire format.

    A provider has a ``name`` (``provider:`` of an endpoint under ``models.endpoints``), ``kinds`` (``dense``,
    ``reranker``), ``max_batch``, ``default_url``, ``errors`` (its client's exception classes), is made as
    ``cls(endpoint, key)`` and has ``embed(texts, input_type) -> Embedded``, ``rerank(query, documents) ->
    Reranked`` and ``failure(exc) -> Failure`` (see `vx_eval.core.contracts.endpoints`). vx-eval batches, rate-limits,
    retries, caches and counts its calls. Returns nothing.
    """


@hookspec(firstresult=True)
def vx_eval_report_views() -> Any:
    """Return what gives a `Report` its conveniences for people (``report.table()``, ``to_pandas()``,
    ``per_question()``, its notebook page, ``save()``): an object with `core.report.schema.ReportViews`' methods.
    The first plugin that answers wins; vx-eval's own (`vx_eval.python.report_views`) gives its notebook module."""
