"""Labels audited: where people's labels and everything else disagree. A person-labelled question whose labels
name documents no setup returns in its first 10 places, whose labelled documents the judge grades below a result
some setup returned, graded 2 or more (highly or perfectly relevant), is probably mislabelled: every setup
missing the same answer is less likely than the labels pointing at the wrong document. Where most labelled
questions are unfound and the judge disputes most of those labels, the golden file itself looks wrong (labels
shifted by an id mapping, a split read against the wrong corpus), and no pick on it means anything."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from vx_eval.core.contracts.engine import SetupResults
from vx_eval.core.contracts.golden import Question
from vx_eval.core.golden.units import judge as read_results
from vx_eval.core.report.views import LabelAudit, Suspect

SUSPECT_GRADE = 2
"""The judge's grade of another result that makes an unfound question suspect (2: highly relevant)."""
PASSAGE_CHARS = 300
"""How much of the passage the judge graded highest is kept to show."""
DEPTH = 10


def _found(runs: Sequence[SetupResults], i: int, q: Question, relevant: set[str]) -> bool:
    return any(relevant & set(read_results(r.results[i], q).ranked[:DEPTH]) for r in runs if not r.errors[i])


def _relevant(q: Question, threshold: int) -> set[str]:
    return {u for u, g in q.relevance().items() if g >= threshold}


def unfound_labelled(
    runs: Sequence[SetupResults], questions: Sequence[Question], labelled: int, threshold: int = 1
) -> list[int]:
    """The indices of people's questions (the first `labelled`) whose relevant labels no setup returns in its
    first 10: the judge grades their labelled documents too, for the audit."""
    scored = [r for r in runs if r.error is None and r.results]
    if not scored:
        return []
    return [
        i
        for i, q in enumerate(questions[:labelled])
        if (relevant := _relevant(q, threshold)) and not _found(scored, i, q, relevant)
    ]


def _unfound(
    scored: Sequence[SetupResults],
    i: int,
    q: Question,
    relevant: set[str],
    judged: Mapping[str, int],
    highest: tuple[str, str] | None,
    on_labels: Mapping[str, int],
) -> tuple[str | None, Suspect | None] | None:
    """What the judge says of a question no setup finds: `disputed` (its labels graded below a returned result),
    `confirmed` (above them all) or neither, and the suspect where disputed by a result graded 2 or more; None
    where the judge could not grade its labelled documents."""
    labels = q.relevance()
    others = {u: g for u, g in judged.items() if u not in labels}
    top = max(others.values(), default=None)
    on_label = max((g for u, g in on_labels.items() if u in relevant), default=None)
    if on_label is None:
        return None
    dispute = (
        "disputed" if top is not None and on_label < top else "confirmed" if top is None or on_label > top else None
    )
    if dispute != "disputed" or top is None or top < SUSPECT_GRADE:
        return dispute, None
    unit, text = highest or ("", "")
    if others.get(unit) != top:  # the highest graded was a labelled unit further down: name the other
        unit, text = next(u for u, g in others.items() if g == top), ""
    return dispute, Suspect(
        id=q.id,
        question=q.question,
        labels=sorted(relevant)[:5],
        label_grade=on_label,
        unit=unit,
        grade=top,
        passage=" ".join(text.split())[:PASSAGE_CHARS] or None,
        found_by=sum(unit in read_results(r.results[i], q).ranked[:DEPTH] for r in scored),
    )


def label_audit(
    runs: Sequence[SetupResults],
    questions: Sequence[Question],
    labelled: int,
    unfound: Collection[int],
    judged: Mapping[int, Mapping[str, int]],
    highest: Mapping[int, tuple[str, str]],
    on_labels: Mapping[int, Mapping[str, int]],
    threshold: int = 1,
) -> LabelAudit | None:
    """The first `labelled` of `questions` (people's) audited against every setup's first 10 results and the
    judge's grades: `unfound` (the questions no setup finds, `unfound_labelled`), `judged` (the judge's grades of
    the results, by question index), `highest` (the result it graded highest per question, with its text) and
    `on_labels` (its grades of the labelled documents of the unfound questions).

    A question no setup finds is disputed where the judge grades its labelled documents below a result a setup
    returned, confirmed where above them all; probably mislabelled where disputed and that result is graded 2 or
    more. The golden file looks wrong where most questions are unfound, at least a third of those (and three)
    disputed, and disputes outnumber confirmations two to one. None where no setup returned results or people
    labelled nothing."""
    scored = [r for r in runs if r.error is None and r.results]
    if not scored or labelled == 0:
        return None
    # judged with nothing relevant: there is nothing for a setup to find
    checked = sum(1 for q in questions[:labelled] if _relevant(q, threshold))
    disputed = confirmed = 0
    suspects = []
    for i in sorted(unfound):
        q = questions[i]
        relevant = _relevant(q, threshold)
        said = _unfound(scored, i, q, relevant, judged.get(i, {}), highest.get(i), on_labels.get(i, {}))
        if said is None:
            continue  # the judge could not read the labelled documents (not in the index): no dispute to tell
        dispute, suspect = said
        disputed += dispute == "disputed"
        confirmed += dispute == "confirmed"
        if suspect is not None:
            suspects.append(suspect)
    # most questions unfound, and the judge's grades speak against the labels far more often than for them: a
    # weak judge grading the labelled documents and the results alike (0 and 0, typically) says nothing either way
    missed = len(unfound)
    wrong = missed * 2 > checked and disputed >= 3 and disputed > 2 * confirmed and disputed * 3 >= missed
    return LabelAudit(
        checked=checked,
        unfound=missed,
        disputed=disputed,
        confirmed=confirmed,
        suspects=suspects,
        looks_wrong=wrong,
    )
