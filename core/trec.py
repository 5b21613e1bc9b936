"""`vx-eval eval`: score a TREC run file against TREC qrels or a golden file, as ``trec_eval -c`` does.

Files are read into flat columns and arranged into a `metrics.Batch` with numpy: document ids are coded by
their sorted order, so trec_eval's order (score descending, then id descending) is one numeric sort. A
million-line run is scored in about the time it takes to read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vx_eval.core import metrics
from vx_eval.core.errors import GoldenError, VxEvalError
from vx_eval.core.golden import parse_golden

DEFAULT_MEASURES = ("ndcg@10", "map", "recall@100", "mrr", "p@10")


@dataclass(frozen=True)
class Run:
    """A TREC run as parallel columns, one entry per line."""

    qids: list[str]
    docs: list[str]
    scores: np.ndarray


@dataclass(frozen=True)
class Judgements:
    """Judged (question, document, grade) triples, questions in first-seen order."""

    question_ids: list[str]
    qids: list[str]
    docs: list[str]
    grades: np.ndarray


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise VxEvalError(f"{what} {path} does not exist") from None
    except IsADirectoryError:
        raise VxEvalError(f"{what} {path} is a folder, not a file") from None
    except UnicodeDecodeError as exc:
        raise VxEvalError(f"{what} {path} is not UTF-8 text ({exc.reason})") from None


def _columns(path: Path, text: str, widths: dict[int, tuple[int, ...]], shape: str) -> tuple[int, list[str]]:
    """Whitespace-separated columns, every line the same width; the first bad line is named."""
    tokens = text.split()
    lines = text.count("\n") + (not text.endswith("\n"))
    if not any(len(tokens) == w * lines for w in widths):  # blank lines: count the lines that hold something
        lines = sum(1 for line in text.splitlines() if line.strip())
    for width in widths:
        if len(tokens) == width * lines:
            return width, tokens
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip() and len(line.split()) not in widths:
            raise VxEvalError(f"{path}:{number}: expected '{shape}' ({len(line.split())} fields)")
    raise VxEvalError(f"{path}: lines of different widths; write '{shape}' on every line")


def _floats(path: Path, values: list[str], what: str) -> np.ndarray:
    try:
        return np.fromiter(map(float, values), dtype=float, count=len(values))
    except ValueError:
        for number, value in enumerate(values, start=1):
            try:
                float(value)
            except ValueError:
                raise VxEvalError(f"{path}:{number}: {what} '{value}' is not a number") from None
        raise


def read_run(path: Path) -> Run:
    """A TREC run (``qid Q0 doc rank score tag``; ``qid doc score`` is read too)."""
    text = _read_text(path, "run file")
    width, tokens = _columns(path, text, {6: (), 3: ()}, "qid Q0 doc rank score tag")
    q, d, s = (0, 2, 4) if width == 6 else (0, 1, 2)
    return Run(tokens[q::width], tokens[d::width], _floats(path, tokens[s::width], "score"))


def read_judgements(path: Path) -> Judgements:
    """TREC qrels (``qid 0 doc grade``), BEIR's ``query-id corpus-id score`` tsv, or a golden JSONL file."""
    text = _read_text(path, "qrels file")
    if text.lstrip()[:1] == "{":
        questions = parse_golden(text.encode("utf-8"), str(path)).questions
        rows = [(q.id, d, g) for q in questions for d, g in q.relevance().items()]
        return Judgements([q.id for q in questions], *_unzip(rows))
    first = text.split("\n", 1)[0].split()
    if first and not first[-1].lstrip("-").isdigit():  # BEIR's header line
        text = text.split("\n", 1)[1] if "\n" in text else ""
    width, tokens = _columns(path, text, {4: (), 3: ()}, "qid 0 doc grade")
    qids, docs = tokens[0::width], tokens[width - 2 :: width]
    grades = _floats(path, tokens[width - 1 :: width], "grade")
    if not qids:
        raise GoldenError(f"{path} holds no judgements")
    return Judgements(list(dict.fromkeys(qids)), qids, docs, grades)


