"""`vx-eval judge check`: how far a judge agrees with people. Every setup is searched (no run saved), the
judge grades every result in the first places, and its grades are compared with the golden file's human
grades: weighted Cohen's kappa and the confusion matrix over those pairs, and Kendall's tau between the
setups ordered by DCG@10 on people's grades and on the judge's.

What a check measured is kept in the store (``<save_to>/judge-checks/<judge>.json``, one file per judge,
model, rubric and cut points, the newest check winning), so every run that store keeps states its judge's
measured agreement (`measured`). Where no check ran in a store, vx-eval's own check of the same judge on TREC
DL 2019 stands in, where one ships with the package (`shipped`), and the run says whose check it is."""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
from collections.abc import Sequence
from importlib.resources import files
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from vx_eval.core.contracts.judge import GRADES
from vx_eval.core.contracts.store import StoreNotFound
from vx_eval.core.optional import on_first_use
from vx_eval.core.report.views import GoldenInfo, Gullibility, JudgeInfo, MeasuredAgreement
from vx_eval.core.stores import join

_scipy_stats = on_first_use("scipy.stats")
_sklearn_metrics = on_first_use("sklearn.metrics")

if TYPE_CHECKING:
    from vx_eval.core.stores import Stores


class Agreement(BaseModel):
    pairs: int = 0
    kappa_linear: float | None = None
    kappa_quadratic: float | None = None
    exact: float | None = None
    confusion: list[list[int]] = Field(default_factory=list)
    """Rows: people's grade 0-3; columns: the judge's."""
    assumed_zero: int = 0
    """Pairs no person graded, counted as 0 (as DCG counts them)."""


class PairCheck(BaseModel):
    id: str
    unit: str
    human: int
    judge: int
    raw: str | None = None


class SetupOrder(BaseModel):
    key: str
    dcg_human: float
    dcg_judge: float


class Order(BaseModel):
    setups: list[SetupOrder] = Field(default_factory=list)
    tau: float | None = None
    p: float | None = None


class Calibration(BaseModel):
    """Cut points fitted from a check, for a judge that grades by cutting a score (the cross-encoder's logit):
    halfway between the median scores of neighbouring human grades, on every other question (sorted by id),
    and the quadratic kappa of the judge's own and of the fitted cut points on the questions the fit never saw."""

    cut_points: list[float]
    fitted_on: int
    """Questions the fit read."""
    held_out: int
    """Pairs of the other questions, on which both kappas are measured."""
    kappa_current: float | None = None
    kappa_fitted: float | None = None


class JudgeCheck(BaseModel):
    judge: JudgeInfo
    golden: GoldenInfo
    agreement: Agreement
    pairs: list[PairCheck]
    order: Order
    calibration: Calibration | None = None
    """Where the judge cuts a score into grades and every grade has pairs: cut points fitted from this check."""
    gullibility: Gullibility | None = None
    """How easily stuffed passages fooled it (`core.judging.gullible`; None where the config has no corpus)."""


def midpoints(human: Sequence[int], scores: Sequence[float]) -> list[float] | None:
    """Cut points halfway between the median scores of neighbouring human grades 0-3 (three numbers, which
    cannot chase noise as a grid search can); None when a grade has no pair or the medians do not rise."""
    people, values = np.asarray(human), np.asarray(scores, dtype=float)
    if any(not np.any(people == g) for g in GRADES):
        return None
    medians = [float(np.median(values[people == g])) for g in GRADES]
    cuts = [round((a + b) / 2, 2) for a, b in itertools.pairwise(medians)]
    return cuts if cuts == sorted(cuts) and len(set(cuts)) == len(cuts) else None


