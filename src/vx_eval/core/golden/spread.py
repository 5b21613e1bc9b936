"""Passages to draft from, spread over what a corpus is about: a random draw of documents can miss a topic
that a tenth of the corpus covers (a draw of 10 from 50 misses 5 such documents about one time in three),
and drafts from one corner of the corpus rank setups by how well they find that corner.

The documents are drawn at random, a pool several times the number wanted, then grouped by their words
(TF-IDF vectors in k-means clusters, scikit-learn's: `core.golden.topics`), and the wanted number taken from
the groups in proportion to their sizes (stratified sampling: every topic as large as one share is drawn from). The
documents come back interleaved group by group, so that a writer trying them in order drafts from every
group before it drafts twice from one.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from vx_eval.core.contracts.engine import Document

POOL = 8
"""Documents drawn at random for each one wanted, before they are grouped."""
GROUPS = 24
"""Groups at most: a group is a topic as the words tell it; more would cost time and split topics."""


def spread_documents(
    ids: Sequence[str], count: int, seed: int | str, fetch: Callable[[list[str]], list[Document]]
) -> list[Document]:
    """`count` of the documents `ids` names (fetched through `fetch`), spread over their topics; all of them
    (in a seeded order) where there are no more than `count`."""
    rng = random.Random(seed)
    if count <= 0:
        return []
    pool = rng.sample(list(ids), min(len(ids), max(POOL * count, count)))
    documents = fetch(pool)
    if len(documents) <= count:
        return documents
    # lazy: scikit-learn's clustering and text modules take over a second to import, and only drafting needs them
    from vx_eval.core.golden.topics import topic_groups

    labels = topic_groups([f"{d.title or ''} {d.text}" for d in documents], min(GROUPS, count), rng.randrange(2**31))
    if labels is None:  # no words to group by: a random draw
        return documents[:count]
    members: dict[int, list[Document]] = {}
    for document, label in zip(documents, labels, strict=True):
        members.setdefault(int(label), []).append(document)  # the pool's order is random already
    groups = sorted(members.values(), key=len, reverse=True)
    wanted = shares([len(g) for g in groups], count)
    picked = [g[:n] for g, n in zip(groups, wanted, strict=True)]
    return [d for round_ in _rounds(picked) for d in round_]


def shares(sizes: Sequence[int], n: int) -> list[int]:
    """`n` split across collections (or groups) in proportion to their sizes (largest remainders), each at most
    its size."""
    total = sum(sizes)
    if total == 0:
        return [0] * len(sizes)
    exact = [n * s / total for s in sizes]
    out = [min(int(e), s) for e, s in zip(exact, sizes, strict=True)]
    for i in sorted(range(len(sizes)), key=lambda i: exact[i] - int(exact[i]), reverse=True):
        if sum(out) >= min(n, total):
            break
        if out[i] < sizes[i]:
            out[i] += 1
    return out


def _rounds(groups: Sequence[Sequence[Document]]) -> list[list[Document]]:
    """The groups' documents in rounds: each group's first, then each group's second, …"""
    depth = max((len(g) for g in groups), default=0)
    return [[g[i] for g in groups if i < len(g)] for i in range(depth)]
