"""The measures every IR tool has (found, MRR, recall, precision, F, AP, R-precision, DCG and nDCG, mean
relevance, judged, ERR, RBP, bpref, and the condensed-list nDCG′ and AP′), one function each over a `Batch`,
registered by name (`core.measures.registry`), with the helpers `core.measures.trec_only` builds on.

Every ranking measure follows trec_eval (``-c``): it reads the list reduced to each unit's first occurrence,
ties in score ordered by unit id descending, and a question with no results scores 0. Only ``found@k``
counts positions as results came back, so a document that fills three of the top ten takes three places."""

from __future__ import annotations

import numpy as np

from vx_eval.core.measures.batch import Batch, in_order
from vx_eval.core.measures.registry import Cutoff, register


def within(batch: Batch, k: Cutoff, width: int | None = None) -> np.ndarray:
    """Ranks within each row's cut-off (k: None for the whole list, an int, or one k per row)."""
    width = batch.grade.shape[1] if width is None else width
    ranks = np.arange(width)[None, :]
    if k is None:
        return np.ones((len(batch.n_rel), width), dtype=bool)
    return ranks < (np.asarray(k)[:, None] if np.ndim(k) else k)


def relevant_within(batch: Batch, k: Cutoff) -> np.ndarray:
    """Relevant units within the cut-off (a share of one where `core.measures.ties` spreads a tie's relevance)."""
    result: np.ndarray = (batch.rel * within(batch, k)).sum(axis=1)
    return result


def safe_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    result: np.ndarray = np.divide(a, b, out=np.zeros_like(a), where=b > 0)
    return result


@register("found", cutoff="required", aliases=("hit", "success", "hit_rate"), trec=("success",))
def found(batch: Batch, k: Cutoff) -> np.ndarray:
    """1 if a relevant unit is among the first k results as they came back (repeats take places), else 0."""
    result: np.ndarray = (batch.hit & within(batch, k, batch.hit.shape[1])).any(axis=1).astype(float)
    return result


@register("mrr", cutoff="optional", aliases=("recip_rank", "rr"), trec=("recip_rank",))
def mrr(batch: Batch, k: Cutoff) -> np.ndarray:
    """1 / rank of the first relevant unit in the reduced list (0 if none within k); trec_eval recip_rank."""
    rel = batch.rel & within(batch, k)
    first = rel.argmax(axis=1) + 1.0
    return np.where(rel.any(axis=1), 1.0 / first, 0.0)


@register("recall", cutoff="required", aliases=("r",), trec=("recall",))
def recall(batch: Batch, k: Cutoff) -> np.ndarray:
    """Relevant units in the top k / all relevant units (0 when none is relevant)."""
    return safe_div(relevant_within(batch, k), batch.n_rel)


@register("p", cutoff="required", aliases=("precision",), trec=("p",))
def precision(batch: Batch, k: Cutoff) -> np.ndarray:
    """Relevant units in the top k / k (trec_eval P: k, not the number returned, is the denominator)."""
    result: np.ndarray = relevant_within(batch, k) / np.asarray(k, dtype=float)
    return result


def _f_beta(batch: Batch, k: Cutoff, beta: float) -> np.ndarray:
    p, r = precision(batch, k), recall(batch, k)
    b2 = beta * beta
    return safe_div((1 + b2) * p * r, b2 * p + r)


@register("f1", cutoff="required", aliases=("f",))
def f1(batch: Batch, k: Cutoff) -> np.ndarray:
    """Harmonic mean of precision@k and recall@k (0 when both are 0)."""
    return _f_beta(batch, k, 1.0)


@register("f2", cutoff="required")
def f2(batch: Batch, k: Cutoff) -> np.ndarray:
    """F-beta with beta = 2: 5PR / (4P + R) at k, weighing a missed relevant unit 4x a false positive."""
    return _f_beta(batch, k, 2.0)


@register("map", cutoff="optional", aliases=("ap",), trec=("map_cut",))
def average_precision(batch: Batch, k: Cutoff) -> np.ndarray:
    """Sum of precision at each relevant unit's rank within k, divided by the number of relevant units."""
    ranks = np.arange(1, batch.grade.shape[1] + 1)[None, :]
    precision_at = batch.rel_cum / ranks
    return safe_div(in_order(precision_at * (batch.rel & within(batch, k))), batch.n_rel)


