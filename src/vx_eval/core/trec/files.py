"""`vx-eval eval`: score a TREC run file against TREC qrels or a golden file, as ``trec_eval -c`` does.

Both files are read as byte columns (`core.trec.columns`) and arranged into a `metrics.Batch` with numpy:
documents are matched by 64-bit hashes and every match is confirmed byte for byte; ids are compared as
bytes only where scores tie, to order those results as trec_eval does (id descending, strcmp order).

What trec_eval refuses is refused here too, naming the lines: a document judged twice for one question,
and a document listed twice in one question's run. What it reads in its own way is read the same way and
said: a fractional grade is cut to a whole number (``1.5`` counts as 1), and a score that is no number
(``nan``) sorts below every other with a warning. An empty run, and a run that answers none of the judged
questions, are refused (every number would be 0).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vx_eval.core.errors import GoldenError, VxEvalError, quoted
from vx_eval.core.measures import metrics
from vx_eval.core.measures.trec_only import relevance_strings
from vx_eval.core.trec import stream as trecstream
from vx_eval.core.trec.columns import QRELS, RUN, Columns, as_bytes, read_columns, same_bytes, scan
from vx_eval.core.trec.names import expand_trec

DEFAULT_MEASURES = ("ndcg@10", "map", "recall@100", "mrr", "p@10")
QID, DOC, VALUE = 0, 1, 2  # the kept columns of both layouts
SHOWN = 5  # lines named in a warning


@dataclass(frozen=True)
class Run:
    """A TREC run: its (question, document, score) columns, and what reading it noticed."""

    columns: Columns
    scores: np.ndarray
    warnings: tuple[str, ...] = ()

    @classmethod
    def of(cls, qids: Sequence[str], docs: Sequence[str], scores: Sequence[float]) -> Run:
        lines = "".join(f"{q} Q0 {d} 0 {s!r} run\n" for q, d, s in zip(qids, docs, scores, strict=True))
        return _run(scan(as_bytes(lines), RUN, "run"))


@dataclass(frozen=True)
class Judgements:
    """Judged (question, document, grade) rows; questions in first-seen order."""

    columns: Columns
    grades: np.ndarray
    question_ids: list[str]
    rows_question: np.ndarray  # each row's index into question_ids
    warnings: tuple[str, ...] = ()
    pooled: frozenset[tuple[int, str]] = frozenset()
    """(question index, document) of the rows graded below 0: in the pool, judged by nobody (infAP tells
    them from documents never pooled; every other measure reads them as unjudged)."""
    highest: np.ndarray | None = None
    """Each question's highest grade as read, those below 0 included (where trec_eval sizes its tables)."""

    @classmethod
    def of(cls, qids: Sequence[str], docs: Sequence[str], grades: Sequence[float]) -> Judgements:
        lines = "".join(f"{q} 0 {d} {int(g)}\n" for q, d, g in zip(qids, docs, grades, strict=True))
        return _judgements(scan(as_bytes(lines), QRELS, "qrels"), "qrels")


def _lines(columns: Columns, rows: np.ndarray) -> str:
    numbers = [str(n) for n in columns.line_numbers[rows[:SHOWN]]]
    return ", ".join(numbers) + (f" and {len(rows) - SHOWN} more" if len(rows) > SHOWN else "")


def _run(columns: Columns) -> Run:
    scores = columns.floats(VALUE, "score") if columns.rows else np.zeros(0)
    warnings = []
    nan = np.flatnonzero(np.isnan(scores))
    if len(nan):
        warnings.append(
            f"{columns.source}: {len(nan)} score{'s are' if len(nan) > 1 else ' is'} not a number (nan, lines "
            f"{_lines(columns, nan)}); they sort below every other result, where trec_eval's order is undefined"
        )
        scores = np.where(np.isnan(scores), -np.inf, scores)
    return Run(columns, scores, tuple(warnings))


def read_run(path: Path) -> Run:
    """A TREC run (``qid Q0 doc rank score tag``, extra fields ignored; ``qid doc score`` is read too). A file
    with no result line is refused, as trec_eval refuses it."""
    columns = read_columns(path, RUN)
    if not columns.rows:
        raise VxEvalError(f"run file {path} holds no results (no line but blanks and comments): nothing to score")
    return _run(columns)