def _unzip(rows: list[tuple[str, str, int]]) -> tuple[list[str], list[str], np.ndarray]:
    return [r[0] for r in rows], [r[1] for r in rows], np.array([r[2] for r in rows], dtype=float)


def _hashes(values: list[str]) -> np.ndarray:
    return np.fromiter(map(hash, values), dtype=np.int64, count=len(values))


_MIX = np.int64(0x9E3779B97F4A7C15 - (1 << 64))  # spreads question codes over the 64 bits before mixing


def _trec_order(q: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Lines by question, then score descending; most run files are written so, and are left as they are."""
    if len(q) < 2 or np.all((q[1:] > q[:-1]) | ((q[1:] == q[:-1]) & (score[1:] <= score[:-1]))):
        return np.arange(len(q))
    return np.lexsort((-score, q))


def _question_codes(index: dict[str, int], qids: list[str]) -> np.ndarray:
    """Each line's question index (-1 for a question without judgements); lines come in runs of one qid, so
    only the first line of each run is looked up."""
    if not qids:
        return np.zeros(0, dtype=np.int64)
    h = _hashes(qids)
    starts = np.concatenate([[0], np.flatnonzero(h[1:] != h[:-1]) + 1])
    looked_up = np.fromiter((index.get(qids[i], -1) for i in starts), dtype=np.int64, count=len(starts))
    return np.repeat(looked_up, np.diff(np.concatenate([starts, [len(qids)]])))


@dataclass(frozen=True)
class Evaluation:
    measures: list[str]
    question_ids: list[str]
    values: np.ndarray  # questions x measures

    def means(self) -> dict[str, float]:
        if not len(self.values):
            return {m: 0.0 for m in self.measures}
        return {m: float(v) for m, v in zip(self.measures, np.nanmean(self.values, axis=0), strict=True)}


def run_batch(judgements: Judgements, run: Run, threshold: int = 1) -> metrics.Batch:
    """The batch trec_eval scores: each judged question's results, score descending then doc id descending,
    each doc once; questions of the run without judgements are left out.

    Documents are matched by their 64-bit hashes (every match is then confirmed on the ids themselves); ids
    are compared as text only where scores tie, to order them as trec_eval does.
    """
    nq = len(judgements.question_ids)
    questions = {qid: i for i, qid in enumerate(judgements.question_ids)}
    j_q = _question_codes(questions, judgements.qids)
    j_doc = _hashes(judgements.docs)
    j_grade = judgements.grades
    r_q = _question_codes(questions, run.qids)
    r_line = np.flatnonzero(r_q >= 0)
    r_q, r_score, r_doc = r_q[r_line], run.scores[r_line], _hashes(run.docs)[r_line]
    order = _trec_order(r_q, r_score)
    tied = np.zeros(len(order), dtype=bool)
    same = (r_q[order][1:] == r_q[order][:-1]) & (r_score[order][1:] == r_score[order][:-1])
    tied[1:] |= same
    tied[:-1] |= same
    if tied.any():  # within a tie, order by id descending: sort the tied stretches only
        at = np.flatnonzero(tied)
        names = [run.docs[i] for i in r_line[order[at]]]
        rank = {name: i for i, name in enumerate(sorted(set(names)))}
        codes = np.fromiter(map(rank.__getitem__, names), dtype=np.int64, count=len(names))
        stretch = np.cumsum(np.concatenate([[True], ~same]))[at]  # which tie each tied entry belongs to
        order[at] = order[at][np.lexsort((-codes, stretch))]
    r_q, r_doc, r_line = r_q[order], r_doc[order], r_line[order]
    with np.errstate(over="ignore"):
        pair = r_q * _MIX ^ r_doc
        j_pair = j_q * _MIX ^ j_doc
    # one sort codes every (question, doc) pair of both files: the judged ones get their grade, and a doc
    # the run lists twice for a question is seen by its count
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
    hits = np.flatnonzero(is_judged)  # confirm each match on the ids: a hash collision never counts
    for i in hits[[run.docs[r_line[h]] != judgements.docs[matched[h]] for h in hits]]:
        is_judged[i] = False
    grade = np.where(is_judged, j_grade[matched], 0.0)
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
