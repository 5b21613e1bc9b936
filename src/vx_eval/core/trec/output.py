"""What trec_eval prints: its names (``P_5``, ``ndcg_cut_10``), its measure order, questions sorted, its line
layout (``%-22s\\t%s\\t%.4f``, counts as whole numbers), per question then ``all``; with ``-Z`` every value as
a z-score against a reference file's means and deviations. The measures themselves come from `core.trec.files`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vx_eval.core.errors import VxEvalError, quoted
from vx_eval.core.measures import metrics
from vx_eval.core.measures.batch import in_order
from vx_eval.core.measures.trec_only import IPREC_LEVELS
from vx_eval.core.trec.columns import as_bytes
from vx_eval.core.trec.files import DEFAULT_MEASURES, Judgements, Run, Shape, score
from vx_eval.core.trec.groups import JG_MEASURES, JudgementGroups, jg_measures, jg_values
from vx_eval.core.trec.names import (
    SUMMARY_ONLY,
    TREC_COUNTS,
    TREC_ORDER,
    TREC_OWN,
    expand_sets,
    expand_trec,
    named_once,
    relstrings,
    trec_name,
    trec_place,
    trec_sorted,
)
from vx_eval.core.trec.prefs import COUNTED, PREFS_MEASURES, Preferences, counted, rankings, reads_past_lowest

MISSING_Z = -1000000.0
"""The z-score trec_eval gives a value its reference file has no mean for (its MISSING_ZSCORE_VALUE)."""


@dataclass(frozen=True)
class ZScores:
    """A reference set of runs' mean and standard deviation per (question, measure), read from a file of
    ``qid measure mean stddev`` lines (trec_eval -Z): each value is printed as (value - mean) / stddev."""

    table: dict[tuple[str, str], tuple[float, float]]

    @classmethod
    def read(cls, path: Path) -> ZScores:
        table: dict[tuple[str, str], tuple[float, float]] = {}
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise VxEvalError(f"z-score file {quoted(path, 200)} cannot be read: {exc.strerror or exc}") from None
        for number, line in enumerate(text.splitlines(), 1):
            fields = line.split()
            if not fields:
                continue
            try:
                qid, name, mean, deviation = fields
                table[qid, name] = (float(mean), float(deviation))
            except ValueError:
                raise VxEvalError(
                    f"z-score file {quoted(path, 200)}, line {number}: write 'question measure mean stddev', "
                    f"not {quoted(line, 80)}"
                ) from None
        return cls(table)

    def of(self, qid: str, name: str, value: float) -> float:
        """`value` of measure `name` on question `qid` as trec_eval's z-score: how many deviations from the
        reference mean; 0 where the deviation is 0 and the value the mean; `MISSING_Z` where not known."""
        mean, deviation = self.table.get((qid, name), (0.0, float("nan")))
        if deviation != deviation:  # nan: no reference for it
            return MISSING_Z
        if deviation:
            return (value - mean) / deviation
        return 0.0 if value == mean else MISSING_Z

    def all_of(self, qids: Sequence[str], names: Sequence[str], values: np.ndarray) -> np.ndarray:
        """`values` (questions x measures) as z-scores, question `qids[i]` and measure `names[j]` each."""
        out = np.empty((len(qids), len(names)))
        for i, qid in enumerate(qids):
            for j, name in enumerate(names):
                out[i, j] = self.of(qid, name, float(values[i, j]))
        return out


@dataclass(frozen=True)
class Printing:
    """How trec_eval is asked to print: -q, the run's name, -c, -M/-J/-N and -Z."""

    per_query: bool = False
    runid: str = "run"
    complete: bool = False
    shape: Shape = field(default_factory=Shape)
    zscores: ZScores | None = None
    score_below_zero: bool = False
    """Score a question judged only below 0 where trec_eval 10 cannot (`refuse_below_zero`): it scores 0."""
    answered_only: bool = False
    """Without -c, average over the judged questions the run answers, as trec_eval 9 did; trec_eval 10 (and so
    vx-eval without this) stops at the first judged question the run does not answer."""

    def kept(self, qids: Sequence[str], answered: np.ndarray) -> np.ndarray:
        """The questions trec_eval prints and averages, in its order (strcmp of the ids): with -c every judged
        one; else those the run answers, where it answers them all (or `answered_only`); else refused as
        trec_eval 10 refuses it, naming the first question it would stop at."""
        order = sorted(range(len(qids)), key=lambda i: as_bytes(qids[i]))
        if self.complete:
            return np.array(order, dtype=np.int64)
        missing = [i for i in order if not answered[i]]
        if missing and not self.answered_only:
            first = qids[missing[0]]
            more = (
                f" (and {len(missing) - 1} more judged question{'s' * (len(missing) > 2)})" if len(missing) > 1 else ""
            )
            raise VxEvalError(
                f'the run does not answer judged question {quoted(first)}{more}: trec_eval 10 stops there ("result '
                f"qid '{first}' not found in qrels\", exit 4); add -c to score such questions 0, or --answered-only "
                "to leave them out, as trec_eval 9 did"
            )
        return np.array([i for i in order if answered[i]], dtype=np.int64)


