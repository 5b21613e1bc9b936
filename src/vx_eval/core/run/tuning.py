"""Fusion tuned honestly: the hybrid's fusion and weights chosen by k-fold cross-validation over questions,
scored only on questions the choice never saw, from the component rankings the run kept (no new search).

Tuning weights on the very questions they are then scored on overstates the gain (the in-sample best is the
maximum of many noisy means). Here each fold's questions are scored with the setting that did best on the
other folds: the mean of those held-out scores estimates what tuning really buys, with a bootstrap interval
and a paired test against the run's own setting scored the same way. The in-sample best is reported beside
it, labelled optimistic; the setting to deploy is the one chosen on every question, printed as config lines.

The components are each hybrid's own searches as the run kept them, at the run's depth: `<target>.keyword`
and `<target>.dense.<model>`, each reduced to the first occurrence of every unit (a document fused once,
however many of its chunks came back), fused with `core.run.fusion` exactly as the hybrid setups fuse. Where a
document is one chunk this is the live fusion of the depth's candidates; a hybrid the engine fuses itself
(``fusion`` capability) is not tuned here.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vx_eval.core.config.experiment import TuneConfig
from vx_eval.core.contracts.engine import Hit, Setup
from vx_eval.core.contracts.golden import Question
from vx_eval.core.golden.units import judge
from vx_eval.core.measures import metrics, stats
from vx_eval.core.report.schema import Result, Settings, SetupResult
from vx_eval.core.report.views import FoldChoice, FusionSetting, TunedHybrid, VsDefault
from vx_eval.core.run.fusion import convex, rrf
from vx_eval.core.run.search import SetupRun


@dataclass(frozen=True)
class Candidate:
    fusion: str
    alpha: float
    rrf_k: int

    def setting(self) -> FusionSetting:
        return FusionSetting(fusion=self.fusion, alpha=self.alpha, rrf_k=self.rrf_k if self.fusion == "rrf" else None)

    def weights(self, models: int) -> list[float]:
        """Keyword gets 1 - alpha; the dense models share alpha (as the hybrid setups weigh them)."""
        return [1 - self.alpha] + [self.alpha / models] * models


def grid(tune: TuneConfig) -> list[Candidate]:
    """Every setting the config asks to try, RRF's constant only with RRF."""
    out = []
    for fusion, alpha in itertools.product(tune.fusion, tune.alpha):
        for rrf_k in tune.rrf_k if fusion == "rrf" else [0]:
            out.append(Candidate(fusion, float(alpha), int(rrf_k)))
    return out


def _first(results: Sequence[Result]) -> list[Hit]:
    seen: dict[str, float] = {}
    for unit, score in results:
        if unit is not None:
            seen.setdefault(unit, float(score))
    return [Hit(unit, score) for unit, score in seen.items()]


def fused(components: Sequence[Sequence[Result]], candidate: Candidate, depth: int) -> list[Result]:
    """One question's component rankings fused with `candidate`'s setting: (unit, score), best first."""
    lists = [_first(c) for c in components]
    weights = candidate.weights(len(lists) - 1)
    hits = rrf(lists, depth, candidate.rrf_k, weights) if candidate.fusion == "rrf" else convex(lists, depth, weights)
    return [(h.doc_id, h.score) for h in hits]


def _score(
    rankings: Sequence[list[Result]], questions: Sequence[Question], measure: metrics.Measure, settings: Settings
) -> np.ndarray:
    judged = [judge(r, q, settings.relevance_threshold) for r, q in zip(rankings, questions, strict=True)]
    return measure.compute(metrics.Batch.of(judged, settings.depth))


def folds_of(n: int, folds: int, seed: int) -> np.ndarray:
    """Each question's fold (seeded, as equal in size as can be)."""
    assignment = np.arange(n) % folds
    np.random.default_rng(seed).shuffle(assignment)
    return assignment


def _best(values: np.ndarray, rows: np.ndarray, default: int) -> int:
    """The candidate with the highest mean over `rows`; a tie goes to the run's own setting, then the first."""
    means = values[:, rows].mean(axis=1)
    top = means.max()
    return default if means[default] >= top - 1e-12 else int(np.flatnonzero(means >= top - 1e-12)[0])


@dataclass
class TunedRun:
    """A tuned hybrid: what the report says of it, and its held-out rankings as a setup's searches."""

    info: TunedHybrid
    rankings: list[list[Result]]
    chosen: Candidate
    scored: frozenset[int]
    """The questions it has a held-out ranking for (every component evaluated them)."""


