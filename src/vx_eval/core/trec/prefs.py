"""trec_eval's preference judgements (``-R prefs``, ``-R qrels_prefs``) and its fourteen ``prefs_*`` measures,
written from its definitions (``form_prefs_counts.c`` and the ``m_prefs_*.c`` files of trec_eval 10.0).

A preferences file holds ``qid jg jsg docno level`` lines: within a judgement sub-group (jsg) a document at a
higher level is preferred to one at a lower level; the sub-groups of one judgement group (jg, one person)
join into one preference relation, closed under transitivity; groups are separate people. ``-R qrels_prefs``
reads TREC qrels (``qid jg docno grade``) as one sub-group per group. For each pair A > B the run fulfils the
preference when it ranks A above B (A retrieved and B not is fulfilled by implication; B retrieved and A not
fails; neither retrieved "does not occur"); the measures count preferences fulfilled and possible in these
ways (``_ret``: both retrieved only; ``_imp``: at least one retrieved), per pair of documents (``pair``),
per group (``avgjg``), and with each group's non-relevant documents counted as many as its relevant ones
(``avgjg_Rnonrel``, akin to bpref)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vx_eval.core.errors import VxEvalError, quoted
from vx_eval.core.trec.columns import as_bytes
from vx_eval.core.trec.files import DOC, QID, Run, read_run
from vx_eval.core.trec.groups import judged_lines

Line = tuple[str, str, str, float]
"""One judgement: (jg, jsg, docno, level)."""


@dataclass(frozen=True)
class Preferences:
    """Each question's judgements, as (jg, jsg, docno, level) lines."""

    questions: dict[str, list[Line]]

    @classmethod
    def read(cls, path: Path, qrels: bool = False) -> Preferences:
        """A preferences file (``qid jg jsg docno level``), or with `qrels` TREC qrels read as preferences
        (``qid jg docno grade``, one sub-group per group)."""
        questions: dict[str, list[Line]] = {}
        layout = "qid jg docno rel" if qrels else "qid jg jsg docno rel_level"
        for number, parts in judged_lines(path, 4 if qrels else 5, layout):
            qid, jg, jsg, doc, level = (parts[0], parts[1], "0", parts[2], parts[3]) if qrels else parts
            try:
                value = float(level)
            except ValueError:
                raise VxEvalError(f"{path}:{number}: a level is a number, not {quoted(level)}") from None
            questions.setdefault(qid, []).append((jg, jsg, doc, value))
        if not questions:
            raise VxEvalError(f"{path} holds no preferences")
        return cls(questions)


@dataclass
class Group:
    """One judgement group's preferences counted against the run (trec_eval's JG)."""

    fulfilled_ret: int = 0
    possible_ret: int = 0
    fulfilled_imp: int = 0
    possible_imp: int = 0
    possible_notoccur: int = 0
    rel: int = 0
    rel_ret: int = 0
    nonrel: int = 0
    nonrel_ret: int = 0
    classes: list[np.ndarray] | None = None
    """Where the group has one sub-group: its documents' ranks by level, best level first (trec_eval's ECs)."""
    levels: np.ndarray | None = None
    """Where it has several: each document's level (-1: not judged in this group) ..."""
    prefers: np.ndarray | None = None
    """... and the preference matrix, prefers[a, b] for a preferred to b (transitive)."""


@dataclass(frozen=True)
class Counted:
    """A question's preferences counted: its groups, how many documents are judged and how many of those the
    run retrieved (documents are numbered by rank, retrieved ones first), and every group's preferences
    summed per pair (``counts[a, b]``: how many groups prefer a to b)."""

    groups: list[Group]
    judged: int
    judged_ret: int
    counts: np.ndarray


