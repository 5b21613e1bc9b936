"""Where each setup wins, the headroom of the collection, and every pair of setups compared.

- **Headroom**: per question, the best score any setup reached (the oracle: what routing each question to
  its best setup could give, a ceiling) against the best single setup; the questions no setup finds in its
  top 10 (more often a golden-file or corpus problem than a search problem); the questions only one setup
  finds and those each setup scores best alone; how much the setups' top 10s overlap (near-identical
  setups are redundant); all of it per question kind where the golden rows name kinds.
- **All pairs**: every pair of the leading setups on the primary measure, with the randomised Tukey HSD
  (Carterette 2012; Sakai 2014): each trial shuffles every question's scores across the setups, and a
  pair's p-value is the share of trials whose largest difference of means reaches theirs. It controls the
  family-wise error over all pairs at once, so any setup may serve as a baseline.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import combinations

import numpy as np

from vx_eval.core.contracts.golden import Question
from vx_eval.core.measures import stats
from vx_eval.core.report.schema import Settings, SetupResult
from vx_eval.core.report.views import AllPairs, Headroom, KindView, Overlap, PairTest

FOUND_AT = 10
TOP = 20
"""At most this many setups (by rank) enter the overlaps and the all-pairs test: n setups make n(n-1)/2 pairs."""
SHOWN = 20
"""Question ids listed per list (unfound, only one setup finds them)."""
TRIALS = 10_000
BATCH = 250


def _matrix(setups: Sequence[SetupResult], measure: str, n: int) -> np.ndarray:
    """Questions x setups of the measure (NaN where a setup did not evaluate a question)."""
    columns = []
    for s in setups:
        values = s.per_question.metrics.get(measure) or [None] * n
        columns.append([np.nan if v is None else v for v in values])
    return np.array(columns, dtype=float).T if columns else np.zeros((n, 0))


def _found(setups: Sequence[SetupResult], n: int) -> np.ndarray:
    """Questions x setups: whether the setup's top 10 (as returned) holds a right answer."""
    found = np.zeros((n, len(setups)), dtype=bool)
    for j, s in enumerate(setups):
        for i, place in enumerate(s.per_question.positions[:n]):
            found[i, j] = place is not None and place <= FOUND_AT
    return found


def _overlaps(setups: Sequence[SetupResult]) -> list[Overlap]:
    """Each pair's mean Jaccard overlap of their top 10s (shared units over units in either), over the
    questions both evaluated, most alike first."""
    tops = []
    for s in setups:
        pq = s.per_question
        tops.append(
            [
                set(list(dict.fromkeys(u for u, _ in results if u is not None))[:FOUND_AT])
                if status == "evaluated"
                else None
                for status, results in zip(pq.status, pq.results, strict=False)
            ]
        )
    out = []
    for (a, ta), (b, tb) in combinations(zip(setups, tops, strict=True), 2):
        shares = [len(x & y) / len(x | y) for x, y in zip(ta, tb, strict=False) if x and y]
        if shares:
            out.append(Overlap(a=a.key, b=b.key, overlap=float(np.mean(shares)), questions=len(shares)))
    return sorted(out, key=lambda o: -o.overlap)


def _kinds(questions: Sequence[Question], values: np.ndarray, keys: list[str]) -> dict[str, KindView]:
    kinds: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        if q.kind:
            kinds.setdefault(q.kind, []).append(i)
    out = {}
    for kind, rows in sorted(kinds.items()):
        part = values[rows]
        with _quiet():
            means = np.nanmean(part, axis=0)
            oracle = float(np.nanmean(np.nanmax(part, axis=1))) if part.size else float("nan")
        scored = {k: float(m) for k, m in zip(keys, means, strict=True) if m == m}
        best = max(scored, key=lambda k: scored[k]) if scored else None
        out[kind] = KindView(questions=len(rows), means=scored, best=best, oracle=oracle if oracle == oracle else None)
    return out


