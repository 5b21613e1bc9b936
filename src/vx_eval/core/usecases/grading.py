"""People grading (question, passage) pairs on the grading page (`vx-eval serve`, `/grade/EXPERIMENT`): which
pairs to show a rater next, with their text; each grade kept beside the experiment's golden file
(`core.golden.human`); and where the grading stands (how many pairs, raters, their agreement).

The pairs come from the experiment's newest run, kept rankings and all. Those that settle the most come
first: where the leading setups disagree (a unit one leader ranks high and another low or not at all), so
each grade can move the pick. A rater is first shown the pairs others graded that they have not (so two
raters' agreement is measured), then the most settling pairs nobody graded. Units the golden file grades
already are never shown."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from vx_eval.core.config.experiment import CorpusSource, Experiment
from vx_eval.core.contracts.engine import Document, SilentProgress
from vx_eval.core.contracts.golden import Question
from vx_eval.core.errors import VxEvalError
from vx_eval.core.golden.human import Agreement, HumanGrade, add_grade, agreement, grades_location, read_grades
from vx_eval.core.golden.sources import read_corpus, read_golden
from vx_eval.core.golden.units import document_of
from vx_eval.core.judging.grading import passage_text
from vx_eval.core.plugins import Plugins
from vx_eval.core.report.history import list_runs, read_report
from vx_eval.core.report.schema import Report
from vx_eval.core.run.targets import close_targets, open_targets
from vx_eval.core.stores import Stores

LEADERS = 3
"""The leading setups whose disagreements are graded first."""
DEPTH = 10
"""How deep in each leader's ranking a unit may be and still be shown."""


@dataclass(frozen=True)
class Pair:
    """One (question, unit) pair to grade, with what the rater reads and why it was chosen."""

    question_id: str
    question: str
    unit: str
    title: str
    passage: str
    settles: float
    """How far the leaders disagree on it: 0 where they rank it alike, up to 1."""
    graded_by: tuple[str, ...] = ()
    """The raters who graded it already."""


@dataclass(frozen=True)
class GradingState:
    """Where the grading of an experiment stands."""

    experiment: str
    run: str | None
    grades: int
    pairs: int
    raters: tuple[str, ...]
    agreement: Agreement
    by_rater: dict[str, int]
    damaged: tuple[str, ...] = ()
    """Lines of the grades file that are no grades (left out, kept in the file), named."""


def _newest_run_id(stores: Stores, save_to: str, experiment: str) -> str | None:
    """The id of the experiment's newest completed run here (read from the runs' list, no report read)."""
    entries, _ = list_runs(stores, save_to, limit=50)
    return next((e.id for e in entries if e.name == experiment and e.status in (None, "completed")), None)


def newest_run(stores: Stores, save_to: str, experiment: str) -> Report | None:
    """The experiment's newest completed run with its rankings, or None where it has none here."""
    run_id = _newest_run_id(stores, save_to, experiment)
    return read_report(stores, save_to, run_id, rankings=True) if run_id is not None else None


def _weight(rank: int | None) -> float:
    return 0.0 if rank is None else 1.0 / math.log2(rank + 2)


def candidates(report: Report, questions: Sequence[Question]) -> list[tuple[float, str, str]]:
    """Every (settles, question id, unit) in the leaders' first `DEPTH` places, the golden file's graded units
    left out, most settling first (then the higher placed)."""
    by_id = {q.id: q for q in questions}
    leaders = [s for s in report.setups if s.error is None and s.per_question.results][:LEADERS]
    out: list[tuple[float, float, str, str]] = []
    for i, qid in enumerate(report.question_ids):
        question = by_id.get(qid)
        if question is None:
            continue
        labelled = question.relevance()
        ranks: list[dict[str, int]] = []
        for setup in leaders:
            ranked = [u for u, _ in setup.per_question.results[i][:DEPTH] if u is not None]
            ranks.append({u: r for r, u in reversed(list(enumerate(ranked)))})
        for unit in {u for r in ranks for u in r} - set(labelled):
            weights = [_weight(r.get(unit)) for r in ranks]
            out.append((max(weights) - min(weights), max(weights), qid, unit))
    out.sort(key=lambda c: (-c[0], -c[1], c[2], c[3]))
    return [(settles, qid, unit) for settles, _, qid, unit in out]


