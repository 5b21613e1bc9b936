"""Evaluating from Python with no config file: `evaluate` over retrievers, engine handles and engines to open,
and what a notebook needs beside it (`open_engine`, `embed_corpus`, `load_model`, `load_report`).

Whatever searches is given by a name people read; adapter plugins (`vx_eval.plugins.adapters`, registered
like any other) turn each into a handle the run searches, so a function, a LangChain or LlamaIndex
retriever and the embedded engine's setups are timed, scored, ranked and picked together.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vx_eval.core.config.experiment import EvaluationConfig, load_config, parse_config
from vx_eval.core.contracts.engine import (
    Document,
    EngineHandle,
    Hit,
    OpenContext,
    Query,
    SilentProgress,
    TargetDescription,
)
from vx_eval.core.contracts.golden import GoldenSet, Question
from vx_eval.core.contracts.models import DENSE, ModelSettings
from vx_eval.core.corpus.prepare import IndexOptions, prepare
from vx_eval.core.errors import ConfigError, did_you_mean, quoted
from vx_eval.core.golden.files import dump_rows, parse_golden, question_row
from vx_eval.core.golden.sources import read_corpus, read_golden
from vx_eval.core.models.loading import Models
from vx_eval.core.plugins import Plugins, load_plugins
from vx_eval.core.report.compare import load_report as _load
from vx_eval.core.report.history import golden_bytes
from vx_eval.core.report.kept_rankings import held
from vx_eval.core.report.saving import save_report
from vx_eval.core.report.schema import Report
from vx_eval.core.run.targets import open_targets
from vx_eval.core.stores import Stores
from vx_eval.core.usecases.export import export_trec as _export
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment
from vx_eval.core.usecases.rescore import Rescoring, rejudge, searched_questions
from vx_eval.core.usecases.rescore import rescore as _rescore
from vx_eval.python.commands import run
from vx_eval.python.questions import Target

GIVEN = "(questions given to evaluate())"


@dataclass(frozen=True)
class Retriever:
    """A retriever with options: `id_field` names where its results keep their ids (a mapping's key, a
    LangChain Document's metadata field, a LlamaIndex node's), `rerank` a cross-encoder
    (``ms-marco-minilm``) for a second setup: its results reranked by their text."""

    obj: Any
    id_field: str = "id"
    rerank: str | None = None


EVALUATION_KEYS = frozenset(EvaluationConfig.model_fields)
BLOCKS = ("search", "execution", "models", "judges", "stores")

Golden = str | Path | Sequence[Question | Mapping[str, Any]] | Mapping[str, Mapping[str, int]]


def named_targets(targets: Any) -> dict[str, Any]:
    """What `evaluate` was given, as names people read to what searches: a mapping as it is; a `Target`, or
    a list of them (or of handles), named by their `name`, else by the collection the handle describes."""

    if isinstance(targets, Mapping):
        return {str(name): t for name, t in targets.items()}
    given = list(targets) if isinstance(targets, list | tuple) else [targets]
    out: dict[str, Any] = {}
    for i, item in enumerate(given, start=1):
        obj = item.handle if isinstance(item, Target) else item
        name = item.name if isinstance(item, Target) and item.name else _described_name(obj) or f"target-{i}"
        if name in out:
            raise ConfigError(f"two targets are named {quoted(name)}; give each Target a name of its own")
        out[name] = obj
    return out


def _described_name(obj: Any) -> str | None:
    return TargetDescription.of(obj.describe()).collection if isinstance(obj, EngineHandle) else None


def evaluate(
    targets: str | Path | Mapping[str, Any] | Sequence[Any] | Any,
    golden: Golden | None = None,
    *,
    queries: Mapping[str, str] | None = None,
    corpus: str | Path | None = None,
    name: str = "evaluate",
    save_to: str | Path | None = None,
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
    **settings: Any,
) -> Report:
    """Every setup of every target searched with the golden questions, scored, ranked and picked: the report.

    `targets` is one handle, a list of `Target(handle, name=…)`, or a mapping of the names people read to
    what searches: a function ``search(text, k)`` (or
    ``search(text)``; ``async`` too) returning hits, ``(id, score)`` pairs, ids or mappings; an object with
    a ``search`` method; a LangChain or LlamaIndex retriever; an engine handle (`open_engine`);
    `Retriever(obj, …)` for one of those with options; or an engine to open, as a config names one:
    ``{"engine": "sqlite", "options": {...}}`` (built from `corpus` where it needs building). A config
    file's path instead runs that config.

    `golden` is a golden file (a path, ``s3://…``, a BEIR folder), a list of `Question`s or golden rows, or
    BEIR's ``{question id: {doc id: grade}}`` with `queries` (``{question id: text}``). `settings` are the
    config's ``evaluation:`` keys (``metrics``, ``depth``, ``primary``, ``judge``, ``balance``, ``time``,
    ``timing_sample``, ``executor`` via ``execution``, …) and its ``search``, ``execution``, ``models``,
    ``judges`` and ``stores`` blocks, checked as a config's are. Nothing is saved unless `save_to` says where.
    """
    if isinstance(targets, str | Path):
        return _run_config(targets, golden, save_to, only, skip)
    targets = named_targets(targets)
    if not targets:
        raise ConfigError("evaluate() needs targets: a handle, a list of Targets, or a mapping of names to them")
    if golden is None:
        raise ConfigError("evaluate() needs golden questions: a golden file, a list of questions, or qrels")
    plugins = load_plugins()
    engines = {str(n): t for n, t in targets.items() if isinstance(t, Mapping) and "engine" in t}
    questions = None if isinstance(golden, str | Path) else golden_set(golden, queries)
    config = _config(name, golden, engines, corpus, save_to, settings)
    retrievers = [(str(n), adapt(plugins, str(n), t)) for n, t in targets.items() if str(n) not in engines]
    try:
        raw = yaml.safe_dump(config, sort_keys=False, allow_unicode=True).encode()
        experiment = parse_config(raw, plugins, path=None, source="evaluate()", more_targets=len(retrievers))
        experiment = dataclasses.replace(experiment, retrievers=tuple(retrievers), questions=questions)
        options = RunOptions(save=save_to is not None, only=tuple(only), skip=tuple(skip))
        return _warned(run_experiment(experiment, plugins, options).report)
    finally:
        for _, handle in retrievers:
            handle.close()


def _run_config(
    config: str | Path, golden: Any, save_to: str | Path | None, only: Sequence[str], skip: Sequence[str]
) -> Report:

    if golden is not None:
        raise ConfigError("evaluate(config) takes the golden file from the config; pass no golden with it")
    saved = str(save_to) if save_to is not None else None
    return _warned(run(config, save=saved is not None, save_to=saved, only=tuple(only), skip=tuple(skip)).report)


class MissingDocumentsWarning(UserWarning):
    """Expected documents of the golden file that an engine does not hold (`Report.missing`): their questions
    cannot be found there, whatever the setup. The command line says so before it searches."""


def _warned(report: Report) -> Report:
    """The report, after a `MissingDocumentsWarning` for each target missing expected documents (the notes the
    command line prints), so a notebook is told as a terminal is."""
    for note in report.missing_notes:
        warnings.warn(note, MissingDocumentsWarning, stacklevel=3)
    return report


def _config(
    name: str,
    golden: Golden,
    engines: Mapping[str, Mapping[str, Any]],
    corpus: str | Path | None,
    save_to: str | Path | None,
    settings: Mapping[str, Any],
) -> dict[str, Any]:
    """The config the arguments amount to (validated by `parse_config` as a file would be)."""
    unknown = sorted(set(settings) - EVALUATION_KEYS - set(BLOCKS))
    if unknown:
        raise ConfigError(
            f"evaluate() has no setting {quoted(unknown[0])}{did_you_mean(unknown[0], [*EVALUATION_KEYS, *BLOCKS])}"
        )
    config: dict[str, Any] = {
        "name": name,
        "golden": str(golden) if isinstance(golden, str | Path) else GIVEN,
        "targets": [{"name": n, **dict(t)} for n, t in engines.items()],
        "evaluation": {k: v for k, v in settings.items() if k in EVALUATION_KEYS},
        **{block: settings[block] for block in BLOCKS if block in settings},
    }
    if corpus is not None:
        config["corpus"] = str(corpus)
    if save_to is not None:
        config["save_to"] = str(save_to)
    return config


def adapt(plugins: Plugins, name: str, target: Any) -> EngineHandle:
    """The handle the first adapter that knows `target` makes of it (adapters in registration order)."""
    obj, options = (
        (target.obj, {"id_field": target.id_field, "rerank": target.rerank})
        if isinstance(target, Retriever)
        else (target, {})
    )
    for adapter in plugins.adapters:
        made = adapter()
        if made.accepts(obj):
            return made.handle(obj, name, options)
    kinds = ", ".join(plugins.adapters.names())
    raise ConfigError(
        f"target {quoted(name)} is a {type(obj).__name__}, which no adapter knows (adapters: {kinds}); give a "
        'function search(text, k), an object with a search method, a retriever, or {"engine": …, "options": …}'
    )


def golden_set(golden: Golden, queries: Mapping[str, str] | None) -> GoldenSet:
    """Questions held in memory as a golden set: the bytes a golden file of them would hold, and its sha256."""
    if isinstance(golden, Mapping):
        if queries is None:
            raise ConfigError("qrels given as {question: {doc: grade}} need queries={question: text}")
        missing = [q for q in golden if q not in queries]
        if missing:
            raise ConfigError(f"queries has no text for question {quoted(str(missing[0]))} of the qrels")
        rows: list[Any] = []
        for qid, docs in golden.items():
            judged = {d: g for d, g in docs.items() if g >= 0}  # below 0: in the pool, judged by nobody (TREC)
            row: dict[str, Any] = {
                "id": qid,
                "question": queries[qid],
                "expected": [d for d, g in judged.items() if g > 0],
                # every other grade kept, 0 included (bpref and the condensed measures read them), as the
                # importers keep them; a question graded only 0 is judged with nothing relevant: it scores 0
                "grades": {d: g for d, g in judged.items() if g != 1},
            }
            rows.append(row)
    elif isinstance(golden, str | Path):
        raise ConfigError("a golden file is read by the run itself; golden_set takes questions held in memory")
    else:
        rows = [question_row(r) if isinstance(r, Question) else r for r in golden]
    return parse_golden(dump_rows(rows), GIVEN)


def _models(plugins: Plugins, threads: int = 1, batch_size: int = 32, embeddings: str | Path | None = None) -> Models:
    return Models(plugins.models, ModelSettings(threads, batch_size), None, Path(embeddings) if embeddings else None)


def load_model(name: str, kind: str = DENSE, *, threads: int = 1, batch_size: int = 32) -> Any:
    """A model vx-eval runs, loaded once per process: ``load_model("minilm")`` gives a dense encoder with
    ``encode_documents(texts)`` and ``encode_queries(texts)`` (unit vectors, as the engines index them);
    ``load_model("ms-marco-minilm", "reranker")`` a cross-encoder with ``score(question, passages)``."""
    return _models(load_plugins(), threads, batch_size).get(name, kind)


def embed_corpus(
    corpus: str | Path,
    models: Sequence[str] = ("minilm",),
    *,
    chunk_words: int = 300,
    chunk_overlap: int = 50,
    embeddings: str | Path | None = None,
) -> tuple[list[Any], dict[str, Any]]:
    """The corpus as every engine indexes it: its chunks (``chunk_id``, ``doc_id``, ``page``, ``body``) and,
    per dense model, one unit vector per chunk (a float32 matrix, rows in chunk order), embedded once and
    kept by content in `embeddings` (default ``.vx/embeddings.db`` here): build your own retriever on the
    very vectors the engines search."""

    plugins = load_plugins()
    read = read_corpus(str(corpus), Stores(plugins))
    options = IndexOptions(dense_models=list(models), chunk_words=chunk_words, chunk_overlap=chunk_overlap)
    cache = Path(embeddings) if embeddings else Path.cwd() / ".vx" / "embeddings.db"
    context = OpenContext("python", Path.cwd(), read, SilentProgress(), _models(plugins, embeddings=cache))
    built = prepare(read, options, context)
    return built.chunks, built.dense


class OpenedEngine:
    """An engine opened from Python (`open_engine`): the handle, with the engine's name, closed by `close` or
    on leaving a ``with`` block. `evaluate` searches it without closing it."""

    def __init__(self, engine: str, handle: EngineHandle) -> None:
        self.engine, self.handle = engine, handle

    def capabilities(self) -> frozenset[str]:
        return self.handle.capabilities()

    def describe(self) -> TargetDescription | Mapping[str, Any]:
        return self.handle.describe()

    def search(self, query: Query) -> list[Hit]:
        return self.handle.search(query)

    def missing(self, doc_ids: Iterable[str]) -> set[str]:
        return self.handle.missing(doc_ids)

    def document_ids(self) -> list[str]:
        return self.handle.document_ids()

    def documents(self, doc_ids: Iterable[str]) -> list[Document]:
        return self.handle.documents(doc_ids)

    def passages(self, hits: Sequence[Hit]) -> list[str]:
        passages = getattr(self.handle, "passages", None)
        return passages(hits) if passages else [""] * len(hits)

    def close(self) -> None:
        self.handle.close()

    def __enter__(self) -> OpenedEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_engine(
    engine: str,
    options: Mapping[str, Any] | None = None,
    *,
    corpus: str | Path | None = None,
    name: str | None = None,
    models: Mapping[str, Any] | None = None,
) -> OpenedEngine:
    """Any registered engine opened from Python with its options, as a config's target would be (options
    checked by the engine's ``Options``; built from `corpus` where it needs building). `models` is the
    config's ``models:`` block (``embeddings``, ``threads``, …)."""
    plugins = load_plugins()
    label = name or engine
    config: dict[str, Any] = {
        "name": label,
        "golden": GIVEN,
        "targets": [{"name": label, "engine": engine, "options": dict(options or {})}],
    }
    if corpus is not None:
        config["corpus"] = str(corpus)
    if models is not None:
        config["models"] = dict(models)
    raw = yaml.safe_dump(config, sort_keys=False, allow_unicode=True).encode()
    experiment = parse_config(raw, plugins, path=None, source="open_engine()")
    (target,) = open_targets(experiment, plugins, Stores(plugins, options=experiment.stores), SilentProgress())
    return OpenedEngine(engine, target.handle)


