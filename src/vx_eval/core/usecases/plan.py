"""The run's plan: the long work it will do (embedding the corpus with each model, grading with a judge),
each piece with an estimate at this machine's measured speed or, for a served model, its requests and
cost, said before any of it starts. `vx-eval run --dry-run` says only this.

Where a target would embed comes from its engine (`Engine.embeds`); what is left to embed is what the
embedding cache does not hold yet. A local model's speed is measured on a spread sample of the chunks it
will embed, and the sample's vectors are kept in the cache, so measuring costs the run nothing but the
model's load. A served model is never called by the plan.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vx_eval.core.config.experiment import Experiment
from vx_eval.core.contracts.engine import Corpus, OpenContext
from vx_eval.core.contracts.models import DENSE
from vx_eval.core.corpus.embeddings import EmbeddingCache, content_key, quantize
from vx_eval.core.corpus.prepare import IndexOptions, chunks_of, default_cache
from vx_eval.core.judging.grading import judge_maker
from vx_eval.core.models.loading import Models
from vx_eval.core.models.prices import price_of

if TYPE_CHECKING:
    from vx_eval.core.plugins import Plugins

SAMPLE = 18
"""Chunks a local model embeds (kept in the cache) to measure its speed here; judge pairs graded (not kept)."""
WARM_UP = 2
"""Of the sample, the chunks embedded first and not timed."""
TRUNCATION_SAMPLE = 256
"""Chunks tokenised to see whether a dense model would read only the start of most of them."""
MOST_CUT = 0.5
"""The share of chunks cut at a model's token limit above which the plan warns."""
CHARS_PER_TOKEN = 4
"""For a served model's tokens before it is called (its bill says the real count)."""


@dataclass(frozen=True)
class Work:
    """One piece of long work: what, how many items, the estimated seconds (None: not measurable before it
    starts, as a served model's) and how the estimate was made."""

    what: str
    items: int
    seconds: float | None
    basis: str


@dataclass(frozen=True)
class Plan:
    """Every piece of long work a run will do, and what cannot do what it is named for."""

    work: tuple[Work, ...]
    warnings: tuple[str, ...] = ()

    @property
    def seconds(self) -> float:
        """The estimated seconds of the pieces that have an estimate."""
        return sum(w.seconds or 0.0 for w in self.work)

    @property
    def unmeasured(self) -> tuple[Work, ...]:
        return tuple(w for w in self.work if w.seconds is None)


@dataclass
class _ToEmbed:
    kind: str
    cache: Path
    todo: dict[str, str]  # cache key -> text, each distinct text once
    held: int  # chunks whose vectors the cache holds already
    bodies: list[str]  # every chunk body this model reads (for the truncation check)


def plan_run(
    experiment: Experiment,
    plugins: Plugins,
    models: Models,
    questions: Sequence[str],
    corpus: Corpus | None,
    *,
    measure: bool = True,
) -> Plan:
    """What the run of `experiment` on these questions will embed and judge, with estimates (`measure`
    False: counts only)."""
    wanted = _to_embed(experiment, plugins, models, corpus)
    work: list[Work] = []
    warnings: list[str] = []
    for name, job in wanted.items():
        label = models.label(name)
        if job.todo:
            work.append(_embedding(name, label, job, models, measure))
        if job.kind == DENSE and name not in models.endpoints and measure:
            warning = _truncation(name, label, job.bodies, models)
            if warning:
                warnings.append(warning)
    judged = _judging(experiment, plugins, models, questions, corpus, measure)
    if judged is not None:
        work.append(judged)
    return Plan(tuple(work), tuple(warnings))


def _to_embed(experiment: Experiment, plugins: Plugins, models: Models, corpus: Corpus | None) -> dict[str, _ToEmbed]:
    """Per model, the chunks no cache holds vectors for yet, over every target that would embed."""
    out: dict[str, _ToEmbed] = {}
    if corpus is None:
        return out
    bodies_by_cut: dict[tuple[int, int], list[str]] = {}
    for target, options in zip(experiment.config.targets, experiment.options, strict=True):
        engine = plugins.engines.get(target.engine, where=f"target {target.name}")()
        context = OpenContext(target.name, experiment.base_dir, corpus, models=models)
        said = engine.embeds(options, context)
        if said is None:  # the engine cannot tell
            said = _assumed(options)
        if not said:
            continue
        cut = (getattr(options, "chunk_words", 300), getattr(options, "chunk_overlap", 50))
        if cut not in bodies_by_cut:
            bodies_by_cut[cut] = [c.body for doc in corpus for c in chunks_of(doc, *cut)]
        bodies = bodies_by_cut[cut]
        cache_path = getattr(options, "cache", None) or default_cache(context)
        for name, kind in said.items():
            job = out.setdefault(name, _ToEmbed(kind, cache_path, {}, 0, []))
            _add_missing(job, name, models, cache_path, bodies)
    return out


def _assumed(options: Any) -> dict[str, str]:
    """What an engine that cannot tell is taken to embed: every dense model it names, unless it never builds."""
    if not isinstance(options, IndexOptions) or getattr(options, "build", "auto") == "never":
        return {}
    return dict.fromkeys(options.dense_models, DENSE)


def _add_missing(job: _ToEmbed, name: str, models: Models, cache_path: Path, bodies: Sequence[str]) -> None:
    keys = {content_key(b): b for b in bodies}
    table = "dense" if job.kind == DENSE else "late"
    space = models.cache_space(name) if job.kind == DENSE else name
    known: set[str] = set()
    if cache_path.exists():
        cache = EmbeddingCache(cache_path)
        try:
            known = set(cache.vectors(table, space, list(keys), keys_only=True))
        finally:
            cache.close()
    for key, body in keys.items():
        if key not in known:
            job.todo[key] = body
    job.held += len(known)
    if not job.bodies:  # one sample per model, spread over the corpus
        job.bodies = _spread(bodies, TRUNCATION_SAMPLE)


