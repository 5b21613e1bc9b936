"""`vx-eval eval`: score a TREC run file against TREC qrels or a golden file, as ``trec_eval -c`` does.

Both files are read as byte columns (`core.columns`) and arranged into a `metrics.Batch` with numpy:
documents are matched by 64-bit hashes and every match is confirmed byte for byte; ids are compared as
text only where scores tie, to order those results as trec_eval does (id descending).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vx_eval.core import metrics
from vx_eval.core.columns import Columns, read_columns, scan
from vx_eval.core.errors import GoldenError, VxEvalError

DEFAULT_MEASURES = ("ndcg@10", "map", "recall@100", "mrr", "p@10")
RUN_SHAPE = "qid Q0 doc rank score tag"
QRELS_SHAPE = "qid 0 doc grade"


@dataclass(frozen=True)
class Run:
    """A TREC run: its columns, and which of them hold the question, the document and the score."""

    columns: Columns
    qid: int
    doc: int
    scores: np.ndarray

    @classmethod
    def of(cls, qids: Sequence[str], docs: Sequence[str], scores: Sequence[float]) -> Run:
        lines = "".join(f"{q} Q0 {d} 0 {s!r} run\n" for q, d, s in zip(qids, docs, scores, strict=True))
        return _run(scan(lines.encode(), (6, 3), RUN_SHAPE, "run"))


@dataclass(frozen=True)
class Judgements:
    """Judged (question, document, grade) rows; questions in first-seen order."""

    columns: Columns
    qid: int
    doc: int
    grades: np.ndarray
    question_ids: list[str]
    rows_question: np.ndarray  # each row's index into question_ids

    @classmethod
    def of(cls, qids: Sequence[str], docs: Sequence[str], grades: Sequence[float]) -> Judgements:
        lines = "".join(f"{q} 0 {d} {int(g)}\n" for q, d, g in zip(qids, docs, grades, strict=True))
        return _judgements(scan(lines.encode(), (4, 3), QRELS_SHAPE, "qrels"), "qrels")


def _run(columns: Columns) -> Run:
    q, d, s = (0, 2, 4) if columns.starts.shape[1] == 6 else (0, 1, 2)
    return Run(columns, q, d, columns.floats(s, "score") if columns.rows else np.zeros(0))


def read_run(path: Path) -> Run:
    """A TREC run (``qid Q0 doc rank score tag``; ``qid doc score`` is read too)."""
    return _run(read_columns(path, (6, 3), RUN_SHAPE, "run file"))


def _groups(columns: Columns, column: int) -> tuple[np.ndarray, list[str]]:
    """Rows come in stretches of one question id: where each stretch starts, and its id."""
    if not columns.rows:
        return np.zeros(0, dtype=np.int64), []
    starts = np.flatnonzero(~columns.same_as_previous(column))
    return starts, columns.text(column, starts)


def _judgements(columns: Columns, source: str) -> Judgements:
    if not columns.rows:
        raise GoldenError(f"{source} holds no judgements")
    width = columns.starts.shape[1]
    q, d, g = (0, 2, 3) if width == 4 else (0, 1, 2)
    first_grade = columns.text(g, [0])[0]
    if not first_grade.lstrip("-").isdigit():  # BEIR's header line: query-id corpus-id score
        columns = Columns(
            columns.raw, columns.data, columns.starts[1:], columns.ends[1:], columns.source, columns.line_numbers[1:]
        )
        if not columns.rows:
            raise GoldenError(f"{source} holds no judgements")
    grades = columns.floats(g, "grade")
    starts, ids = _groups(columns, q)
    order = list(dict.fromkeys(ids))
    index = {qid: i for i, qid in enumerate(order)}
    per_stretch = np.array([index[qid] for qid in ids], dtype=np.int64)
    rows_question = np.repeat(per_stretch, np.diff(np.concatenate([starts, [columns.rows]])))
    return Judgements(columns, q, d, grades, order, rows_question)


def read_judgements(path: Path) -> Judgements:
    """TREC qrels (``qid 0 doc grade``), BEIR's ``query-id corpus-id score`` tsv, or a golden JSONL file."""
    try:
        head = path.read_bytes()[:4096].lstrip()
    except FileNotFoundError:
        raise VxEvalError(f"qrels file {path} does not exist") from None
    except IsADirectoryError:
        raise VxEvalError(f"qrels file {path} is a folder, not a file") from None
    if head[:1] == b"{":
        from vx_eval.core.golden import parse_golden  # pydantic is only paid for where a golden file is read

        questions = parse_golden(path.read_bytes(), str(path)).questions
        rows = [(q.id, d, g) for q in questions for d, g in q.relevance().items()]
        if any(any(c.isspace() for c in f"{q}{d}") for q, d, _ in rows):
            raise VxEvalError(f"{path}: an id holds white space, which a TREC run cannot express")
        judgements = Judgements.of([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
        return judgements
    return _judgements(read_columns(path, (4, 3), QRELS_SHAPE, "qrels file"), str(path))


@dataclass(frozen=True)
class Evaluation:
    measures: list[str]
    question_ids: list[str]
    values: np.ndarray  # questions x measures

    def means(self) -> dict[str, float]:
        if not len(self.values):
            return {m: 0.0 for m in self.measures}
        return {m: float(v) for m, v in zip(self.measures, np.nanmean(self.values, axis=0), strict=True)}


_MIX = np.int64(0x9E3779B97F4A7C15 - (1 << 64))  # spreads question codes over the 64 bits before mixing


def _trec_order(q: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Lines by question, then score descending; most run files are written so, and are left as they are."""
    if len(q) < 2 or np.all((q[1:] > q[:-1]) | ((q[1:] == q[:-1]) & (score[1:] <= score[:-1]))):
        return np.arange(len(q))
    return np.lexsort((-score, q))


def _same_tokens(a: Columns, a_col: int, a_rows: np.ndarray, b: Columns, b_col: int, b_rows: np.ndarray) -> np.ndarray:
    """Row by row, whether two tokens are the same bytes."""
    ma, la = a.matrix(a_col, a_rows)
    mb, lb = b.matrix(b_col, b_rows)
    width = max(ma.shape[1], mb.shape[1])
    ma = np.pad(ma, ((0, 0), (0, width - ma.shape[1])))
    mb = np.pad(mb, ((0, 0), (0, width - mb.shape[1])))
    return (la == lb) & (ma == mb).all(axis=1)


def run_batch(judgements: Judgements, run: Run, threshold: int = 1) -> metrics.Batch:
    """The batch trec_eval scores: each judged question's results, score descending then doc id descending,
    each doc once; questions of the run without judgements are left out."""
    nq = len(judgements.question_ids)
    index = {qid: i for i, qid in enumerate(judgements.question_ids)}
    j_q, j_grade = judgements.rows_question, judgements.grades
    j_doc = judgements.columns.hashes(judgements.doc)
    starts, ids = _groups(run.columns, run.qid)
    per_stretch = np.array([index.get(qid, -1) for qid in ids], dtype=np.int64)
    r_q = np.repeat(per_stretch, np.diff(np.concatenate([starts, [run.columns.rows]])))
    r_line = np.flatnonzero(r_q >= 0)
    r_q, r_score = r_q[r_line], run.scores[r_line]
    r_doc = run.columns.hashes(run.doc)[r_line] if len(r_line) else np.zeros(0, dtype=np.int64)
    order = _trec_order(r_q, r_score)
    same = (r_q[order][1:] == r_q[order][:-1]) & (r_score[order][1:] == r_score[order][:-1])
    tied = np.zeros(len(order), dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    if tied.any():  # within a tie, order by id descending: sort the tied stretches only
        at = np.flatnonzero(tied)
        names = run.columns.text(run.doc, r_line[order[at]])
        rank = {name: i for i, name in enumerate(sorted(set(names)))}
        codes = np.fromiter(map(rank.__getitem__, names), dtype=np.int64, count=len(names))
        stretch = np.cumsum(np.concatenate([[True], ~same]))[at]  # which tie each tied entry belongs to
        order[at] = order[at][np.lexsort((-codes, stretch))]
    r_q, r_doc, r_line = r_q[order], r_doc[order], r_line[order]
    with np.errstate(over="ignore"):
        pair = r_q * _MIX ^ r_doc
        j_pair = j_q * _MIX ^ j_doc
    # one sort codes every (question, doc) pair of both files: judged ones get their grade, and a doc the
    # run lists twice for a question shows in the counts
    _, codes = np.unique(np.concatenate([j_pair, pair]), return_inverse=True)
    j_code, r_code = codes[: len(j_pair)], codes[len(j_pair) :]
    if np.bincount(r_code).max(initial=0) > 1:  # keep a doc's first (best) place only
        _, first = np.unique(r_code, return_index=True)
        first.sort()
        r_q, r_line, r_code = r_q[first], r_line[first], r_code[first]
    slot = np.full(len(codes), -1, dtype=np.int64)
    slot[j_code] = np.arange(len(j_code))
    matched = slot[r_code]
    is_judged = matched >= 0
    hits = np.flatnonzero(is_judged)  # confirm each match byte for byte: a hash collision never counts
    if len(hits):
        is_judged[hits] = _same_tokens(
            run.columns, run.doc, r_line[hits], judgements.columns, judgements.doc, matched[hits]
        )
    grade = np.where(is_judged, j_grade[np.maximum(matched, 0)] if len(j_grade) else 0.0, 0.0)
    length = np.bincount(r_q, minlength=nq)
    rank = np.arange(len(r_q)) - np.concatenate([[0], np.cumsum(length)[:-1]])[r_q]
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
    return metrics.Batch(grades, judged, rel, ideal, n_rel, length, length, threshold)


def evaluate_run(
    judgements: Judgements, run: Run, measure_names: Sequence[str] = DEFAULT_MEASURES, *, threshold: int = 1
) -> Evaluation:
    """Every judged question scored (one without results scores 0), as ``trec_eval -c``."""
    measures = [metrics.parse(name) for name in measure_names]
    batch = run_batch(judgements, run, threshold)
    values = np.column_stack([m.compute(batch) for m in measures])
    return Evaluation([m.name for m in measures], judgements.question_ids, values)
