"""A run's kept rankings as TREC files: one run file per setup and the golden judgements as qrels (with a
judge's grades where a judge graded the run), so that trec_eval, ranx or ir_measures score exactly what
the run searched (and give the report's numbers)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from vx_eval.core.contracts.golden import Question
from vx_eval.core.errors import VxEvalError, quoted
from vx_eval.core.golden.units import document_of, page_level
from vx_eval.core.judging.grading import with_judged_grades
from vx_eval.core.report.schema import Report, Result, SetupResult
from vx_eval.core.stores import Stores, join

NO_UNIT = "vx-eval:no-unit:"
"""The id written for a result without a unit (it lacked the relevance field): it keeps its place and
matches no judgement, as in the run's own scoring."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._+=@-]")


def ranked_units(results: Sequence[Result], question: Question) -> list[tuple[str, float]]:
    """A question's results as trec_eval reads a run: each unit once (its first score), score descending,
    then unit id descending; units are pages where the question names pages, else documents."""
    by_page = page_level(question)
    first: dict[str, float] = {}
    for i, (unit, score) in enumerate(results):
        name = f"{NO_UNIT}{i}" if unit is None else (unit if by_page else document_of(unit))
        first.setdefault(name, float(score))
    return sorted(first.items(), key=lambda item: (item[1], item[0]), reverse=True)


def _field(value: str, what: str) -> str:
    """A TREC field: whitespace would split it into two, so such an id cannot be written."""
    if not value or any(c.isspace() for c in value):
        raise VxEvalError(f"{what} {quoted(value)} holds whitespace, which a TREC file cannot hold in a field")
    return value


def run_lines(setup: SetupResult, questions: Sequence[Question]) -> Iterator[str]:
    """``qid Q0 unit rank score tag`` for every kept result of every question the setup evaluated."""
    pq = setup.per_question
    for i, question in enumerate(questions):
        if i >= len(pq.results) or pq.status[i] != "evaluated":
            continue
        qid = _field(question.id, "question id")
        for rank, (unit, score) in enumerate(ranked_units(pq.results[i], question), start=1):
            yield f"{qid} Q0 {_field(unit, 'result id')} {rank} {score!r} {setup.key}\n"


def qrels_lines(questions: Sequence[Question]) -> Iterator[str]:
    """``qid 0 unit grade`` for every judgement of every question (grade 0: judged not relevant)."""
    for question in questions:
        qid = _field(question.id, "question id")
        for unit, grade in sorted(question.relevance().items()):
            yield f"{qid} 0 {_field(unit, 'judged id')} {grade}\n"


def with_judge_grades(report: Report, questions: Sequence[Question]) -> list[Question]:
    """The questions as the run scored them: where a judge graded it, each with the judge's grades of the
    results it read (every setup's first places, as each setup kept their grades) added to the human labels
    (which win). Without a judge, the questions as they are."""

    if report.judge is None:
        return list(questions)
    out = []
    for i, question in enumerate(questions):
        judged: dict[str, int] = {}
        for setup in report.setups:
            pq = setup.per_question
            grades = pq.grades[i] if pq.grades and i < len(pq.grades) else None
            if grades is None or i >= len(pq.results):
                continue
            units = [unit for unit, _ in ranked_units(pq.results[i], question)]
            for unit, grade in zip(units, grades, strict=False):
                if grade is not None and not unit.startswith(NO_UNIT):
                    judged.setdefault(unit, grade)
        out.append(with_judged_grades(question, judged))
    return out


def file_name(key: str) -> str:
    """A setup's run file name: its key, with anything a file system may refuse replaced."""
    return _UNSAFE.sub("_", key) + ".trec"


def export_trec(report: Report, questions: Sequence[Question], folder: str, stores: Stores) -> list[str]:
    """Write ``qrels.txt`` (a judge's grades included, `with_judge_grades`) and one run file per scored setup
    into `folder`; the locations written. A run with no judgement to write is refused before anything is
    written (an empty qrels file scores nothing)."""
    questions = with_judge_grades(report, questions)
    qrels = "".join(qrels_lines(questions))
    if not qrels:
        raise VxEvalError(
            f"run {report.id} holds no judgements to write as qrels.txt; label the questions' expected "
            "documents (or give a golden file that does, or a judge) to export files trec_eval can score"
        )
    written = [join(folder, "qrels.txt")]
    stores.write(written[0], qrels.encode())
    for setup in report.setups:
        if not setup.scored:
            continue
        location = join(folder, file_name(setup.key))
        stores.write(location, "".join(run_lines(setup, questions)).encode())
        written.append(location)
    return written