def counted(lines: Sequence[Line], ranking: Sequence[str]) -> Counted:
    """`lines` (one question's judgements) counted against `ranking` (the run's documents, best first)."""
    judged_docs = {doc for _, _, doc, _ in lines}
    retrieved = list(dict.fromkeys(d for d in ranking if d in judged_docs))
    rank = {doc: i for i, doc in enumerate(retrieved)}
    for doc in sorted(judged_docs - rank.keys(), key=as_bytes):  # the rest in docno order, after
        rank[doc] = len(rank)
    n, njr = len(rank), len(retrieved)
    counts = np.zeros((n, n), dtype=np.int64)
    by_group: dict[str, dict[str, list[tuple[float, int]]]] = {}
    for jg, jsg, doc, level in lines:
        by_group.setdefault(jg, {}).setdefault(jsg, []).append((level, rank[doc]))
    groups = []
    for jg in sorted(by_group, key=as_bytes):
        subgroups = by_group[jg]
        if len(subgroups) == 1:
            groups.append(_classes(next(iter(subgroups.values())), njr, counts))
        else:
            groups.append(_matrix([subgroups[s] for s in sorted(subgroups, key=as_bytes)], n, njr, counts, jg))
    return Counted(groups, n, njr, counts)


def _classes(judged: list[tuple[float, int]], njr: int, counts: np.ndarray) -> Group:
    """A group of one sub-group: every document at a higher level is preferred to every one at a lower."""
    levels = sorted({level for level, _ in judged}, reverse=True)
    classes = [np.array(sorted(r for lv, r in judged if lv == level), dtype=np.int64) for level in levels]
    group = Group(classes=classes)
    for level, ranks in zip(levels, classes, strict=True):
        got = int((ranks < njr).sum())
        if level > 0:
            group.rel, group.rel_ret = group.rel + len(ranks), group.rel_ret + got
        else:
            group.nonrel, group.nonrel_ret = group.nonrel + len(ranks), group.nonrel_ret + got
    for i, better in enumerate(classes):
        for worse in classes[i + 1 :]:
            a, b = _cross(better, worse)
            if (a == b).any():
                raise VxEvalError("a document is judged at two levels in one judgement sub-group; keep one line")
            np.add.at(counts, (a, b), 1)
            _tally(group, a, b, njr)
    return group


