"""Text helpers the embedded engine shares: a small English stop list, query terms, word chunking."""

from __future__ import annotations

import re
from collections.abc import Iterator

WORD = re.compile(r"\w+", re.UNICODE)

# A small English stop list (the words BM25 gains nothing from); applied to questions, not to documents.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same she should so some such
    than that the their theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours yourself
    yourselves""".split()
)


def query_terms(text: str, *, stopwords: bool = True) -> list[str]:
    """Lower-cased words of a question, stop words dropped, each once, in order."""
    terms = [w.lower() for w in WORD.findall(text)]
    if stopwords:
        kept = [t for t in terms if t not in STOPWORDS]
        terms = kept or terms  # a question made only of stop words still searches them
    return list(dict.fromkeys(terms))


def fts_match(terms: list[str]) -> str:
    """An FTS5 MATCH expression that ORs the quoted terms (bare terms would be ANDed)."""
    return " OR ".join(f'"{t}"' for t in terms)


def chunk_words(text: str, size: int, overlap: int) -> Iterator[str]:
    """Windows of `size` words overlapping by `overlap`; the whole text when `size` is 0 or the text fits."""
    words = text.split()
    if size <= 0 or len(words) <= size:
        yield text
        return
    step = max(size - overlap, 1)
    for start in range(0, len(words), step):
        yield " ".join(words[start : start + size])
        if start + size >= len(words):
            return