def tune_hybrid(
    hybrid: SetupResult,
    components: Sequence[SetupResult],
    questions: Sequence[Question],
    tune: TuneConfig,
    settings: Settings,
    default: Candidate,
) -> TunedRun | None:
    """Cross-validated tuning of one hybrid's fusion over its kept component rankings (see the module)."""
    n = len(questions)
    usable = np.array([all(c.per_question.status[i] == "evaluated" for c in components) for i in range(n)], dtype=bool)
    rows = [int(i) for i in np.flatnonzero(usable)]
    if len(rows) < tune.folds * 2:
        return None
    measure = metrics.parse(settings.primary)
    candidates = grid(tune)
    if default not in candidates:
        candidates.append(default)
    at = candidates.index(default)
    kept = [[c.per_question.results[i] for c in components] for i in rows]
    asked = [questions[i] for i in rows]
    lists = [[fused(q, c, settings.depth) for q in kept] for c in candidates]
    values = np.array([_score(r, asked, measure, settings) for r in lists])  # candidates x questions
    fold = folds_of(len(rows), tune.folds, settings.seed)
    held = np.zeros(len(rows))
    chosen: list[int] = []
    choices = []
    for f in range(tune.folds):
        train, test = np.flatnonzero(fold != f), np.flatnonzero(fold == f)
        pick = _best(values, train, at)
        chosen.append(pick)
        held[test] = values[pick, test]
        choices.append(
            FoldChoice(
                fold=f + 1,
                setting=candidates[pick].setting(),
                train=float(values[pick, train].mean()),
                held_out=float(values[pick, test].mean()),
                questions=len(test),
            )
        )
    everywhere = _best(values, np.arange(len(rows)), at)
    lo, hi = stats.bootstrap_ci(held[:, None], samples=settings.bootstrap, seed=settings.seed)[0]
    dlo, dhi = stats.paired_bootstrap_ci(held, values[at], samples=settings.bootstrap, seed=settings.seed)
    p = stats.paired_randomization(held, values[at], samples=settings.permutations, seed=settings.seed)
    modal = max(set(chosen), key=chosen.count)
    in_sample = values[everywhere].mean()
    rankings: list[list[Result]] = [[] for _ in range(n)]
    for j, i in enumerate(rows):
        rankings[i] = lists[chosen[int(fold[j])]][j]
    setting = candidates[everywhere]
    info = TunedHybrid(
        key=hybrid.key.replace(".hybrid.", ".hybrid_tuned.", 1),
        hybrid=hybrid.key,
        components=[c.key for c in components],
        measure=measure.name,
        questions=len(rows),
        default=default.setting(),
        default_value=float(values[at].mean()),
        held_out=float(held.mean()),
        held_out_ci=(float(lo), float(hi)),
        in_sample=setting.setting(),
        in_sample_value=float(in_sample),
        overstated=float(in_sample - held.mean()),
        folds=choices,
        stable=chosen.count(modal) / len(chosen),
        vs_default=VsDefault(delta=float((held - values[at]).mean()), ci=(float(dlo), float(dhi)), p=float(p)),
        config_lines=config_lines(setting),
        tried=len(candidates),
    )
    return TunedRun(info, rankings, setting, frozenset(int(i) for i in rows))


def config_lines(candidate: Candidate) -> str:
    """The chosen setting as it goes into a config."""
    if candidate.fusion == "rrf":
        return f"search: {{fusion: rrf, alpha: {candidate.alpha:g}, rrf_k: {candidate.rrf_k}}}"
    return f"search: {{fusion: convex, alpha: {candidate.alpha:g}}}"


def components_of(hybrid: SetupResult, by_key: dict[str, SetupResult]) -> list[SetupResult] | None:
    """The kept keyword and dense setups a local hybrid fused, or None where one is missing or failed."""
    target = hybrid.key.split(".hybrid.", 1)[0]
    keys = [f"{target}.keyword", *(f"{target}.dense.{m}" for m in hybrid.models)]
    parts = [by_key.get(k) for k in keys]
    if any(p is None or not p.scored or not p.per_question.results for p in parts):
        return None
    return [p for p in parts if p is not None]


def tune_all(
    setups: Sequence[SetupResult],
    questions: Sequence[Question],
    tune: TuneConfig,
    settings: Settings,
    fused_here: set[str],
) -> list[TunedRun]:
    """Every local hybrid of the run tuned (`fused_here`: the targets whose hybrids fuse in vx-eval)."""
    search = settings.search
    fusion = str(search.get("fusion", "convex"))
    default = Candidate(fusion, float(search.get("alpha", 0.5)), int(search.get("rrf_k", 60)) if fusion == "rrf" else 0)
    by_key = {s.key: s for s in setups}
    out = []
    for s in setups:
        if s.method != "hybrid" or not s.scored or s.target not in fused_here:
            continue
        parts = components_of(s, by_key)
        if parts is None:
            continue
        made = tune_hybrid(s, parts, questions, tune, settings, default)
        if made is not None:
            out.append(made)
    return out


def tuned_setup_run(run: TunedRun, hybrid: SetupRun) -> SetupRun:
    """The tuned hybrid as a setup's searches: its held-out rankings, with the times its timed sample took."""

    base = hybrid.setup
    setup = Setup(
        key=run.info.key,
        target=base.target,
        engine=base.engine,
        method="hybrid_tuned",
        label=base.label.replace("Hybrid", "Hybrid, tuned (held-out)", 1),
        run=base.run,
        models=base.models,
        ranker=base.ranker,
    )
    n = len(run.rankings)
    lost = "a search the tuned fusion needs (keyword or dense) failed on this question"
    return SetupRun(
        setup,
        results=[list(r) for r in run.rankings],
        times_ms=[None] * n,
        server_ms=[None] * n,
        workers=[None] * n,
        errors=[None if i in run.scored else lost for i in range(n)],
    )