def calibrate(pairs: Sequence[PairCheck], current: Sequence[float] | None) -> Calibration | None:
    """Cut points fitted on every other question of the check, measured on the rest against `current` (the
    judge's own); None for a judge whose answers are not scores it cuts (`current` None), or too few pairs."""
    if not current:
        return None
    try:
        scores = [float(p.raw or "nan") for p in pairs]
    except ValueError:
        return None  # answers, not scores
    ids = sorted({p.id for p in pairs})
    fit = set(ids[::2])
    on_fit = [i for i, p in enumerate(pairs) if p.id in fit and not np.isnan(scores[i])]
    held = [i for i, p in enumerate(pairs) if p.id not in fit and not np.isnan(scores[i])]
    cuts = midpoints([pairs[i].human for i in on_fit], [scores[i] for i in on_fit])
    if cuts is None or len(held) < 2:
        return None

    def kappa(cut: Sequence[float]) -> float:
        grades = np.searchsorted(np.asarray(cut), [scores[i] for i in held], side="right").tolist()
        return agreement([pairs[i].human for i in held], grades).kappa_quadratic or 0.0

    return Calibration(
        cut_points=cuts,
        fitted_on=len(fit),
        held_out=len(held),
        kappa_current=round(kappa(current), 4),
        kappa_fitted=round(kappa(cuts), 4),
    )


def agreement(human: Sequence[int], judged: Sequence[int]) -> Agreement:
    """Weighted Cohen's kappa (linear and quadratic), plain agreement and the confusion matrix."""

    if not human:
        return Agreement()
    return Agreement(
        pairs=len(human),
        kappa_linear=float(_sklearn_metrics.cohen_kappa_score(human, judged, weights="linear", labels=list(GRADES))),
        kappa_quadratic=float(
            _sklearn_metrics.cohen_kappa_score(human, judged, weights="quadratic", labels=list(GRADES))
        ),
        exact=sum(a == b for a, b in zip(human, judged, strict=True)) / len(human),
        confusion=_sklearn_metrics.confusion_matrix(human, judged, labels=list(GRADES)).tolist(),
    )


def same_order(human: Sequence[float], judged: Sequence[float]) -> tuple[float | None, float | None]:
    """Kendall's tau-b between two scorings of the same setups (1: the same order), and its p-value."""

    if len(human) < 2:
        return None, None
    result = _scipy_stats.kendalltau(human, judged)
    return float(result.statistic), float(result.pvalue)


CHECKS = "judge-checks"


def judge_identity(info: JudgeInfo) -> str:
    """A judge as its grades depend on it: the plugin, its model, its rubric and its cut points."""

    said = [info.judge, info.model, info.rubric, info.cut_points]
    return f"{info.judge}-{hashlib.sha256(json.dumps(said).encode()).hexdigest()[:16]}"


def keep_check(stores: Stores, save_to: str, check: JudgeCheck) -> str:
    """Keep what `check` measured where runs saved to `save_to` find it; its location."""

    where = join(save_to, CHECKS, f"{judge_identity(check.judge)}.json")
    stores.write(where, agreement_of(check).model_dump_json(indent=1).encode())
    return where


def agreement_of(check: JudgeCheck) -> MeasuredAgreement:
    """What a run states of its judge from this check."""

    return MeasuredAgreement(
        kappa_linear=check.agreement.kappa_linear,
        kappa_quadratic=check.agreement.kappa_quadratic,
        exact=check.agreement.exact,
        pairs=check.agreement.pairs,
        tau=check.order.tau,
        golden=check.golden.source.replace("\\", "/").rsplit("/", 1)[-1],
        golden_sha256=check.golden.sha256,
        checked_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        confusion=check.agreement.confusion,
        gullibility=check.gullibility,
    )


def measured(stores: Stores, save_to: str, info: JudgeInfo) -> MeasuredAgreement | None:
    """The agreement `vx-eval judge check` last measured for this judge in this store; where it never ran
    there, vx-eval's own check of the same judge (plugin, model, rubric and cut points) shipped with the
    package (`shipped`), if there is one; else None."""
    name = f"{judge_identity(info)}.json"
    try:
        return MeasuredAgreement.model_validate_json(stores.read(join(save_to, CHECKS, name)))
    except (StoreNotFound, ValidationError):
        return shipped(name)


SHIPPED = "measured"
"""The package folder (`vx_eval/core/judging/measured/`) of vx-eval's own checks, one file per judge identity:
`benchmarks/judge_check.py --ship` writes them."""


def shipped(name: str) -> MeasuredAgreement | None:
    """vx-eval's own check of a judge, by its identity's file name, marked `shipped`; None where none ships."""

    kept = files("vx_eval.core.judging").joinpath(SHIPPED, name)
    if not kept.is_file():
        return None
    try:
        return MeasuredAgreement.model_validate_json(kept.read_bytes()).model_copy(update={"shipped": True})
    except ValidationError:
        return None