def _groups(columns: Columns) -> tuple[np.ndarray, list[str]]:
    """Rows come in stretches of one question id: where each stretch starts, and its id."""
    if not columns.rows:
        return np.zeros(0, dtype=np.int64), []
    starts = np.flatnonzero(~columns.same_as_previous(QID))
    return starts, columns.text(QID, starts)


def _row_questions(columns: Columns, index: dict[str, int]) -> np.ndarray:
    """Each row's question number in `index` (-1 for a question it does not hold)."""
    starts, ids = _groups(columns)
    per_stretch = np.array([index.get(qid, -1) for qid in ids], dtype=np.int64)
    return np.repeat(per_stretch, np.diff(np.concatenate([starts, [columns.rows]])))


HEADER_IDS = {"query-id", "query_id", "qid", "query", "topic"}
HEADER_VALUES = {"score", "relevance", "rel", "grade", "label", "judgement", "judgment"}


def _is_header(qid: str, value: str) -> bool:
    """Whether a first line names the columns (BEIR's ``query-id corpus-id score``) rather than judging."""
    return qid.lower() in HEADER_IDS or value.lower() in HEADER_VALUES


def _judgements(columns: Columns, source: str) -> Judgements:
    if columns.rows and _is_header(columns.text(QID, [0])[0], columns.text(VALUE, [0])[0]):
        columns = columns.select(np.arange(1, columns.rows))  # BEIR's header line: query-id corpus-id score
    if not columns.rows:
        raise GoldenError(f"{source} holds no judgements")
    values = columns.floats(VALUE, "grade")
    if not np.isfinite(values).all():
        bad = np.flatnonzero(~np.isfinite(values))
        raise GoldenError(f"{source}:{columns.line_numbers[bad[0]]}: a grade is a whole number (0 = not relevant)")
    grades = np.trunc(values)  # trec_eval reads grades with atol: 1.5 is 1
    warnings = []
    cut = np.flatnonzero(grades != values)
    if len(cut):
        warnings.append(
            f"{source}: {len(cut)} grade{'s are' if len(cut) > 1 else ' is'} not whole (lines {_lines(columns, cut)}); "
            "read as whole numbers (1.5 as 1), as trec_eval reads them"
        )
    _, ids = _groups(columns)
    order = list(dict.fromkeys(ids))
    rows_question = _row_questions(columns, {qid: i for i, qid in enumerate(order)})
    _refuse_twice(columns, rows_question, "judged", source)
    highest = np.full(len(order), -np.inf)
    np.maximum.at(highest, rows_question, grades)
    below = np.flatnonzero(grades < 0)
    if len(below):  # TREC's mark for a document in the pool nobody judged: its question stays
        warnings.append(
            f"{source}: {len(below)} grade{'s are' if len(below) > 1 else ' is'} below 0 (lines "
            f"{_lines(columns, below)}); read as unjudged, as trec_eval reads them"
        )
        pooled = frozenset(zip(rows_question[below].tolist(), columns.text(DOC, below), strict=True))
        kept = np.flatnonzero(grades >= 0)
        columns, grades, rows_question = columns.select(kept), grades[kept], rows_question[kept]
        return Judgements(columns, grades, order, rows_question, tuple(warnings), pooled, highest)
    return Judgements(columns, grades, order, rows_question, tuple(warnings), highest=highest)


def _refuse_twice(columns: Columns, question: np.ndarray, what: str, source: str, depth: int | None = None) -> None:
    """A document twice for one question is refused (as trec_eval refuses it), naming both lines; `depth`: the
    rows are a run's first results as trec_eval ranks them, cut by -M (it checks only those)."""
    with np.errstate(over="ignore"):
        pair = question * _MIX ^ columns.hashes(DOC)
    order = np.argsort(pair, kind="stable")
    twice = np.flatnonzero(pair[order][1:] == pair[order][:-1])
    if not len(twice):
        return
    first, second = order[twice], order[twice + 1]
    real = same_bytes(columns, DOC, first, columns, DOC, second) & (question[first] == question[second])
    if real.any():
        a, b = int(first[real][0]), int(second[real][0])
        a, b = min(a, b), max(a, b)
        doc, qid = columns.text(DOC, [a])[0], columns.text(QID, [a])[0]
        raise VxEvalError(
            f"{source}:{columns.line_numbers[b]}: document {quoted(doc)} is {what} twice for question "
            f"{quoted(qid)} (lines {columns.line_numbers[a]} and {columns.line_numbers[b]})"
            + (f" within the first {depth} results, which is all -M {depth} reads" if depth is not None else "")
            + '; trec_eval refuses such a file ("duplicate docs"): keep one line'
        )


