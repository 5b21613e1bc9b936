"""The `keywords` question writer: no model at all. From each sampled passage it takes one sentence and that
sentence's three most distinctive words (rarest among the sampled passages, never the title's), in the order
they appear, as a search-box query: "deferment accrue branch". The same deterministic checks as the model
writers then apply (it must not name its source's title, nearly repeat another query, and so on).

It is what a zero-configuration run falls back to when no model writer is at hand, and says so: queries
made of a passage's own words favour keyword search over dense and reranked methods, so its picks lean the
same way. A model writer (`local`, or `chat` on a served model) paraphrases, and is the one to trust.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from vx_eval import hookimpl
from vx_eval.llm.checks import Draft, check, content_words, sentences, tally, usable_units, words
from vx_eval.plugin import GoldenRow, Unit, WriteOutcome, WriterDescription, WriteRequest


class KeywordQueryWriter:
    """Search-box queries from each passage's own distinctive words; nothing to install, nothing to ask."""

    name: ClassVar[str] = "keywords"
    writes_questions: ClassVar[bool] = True

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid")
        words: int = Field(3, ge=2, le=6)
        """Words in each query."""

    def __init__(self, options: Options | None = None) -> None:
        self.options = options or self.Options()

    def describe(self) -> WriterDescription:
        return WriterDescription(
            writer=self.name,
            model="none: each query is a passage's rarest words (favours keyword search)",
            critic="the deterministic checks",
        )

    def write(self, units: Sequence[Unit], request: WriteRequest) -> WriteOutcome:
        usable, skipped = usable_units(units)
        outcome = WriteOutcome([], skipped_passages=skipped)
        seen = Counter(w for unit in usable for w in content_words(unit.text))
        rng = random.Random(request.seed)
        accepted: list[str] = []
        for unit in usable:
            if len(outcome.rows) >= request.n:
                break
            outcome.tried += 1
            request.tried(1)
            draft = self._draft(unit, seen, len(usable), rng)
            if draft is None:
                tally(outcome.failed_checks, "no sentence with enough words")
                continue
            failed = check(draft, [unit.text], accepted, "keyword", [unit.title] if unit.title else [])
            for name, _ in failed:
                tally(outcome.failed_checks, name)
            if failed:
                continue
            accepted.append(draft.question)
            outcome.rows.append(
                GoldenRow(
                    id=f"draft-{len(outcome.rows) + 1:03d}-{unit.id}",
                    question=draft.question,
                    expected=[unit.id],
                    reference=draft.evidence[0],
                    evidence=draft.evidence,
                    draft=True,
                    metadata={"kind": "keyword", **({"collection": unit.collection} if unit.collection else {})},
                )
            )
            request.advance(1)
        return outcome

    def _draft(self, unit: Unit, seen: Counter[str], passages: int, rng: random.Random) -> Draft | None:
        """A sentence of the passage drawn with the seed among those with enough words to choose from, and its
        rarest words (by document frequency among the sampled passages; the earlier on a tie), in order."""
        titled = set(words(unit.title))
        wanted = self.options.words

        def candidates(sentence: str) -> list[str]:
            ordered = [w for w in words(sentence) if w in content_words(sentence) and not w.isdigit()]
            return [w for w in dict.fromkeys(ordered) if w not in titled]

        usable = [s for s in sentences(unit.text) if len(candidates(s)) >= wanted]
        if not usable:
            return None
        sentence = rng.choice(usable)
        pool = candidates(sentence)
        rarity = {w: math.log((1 + passages) / (1 + seen[w])) for w in pool}
        chosen = sorted(sorted(pool, key=lambda w: (-rarity[w], pool.index(w)))[:wanted], key=pool.index)
        return Draft(" ".join(chosen), [sentence])


@hookimpl
def vx_eval_register_writers(register):
    register.add(KeywordQueryWriter)