def load_report(location: str | Path, *, runs: str | Path | None = None, rankings: bool = True) -> Report:
    """A saved report: a ``report.json`` path (or its run folder, or ``s3://…``), or a run id (or
    ``latest``) among the runs saved at `runs` (default ``runs``); with its rankings, read back from the
    file beside it (`rankings=False` reads only the report: summaries, picks, per-question measures)."""

    stores = Stores(load_plugins())
    return _load(str(location), stores, str(runs) if runs else "runs", rankings=rankings)


def _kept(
    report: Report | str | Path, runs: str | Path | None, golden: Golden | None, queries: Mapping[str, str] | None
) -> tuple[Report, Stores, str, GoldenSet, list[Question]]:
    """A saved run (or a report in hand), where its runs are kept, its golden set and its searched questions
    (from `golden` where given, else the exact copy kept beside the runs)."""

    stores = Stores(load_plugins())
    save_to = str(runs) if runs is not None else "runs"

    if not isinstance(report, Report):
        report = load_report(report, runs=runs)
    elif report.rankings is not None and not held(report):  # read without its rankings: read them now
        report = load_report(report.id, runs=runs)
    if golden is None:
        where = f"the golden file of run {report.id}"
        kept = parse_golden(golden_bytes(stores, save_to, report), where, judged=report.judge is not None)
    elif isinstance(golden, str | Path):
        kept = read_golden(str(golden), stores, judged=report.judge is not None)
    else:
        kept = golden_set(golden, queries)
    return report, stores, save_to, kept, searched_questions(report, kept)


