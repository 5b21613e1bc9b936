"""The run's first stage: every target opened (indexed where the corpus asks), the golden file's expected
documents looked up on each, and what each target is, for the report."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from vx_eval.core.config.by_document import ByDocument
from vx_eval.core.config.experiment import Experiment
from vx_eval.core.contracts.engine import OpenContext, Progress, Target, TargetDescription
from vx_eval.core.contracts.golden import GoldenSet
from vx_eval.core.contracts.models import ModelSettings
from vx_eval.core.errors import service_text
from vx_eval.core.golden.chunks import by_document, chunked_labels
from vx_eval.core.golden.sources import FileCorpus, read_corpus, read_golden
from vx_eval.core.golden.units import document_of
from vx_eval.core.models.loading import Models, ModelWork, PairScores, check_device
from vx_eval.core.report.missing import missing_notes
from vx_eval.core.report.schema import Missing, TargetInfo
from vx_eval.core.stores import Stores

if TYPE_CHECKING:
    from vx_eval.core.plugins import Plugins


def run_corpus(experiment: Experiment, stores: Stores, golden: GoldenSet | None = None) -> FileCorpus | None:
    """The corpus the config declares (None where it declares none), cut as it says: a slice or a sample
    keeps every document the golden questions expect (`golden`, when the caller has read it already)."""
    source = experiment.config.corpus_source
    if source is None:
        return None
    keep: set[str] = set()
    if source.cut:
        golden = golden or experiment.questions or read_golden(experiment.config.golden_source, stores)
        keep = {document_of(u) for q in golden.questions for u in q.expected}
    return read_corpus(source, stores, keep)


def run_models(experiment: Experiment, plugins: Plugins, work: ModelWork | None = None) -> Models:
    """The models the config's targets load, as its `models:` block sets them (a GPU that is not there is
    refused before any work)."""
    settings = experiment.config.models
    check_device(ModelSettings(device=settings.device))
    return Models(
        plugins.models,
        ModelSettings(settings.threads, settings.batch_size, settings.passage_tokens, settings.device),
        PairScores(settings.scores),
        settings.embeddings,
        settings.endpoints,
        plugins.providers,
        work,
    )


def open_targets(
    experiment: Experiment,
    plugins: Plugins,
    stores: Stores,
    progress: Progress,
    golden: GoldenSet | None = None,
    *,
    build: bool = True,
    corpus: FileCorpus | None = None,
    work: ModelWork | None = None,
) -> list[Target]:
    """Every target opened (indexed where the corpus asks: `corpus`, when the caller has read it already,
    else `run_corpus`); `golden`, when the caller has read it already, saves reading it again for a cut.
    With `build` False (a Dask worker: the run built every index first) the corpus is not read and the
    targets only open what is there. `work`: where the models' work goes besides this process (the run's
    cluster). A target that fails to open closes those opened before it."""
    config = experiment.config
    if corpus is None and build:
        corpus = run_corpus(experiment, stores, golden)
    models = run_models(experiment, plugins, work)
    targets: list[Target] = []
    try:
        for target_config, options in zip(config.targets, experiment.options, strict=True):
            engine = plugins.engines.get(target_config.engine, where=f"target {target_config.name}")()
            context = OpenContext(target_config.name, experiment.base_dir, corpus, progress, models)
            handle = engine.open(options, context)
            targets.append(Target(target_config.name, target_config.engine, handle, options, models, config.search))
        for name, handle in experiment.retrievers:  # opened by the caller (vx_eval.evaluate)
            kind = getattr(handle, "kind", "python")
            targets.append(Target(name, kind, handle, None, models, config.search))
    except BaseException:
        close_targets(targets)
        raise
    return targets


def close_targets(targets: Sequence[Target]) -> None:
    for target in targets:
        target.handle.close()


NEAREST_AMONG = 20_000
"""Ids beyond which only a match ignoring case and separators is looked for (a fuzzy match over every id
would take longer than the run)."""


def nearest_ids(absent: Iterable[str], held: Sequence[str]) -> dict[str, str]:
    """For each id a target lacks, the id it holds that was most likely meant: the same letters and digits
    ignoring case and separators (``Doc_12`` for ``doc-12``), else, among up to `NEAREST_AMONG` ids, the
    closest by `difflib` (a ratio of 0.8 or more)."""

    def squeezed(text: str) -> str:
        return "".join(ch for ch in text.lower() if ch.isalnum())

    by_letters: dict[str, str] = {}
    for doc in held:
        by_letters.setdefault(squeezed(doc), doc)
    out = {}
    for doc in absent:
        same = by_letters.get(squeezed(doc))
        if same is None and len(held) <= NEAREST_AMONG:
            close = difflib.get_close_matches(doc, held, n=1, cutoff=0.8)
            same = close[0] if close else None
        if same is not None and same != doc:
            out[doc] = same
    return out


def check_missing(golden: GoldenSet, targets: Sequence[Target]) -> dict[str, Missing]:
    """Per target: expected documents it does not hold, and the questions none of whose answers it holds."""
    wanted = {document_of(u) for q in golden.questions for u in q.expected}
    report: dict[str, Missing] = {}
    for target in targets:
        absent = target.handle.missing(wanted)
        if not absent:
            continue
        lost = [q.id for q in golden.questions if all(document_of(u) in absent for u in q.expected)]
        hurt = [
            q.id for q in golden.questions if q.id not in lost and any(document_of(u) in absent for u in q.expected)
        ]
        shown = sorted(absent)[:10]
        try:
            nearest = nearest_ids(shown, target.handle.document_ids())
        except Exception:  # a service refusing to list its ids costs the suggestion, never the run
            nearest = {}
        report[target.name] = Missing(documents=sorted(absent), questions=lost, partly=hurt, nearest=nearest)
    return report


def describe(target: Target) -> TargetInfo:
    """What the report says of a target. An engine that cannot describe it (a service refusing a status
    call after every search finished) costs the description, never the run."""
    capabilities = sorted(target.capabilities)
    try:
        said = TargetDescription.of(target.handle.describe())
    except Exception as exc:  # a remote call failing here must not throw finished searches away
        return TargetInfo(
            engine=target.engine,
            capabilities=capabilities,
            describe_error=service_text(exc),
        )
    return TargetInfo.described(target.engine, capabilities, said)


def against_targets(
    golden: GoldenSet,
    targets: Sequence[Target],
    relevance_field: str | None,
    rule: ByDocument | None,
    note: Callable[[str], None],
) -> tuple[GoldenSet, dict[str, Missing]]:
    """The questions as the run scores them (by document where `rule` says: `core.golden.chunks`), and per
    target the expected units it does not hold (checked on the labels as written); each note said through
    `note`: what is missing, and labels that name many chunks of one document where no rule is set."""
    missing = {} if relevance_field else check_missing(golden, targets)
    for said in missing_notes(missing):
        note(said)
    if rule is not None:
        return by_document(golden, rule, targets), missing
    hint = None if relevance_field else chunked_labels(golden)
    if hint is not None:
        note(hint)
    return golden, missing