def trec_eval_output(
    judgements: Judgements,
    run: Run | Path,
    names: Sequence[str] = DEFAULT_MEASURES,
    printing: Printing | None = None,
    *,
    threshold: int = 1,
) -> tuple[str, tuple[str, ...]]:
    """What ``trec_eval [-c] [-q] [-Z FILE] -m …`` prints for the same files and measures, and what reading
    the files noticed. With ``printing.complete`` (``-c``) every judged question counts, one without results
    scoring 0; without it, as trec_eval without -c, only the judged questions the run answers."""
    printing = printing or Printing()
    counts, strings, measures = _asked(names)
    shape, zscores = printing.shape, printing.zscores
    lengths = [n for _, n in strings] if printing.per_query else []
    scored = score(judgements, run, measures, threshold, shape, lengths, refuse_apart=not printing.complete)
    values = np.array(scored.values, dtype=float)
    per = {
        "num_ret": np.asarray(scored.num_ret, dtype=np.int64),
        "num_rel": _relevant_counts(judgements, threshold),
        "num_rel_ret": np.asarray(scored.num_rel_ret, dtype=np.int64),
    }
    _as_trec_scores_no_results(measures, values, per, shape)
    emptied = _emptied(measures, values, per, shape)
    qids = judgements.question_ids
    kept = printing.kept(qids, np.asarray(scored.answered, dtype=bool))
    if not printing.score_below_zero:
        refuse_below_zero(judgements, kept)
    trec = [trec_name(m) or m.name for m in measures]
    per_z = None
    if zscores is not None:
        per_z = {c: zscores.all_of(qids, [c], per[c][:, None])[:, 0] for c in per}
        values = zscores.all_of(qids, trec, _as_kept_by_trec_eval(measures, values))
    table = _Table(qids, kept, per, per_z, values, measures, trec, counts, "Z" if zscores is not None else "")
    lines: list[str] = []
    if printing.per_query:
        lines += _question_lines(table, [(name, scored.texts[n]) for name, n in strings])
    lines += _summary_lines(table, printing, judgements)
    return "\n".join(lines) + "\n", scored.warnings + emptied


def refuse_below_zero(judgements: Judgements, kept: np.ndarray) -> None:
    """Refused where trec_eval 10 cannot score a question judged only below 0 (its ``form_res_rels.c`` sizes
    a table by the question's highest grade + 1): with a highest grade of -1 it stops ("Can't calculate
    measure", exit 4) unless a question it scored before left a table to reuse; lower, it stops or crashes."""
    highest = judgements.highest
    if highest is None:
        return
    reusable = False
    for i in kept:
        if highest[i] >= 0:
            reusable = True
        elif highest[i] < -1 or not reusable:
            qid = judgements.question_ids[i]
            raise VxEvalError(
                f"question {quoted(qid)} is judged only below 0 (its highest grade is {highest[i]:g}): trec_eval 10 "
                'cannot score it here (it stops with "Can\'t calculate measure", exit 4, or crashes); add '
                "--score-below-zero to score it 0, or leave its lines out"
            )


def _asked(names: Sequence[str]) -> tuple[list[str], list[tuple[str, int]], list[metrics.Measure]]:
    """The counts (num_ret, …), the relstrings and the measures `names` ask for, each once in trec_eval's
    order; a measure trec_eval has no name for is refused."""
    wanted, strings = relstrings([TREC_OWN.get(n, n) for n in expand_trec(expand_sets(names))])
    counts = [c for c in TREC_COUNTS if c in {n.lower() for n in wanted}]
    parsed = [metrics.parse(n) for n in wanted if n.lower() not in TREC_COUNTS]
    measures = trec_sorted(list({m.name: m for m in parsed}.values()))
    missing = [m.name for m in measures if trec_name(m) is None]
    if missing:
        raise VxEvalError(
            f"{', '.join(missing)} has no trec_eval name; leave out --trec-format, or ask for measures trec_eval "
            "has (success, recip_rank, P, recall, map, gm_map, map_cut, ndcg, ndcg_cut, Rprec, bpref, "
            "iprec_at_recall, or the sets official and all_trec)"
        )
    return counts, strings, measures


