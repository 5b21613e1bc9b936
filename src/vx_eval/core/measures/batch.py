"""What the measures read: one question's results against its judgements (`Judged`), and many questions as
arrays (`Batch`), one row a question."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Judged:
    """One question's results read against its judgements.

    `returned`: units in the order results came back (a unit may repeat). `ranked`: each unit once, in
    trec_eval order. `grades`: judged units and their grades (0 = judged not relevant). A unit counts as
    relevant for binary measures when its grade is at least `threshold`.
    """

    returned: tuple[str, ...]
    ranked: tuple[str, ...]
    grades: Mapping[str, int]
    threshold: int = 1
    scores: tuple[float, ...] = ()
    """The score of each unit of `ranked` (equal scores are ties, whose order `core.measures.ties` weighs)."""

    @cached_property
    def relevant(self) -> frozenset[str]:
        return frozenset(u for u, g in self.grades.items() if g >= self.threshold and g > 0)


@dataclass
class Batch:
    """Questions as arrays, one row each, padded with zeros past each list's end.

    `grade[i, r]`: the grade of the unit at rank r+1 of question i's reduced list (0 when unjudged);
    `judged[i, r]`: whether that unit is judged; `hit[i, r]`: whether the r+1-th result *as returned* is
    relevant; `ideal[i]`: the question's positive grades, best first; `n_rel[i]`: its relevant units;
    `length[i]`, `returned[i]`: lengths of the reduced and the returned lists. `depth` is how many results
    each search asked for (a cut-off beyond it cannot be scored).
    """

    grade: np.ndarray
    judged: np.ndarray
    hit: np.ndarray
    ideal: np.ndarray
    n_rel: np.ndarray
    length: np.ndarray
    returned: np.ndarray
    threshold: int = 1
    depth: float = float("inf")
    n_judged: np.ndarray | None = None
    """Each question's judged units (any grade, 0 included): bpref's judged non-relevant count."""
    score: np.ndarray | None = None
    """The score at each place of the reduced list (ties: equal neighbours), where the results had scores."""
    pooled: np.ndarray | None = None
    """Where known (TREC qrels grading a document below 0): the places holding a result that was in the pool
    but judged by nobody, as against one never pooled (infAP tells them apart)."""
    documents: int = 0
    """The collection's size where known (trec_eval -N; 0 as there by default): what utility's fourth
    coefficient counts the non-relevant documents left out from."""

    @classmethod
    def of(cls, questions: Sequence[Judged], depth: float = float("inf")) -> Batch:
        n = len(questions)
        width = max([len(j.ranked) for j in questions] + [1])
        raw_width = max([len(j.returned) for j in questions] + [1])
        ideal_width = max([len(j.grades) for j in questions] + [1])
        grade = np.zeros((n, width))
        judged = np.zeros((n, width), dtype=bool)
        hit = np.zeros((n, raw_width), dtype=bool)
        ideal = np.zeros((n, ideal_width))
        n_rel = np.zeros(n)
        n_judged = np.zeros(n)
        score = np.full((n, width), -np.inf)
        length = np.zeros(n, dtype=int)
        returned = np.zeros(n, dtype=int)
        threshold = questions[0].threshold if questions else 1
        for i, j in enumerate(questions):
            grades = j.grades
            row = [grades.get(u, 0) for u in j.ranked]
            grade[i, : len(row)] = row
            judged[i, : len(row)] = [u in grades for u in j.ranked]
            relevant = j.relevant
            hit[i, : len(j.returned)] = [u in relevant for u in j.returned]
            positive = sorted((g for g in grades.values() if g > 0), reverse=True)
            ideal[i, : len(positive)] = positive
            n_rel[i] = len(relevant)
            n_judged[i] = len(grades)
            score[i, : len(j.scores)] = j.scores
            length[i], returned[i] = len(j.ranked), len(j.returned)
        return cls(grade, judged, hit, ideal, n_rel, length, returned, threshold, depth, n_judged, score)

    def take(self, index: Any) -> Batch:
        """The batch of the rows at `index` (indices or a mask)."""

        def pick(values: np.ndarray | None) -> np.ndarray | None:
            return None if values is None else values[index]

        return Batch(
            self.grade[index], self.judged[index], self.hit[index], self.ideal[index], self.n_rel[index],
            self.length[index], self.returned[index], self.threshold, self.depth, pick(self.n_judged),
            pick(self.score), pick(self.pooled), self.documents,
        )  # fmt: skip

    def cut(self, n: int) -> Batch:
        """Each list cut to its first `n` results (trec_eval -M: the rest are not evaluated at all)."""
        return dataclasses.replace(
            self,
            grade=self.grade[:, :n],
            judged=self.judged[:, :n],
            hit=self.hit[:, :n],
            length=np.minimum(self.length, n),
            returned=np.minimum(self.returned, n),
            score=None if self.score is None else self.score[:, :n],
            pooled=None if self.pooled is None else self.pooled[:, :n],
        )

    def at_threshold(self, threshold: int) -> Batch:
        """The same lists with relevance counted from `threshold` on (the as-returned `hit` keeps its own)."""
        n_rel = (self.ideal >= threshold).sum(axis=1).astype(float)
        return dataclasses.replace(self, threshold=threshold, n_rel=n_rel)

    @cached_property
    def rel(self) -> np.ndarray:
        return (self.grade >= self.threshold) & (self.grade > 0)

    @cached_property
    def rel_cum(self) -> np.ndarray:
        return np.cumsum(self.rel, axis=1)

    @cached_property
    def log_rank(self) -> np.ndarray:
        """log2(rank + 1) at each rank: what DCG divides a gain by (divided, as trec_eval does, not multiplied
        by its inverse, which differs in the last bits)."""
        return np.log2(np.arange(2, max(self.grade.shape[1], self.ideal.shape[1]) + 2))


def in_order(values: np.ndarray) -> np.ndarray:
    """Each row's values added left to right, one after another, as trec_eval's loops add them. numpy's `sum`
    adds pairwise: within a few units of the last place, but that can move a printed fourth decimal (15/32
    summed so prints 0.4688 where trec_eval prints 0.4687). Adding the 0 of a place that does not count
    changes nothing, so a masked row sums as its loop would."""
    if values.shape[-1] == 0:
        return np.zeros(values.shape[:-1])
    result: np.ndarray = np.cumsum(values, axis=-1)[..., -1]
    return result


def powers(p: float, n: int) -> np.ndarray:
    """p^0, p^1, … p^(n-1), each the one before times p, as trec_eval's loops make them (``p ** k`` differs in
    the last bits)."""
    result: np.ndarray = np.cumprod(np.concatenate([[1.0], np.full(max(n - 1, 0), p)]))[:n]
    return result