def _spread(items: Sequence[Any], n: int) -> list[Any]:
    """`n` items spread evenly over `items` (every one where there are fewer)."""
    if len(items) <= n:
        return list(items)
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def _embedding(name: str, label: str, job: _ToEmbed, models: Models, measure: bool) -> Work:
    count = len(job.todo)
    what = f"embed {count:,} chunks with {label}" + (f" ({job.held:,} already embedded)" if job.held else "")
    if name in models.endpoints:
        return _served_embedding(what, name, job, models)
    if not measure:
        return Work(what, count, None, "not measured")
    started = time.perf_counter()
    encoder = models.get(name, job.kind)
    loaded = time.perf_counter() - started
    keys = _spread(list(job.todo), SAMPLE)
    texts = [job.todo[k] for k in keys]
    warm = min(WARM_UP, len(texts) - 1)  # a model's first call sets itself up: not what a chunk costs
    vectors = list(encoder.encode_documents(texts[:warm])) if warm > 0 else []
    started = time.perf_counter()
    vectors += list(encoder.encode_documents(texts[warm:]))
    took = max(time.perf_counter() - started, 1e-6)
    table = "dense" if job.kind == DENSE else "late"
    space = models.cache_space(name) if job.kind == DENSE else name
    cache = EmbeddingCache(job.cache)
    try:  # the sample's vectors are kept: the run does not embed them again
        if job.kind == DENSE:
            kept = {k: np.asarray(v, np.float32).tobytes() for k, v in zip(keys, vectors, strict=True)}
        else:
            kept = {k: quantize(v) for k, v in zip(keys, vectors, strict=True)}
        cache.keep(table, space, kept)
    finally:
        cache.close()
    rate = (len(texts) - max(warm, 0)) / took
    left = count - len(texts)
    basis = f"at {rate:,.1f} chunks/s, measured here on {len(texts) - max(warm, 0)} of them" + (
        f", and {loaded:.0f} s to load the model" if loaded >= 1 else ""
    )
    return Work(what, count, left / rate + loaded, basis)


def _served_embedding(what: str, name: str, job: _ToEmbed, models: Models) -> Work:
    endpoint = models.endpoints[name]
    count = len(job.todo)
    provider = models.providers.get(endpoint.provider, where=f"models.endpoints.{name}.provider")
    batch = endpoint.batch or int(getattr(provider, "max_batch", 1))
    requests = math.ceil(count / batch)
    tokens = sum(len(t) for t in job.todo.values()) // CHARS_PER_TOKEN
    price = price_of(endpoint)
    if price is not None and price.per == "million tokens":
        cost = f"about ${price.usd * tokens / 1e6:,.2f} ({price.source})"
    else:
        cost = "no price known (give models.endpoints.NAME.price)"
    basis = f"served: {requests:,} requests, about {tokens:,} tokens, {cost}; its time depends on the service"
    return Work(what, count, None, basis)


def _truncation(name: str, label: str, bodies: Sequence[str], models: Models) -> str | None:
    """A warning where the dense model `name` would read only the start of most chunks."""
    encoder = models.get(name, DENSE)
    limit, counted = getattr(encoder, "token_limit", None), getattr(encoder, "truncates", None)
    if limit is None or counted is None or not bodies:
        return None
    cut = counted(list(bodies))
    if cut <= MOST_CUT * len(bodies):
        return None
    share = round(100 * cut / len(bodies))
    return (
        f"{label} reads the first {limit} tokens of a text, and {share}% of the chunks sampled are longer: it "
        "embeds only their start, so dense search with it cannot find what lies later in them; make the "
        "chunks shorter (chunk_words) or use a model that reads more"
    )


def _judging(
    experiment: Experiment,
    plugins: Plugins,
    models: Models,
    questions: Sequence[str],
    corpus: Corpus | None,
    measure: bool,
) -> Work | None:
    """The judge's grading: at most questions x judge depth pairs per setup (setups finding the same
    passage for a question share its grade, and grades kept from earlier runs are not asked again)."""
    ev = experiment.config.evaluation
    if not ev.judge or not questions:
        return None
    judge = judge_maker(plugins, ev.judge, experiment.judges.get(ev.judge))(models)
    pairs = len(questions) * ev.judge_depth
    what = f"grade up to {pairs:,} (question, passage) pairs per setup with the {ev.judge} judge"
    if getattr(judge, "served", False):
        return Work(what, pairs, None, f"served: one request a pair, up to {pairs:,} per setup")
    if not measure or corpus is None:
        return Work(what, pairs, None, "not measured")
    wanted = set(_spread(range(len(corpus)), SAMPLE // 2))  # a few texts, never the whole corpus in a list
    passages = [doc.text for i, doc in enumerate(corpus) if i in wanted]
    asked = list(zip(_spread(questions, len(passages)), passages, strict=False))
    if not asked:
        return Work(what, pairs, None, "not measured")
    judge.grade(asked[:1])  # loads its model: not what a pair costs
    started = time.perf_counter()
    judge.grade(asked)
    rate = len(asked) / max(time.perf_counter() - started, 1e-6)
    return Work(what, pairs, pairs / rate, f"at {rate:,.1f} pairs/s, measured here on {len(asked)} pairs; per setup")


def drafting(count: int, writer: str) -> Work:
    """Drafting `count` questions with `writer` (how it is said): no estimate before the model has drafted
    (its progress says each try, and the time left once tries have come back)."""
    return Work(
        f"draft {count:,} questions with {writer}",
        count,
        None,
        "refused drafts are tried again; its progress says each try as it comes back",
    )
