"""trec_eval's judgement groups (``-R qrels_jg``): qrels whose second column names who judged (``qid jg doc
grade``), each group a separate set of judgements of the same question. ``map_avgjg``, ``P_avgjg`` and
``Rprec_mult_avgjg`` score the run against each group's judgements as map, P and Rprec_mult do, then
average over the question's groups, so that a question two people judged counts each person equally."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vx_eval.core.errors import VxEvalError, quoted
from vx_eval.core.measures import metrics
from vx_eval.core.measures.trec_only import RPREC_MULTIPLES
from vx_eval.core.trec.columns import as_bytes
from vx_eval.core.trec.files import Judgements, Run, Shape, read_run, run_batch
from vx_eval.core.trec.names import TREC_CUTOFFS, cutoffs_given, levels_given

JG_MEASURES = ("map_avgjg", "P_avgjg", "Rprec_mult_avgjg")
"""trec_eval's judgement-group measures, in its printing order (its set ``qrels_jg``, with runid and num_q)."""


def judged_lines(path: Path, fields: int, layout: str) -> Iterator[tuple[int, list[str]]]:
    """The lines of a judgement file as (line number, its `fields` fields), as trec_eval reads them: a line
    starting with ``#`` is a comment, a blank line is skipped; any other line must hold `fields` fields."""
    try:
        text = path.read_bytes().decode("utf-8", "surrogateescape")
    except FileNotFoundError:
        raise VxEvalError(f"judgements file {quoted(path, 200)} does not exist") from None
    except OSError as exc:
        raise VxEvalError(f"judgements file {quoted(path, 200)} cannot be read: {exc.strerror or exc}") from None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("#") or not line.strip():
            continue
        parts = line.split()
        if len(parts) != fields:
            raise VxEvalError(f"{path}:{number}: a line holds {fields} fields ({layout}), not {quoted(line, 80)}")
        yield number, parts


@dataclass(frozen=True)
class JudgementGroups:
    """Each judgement group's judgements (``jg`` -> its rows as TREC qrels), and each question's groups."""

    groups: dict[str, Judgements]
    per_question: dict[str, int]

    @classmethod
    def read(cls, path: Path) -> JudgementGroups:
        rows: dict[str, tuple[list[str], list[str], list[float]]] = {}
        for number, (qid, group, doc, grade) in judged_lines(path, 4, "qid jg docno rel"):
            try:
                value = float(int(grade))
            except ValueError:
                raise VxEvalError(f"{path}:{number}: a grade is a whole number, not {quoted(grade)}") from None
            q, d, g = rows.setdefault(group, ([], [], []))
            q.append(qid)
            d.append(doc)
            g.append(value)
        if not rows:
            raise VxEvalError(f"{path} holds no judgements")
        groups = {name: Judgements.of(*columns) for name, columns in rows.items()}
        per_question: dict[str, int] = {}
        for judged in groups.values():
            for qid in judged.question_ids:
                per_question[qid] = per_question.get(qid, 0) + 1
        return cls(groups, per_question)


def jg_measures(names: Sequence[str]) -> list[tuple[str, metrics.Measure]]:
    """trec_eval's judgement-group measures named (``P_avgjg.5,10``, ``Rprec_mult_avgjg``) as (the name it
    prints, the measure each group is scored with)."""
    out: list[tuple[str, metrics.Measure]] = []
    for name in names:
        base, _, params = name.partition(".")
        if base == "map_avgjg":
            out.append(("map_avgjg", metrics.parse("map")))
        elif base == "P_avgjg":
            cutoffs = cutoffs_given(name, params) if params else TREC_CUTOFFS["p"]
            out += [(f"P_avgjg_{k}", metrics.parse(f"p@{k}")) for k in cutoffs]
        elif base == "Rprec_mult_avgjg":
            levels = levels_given(name, params, RPREC_MULTIPLES)
            out += [(f"Rprec_mult_avgjg_{m:.2f}", metrics.parse(f"rprec_mult(m={m:g})")) for m in levels]
        else:
            raise VxEvalError(
                f"with -R qrels_jg, trec_eval computes only its judgement-group measures ({', '.join(JG_MEASURES)}; "
                f"the set qrels_jg), not {quoted(name)}"
            )
    return out


def jg_values(
    groups: JudgementGroups, run: Run | Path, measures: Sequence[metrics.Measure], threshold: int, shape: Shape
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Each judged question (ids sorted as bytes), each measure's mean over the question's groups, and whether
    the run answers it (before -M or -J took any result away)."""
    if isinstance(run, Path):
        run = read_run(run)
    qids = sorted(groups.per_question, key=as_bytes)
    at = {qid: i for i, qid in enumerate(qids)}
    total = np.zeros((len(qids), len(measures)))
    answered = np.zeros(len(qids), dtype=bool)
    for judged in groups.groups.values():
        whole = run_batch(judged, run, threshold, shape.max_per_query)
        batch = shape.applied(whole)
        rows = [at[qid] for qid in judged.question_ids]
        for j, m in enumerate(measures):
            total[rows, j] += m.compute(batch)
        answered[rows] |= whole.length > 0
    counts = np.array([groups.per_question[qid] for qid in qids], dtype=float)
    return qids, total / counts[:, None], answered
