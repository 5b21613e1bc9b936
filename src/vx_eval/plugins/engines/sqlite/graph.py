"""The entity graph of the embedded engine.

An *entity* is a name-like term of a chunk: a word or a two-word phrase that starts with a capital letter
inside a sentence (not as its first word), an acronym (two or more capitals: HIV, TNF), or a term that
mixes letters and digits (BRCA1, IL-6, COVID-19). Entities are lower-cased, and one is kept when at least
two chunks hold it and at most 5% of them do (a term in every chunk says nothing).

The graph links chunks to their entities, and entities to each other through the chunks they share.
A question is expanded through it: its *seeds* are the entities its words (and word pairs) name; each
seed adds the entities it shares the most chunks with (its five strongest neighbours, sharing at least
two chunks). A chunk scores the sum of the inverse document frequency of the seeds it holds, plus half
that of the neighbours it holds, weighted by how strongly each neighbour is tied to its seed.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable

from vx_eval.plugin import STOPWORDS, WORD

SENTENCE = re.compile(r"(?<=[.!?])\s+")
TOKEN = re.compile(r"[A-Za-z][\w-]*\w|\d+[A-Za-z][\w-]*")
MIN_CHUNKS = 2
MAX_SHARE = 0.05
NEIGHBOURS = 5


def _is_entity_word(word: str, first: bool) -> bool:
    if any(c.isdigit() for c in word) and any(c.isalpha() for c in word):
        return True
    letters = [c for c in word if c.isalpha()]
    if len(letters) >= 2 and sum(c.isupper() for c in letters) >= 2:
        return True
    return not first and word[0].isupper() and word.lower() not in STOPWORDS


def entities_of(text: str) -> set[str]:
    """The entities a text names: name-like words, and pairs of them standing together."""
    found: set[str] = set()
    for sentence in SENTENCE.split(text):
        words = TOKEN.findall(sentence)
        marks = [_is_entity_word(w, i == 0) for i, w in enumerate(words)]
        for i, (word, mark) in enumerate(zip(words, marks, strict=True)):
            if mark:
                found.add(word.lower())
                if i + 1 < len(words) and marks[i + 1]:
                    found.add(f"{word} {words[i + 1]}".lower())
    return found


def build(
    chunks: Iterable[tuple[int, str]], advance: Callable[[int], None] = lambda n: None
) -> tuple[dict[str, int], list[tuple[int, str]]]:
    """Document frequency of each kept entity, and the (chunk, entity) edges; `advance` told per 500 chunks."""
    per_chunk = []
    for row, text in chunks:
        per_chunk.append((row, entities_of(text)))
        if len(per_chunk) % 500 == 0:
            advance(500)
    if len(per_chunk) % 500:
        advance(len(per_chunk) % 500)
    df = Counter(e for _, found in per_chunk for e in found)
    limit = max(MIN_CHUNKS, int(MAX_SHARE * len(per_chunk)))
    kept = {e: n for e, n in df.items() if MIN_CHUNKS <= n <= limit}
    return kept, [(row, e) for row, found in per_chunk for e in found if e in kept]


class EntityGraph:
    """Chunks by entity and entities by chunk, in memory, with the expansion described above."""

    def __init__(self, df: dict[str, int], edges: Iterable[tuple[int, str]], chunks: int) -> None:
        self.df = df
        self.idf = {e: math.log(1 + chunks / n) for e, n in df.items()}
        self.chunks_of: dict[str, list[int]] = defaultdict(list)
        self.entities_in: dict[int, list[str]] = defaultdict(list)
        for row, entity in edges:
            self.chunks_of[entity].append(row)
            self.entities_in[row].append(entity)

    def seeds(self, question: str) -> list[str]:
        words = [w.lower() for w in WORD.findall(question)]
        grams = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
        return [g for g in dict.fromkeys(grams) if g in self.df]

    def expand(self, seeds: list[str]) -> dict[str, float]:
        """Seeds with weight 1 and each seed's strongest neighbours with weight 0.5 x their tie (0-1)."""
        weights = dict.fromkeys(seeds, 1.0)
        for seed in seeds:
            shared = Counter(e for row in self.chunks_of[seed] for e in self.entities_in[row] if e != seed)
            for entity, count in shared.most_common(NEIGHBOURS):
                if count >= MIN_CHUNKS and entity not in weights:
                    weights[entity] = 0.5 * count / len(self.chunks_of[seed])
        return weights

    def search(self, question: str, k: int) -> list[tuple[int, float]]:
        """Chunks by graph score, best first (ties: lower chunk row first)."""
        scores: dict[int, float] = defaultdict(float)
        for entity, weight in self.expand(self.seeds(question)).items():
            for row in self.chunks_of[entity]:
                scores[row] += weight * self.idf[entity]
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]