def export_trec(
    report: Report | str | Path,
    folder: str | Path,
    *,
    runs: str | Path | None = None,
    golden: Golden | None = None,
    queries: Mapping[str, str] | None = None,
) -> list[str]:
    """One TREC run file per setup (``qid Q0 doc rank score key``) and ``qrels.txt`` into `folder`, from a
    run's kept rankings: trec_eval, ranx or ir_measures on them give the report's numbers. `report` is a
    report, a run id (at `runs`) or a report's location; the judgements come from `golden` or the copy of
    the golden file kept beside the runs."""

    report, stores, _, _, questions = _kept(report, runs, golden, queries)
    return _export(report, questions, str(folder), stores)


def rescore(
    report: Report | str | Path,
    metrics: Sequence[str] = (),
    *,
    runs: str | Path | None = None,
    golden: Golden | None = None,
    queries: Mapping[str, str] | None = None,
    relevance_threshold: int | None = None,
    primary: str | None = None,
    replace: bool = False,
    judge: str | None = None,
    config: str | Path | None = None,
    judge_depth: int = 10,
    save: bool = False,
    progress: Any = None,
) -> Report:
    """A run scored again from the rankings it kept, searching nothing: `metrics` added (or used instead
    with `replace`), another `relevance_threshold` or `primary`, or the grades of `judge` (whose options and
    the documents it reads come from `config`, the run's own). The new report names the run it came from
    and keeps its times; `save` keeps it beside that run."""

    report, stores, save_to, kept, questions = _kept(report, runs, golden, queries)
    judged = None
    if judge is not None:
        if config is None:
            raise ConfigError("a judge reads the documents: name the run's config (config=…, --config)")
        plugins = load_plugins()
        experiment = load_config(config, plugins)
        judged = rejudge(report, questions, experiment, plugins, judge, judge_depth, progress or SilentProgress())
    asked = Rescoring(tuple(metrics), replace, relevance_threshold, primary)
    new = _rescore(report, kept, asked, judged)
    if save:
        new, _ = save_report(new, kept.raw, stores, save_to)
    return new