def _cross(better: np.ndarray, worse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair (a, b) of a document of `better` and one of `worse`, as two flat arrays of ranks."""
    a, b = np.meshgrid(better, worse, indexing="ij")
    return a.ravel(), b.ravel()


def _matrix(subgroups: list[list[tuple[float, int]]], n: int, njr: int, counts: np.ndarray, jg: str) -> Group:
    """A group of several sub-groups: each one's preferences joined, then closed under transitivity."""
    levels = np.full(n, -1.0)
    prefers = np.zeros((n, n), dtype=bool)
    for judged in subgroups:
        for level, r in judged:
            if (levels[r] > 0 and level == 0) or (levels[r] == 0 and level > 0):
                raise VxEvalError(f"judgement group {quoted(jg)} gives one document both level 0 and a level above 0")
            levels[r] = level
        lv = np.array([level for level, _ in judged])
        rk = np.array([r for _, r in judged], dtype=np.int64)
        higher, lower = np.nonzero(lv[:, None] > lv[None, :])
        prefers[rk[higher], rk[lower]] = True
    reach = prefers | np.eye(n, dtype=bool)
    while True:
        wider = (reach.astype(np.int64) @ reach.astype(np.int64)) > 0
        if (wider == reach).all():
            break
        reach = wider
    np.fill_diagonal(reach, False)
    if (reach & reach.T).any():
        raise VxEvalError(
            f"judgement group {quoted(jg)} prefers two documents each to the other; split it in two groups"
        )
    group = Group(levels=levels, prefers=reach)
    retrieved = np.arange(n) < njr
    group.rel, group.rel_ret = int((levels > 0).sum()), int(((levels > 0) & retrieved).sum())
    group.nonrel, group.nonrel_ret = int((levels == 0).sum()), int(((levels == 0) & retrieved).sum())
    a, b = np.nonzero(reach)
    counts[a, b] += 1
    _tally(group, a, b, njr)
    return group


def _tally(group: Group, a: np.ndarray, b: np.ndarray, njr: int) -> None:
    """Count preferences a > b (document ranks) fulfilled and possible, as trec_eval sorts them."""
    kept = a < b
    ful_ret, ful_imp = kept & (b < njr), kept & (b >= njr) & (a < njr)
    failed = ~kept
    group.fulfilled_ret += int(ful_ret.sum())
    group.fulfilled_imp += int(ful_imp.sum())
    group.possible_ret += int(ful_ret.sum() + (failed & (a < njr)).sum())
    group.possible_imp += int(ful_imp.sum() + (failed & (a >= njr) & (b < njr)).sum())
    group.possible_notoccur += int(((a >= njr) & (b >= njr)).sum())


def _ratio(ful: int, poss: int) -> float:
    return ful / poss if poss else float("nan")


def _kind(g: Group, kind: str) -> tuple[int, int]:
    """A group's preferences fulfilled and possible: ``ret`` both documents retrieved, ``imp`` at least one,
    ``all`` any (a pair neither retrieved fulfils none)."""
    if kind == "ret":
        return g.fulfilled_ret, g.possible_ret
    imp = (g.fulfilled_ret + g.fulfilled_imp, g.possible_ret + g.possible_imp)
    return imp if kind == "imp" else (imp[0], imp[1] + g.possible_notoccur)


def _per_group(c: Counted, kind: str) -> float:
    """Fulfilled over possible in each group, averaged over the groups (0 where none is above 0)."""
    total = sum(f / p for f, p in (_kind(g, kind) for g in c.groups) if p)
    return total / len(c.groups) if total > 0 else 0.0


def _simple(c: Counted, kind: str) -> float:
    """Fulfilled over possible, every group's preferences together."""
    counted = [_kind(g, kind) for g in c.groups]
    f, p = sum(f for f, _ in counted), sum(p for _, p in counted)
    return f / p if p else 0.0


def _pairs(c: Counted, areas: int) -> float:
    """The mean over document pairs some group judged of the share of its preferences the run fulfils:
    `areas` 1 both retrieved, 2 at least one, 3 any (a pair neither retrieved fulfils none)."""
    n, njr = c.judged, c.judged_ret
    either = (c.counts > 0) | (c.counts.T > 0)
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    inside = np.arange(n) < njr
    both, one = inside[:, None] & inside[None, :], inside[:, None] & ~inside[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(either, c.counts / (c.counts + c.counts.T), 0.0)
    scored = either & ((upper & both) | (one if areas >= 2 else False))
    pairs = int(scored.sum()) + (int((either & upper & ~inside[:, None] & ~inside[None, :]).sum()) if areas == 3 else 0)
    return float(share[scored].sum()) / pairs if pairs else 0.0


def _rnonrel(c: Counted, retrieved_only: bool) -> float:
    """prefs_avgjg_Rnonrel(_ret): each group's ratio with its non-relevant documents counted as many as its
    relevant ones (fulfilled ones added where it has fewer; only the first R kept where it has more)."""
    total = 0.0
    for g in c.groups:
        rel, nonrel = (g.rel_ret, g.nonrel_ret) if retrieved_only else (g.rel, g.nonrel)
        if rel >= nonrel:
            ful, poss = _kind(g, "ret" if retrieved_only else "all")
            total += _ratio(ful + g.rel_ret * (rel - nonrel), poss + g.rel * (rel - nonrel))
        else:
            total += _ratio(*_recounted(g, c, retrieved_only))
    return total / len(c.groups) if total > 0 else 0.0


def reads_past_lowest(c: Counted) -> bool:
    """Whether trec_eval's prefs_avgjg_Rnonrel reads past the end of a table for this question: a group of
    one sub-group with more non-relevant documents than relevant ones (so it keeps only the first R of its
    lowest level) whose lowest level holds fewer than R (levels below 0 make the lowest level small)."""
    for g in c.groups:
        if g.classes is not None and g.classes and g.rel < g.nonrel and len(g.classes[-1]) < g.rel:
            return True
        if g.classes is not None and g.classes and g.rel_ret < g.nonrel_ret:
            kept = g.classes[-1][g.classes[-1] < c.judged_ret]
            if len(kept) < g.rel_ret:
                return True
    return False


def _recounted(g: Group, c: Counted, retrieved_only: bool) -> tuple[int, int]:
    """A group's preferences counted again with only its first R non-relevant documents (trec_eval's
    recalculate, kept as it counts: in the one-sub-group form, the non-relevant class meets the kept
    non-relevant documents too)."""
    njr = c.judged_ret
    if g.classes is not None:
        classes = [k[k < njr] for k in g.classes] if retrieved_only else g.classes
        kept = classes[-1][: g.rel_ret if retrieved_only else g.rel]
        pairs = [_cross(x, y) for i, x in enumerate(classes) for y in [*classes[i + 1 : -1], kept]]
        a = np.concatenate([a for a, _ in pairs]) if pairs else np.zeros(0, dtype=np.int64)
        b = np.concatenate([b for _, b in pairs]) if pairs else np.zeros(0, dtype=np.int64)
        fulfilled = (a < b) & ((a < njr) | retrieved_only)
        return int(fulfilled.sum()), len(a)
    assert g.levels is not None and g.prefers is not None
    limit = njr if retrieved_only else c.judged
    nonrel_seen = np.cumsum(g.levels[:limit] == 0)
    beyond = np.flatnonzero(nonrel_seen == g.rel + 1)
    first_dropped = int(beyond[0]) if len(beyond) else limit
    index = np.arange(c.judged)
    dropped = (index >= first_dropped) & (g.levels == 0)
    prefers = g.prefers & ~dropped[:, None] & ~dropped[None, :]
    inside = index < njr
    if retrieved_only:
        prefers = prefers & inside[:, None] & inside[None, :]
    a, b = np.nonzero(prefers)
    ful = int(((a < b) & (a < njr)).sum())
    return ful, len(a)


PREFS_MEASURES: dict[str, Callable[[Counted], float]] = {
    "prefs_num_prefs_poss": lambda c: float(sum(_kind(g, "all")[1] for g in c.groups)),
    "prefs_num_prefs_ful": lambda c: float(sum(_kind(g, "all")[0] for g in c.groups)),
    "prefs_num_prefs_ful_ret": lambda c: float(sum(g.fulfilled_ret for g in c.groups)),
    "prefs_simp": lambda c: _simple(c, "all"),
    "prefs_pair": lambda c: _pairs(c, 3),
    "prefs_avgjg": lambda c: _per_group(c, "all"),
    "prefs_avgjg_Rnonrel": lambda c: _rnonrel(c, retrieved_only=False),
    "prefs_simp_ret": lambda c: _simple(c, "ret"),
    "prefs_pair_ret": lambda c: _pairs(c, 1),
    "prefs_avgjg_ret": lambda c: _per_group(c, "ret"),
    "prefs_avgjg_Rnonrel_ret": lambda c: _rnonrel(c, retrieved_only=True),
    "prefs_simp_imp": lambda c: _simple(c, "imp"),
    "prefs_pair_imp": lambda c: _pairs(c, 2),
    "prefs_avgjg_imp": lambda c: _per_group(c, "imp"),
}
"""trec_eval's preference measures, in its printing order (its set ``all_prefs``, with runid and num_q)."""
COUNTED = {"prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret"}
"""The measures that count (printed whole, summed over the questions)."""


def rankings(run: Run | Path, max_per_query: int | None = None) -> dict[str, list[str]]:
    """Each question's documents as trec_eval ranks them for preferences: score descending, ties by docno
    ascending (as bytes), cut to `max_per_query` (-M)."""
    if isinstance(run, Path):
        run = read_run(run)
    rows = np.arange(run.columns.rows)
    qids, docs = run.columns.text(QID, rows), run.columns.text(DOC, rows)
    lists: dict[str, list[tuple[float, bytes, str]]] = {}
    for qid, doc, score in zip(qids, docs, run.scores.tolist(), strict=True):
        lists.setdefault(qid, []).append((-score, as_bytes(doc), doc))
    return {qid: [doc for *_, doc in sorted(found)][:max_per_query] for qid, found in lists.items()}