@contextmanager
def _quiet() -> Iterator[None]:
    """Silence numpy's warnings about all-NaN slices (a question no setup evaluated)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def headroom(
    setups: Sequence[SetupResult], questions: Sequence[Question], settings: Settings, best: str | None
) -> Headroom | None:
    """The run's headroom on the primary measure (see the module); None when no setup scored."""
    scored = [s for s in setups if s.scored]
    if not scored or best is None:
        return None
    n, measure = len(questions), settings.primary
    values = _matrix(scored, measure, n)
    keys = [s.key for s in scored]
    found = _found(scored, n)
    evaluated = ~np.isnan(values).all(axis=1)
    with _quiet():
        per_question_best = np.nanmax(np.where(evaluated[:, None], values, 0.0), axis=1)
    rows = np.flatnonzero(evaluated)
    leader = values[rows, keys.index(best)]
    oracle_values = per_question_best[rows]
    lo, hi = stats.bootstrap_ci(oracle_values[:, None], samples=settings.bootstrap, seed=settings.seed)[0]
    finders = found.sum(axis=1)
    unfound = [questions[int(i)].id for i in rows if finders[i] == 0]
    only: dict[str, list[str]] = {}
    wins: dict[str, int] = {}
    for i in (int(r) for r in rows):
        if finders[i] == 1:
            only.setdefault(keys[int(np.argmax(found[i]))], []).append(questions[i].id)
        column = values[i]
        if len(keys) > 1 and np.sum(column == np.nanmax(column)) == 1:
            winner = keys[int(np.nanargmax(column))]
            wins[winner] = wins.get(winner, 0) + 1
    with _quiet():
        best_mean = float(np.nanmean(leader)) if len(leader) else 0.0
    oracle = float(np.mean(oracle_values)) if len(oracle_values) else 0.0
    return Headroom(
        measure=measure,
        best=best,
        best_value=best_mean,
        oracle=oracle,
        oracle_ci=(float(lo), float(hi)) if lo == lo else None,
        gain=oracle - best_mean,
        questions=len(rows),
        found_by=[int(f) for f in finders],
        unfound=unfound[:SHOWN],
        unfound_count=len(unfound),
        only=dict(sorted((k, v[:SHOWN]) for k, v in only.items())),
        only_count={k: len(v) for k, v in sorted(only.items())},
        wins=dict(sorted(wins.items(), key=lambda kv: -kv[1])),
        overlaps=_overlaps(scored[:TOP]),
        kinds=_kinds(questions, values, keys),
    )


def randomised_tukey(values: np.ndarray, trials: int, seed: int) -> np.ndarray:
    """Setups x setups of p-values: the share of trials (each shuffling every question's row across the
    setups) whose range of means reaches each pair's observed difference; the observed one is counted."""
    n, k = values.shape
    means = values.mean(axis=0)
    observed = np.abs(means[:, None] - means[None, :])
    rng = np.random.default_rng(seed)
    reached = np.ones((k, k))
    done = 0
    while done < trials:
        size = min(BATCH, trials - done)
        order = np.argsort(rng.random((size, n, k)), axis=2)
        shuffled = np.take_along_axis(np.broadcast_to(values, (size, n, k)), order, axis=2).mean(axis=1)
        spread = shuffled.max(axis=1) - shuffled.min(axis=1)
        reached += (spread[:, None, None] >= observed[None, :, :] - 1e-12).sum(axis=0)
        done += size
    return reached / (trials + 1)


def all_pairs(setups: Sequence[SetupResult], settings: Settings) -> AllPairs | None:
    """Every pair of the first `TOP` scored setups on the primary measure, over the questions all of them
    evaluated, with the randomised Tukey HSD's family-wise p-values."""
    scored = [s for s in setups if s.scored][:TOP]
    if len(scored) < 2 or not settings.permutations:
        return None
    n = len(scored[0].per_question.status)
    values = _matrix(scored, settings.primary, n)
    complete = values[~np.isnan(values).any(axis=1)]
    if len(complete) < 2:
        return None
    trials = min(settings.permutations, TRIALS)
    p = randomised_tukey(complete, trials, settings.seed)
    means = complete.mean(axis=0)
    pairs = [
        PairTest(a=scored[i].key, b=scored[j].key, delta=float(means[i] - means[j]), p=float(p[i, j]))
        for i, j in combinations(range(len(scored)), 2)
    ]
    return AllPairs(
        measure=settings.primary,
        method="randomised Tukey HSD",
        trials=trials,
        questions=len(complete),
        alpha=settings.alpha,
        pairs=pairs,
    )