@register("rprec", cutoff="none", aliases=("r-precision", "r_prec"), trec=("rprec",))
def r_precision(batch: Batch, k: Cutoff) -> np.ndarray:
    """Precision at rank R, R being the question's number of relevant units (trec_eval Rprec)."""
    return safe_div(relevant_within(batch, batch.n_rel.astype(int)), batch.n_rel)


def _dcg(gains: np.ndarray, log_rank: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return in_order(np.where(mask & (gains > 0), gains, 0.0) / log_rank[: gains.shape[1]])


@register("dcg", cutoff="optional")
def dcg(batch: Batch, k: Cutoff) -> np.ndarray:
    """Sum over the top k of grade / log2(rank + 1): linear gain, as trec_eval and BEIR."""
    return _dcg(batch.grade, batch.log_rank, within(batch, k))


@register("ndcg", cutoff="optional", trec=("ndcg_cut",))
def ndcg(batch: Batch, k: Cutoff) -> np.ndarray:
    """DCG@k over the ideal DCG@k of the question's judged grades (0 when nothing is graded above 0)."""
    ideal = _dcg(batch.ideal, batch.log_rank, within(batch, k, batch.ideal.shape[1]))
    return safe_div(dcg(batch, k), ideal)


@register("mean_rel", cutoff="optional", aliases=("mean_relevance",))
def mean_relevance(batch: Batch, k: Cutoff) -> np.ndarray:
    """Mean grade over the k places of the top k (an empty place and an unjudged unit count 0), as
    ir_measures and ranx compute it; without a cut-off, over the units returned (0 when none came back)."""
    mask = within(batch, k) & (np.arange(batch.grade.shape[1])[None, :] < batch.length[:, None])
    total = np.where(mask, batch.grade, 0).sum(axis=1)
    if k is None:
        return safe_div(total, mask.sum(axis=1))
    result: np.ndarray = total / np.broadcast_to(np.asarray(k, dtype=float), total.shape)
    return result


@register("judged", cutoff="required")
def judged(batch: Batch, k: Cutoff) -> np.ndarray:
    """Share of the top k units returned that carry a judgement (ir_measures Judged@k)."""
    mask = within(batch, k) & (np.arange(batch.grade.shape[1])[None, :] < batch.length[:, None])
    return safe_div((batch.judged * mask).sum(axis=1), mask.sum(axis=1))


def filled_places(batch: Batch, k: Cutoff) -> np.ndarray:
    """Places within the cut-off that a result fills."""
    return within(batch, k) & (np.arange(batch.grade.shape[1])[None, :] < batch.length[:, None])


ERR_MAX_GRADE = 4
"""The grade ERR's stopping probabilities are scaled to, as TREC's gdeval (and ir_measures' ERR) fix it."""


@register("err", cutoff="required", aliases=("expected_reciprocal_rank",))
def err(batch: Batch, k: Cutoff) -> np.ndarray:
    """Expected reciprocal rank (Chapelle et al., 2009): a reader goes down the list and stops at a result
    with probability R = (2^grade - 1) / 2^4, so ERR@k = sum over ranks r <= k of R_r / r times the chance
    of reaching r. Grades are capped at 4 (gdeval's scale), unjudged results count 0; a question with no
    graded unit scores 0. Not normalised: ERR never reaches 1 unless a result's grade is 4 or more."""
    grades = np.clip(np.where(filled_places(batch, k), batch.grade, 0.0), 0, ERR_MAX_GRADE)
    stop = (2.0**grades - 1) / 2.0**ERR_MAX_GRADE
    reach = np.cumprod(np.concatenate([np.ones((len(stop), 1)), 1 - stop[:, :-1]], axis=1), axis=1)
    result: np.ndarray = (reach * stop / np.arange(1, stop.shape[1] + 1)[None, :]).sum(axis=1)
    return result


@register("rbp", cutoff="optional", aliases=("rank_biased_precision",), param=("p", 0.8))
def rbp(batch: Batch, k: Cutoff, p: float) -> np.ndarray:
    """Rank-biased precision (Moffat & Zobel, 2008): (1 - p) times the sum of p^(r-1) over relevant units at
    ranks r (within k), for a reader who goes on to the next result with probability p (default 0.8; write
    ``rbp(p=0.95)``). Binary: relevant means grade >= the threshold. Its residual (`rbp_residual`) says how
    much more it could be if every unjudged result and everything past the list were relevant."""
    weights = (1 - p) * p ** np.arange(batch.grade.shape[1])[None, :]
    result: np.ndarray = (weights * batch.rel * within(batch, k)).sum(axis=1)
    return result


@register("rbp_residual", cutoff="optional", param=("p", 0.8))
def rbp_residual(batch: Batch, k: Cutoff, p: float) -> np.ndarray:
    """RBP's residual (Moffat & Zobel): the weight of the unjudged results within the list (or its first k)
    plus p^n for all that lies past its n evaluated places: RBP's value lies between itself and itself plus
    this. A run whose residual is large was judged too shallowly for RBP to settle."""
    filled = filled_places(batch, k)
    weights = (1 - p) * p ** np.arange(batch.grade.shape[1])[None, :]
    seen = filled.sum(axis=1)
    result: np.ndarray = (weights * filled * (1 - batch.judged)).sum(axis=1) + p**seen
    return result


@register("bpref", cutoff="none", trec=("bpref",))
def bpref(batch: Batch, k: Cutoff) -> np.ndarray:
    """Binary preference (Buckley & Voorhees, 2004), as trec_eval computes it: for each relevant unit
    retrieved, 1 - (judged non-relevant units ranked above it, at most R) / min(R, N), summed and divided by
    R (N: the question's judged non-relevant units). Unjudged results are ignored, so it holds up on
    incomplete judgements (a judge's pools); 0 when nothing is relevant."""
    n_judged = batch.n_judged if batch.n_judged is not None else batch.n_rel
    nonrel = batch.judged & ~batch.rel
    above = np.cumsum(nonrel, axis=1) - nonrel  # judged non-relevant units ranked above each place
    r = batch.n_rel[:, None]
    bound = np.minimum(r, (n_judged - batch.n_rel)[:, None])
    penalty = safe_div(np.minimum(above, r), np.broadcast_to(bound, above.shape))
    score = np.where(above > 0, 1.0 - penalty, 1.0)
    return safe_div(in_order(score * batch.rel), batch.n_rel)


def condensed(batch: Batch) -> Batch:
    """The batch with every unjudged result taken out of each list (Sakai's condensed lists, trec_eval -J)."""
    keep = batch.judged & (np.arange(batch.grade.shape[1])[None, :] < batch.length[:, None])
    order = np.argsort(~keep, axis=1, kind="stable")  # judged places first, in their order
    grade = np.take_along_axis(np.where(keep, batch.grade, 0.0), order, axis=1)
    judged = np.take_along_axis(keep, order, axis=1)
    length = keep.sum(axis=1)
    score = None if batch.score is None else np.take_along_axis(np.where(keep, batch.score, -np.inf), order, axis=1)
    hit = (grade >= batch.threshold) & (grade > 0) & judged  # found@k reads the condensed list too (trec_eval -J)
    return Batch(
        grade, judged, hit, batch.ideal, batch.n_rel, length, length,
        batch.threshold, batch.depth, batch.n_judged, score, documents=batch.documents,
    )  # fmt: skip


@register("ndcg_condensed", cutoff="optional", aliases=("cndcg", "ndcg_prime"))
def ndcg_condensed(batch: Batch, k: Cutoff) -> np.ndarray:
    """nDCG′ (Sakai, 2007): nDCG@k over the list with its unjudged results removed, for incomplete judgements
    (trec_eval -J ndcg_cut)."""
    return ndcg(condensed(batch), k)


@register("map_condensed", cutoff="optional", aliases=("cmap", "ap_prime", "map_prime"))
def map_condensed(batch: Batch, k: Cutoff) -> np.ndarray:
    """AP′ (Sakai, 2007): average precision over the list with its unjudged results removed (trec_eval -J map)."""
    result: np.ndarray = average_precision(condensed(batch), k)
    return result
