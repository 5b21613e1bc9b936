"""What a run searches and scores: the setups the plugins compose over the targets (narrowed to the key
patterns to run only, and without the methods to skip), the measures, and which questions are timed end to
end."""

from __future__ import annotations

import fnmatch
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

from vx_eval.core.config.experiment import Experiment
from vx_eval.core.contracts.engine import Setup, Target
from vx_eval.core.errors import EngineError, PluginError, VxEvalError, quoted
from vx_eval.core.measures import metrics

if TYPE_CHECKING:
    from vx_eval.core.plugins import Plugins


FOUND_DEPTHS = (1, 3, 5, 10, 20)


def measures_for(experiment: Experiment) -> list[metrics.Measure]:
    """The configured measures plus found@1/3/5/10/20 (those the depth allows), each once, in order."""
    ev = experiment.config.evaluation
    names = [f"found@{k}" for k in FOUND_DEPTHS if k <= ev.depth] + list(ev.metrics) + [ev.primary]
    out: dict[str, metrics.Measure] = {}
    for name in names:
        measure = metrics.parse(name)
        out.setdefault(measure.name, measure)
    return list(out.values())


def enumerate_setups(
    targets: Sequence[Target], plugins: Plugins, only: Sequence[str] = (), skip: Sequence[str] = ()
) -> list[Setup]:
    """Every setup every provider composes over every target, with `only` (key globs) and `skip`
    (methods) applied; a pattern that matches nothing is an error naming what there is."""
    setups: dict[str, Setup] = {}
    for target in targets:
        for provider in plugins.setups:
            for setup in provider().setups(target):
                if setup.key in setups:
                    raise PluginError(f"two setups share the key '{setup.key}' (from provider '{provider.name}')")
                setups[setup.key] = setup
    if not setups:
        caps = {t.name: sorted(t.capabilities) for t in targets}
        raise EngineError(f"no setup can search these targets (capabilities: {caps}); is anything indexed?")
    chosen = list(setups.values())
    problem = selection_problem(list(setups), {s.method for s in chosen if _kept(s.key, only)}, only, skip)
    if problem is not None:
        raise VxEvalError(problem[1])
    return [s for s in chosen if _kept(s.key, only) and s.method not in skip]


def _kept(key: str, only: Sequence[str]) -> bool:
    return not only or any(fnmatch.fnmatchcase(key, p) for p in only)


def selection_problem(
    keys: Sequence[str], methods: set[str], only: Sequence[str] = (), skip: Sequence[str] = ()
) -> tuple[str, str] | None:
    """What is wrong with `only` (key globs) and `skip` (methods) over these setup keys and the methods of
    those `only` keeps: ("only" or "skip", the message), or None. The CLI and the server say the same."""
    for pattern in only:
        if not any(fnmatch.fnmatchcase(key, pattern) for key in keys):
            return "only", f"no setup matches {quoted(pattern)} (of those to run only); setups: {', '.join(keys)}"
    for method in skip:
        if method not in methods:
            return "skip", (
                f"{quoted(method)} (of the methods to skip) is no method of these setups; methods: "
                f"{', '.join(sorted(methods))}"
            )
    if skip and not methods - set(skip):
        return "skip", "skipping those methods leaves no setup to run"
    return None


def timing_sample(questions: int, size: int | None, seed: int) -> set[int] | None:
    """Which questions are timed end to end: all (None), or a seeded sample of `size`."""
    if size is None or size >= questions:
        return None
    return set(random.Random(seed + 1).sample(range(questions), size))


def futile_setups(setups: Sequence[Setup], experiment: Experiment) -> list[str]:
    """Setups that cannot do what they are named for, each said once with what to change: a reranker that
    reads no more results than the primary measure is cut at can only reorder the results it is scored on
    (it can bring no new one in: recall and found at that depth cannot move)."""
    config = experiment.config
    primary = metrics.parse(config.evaluation.primary)
    depth = config.search.rerank_depth
    reranked = [s.key for s in setups if s.ranker]
    if not reranked or primary.k is None or primary.per_relevant or depth > primary.k:
        return []
    shown = ", ".join(reranked[:3]) + (f" and {len(reranked) - 3} more" if len(reranked) > 3 else "")
    return [
        f"search.rerank_depth {depth} is at or under the primary measure's cut-off ({primary.name}): the "
        f"reranker of {shown} can only reorder the {depth} results it is scored on, never bring a new one in, "
        f"so it can gain little; set search.rerank_depth above {primary.k} (50 is common)"
    ]