@dataclass(frozen=True)
class _Table:
    """What trec_eval's lines are printed from: the questions printed (`kept`, in its order), the counts per
    question (`per`, and their z-scores), each measure's value per question, and the ``Z`` prefix of -Z."""

    qids: Sequence[str]
    kept: np.ndarray
    per: dict[str, np.ndarray]
    per_z: dict[str, np.ndarray] | None
    values: np.ndarray
    measures: list[metrics.Measure]
    trec: list[str]
    counts: list[str]
    z: str


def _question_lines(table: _Table, texts: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    """``-q``: each question's counts and measures, the relstrings where trec_eval's measure table has them."""
    at = sum(
        1
        for m in table.measures
        if trec_place(m)[0] < TREC_ORDER.index("relstring") and m.definition.name not in SUMMARY_ONLY
    )
    counted = [c for c in table.counts if c in table.per]
    lines: list[str] = []
    for i in table.kept:
        qid = table.qids[i]
        if table.per_z is not None:
            lines += [f"Z{c:<22}\t{qid}\t{table.per_z[c][i]:.4f}" for c in counted]
        else:
            lines += [f"{c:<22}\t{qid}\t{table.per[c][i]}" for c in counted]
        mine = [
            f"{table.z}{table.trec[j]:<22}\t{qid}\t{_shown(table.values[i, j], _counts(m), table.z)}"
            for j, m in enumerate(table.measures)
            if m.definition.name not in SUMMARY_ONLY
        ]
        lines += [*mine[:at], *(f"{name:<22}\t{qid}\t'{text[i]}'" for name, text in texts), *mine[at:]]
    return lines


def _as_kept_by_trec_eval(measures: Sequence[metrics.Measure], values: np.ndarray) -> np.ndarray:
    """The values as trec_eval keeps them per question before -Z converts them: a geometric measure's (gm_map,
    gm_bpref) as the log of its value, at least `MIN_GEO_MEAN`'s; its average is then exp of the z-scores' mean."""
    kept = values.copy()
    for j, m in enumerate(measures):
        if m.definition.average == "geometric":
            kept[:, j] = np.log(np.maximum(kept[:, j], metrics.MIN_GEO_MEAN))
    return kept


def _average(m: metrics.Measure, column: np.ndarray, z: str) -> float:
    """One measure's ``all`` value as trec_eval averages it; under -Z a geometric one is exp of the mean of its
    questions' z-scores (those of the logs: `_as_kept_by_trec_eval`)."""
    if np.isnan(column).any():
        return float("nan")  # trec_eval's averages carry a -nan through (-J's empty lists)
    if not len(column):
        return 0.0
    if z and m.definition.average == "geometric":
        return float(np.exp(in_order(column) / len(column)))
    return metrics.average(m, column)


def _summary_lines(table: _Table, printing: Printing, judgements: Judgements) -> list[str]:
    """The ``all`` lines: the counts summed, then each measure averaged as trec_eval averages it."""
    kept, z = table.kept, table.z
    totals: dict[str, object] = {
        "runid": printing.runid,
        "num_q": len(kept),
        **{c: int(v[kept].sum()) for c, v in table.per.items()},
        # with -c, trec_eval's summary num_rel counts every grade above 0 in the qrels, whatever -l says (its
        # per-question lines follow -l); without -c it sums the per-question lines: the same here
        **({"num_rel": int((judgements.grades > 0).sum())} if printing.complete else {}),
    }
    if table.per_z is not None:
        totals |= {"num_q": f"{len(kept):.4f}", **{c: f"{v[kept].sum():.4f}" for c, v in table.per_z.items()}}
        if printing.complete:  # trec_eval -c counts it again from the qrels, as a raw count: no z-score
            totals["num_rel"] = f"{int((judgements.grades > 0).sum()):.4f}"
    lines = [f"{z if c != 'runid' else ''}{c:<22}\tall\t{totals[c.lower()]}" for c in table.counts]
    for j, m in enumerate(table.measures):
        mean = _average(m, table.values[kept, j], z)
        lines.append(f"{z}{table.trec[j]:<22}\tall\t{_shown(mean, _counts(m), z)}")
    return lines


def _emptied(
    measures: Sequence[metrics.Measure], values: np.ndarray, per: dict[str, np.ndarray], shape: Shape
) -> tuple[str, ...]:
    """Where -J leaves a question no results, trec_eval's iprec_at_recall and 11pt_avg divide 0 by 0 (its
    precision of an empty list) at every level that rounds to 0 relevant documents (``lround(level * R)``;
    level 0 always), and print -nan, as does every average over such a question: the same here, and said."""
    if not shape.judged_only:
        return ()
    empty = per["num_ret"] == 0
    relevant = per["num_rel"].astype(float)
    touched = np.zeros(len(empty), dtype=bool)
    for j, m in enumerate(measures):
        if m.definition.name == "iprec":
            levels: Sequence[float] = [m.param or 0.0]
        elif m.definition.name == "iprec_avg":
            read = m.definition.values
            levels = read(m.values) if m.values is not None and read is not None else IPREC_LEVELS
        else:
            continue
        rounded = [np.floor(level * relevant + 0.5) == 0 for level in levels]  # lround, levels and R >= 0
        undefined = empty & np.logical_or.reduce(rounded)
        values[undefined, j] = np.nan
        touched |= undefined
    if not touched.any():
        return ()
    return (
        f"-J leaves {int(touched.sum())} question{'s' * (int(touched.sum()) != 1)} without results: their "
        "iprec_at_recall and 11pt_avg divide 0 by 0 and print -nan, as trec_eval's do, and so do their averages",
    )


def _as_trec_scores_no_results(
    measures: Sequence[metrics.Measure], values: np.ndarray, per: dict[str, np.ndarray], shape: Shape
) -> None:
    """trec_eval -c scores a judged question the run does not answer as a list of one unjudged document, then
    zeroes utility (by that name alone, its default weights); utility with weights given keeps what that
    list scores (one non-relevant retrieved: ``utility.1,2,3,4 -N 5000`` is 2 + 3R + 4(4999 - R))."""
    empty = per["num_ret"] == 0
    for j, m in enumerate(measures):
        if m.definition.name != "utility":
            continue
        if m.values is None:
            values[empty, j] = 0.0
        else:
            w = m.definition.values(m.values) if m.definition.values else (1.0, -1.0, 0.0, 0.0)
            rel = per["num_rel"][empty].astype(float)
            values[empty, j] = w[1] + w[2] * rel + w[3] * (shape.documents - 1 - rel)


def _counts(measure: metrics.Measure) -> bool:
    """Whether a measure counts (summed over the questions, not averaged)."""
    return measure.definition.average == "sum"


def _shown(value: float, count: bool, z: str = "") -> str:
    """A value as trec_eval prints it: a count as a whole number, else (and every z-score) four places; 0/0
    as C's printf writes it (``%6.4f``: ``  -nan``)."""
    if value != value:
        return "  -nan"
    return str(round(value)) if count and not z else f"{value:.4f}"


def _relevant_counts(judgements: Judgements, threshold: int) -> np.ndarray:
    """Each judged question's relevant documents at `threshold`."""
    relevant = (judgements.grades >= threshold) & (judgements.grades > 0)
    return np.bincount(judgements.rows_question[relevant], minlength=len(judgements.question_ids)).astype(np.int64)


def run_tag(path: Path) -> str:
    """A run file's name as trec_eval's ``runid`` line gives it: the sixth field of its last line (comments and
    blank lines aside), read from the file's end, so a run of any size costs one block or a few."""
    block = 1 << 16
    with path.open("rb") as handle:
        end = handle.seek(0, 2)
        tail = b""
        while end > 0:
            start = max(0, end - block)
            handle.seek(start)
            tail = handle.read(end - start) + tail
            end = start
            lines = tail.split(b"\n")
            for raw in reversed(lines if start == 0 else lines[1:]):  # the first may be cut: read on
                fields = raw.split()
                if fields and not fields[0].startswith(b"#"):
                    return fields[5].decode("utf-8", "replace") if len(fields) >= 6 else "run"
            tail = lines[0] if start else b""
    return "run"


def table_output(
    printed: Sequence[tuple[str, bool]],
    qids: Sequence[str],
    values: np.ndarray,
    kept: np.ndarray,
    wanted: Sequence[str],
    printing: Printing,
) -> str:
    """trec_eval's lines for measures computed outside the qrels path (preferences, judgement groups):
    `printed` their names with whether each is a count (printed whole, summed); `values` questions x
    measures; `kept` the questions that count; `wanted` the names asked for (runid and num_q print if named)."""
    names = [name for name, _ in printed]
    zscores = printing.zscores
    if zscores is not None:
        values = zscores.all_of(qids, names, values)
    z = "Z" if zscores is not None else ""
    lines: list[str] = []
    if printing.per_query:
        for i in kept:
            lines += [f"{z}{name:<22}\t{qids[i]}\t{_shown(values[i, j], c, z)}" for j, (name, c) in enumerate(printed)]
    asked = {n.lower() for n in wanted}
    if "runid" in asked:
        lines.append(f"{'runid':<22}\tall\t{printing.runid}")
    if "num_q" in asked:
        lines.append(f"{z}{'num_q':<22}\tall\t{len(kept):.4f}" if z else f"{'num_q':<22}\tall\t{len(kept)}")
    for j, (name, count) in enumerate(printed):
        column = values[kept, j]
        total = float(column.sum()) if count else (float(column.mean()) if len(column) else 0.0)
        lines.append(f"{z}{name:<22}\tall\t{_shown(total, count, z)}")
    return "\n".join(lines) + "\n"


def prefs_output(
    preferences: Path, run: Path, names: Sequence[str], printing: Printing, warnings: list[str], *, qrels: bool
) -> str:
    """What ``trec_eval -R prefs`` (or ``-R qrels_prefs`` with `qrels`) prints for these measures; what it
    noticed is added to `warnings`."""

    wanted = expand_sets(names)
    unknown = [n for n in wanted if n not in PREFS_MEASURES and n.lower() not in ("runid", "num_q")]
    if unknown:
        raise VxEvalError(
            f"with -R {'qrels_prefs' if qrels else 'prefs'}, trec_eval computes only its preference measures (the set "
            f"all_prefs: {', '.join(PREFS_MEASURES)}), not {quoted(unknown[0])}"
        )
    chosen = [name for name in PREFS_MEASURES if name in wanted]
    judged = Preferences.read(preferences, qrels=qrels)
    lists = rankings(run, printing.shape.max_per_query)
    qids = list(judged.questions)
    values = np.zeros((len(qids), len(chosen)))
    past: list[str] = []
    for i, qid in enumerate(qids):  # a question's preferences counted once, read by every measure
        ranked = lists.get(qid, [])
        _refuse_listed_twice(run, qid, ranked, printing.shape.max_per_query)
        counts = counted(judged.questions[qid], ranked)
        values[i] = [PREFS_MEASURES[m](counts) for m in chosen]
        if any(m.startswith("prefs_avgjg_Rnonrel") for m in chosen) and reads_past_lowest(counts):
            past.append(qid)
    kept = printing.kept(qids, np.array([q in lists for q in qids], dtype=bool))
    if past:
        warnings.append(
            f"prefs_avgjg_Rnonrel of {', '.join(map(quoted, past[:5]))}{' and more' if len(past) > 5 else ''}: the "
            "lowest level judged holds fewer documents than the relevant ones, which trec_eval reads past the end "
            "of (its value there is whatever its memory holds); vx-eval's counts the documents there are"
        )
    return table_output([(name, name in COUNTED) for name in chosen], qids, values, kept, wanted, printing)


def _refuse_listed_twice(run: Path, qid: str, ranked: Sequence[str], depth: int | None) -> None:
    """A document twice in the results trec_eval reads for a question judged with preferences is refused, as
    it refuses it (within -M's depth only)."""
    if len(set(ranked)) == len(ranked):
        return
    twice = next(doc for doc in ranked if list(ranked).count(doc) > 1)
    raise VxEvalError(
        f"{run}: document {quoted(twice)} is listed twice for question {quoted(qid)}"
        + (f" within its first {depth} results (-M)" if depth else "")
        + '; trec_eval refuses such a file with preferences ("duplicate docs"): keep one line'
    )


def jg_output(qrels: Path, run: Path, names: Sequence[str], printing: Printing, *, threshold: int) -> str:
    """What ``trec_eval -R qrels_jg`` prints for these measures (the set qrels_jg)."""

    wanted = expand_sets(names)
    named = sorted(named_once(wanted), key=lambda n: JG_MEASURES.index(n[0]) if n[0] in JG_MEASURES else -1)
    asked = [f"{base}.{params}" if params else base for base, params in named if base.lower() not in ("runid", "num_q")]
    measures = jg_measures(asked)
    qids, values, answered = jg_values(
        JudgementGroups.read(qrels), run, [m for _, m in measures], threshold, printing.shape
    )
    kept = printing.kept(qids, answered)
    return table_output([(name, False) for name, _ in measures], qids, values, kept, wanted, printing)
