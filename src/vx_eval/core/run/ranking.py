"""The run's ranking stage: setups in order, the three picks, the frontier, each setup's neighbours, and
the paired tests of every setup against the one that finds the most."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

import numpy as np

from vx_eval.core.measures import stats
from vx_eval.core.report import picks
from vx_eval.core.report.schema import (
    Detectable,
    Neighbour,
    Picking,
    PickReason,
    Picks,
    Settings,
    SetupResult,
    TimeVersus,
    VsBest,
)
from vx_eval.core.report.views import Corrected, LabelAudit

DETECTABLE = (
    "the smallest mean difference in the primary measure a paired test on these questions would detect "
    "(two-sided 5%, 80% power); smaller differences cannot be told from noise"
)


@dataclass(frozen=True)
class Ranking:
    setups: list[SetupResult]
    """In rank order, each with its rank, neighbours and test against the leader."""
    picks: Picks
    frontier: list[str]
    detectable: Detectable
    picking: Picking


def _scored(setup: SetupResult, primary: str, left_out: Collection[str]) -> picks.Scored:
    median = setup.times_ms.median
    return picks.Scored(
        key=setup.key,
        primary=setup.summary.get(primary) or 0.0,
        at1=setup.summary.get("found@1") or 0.0,
        median_ms=median if median is not None else float("inf"),
        failed=not setup.pickable or setup.key in left_out,
        mrr=setup.summary.get("mrr") or 0.0,
        times_ms=tuple(setup.per_question.times_ms),
    )


def _picks(choice: picks.Choice) -> tuple[Picks, Picking]:
    def versus(v: picks.TimeComparison | None) -> TimeVersus | None:
        if v is None:
            return None
        return TimeVersus(other=v.b, ratio=v.ratio, ci=v.ci, questions=v.questions, surely_faster=v.surely_faster)

    reasons = {
        name: PickReason(text=r.text, measure=r.measure, versus=versus(r.versus), tied_on_time=list(r.tied_on_time))
        for name, r in choice.reasons.items()
    }
    return Picks(**choice.picks), Picking(measure=choice.measure, note=choice.note, reasons=reasons)


def rank(setups: Sequence[SetupResult], settings: Settings, left_out: Collection[str] = ()) -> Ranking:
    """Order, pick and compare: the run's `Ranking`. `left_out`: setups ranked after the rest and never
    picked (those a judge's own model ranks: their grades are circular)."""
    scored = [_scored(s, settings.primary, left_out) for s in setups]
    picker = picks.Picker(scored, settings.primary, samples=settings.bootstrap, seed=settings.seed)
    choice = picker.choose(settings.balance_points, settings.time_points)
    order = {s.key: i for i, s in enumerate(picks.ranked(scored, choice, settings.primary), start=1)}
    chosen, picking = _picks(choice)
    near = picks.neighbours(setups)
    ranked = sorted(
        (
            s.model_copy(
                update={"rank": order[s.key], "neighbours": [Neighbour(key=k, change=c) for k, c in near[s.key]]}
            )
            for s in setups
        ),
        key=lambda s: s.rank,
    )
    tested, detectable = compare_with_best(ranked, chosen.finds_the_most, settings)
    group = [s.key for s in tested if s.tied_with_best and s.key not in left_out]
    if len(group) > 1:  # not sure: the balance and time picks come from the group the test cannot separate
        choice = picker.choose(settings.balance_points, settings.time_points, among=set(group))
        chosen, picking = _picks(choice)
    sure, needed = how_sure(tested, chosen.finds_the_most, set(left_out), fastest=_fastest(picker, group))
    picking = picking.model_copy(update={"sure": sure, "questions_needed": needed})
    return Ranking(tested, chosen, picks.frontier(scored), detectable, picking)


def picked_by_people(ranked: Ranking, fixed: Corrected) -> Ranking:
    """The ranking following people's correction of the judge (`core.judging.corrected`): the table in the
    corrected order (setups the judge is related to among the rest), the setups people's grades cannot tell
    from the corrected best marked level with it, `finds_the_most` the corrected best, and a balance or time
    pick people's grades can tell from it (its lead interval excludes 0), or slower than a re-admitted setup
    level with it, made again as the fastest of the level setups (median time)."""
    level = fixed.level_with_best()
    by_key = {s.key: s for s in ranked.setups}
    timed = [k for k in level if k in by_key and by_key[k].times_ms.median is not None]
    fastest = min(timed, key=lambda k: (by_key[k].times_ms.median, k != fixed.best)) if timed else fixed.best
    chosen = {"finds_the_most": fixed.best}
    reasons = dict(ranked.picking.reasons)
    judged_best = ranked.picks.finds_the_most
    if judged_best != fixed.best or fixed.readmitted:
        first = fixed.setups[fixed.best]
        alone = (
            f"; the judge alone put {judged_best} first"
            if judged_best != fixed.best
            else f"; {len(fixed.readmitted)} setups the judge is related to are ranked too"
        )
        reasons["finds_the_most"] = PickReason(
            text=f"first in the judge's order of the {len(fixed.order)} setups unless people's grades on "
            f"{fixed.labelled} questions overturn it, {fixed.measure} corrected by them {first.mean:.3f} "
            f"({first.low:.3f}–{first.high:.3f}){alone}",
            measure=fixed.measure,
        )
    for name in ("best_for_balance", "best_for_time"):
        now = getattr(ranked.picks, name)
        if now in level and not (fastest in fixed.readmitted and fastest != now and name == "best_for_time"):
            continue
        chosen[name] = fastest
        why = (
            f"the judge's own pick, {now}, is surely worse by people's correction"
            if now not in level
            else f"{fastest}, which the judge is related to, is re-admitted by people's grades"
        )
        reasons[name] = PickReason(
            text=f"the fastest of the {len(level)} setups people's grades cannot tell from {fixed.best} "
            f"(corrected {fixed.measure}); {why}",
            measure=fixed.measure,
        )
    picks_now = ranked.picks.model_copy(update=chosen)
    sure, needed = _sure_by_people(fixed, level)
    # the judge's tie note spoke of the setups it could rank alone; with every setup re-admitted it no longer holds
    note = None if fixed.readmitted else ranked.picking.note
    picking = ranked.picking.model_copy(
        update={"corrected": fixed, "reasons": reasons, "sure": sure, "questions_needed": needed, "note": note}
    )
    return replace(
        ranked, setups=_in_corrected_order(ranked.setups, fixed, set(level)), picks=picks_now, picking=picking
    )


def without_picks(ranked: Ranking, audit: LabelAudit) -> Ranking:
    """The ranking with no picks: the golden file looks wrong (`core.judging.audit`), so none would mean anything."""
    note = (
        f"no picks: for {audit.unfound} of the {audit.checked} labelled questions no setup returns what the labels "
        f"name, and the judge grades a returned result above the labelled documents for {audit.disputed} of them; "
        "the golden file looks wrong, check its labels (and that they name this corpus's ids) first"
    )
    picking = ranked.picking.model_copy(update={"note": note, "reasons": {}, "sure": None, "questions_needed": None})
    return replace(ranked, picks=Picks(), picking=picking)


def _in_corrected_order(setups: Sequence[SetupResult], fixed: Corrected, level: Collection[str]) -> list[SetupResult]:
    """The setups ranked in the corrected order (those it does not hold after, as they were), each marked
    level with the best where people's grades cannot tell them apart."""
    place = {k: i for i, k in enumerate(fixed.order)}
    ordered = sorted(setups, key=lambda s: (place.get(s.key, len(place)), s.rank))
    return [
        s.model_copy(update={"rank": rank, "tied_with_best": s.key in level if s.key in place else s.tied_with_best})
        for rank, s in enumerate(ordered, start=1)
    ]


def _sure_by_people(fixed: Corrected, level: Sequence[str]) -> tuple[str | None, int | None]:
    """ "Not sure" in words where people's grades cannot tell the corrected best from some setup, with about
    how many person-graded questions would tell it from the first of them; (None, None) where they can."""
    others = [k for k in fixed.order if k in level and k != fixed.best]
    if not others:
        return None, None
    runner = others[0]
    settle = fixed.leads[runner].settle_with
    shown = ", ".join(others[:3]) + (" …" if len(others) > 3 else "")
    text = (
        f"not sure: people's grades on {fixed.labelled} questions, correcting the judge's on {fixed.unlabelled}, "
        f"cannot tell {fixed.best} from {len(others)} other setup{'s' if len(others) > 1 else ''} ({shown}) on "
        f"corrected {fixed.measure}"
    )
    if settle is not None:
        text += f"; about {settle} person-graded questions would tell it from {runner} at the difference seen"
    return text + ".", settle


def _fastest(picker: picks.Picker, group: Sequence[str]) -> str | None:
    """The cheapest setup of a group the paired test cannot separate: the fastest, time ties to quality."""
    rows = [r for r in picker.rows if r.key in group]
    return picker.fastest(rows)[0].key if len(rows) > 1 else None


def how_sure(
    setups: Sequence[SetupResult], best: str | None, left_out: Collection[str], fastest: str | None = None
) -> tuple[str | None, int | None]:
    """When the paired tests cannot tell the leader from the setup ranked next, in words: which setups are
    level with it within the noise (and `fastest`, the group's cheapest member) and, where the two differ at
    all, about how many questions would tell the leader from the next at the difference seen (the
    detectable difference shrinks with the square root of the questions); and that number. (None, None)
    when the leader is surely ahead."""
    level = [s for s in setups if s.tied_with_best and s.key != best and s.key not in left_out]
    if best is None or not level:
        return None, None
    runner, leader = level[0], next(s for s in setups if s.key == best)
    test = runner.vs_best
    if test is None:
        return None, None
    a = np.array(leader.per_question.metrics.get(test.metric, []), dtype=float)
    b = np.array(runner.per_question.metrics.get(test.metric, []), dtype=float)
    n = int(np.sum(~np.isnan(a - b))) if len(a) == len(b) else 0
    shown = ", ".join(s.key for s in level[:3]) + (" …" if len(level) > 3 else "")
    text = (
        f"not sure: with {n} questions a paired test cannot tell {best} from {len(level)} other "
        f"setup{'s' if len(level) > 1 else ''} ({shown}) on {test.metric}"
    )
    mde = stats.detectable_difference(a - b) if n else None
    gap = -test.delta
    needed = None
    if mde and gap > 1e-12:
        needed = int(np.ceil(n * (mde / gap) ** 2))
        text += f"; about {needed} questions would tell it from {runner.key} at the difference seen ({gap:.3f})"
    elif n and np.allclose(a, b, equal_nan=True):
        text += f"; {runner.key} scores the same on every question"
    text += ". The pick leads on these questions, not surely"
    if fastest is not None:
        text += (
            f"; the {len(level) + 1} setups cannot be told apart here, the fastest of them is {fastest}, and the "
            "balance and time picks are made among them only"
        )
    return text + ".", needed


def compare_with_best(
    setups: list[SetupResult], best: str | None, settings: Settings
) -> tuple[list[SetupResult], Detectable]:
    """Paired randomization tests of every setup against `finds_the_most` on the primary measure, Holm-
    corrected; setups the tests cannot tell from it are marked tied. Also the smallest difference these
    questions could detect."""
    primary = settings.primary
    if best is None or not settings.permutations:
        return setups, Detectable(metric=primary)
    by_key = {s.key: s for s in setups}
    leader = np.array(by_key[best].per_question.metrics[primary], dtype=float)
    others = [s for s in setups if s.key != best and s.scored]
    tests: dict[str, VsBest] = {}
    pvalues, mdes = [], []
    for s in others:
        values = np.array(s.per_question.metrics[primary], dtype=float)
        p = stats.paired_randomization(leader, values, samples=settings.permutations, seed=settings.seed)
        lo, hi = stats.paired_bootstrap_ci(values, leader, samples=settings.bootstrap, seed=settings.seed)
        tests[s.key] = VsBest(metric=primary, delta=float(np.nanmean(values - leader)), ci=(lo, hi), p=p)
        pvalues.append(p)
        mdes.append(stats.detectable_difference(leader - values))
    tied = {best}
    for s, adjusted in zip(others, stats.holm(pvalues), strict=True):
        tests[s.key] = tests[s.key].model_copy(update={"p_holm": adjusted})
        if adjusted >= settings.alpha:
            tied.add(s.key)
    updated = [s.model_copy(update={"vs_best": tests.get(s.key), "tied_with_best": s.key in tied}) for s in setups]
    known = [m for m in mdes if m]  # a rival that scored every question alike tells nothing of the noise
    if not known:  # assume a rival as variable as the leader and uncorrelated with it
        single = stats.detectable_difference(leader - np.nanmean(leader))
        known = [single * np.sqrt(2)] if single else []
    value = float(np.median(known)) if known else None
    return updated, Detectable(metric=primary, value=value, meaning=DETECTABLE)
