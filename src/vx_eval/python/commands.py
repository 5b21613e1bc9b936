"""The Python API: what the command line does, as functions returning data."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from vx_eval.core.config.experiment import GoldenSource, ModelsConfig, load_config
from vx_eval.core.contracts.engine import SilentProgress
from vx_eval.core.contracts.golden import GoldenRow, GoldenSet, Question
from vx_eval.core.contracts.models import ModelSettings
from vx_eval.core.contracts.store import Fetcher
from vx_eval.core.contracts.writer import WriteRequest
from vx_eval.core.errors import ConfigError, GoldenError
from vx_eval.core.golden.files import dump_rows, question_row
from vx_eval.core.golden.sources import read_corpus
from vx_eval.core.golden.sources import read_golden as _read_golden
from vx_eval.core.golden.template import drafted, sample_units
from vx_eval.core.models.loading import Models
from vx_eval.core.plugins import load_plugins
from vx_eval.core.run.targets import close_targets, open_targets
from vx_eval.core.stores import Stores
from vx_eval.core.usecases.pipeline import RunOptions, RunResult, run_experiment
from vx_eval.llm.drafting import DEFAULT_MIX, check_mix

if TYPE_CHECKING:
    from vx_eval.core.plugins import Plugins


def run(config: str | Path, **options: Any) -> RunResult:
    """Run the experiment in `config` (``vx-eval run``); options as `RunOptions` (save_to, only, skip, …):
    the report and where it was saved."""
    plugins = load_plugins()
    return run_experiment(load_config(config, plugins), plugins, RunOptions(**options))


def template_rows(
    configs: Sequence[str | Path],
    n: int = 50,
    *,
    seed: int = 0,
    by: str = "document",
    writer: Callable[[str], str] | None = None,
    writer_plugin: str = "template",
    progress: Any = None,
) -> tuple[list[GoldenRow], list[str]]:
    """Template rows from the collections of one or several configs, and the collections' names.

    A config that declares a corpus is one collection (its pages read from the corpus itself); one that
    does not gives each target's index as a collection. `writer`, any function from a unit's text to a
    question, drafts the questions (rows marked ``draft: true``).
    """
    plugins = load_plugins()
    cls = plugins.writers.get(writer_plugin, where="writer")
    if cls.writes_questions:
        raise GoldenError(f"writer '{writer_plugin}' drafts questions with a model; use `vx-eval golden write` for it")
    with _collections(configs, plugins, progress) as collections:
        units = sample_units(collections, n, seed, by)
    rows = cls(cls.Options()).write(units, WriteRequest(n=n, seed=seed)).rows
    return (drafted(rows, units, writer) if writer else rows), [name for name, _ in collections]


@contextmanager
def _collections(configs: Sequence[str | Path], plugins: Plugins, progress: Any) -> Iterator[list[tuple[str, Any]]]:
    """The collections of one or several configs: a config's corpus, else each target's index (opened here
    and closed on leaving)."""
    collections: list[tuple[str, Any]] = []
    opened = []
    try:
        for path in configs:
            experiment = load_config(path, plugins)
            stores = Stores(plugins, options=experiment.stores)
            if experiment.config.corpus_source is not None:
                corpus = read_corpus(experiment.config.corpus_source, stores)
                collections.append((experiment.config.name, list(corpus)))
                continue
            targets = open_targets(experiment, plugins, stores, progress or SilentProgress())
            opened += targets
            collections += [(t.name, t.handle) for t in targets]
        yield collections
    finally:
        close_targets(opened)


@dataclass(frozen=True)
class WriteSummary:
    """What `golden write` did on the way: the writer, how many drafts it tried, why others failed."""

    writer: str
    model: str
    critic: str
    accepted: int
    passages: int
    tries: int
    asked: int | None
    failed_checks: dict[str, int]
    critic_refused: int
    critic_unreadable: int
    skipped_passages: dict[str, int]


# Passages drawn for the questions wanted (three each, at least 40): some are unusable, many drafts fail.
SAMPLED_PER_QUESTION, SAMPLED_AT_LEAST = 3, 40


def write_golden_rows(
    configs: Sequence[str | Path],
    n: int = 50,
    *,
    writer_plugin: str,
    seed: int = 0,
    by: str = "document",
    mix: Mapping[str, float] | None = None,
    threshold: int = 3,
    progress: Any = None,
    avoid: Collection[str] = (),
) -> tuple[list[GoldenRow], WriteSummary]:
    """Questions drafted by a model writer from the collections of `configs` (the writer's options from the
    first), checked and judged by its critic, never from the passages in `avoid`; the rows (``draft: true``)
    and what happened on the way (tries, failed checks, refusals)."""

    mix = check_mix(dict(mix or DEFAULT_MIX))  # before anything is indexed
    plugins = load_plugins()
    experiment = load_config(configs[0], plugins)
    if not plugins.writers.get(writer_plugin, where="--writer").writes_questions:
        raise GoldenError(f"writer '{writer_plugin}' fills templates; use `vx-eval golden template` for it")
    with _collections(configs, plugins, progress) as collections:
        return draft_rows(
            plugins,
            collections,
            writer_plugin,
            experiment.writers.get(writer_plugin),
            experiment.config.models,
            n,
            seed=seed,
            by=by,
            mix=mix,
            threshold=threshold,
            progress=progress,
            avoid=avoid,
        )


def draft_rows(
    plugins: Plugins,
    collections: Sequence[tuple[str, Any]],
    writer_plugin: str,
    options: Any,
    config_models: ModelsConfig,
    n: int,
    *,
    seed: int = 0,
    by: str = "document",
    mix: Mapping[str, float] | None = None,
    threshold: int = 3,
    progress: Any = None,
    avoid: Collection[str] = (),
) -> tuple[list[GoldenRow], WriteSummary]:
    """`write_golden_rows` on collections already at hand (documents or handles), the writer's options given
    (None: its defaults) and the models block (served models, the answers cache beside `scores`)."""

    mix = check_mix(dict(mix or DEFAULT_MIX))
    cls = plugins.writers.get(writer_plugin, where="--writer")
    if not cls.writes_questions:
        raise GoldenError(f"writer '{writer_plugin}' fills templates; use `vx-eval golden template` for it")
    if options is None:
        try:
            options = cls.Options.model_validate({})
        except ValidationError as exc:  # a writer whose options the config must give
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"writers.{writer_plugin}: {problems}") from None
    writer = cls(options)
    progress = progress or SilentProgress()
    units = sample_units(collections, max(n * SAMPLED_PER_QUESTION, SAMPLED_AT_LEAST), seed, by, avoid)
    request = WriteRequest(
        n=n,
        seed=seed,
        mix=mix,
        threshold=threshold,
        answers=config_models.scores.with_name("answers.db"),
        models=Models(
            plugins.models,
            ModelSettings(
                threads=config_models.threads, max_tokens=config_models.passage_tokens, device=config_models.device
            ),
            embeddings=config_models.embeddings,
            endpoints=config_models.endpoints,
            providers=plugins.providers,
        ),
        tried=progress.start(f"Writing ({writer_plugin}) · drafts tried", None),
        advance=progress.start(f"Writing ({writer_plugin})", n),
    )
    outcome = writer.write(units, request)
    said = writer.describe()
    if said.drafted_by:  # which model drafted each row: a setup of its family is favoured by its questions
        stamp = {"drafted_by": said.drafted_by}
        outcome.rows = [r.model_copy(update={"metadata": {**r.metadata, **stamp}}) for r in outcome.rows]
    summary = WriteSummary(
        writer=said.writer,
        model=said.model,
        critic=said.critic,
        accepted=len(outcome.rows),
        passages=len(units),
        tries=outcome.tried,
        asked=outcome.asked,
        failed_checks=dict(outcome.failed_checks),
        critic_refused=outcome.critic_refused,
        critic_unreadable=outcome.critic_unreadable,
        skipped_passages=dict(outcome.skipped_passages),
    )
    return outcome.rows, summary


def read_golden(location: str | GoldenSource, *, fetcher: Fetcher | None = None) -> GoldenSet:
    """Golden questions from a path, ``s3://…``, a Blob address or a BEIR folder, with sha256 and counts."""
    return _read_golden(
        location if isinstance(location, GoldenSource) else str(location),
        Stores(load_plugins(), fetcher=fetcher),
    )


def save_golden(rows: Iterable[Question | Mapping[str, Any]], location: str | Path, *, overwrite: bool = False) -> str:
    """Write golden rows (questions or row mappings) as JSONL, atomically; never over a file unless told."""
    stores = Stores(load_plugins())
    target = str(location)
    if not overwrite and stores.exists(target):
        raise GoldenError(f"{target} exists; pass overwrite=True to replace it")
    data = dump_rows(question_row(r) if isinstance(r, Question) else r for r in rows)
    stores.write(target, data)
    return target