def read_judgements(path: Path) -> Judgements:
    """TREC qrels (``qid 0 doc grade``), BEIR's ``query-id corpus-id score`` tsv, or a golden JSONL file."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4096).lstrip()
    except FileNotFoundError:
        raise VxEvalError(f"qrels file {path} does not exist") from None
    except IsADirectoryError:
        raise VxEvalError(f"qrels file {path} is a folder, not a file") from None
    except OSError as exc:
        raise VxEvalError(f"qrels file {path} cannot be read ({exc.strerror or exc})") from None
    if head[:1] == b"{":
        from vx_eval.core.golden.files import parse_golden  # lazy: pydantic is paid only where a golden file is read

        questions = parse_golden(path.read_bytes(), str(path)).questions
        rows = [(q.id, d, g) for q in questions for d, g in q.relevance().items()]
        if any(any(c.isspace() for c in f"{q}{d}") for q, d, _ in rows):
            raise VxEvalError(f"{path}: an id holds white space, which a TREC run cannot express")
        return Judgements.of([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
    return _judgements(read_columns(path, QRELS), str(path))


@dataclass(frozen=True)
class Evaluation:
    measures: list[str]
    question_ids: list[str]
    values: np.ndarray  # questions x measures
    warnings: tuple[str, ...] = field(default=())
    """What reading the files noticed (see the module's docstring), for the caller to show."""

    def means(self) -> dict[str, float]:
        if not len(self.values):
            return {m: 0.0 for m in self.measures}
        return {name: metrics.average(metrics.parse(name), self.values[:, j]) for j, name in enumerate(self.measures)}


_MIX = np.int64(0x9E3779B97F4A7C15 - (1 << 64))  # spreads question codes over the 64 bits before mixing


def _trec_order(q: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Lines by question, then score descending; most run files are written so, and are left as they are."""
    if len(q) < 2 or np.all((q[1:] > q[:-1]) | ((q[1:] == q[:-1]) & (score[1:] <= score[:-1]))):
        return np.arange(len(q))
    return np.lexsort((-score, q))


def run_batch(judgements: Judgements, run: Run, threshold: int = 1, depth: int | None = None) -> metrics.Batch:
    """The batch trec_eval scores: each judged question's results, score descending then doc id descending,
    each doc once (a doc listed twice is refused; with `depth`, -M's, only within each question's first
    `depth` results as ranked, as trec_eval checks); questions of the run without judgements are left out."""
    nq = len(judgements.question_ids)
    j_q, j_grade = judgements.rows_question, judgements.grades
    j_doc = judgements.columns.hashes(DOC)
    r_q = _row_questions(run.columns, {qid: i for i, qid in enumerate(judgements.question_ids)})
    r_line = np.flatnonzero(r_q >= 0)
    r_q, r_score = r_q[r_line], run.scores[r_line]
    judged_part = run.columns.select(r_line)
    if depth is None:
        _refuse_twice(judged_part, r_q, "listed", run.columns.source)
    r_doc = judged_part.hashes(DOC) if len(r_line) else np.zeros(0, dtype=np.int64)
    order = _trec_order(r_q, r_score)
    same = (r_q[order][1:] == r_q[order][:-1]) & (r_score[order][1:] == r_score[order][:-1])
    tied = np.zeros(len(order), dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    if tied.any():  # within a tie, order by id descending (as bytes, strcmp's order): sort the ties only
        at = np.flatnonzero(tied)
        names = run.columns.tokens(DOC, r_line[order[at]])
        rank = {name: i for i, name in enumerate(sorted(set(names)))}
        codes = np.fromiter(map(rank.__getitem__, names), dtype=np.int64, count=len(names))
        stretch = np.cumsum(np.concatenate([[True], ~same]))[at]  # which tie each tied entry belongs to
        order[at] = order[at][np.lexsort((-codes, stretch))]
    r_q, r_doc, r_line = r_q[order], r_doc[order], r_line[order]
    with np.errstate(over="ignore"):
        pair = r_q * _MIX ^ r_doc
        j_pair = j_q * _MIX ^ j_doc
    # one sort codes every (question, doc) pair of both files: judged ones get their grade
    _, codes = np.unique(np.concatenate([j_pair, pair]), return_inverse=True)
    j_code, r_code = codes[: len(j_pair)], codes[len(j_pair) :]
    slot = np.full(len(codes), -1, dtype=np.int64)
    slot[j_code] = np.arange(len(j_code))
    matched = slot[r_code]
    is_judged = matched >= 0
    hits = np.flatnonzero(is_judged)  # confirm each match byte for byte: a hash collision never counts
    if len(hits):
        is_judged[hits] = same_bytes(run.columns, DOC, r_line[hits], judgements.columns, DOC, matched[hits])
    grade = np.where(is_judged, j_grade[np.maximum(matched, 0)] if len(j_grade) else 0.0, 0.0)
    length = np.bincount(r_q, minlength=nq)
    rank = np.arange(len(r_q)) - np.concatenate([[0], np.cumsum(length)[:-1]])[r_q]
    if depth is not None:
        read = np.flatnonzero(rank < depth)
        _refuse_twice(run.columns.select(r_line[read]), r_q[read], "listed", run.columns.source, depth)
    width = max(int(length.max(initial=0)), 1)
    grades = np.zeros((nq, width))
    judged = np.zeros((nq, width), dtype=bool)
    grades[r_q, rank] = grade
    judged[r_q, rank] = is_judged
    # the ideal list: every question's positive grades, best first
    positive = j_grade > 0
    p_q, p_g = j_q[positive], j_grade[positive]
    p_order = np.lexsort((-p_g, p_q))
    p_q, p_g = p_q[p_order], p_g[p_order]
    counts = np.bincount(p_q, minlength=nq)
    p_rank = np.arange(len(p_q)) - np.concatenate([[0], np.cumsum(counts)[:-1]])[p_q]
    ideal = np.zeros((nq, max(int(counts.max(initial=0)), 1)))
    ideal[p_q, p_rank] = p_g
    n_rel = np.bincount(j_q[(j_grade >= threshold) & positive], minlength=nq).astype(float)
    rel = (grades >= threshold) & (grades > 0)
    n_judged = np.bincount(j_q, minlength=nq).astype(float)
    pooled = None
    if judgements.pooled:  # what infAP needs: the results in the pool that nobody judged
        pooled = np.zeros((nq, width), dtype=bool)
        docs = run.columns.text(DOC, r_line)
        inside = np.fromiter(
            ((int(q), doc) in judgements.pooled for q, doc in zip(r_q, docs, strict=True)), bool, len(r_q)
        )
        pooled[r_q[inside], rank[inside]] = True
    return metrics.Batch(grades, judged, rel, ideal, n_rel, length, length, threshold, n_judged=n_judged, pooled=pooled)


@dataclass(frozen=True)
class Scores:
    """Every judged question's values (questions x measures), results and relevant results returned."""

    values: np.ndarray
    num_ret: np.ndarray
    num_rel_ret: np.ndarray
    warnings: tuple[str, ...]
    texts: dict[int, list[str]] = field(default_factory=dict)
    """trec_eval's relstring of each question, by its length (those asked for)."""
    answered: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    """Whether the run holds results for each question, before -M or -J took any away (trec_eval without -c
    averages over these, one that -J leaves empty included)."""


@dataclass(frozen=True)
class Shape:
    """What trec_eval does to each question's list before measuring it: -M cuts it to its first results,
    then -J keeps only its judged results (relevant or not), the rest moving up; -N gives the collection's
    size (what utility's fourth coefficient counts from)."""

    max_per_query: int | None = None
    judged_only: bool = False
    documents: int = 0

    @property
    def changes(self) -> bool:
        return self.max_per_query is not None or self.judged_only or bool(self.documents)

    def applied(self, batch: metrics.Batch) -> metrics.Batch:
        if self.max_per_query is not None:
            batch = batch.cut(self.max_per_query)
        if self.documents:
            batch = dataclasses.replace(batch, documents=self.documents)
        return metrics.condensed(batch) if self.judged_only else batch


def score(
    judgements: Judgements,
    run: Run | Path,
    measures: Sequence[metrics.Measure],
    threshold: int,
    shape: Shape | None = None,
    strings: Sequence[int] = (),
    *,
    refuse_apart: bool = True,
) -> Scores:
    """The run scored against the judgements: a run file streamed in chunks of whole questions
    (`core.trec.stream`) where it can be, else read whole and checked line by line (`read_run`). `shape`:
    each question's list cut (-M) or taken to its judged results (-J) before anything is measured;
    `strings`: the lengths of the relstrings wanted. A run that answers none of the judged questions is refused
    unless `refuse_apart` is False (trec_eval -c scores it: every question 0)."""
    shape = shape or Shape()
    pooled = judgements.pooled and (strings or any(_reads_pool(m) for m in measures))  # not streamed
    if isinstance(run, Path) and not (shape.changes or pooled):
        try:
            judged = trecstream.judged_of(
                judgements.columns, judgements.grades, judgements.rows_question, judgements.question_ids, threshold
            )
            streamed = trecstream.score_stream(run, judged, list(measures), threshold, strings)
            answered = streamed.num_ret > 0
            if refuse_apart:
                _refuse_apart(judgements, run, answered)
            warnings = judgements.warnings
            return Scores(streamed.values, streamed.num_ret, streamed.num_rel_ret, warnings, streamed.texts, answered)
        except (ImportError, trecstream.Unstreamable):
            pass  # read whole below
    if isinstance(run, Path):
        run = read_run(run)
    whole = run_batch(judgements, run, threshold, shape.max_per_query)
    if refuse_apart:
        _refuse_apart(judgements, run, whole.length > 0)
    batch = shape.applied(whole)
    values = np.column_stack([m.compute(batch) for m in measures]) if measures else np.zeros((len(batch.n_rel), 0))
    texts = {n: relevance_strings(batch, n) for n in strings}
    warnings = judgements.warnings + run.warnings
    return Scores(values, batch.length, batch.hit.sum(axis=1), warnings, texts, whole.length > 0)


def _reads_pool(measure: metrics.Measure) -> bool:
    """Whether a measure tells results graded below 0 from those never judged: infAP, and a gain given to
    trec_eval's level -2 (``ndcg.-2=1``)."""
    if measure.definition.name == "infap":
        return True
    return measure.definition.name in ("ndcg_gains", "dcg_gains") and bool(
        re.search(r"(^|,)\s*-2\s*=", measure.values or "")
    )


def _refuse_apart(judgements: Judgements, run: Run | Path, answered: np.ndarray) -> None:
    """A run that answers none of the judged questions is refused: every number would be 0, and it is
    nearly always a run of another track, or qrels whose ids are written otherwise."""
    if answered.any() or not len(answered):
        return
    run = run if isinstance(run, Run) else read_run(run)
    asked = list(dict.fromkeys(_groups(run.columns)[1]))
    raise VxEvalError(
        f"{run.columns.source} answers none of the {len(judgements.question_ids)} judged questions: the run asks "
        f"{_some(asked)}, the qrels judge {_some(judgements.question_ids)}; are they of the same track?"
    )


def _some(ids: Sequence[str]) -> str:
    shown = ", ".join(quoted(i) for i in ids[:3])
    return shown + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")


def evaluate_run(
    judgements: Judgements,
    run: Run | Path,
    measure_names: Sequence[str] = DEFAULT_MEASURES,
    *,
    threshold: int = 1,
    shape: Shape | None = None,
) -> Evaluation:
    """Every judged question scored (one without results scores 0), as ``trec_eval -c``. Measure names may be
    vx-eval's (``ndcg@10``) or trec_eval's own (``ndcg_cut.10``, ``P.5,10``, ``success``); `run` a run read
    already or a run file's path (streamed)."""
    measures = [metrics.parse(name) for name in expand_trec(measure_names)]
    scored = score(judgements, run, measures, threshold, shape)
    return Evaluation([m.name for m in measures], judgements.question_ids, scored.values, scored.warnings)