def _documents(experiment: Experiment, plugins: Plugins, stores: Stores, ids: set[str]) -> dict[str, Document]:
    """The documents `ids` name: read from the config's corpus file, else from the indexes that are there."""
    source = experiment.config.corpus_source
    if source is not None:
        return {d.id: d for d in read_corpus(CorpusSource(path=source.path), stores) if d.id in ids}
    found: dict[str, Document] = {}
    targets = open_targets(experiment, plugins, stores, SilentProgress(), build=False)
    try:
        for target in targets:
            for doc in target.handle.documents(sorted(ids - set(found))):
                found[doc.id] = doc
    finally:
        close_targets(targets)
    return found


def next_pairs(
    experiment: Experiment, plugins: Plugins, stores: Stores, save_to: str, rater: str, limit: int = 5
) -> list[Pair]:
    """The next pairs for `rater`: those others graded that they have not, then the most settling nobody
    graded; at most `limit`."""
    report = newest_run(stores, save_to, experiment.config.name)
    if report is None:
        return []
    golden = read_golden(experiment.config.golden_source, stores)
    questions = [*golden.questions, *golden.waiting]
    kept = read_grades(stores, grades_location(experiment.config.golden_source.path)).grades
    raters: dict[tuple[str, str], set[str]] = {}
    for g in kept:
        raters.setdefault((g.question, g.unit), set()).add(g.rater)
    ranked = candidates(report, questions)
    others = [c for c in ranked if raters.get(c[1:]) and rater not in raters[c[1:]]]
    fresh = [c for c in ranked if not raters.get(c[1:])]
    chosen = (others + fresh)[:limit]
    docs = _documents(experiment, plugins, stores, {document_of(unit) for _, _, unit in chosen})
    text = {q.id: q.question for q in questions}
    pairs = []
    for settles, qid, unit in chosen:
        doc = docs.get(document_of(unit))
        if doc is None:
            continue
        graded_by = tuple(sorted(raters.get((qid, unit), ())))
        pairs.append(Pair(qid, text[qid], unit, doc.title, passage_text(doc, unit), round(settles, 3), graded_by))
    return pairs


class GradeRefused(VxEvalError):
    """A grade for a pair the grading page does not offer: a question the golden file lacks, or a unit the
    experiment's newest run did not show for it."""


def record(experiment: Experiment, stores: Stores, save_to: str, grade: HumanGrade) -> HumanGrade:
    """Keep `grade` beside the experiment's golden file, where it grades a pair the page offers: a question of
    the golden file and a unit the newest run's leading setups showed for it, not one the file grades. The
    grade as kept."""
    report = newest_run(stores, save_to, experiment.config.name)
    if report is None:
        raise GradeRefused(f"experiment {experiment.config.name!r} has no run to grade yet")
    golden = read_golden(experiment.config.golden_source, stores)
    questions = [*golden.questions, *golden.waiting]
    if grade.question not in {q.id for q in questions}:
        raise GradeRefused("the golden file has no question of that id: grade the pairs the page offers")
    offered = {unit for _, qid, unit in candidates(report, questions) if qid == grade.question}
    if grade.unit not in offered:
        raise GradeRefused(
            "the newest run did not show that unit for that question (or the golden file grades it already): "
            "grade the pairs the page offers"
        )
    return add_grade(stores, grades_location(experiment.config.golden_source.path), grade)


def state(experiment: Experiment, stores: Stores, save_to: str) -> GradingState:
    read = read_grades(stores, grades_location(experiment.config.golden_source.path))
    kept = read.grades
    by_rater: dict[str, int] = {}
    for g in kept:
        by_rater[g.rater] = by_rater.get(g.rater, 0) + 1
    return GradingState(
        experiment=experiment.config.name,
        run=_newest_run_id(stores, save_to, experiment.config.name),
        grades=len(kept),
        pairs=len({(g.question, g.unit) for g in kept}),
        raters=tuple(sorted(by_rater)),
        agreement=agreement(kept),
        by_rater=by_rater,
        damaged=read.damaged,
    )
