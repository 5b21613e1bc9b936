"""Passages to draft from spread over a corpus's topics (`core.golden.spread`): a topic a tenth of the corpus
covers is always drawn from, and early, where a random draw misses it about one time in three."""

from __future__ import annotations

import random

from vx_eval.core.contracts.engine import Document
from vx_eval.core.golden.spread import spread_documents
from vx_eval.core.golden.template import sample_units

BANKING = ["wire transfer fees abroad", "savings account interest rate", "credit card limit raise", "loan repayment"]
GARDEN = ["prune roses in early spring", "tomato seedlings need sunlight"]


def corpus() -> dict[str, Document]:
    """45 documents on banking, 5 on gardening, in no order the ids tell."""
    rng = random.Random(7)
    docs = [
        Document(f"b{i:02d}", f"{BANKING[i % 4]} for customers of the branch, case {i}; {rng.random():.3f}")
        for i in range(45)
    ]
    docs += [Document(f"g{i}", f"{GARDEN[i % 2]} in the allotment garden, note {i}") for i in range(5)]
    return {d.id: d for d in docs}


def test_a_small_topic_is_always_drawn_from_and_early():
    held = corpus()
    ids = sorted(held)
    random_misses = 0
    for seed in range(20):
        chosen = spread_documents(ids, 10, seed, lambda wanted: [held[i] for i in wanted])
        assert len(chosen) == 10 and len({d.id for d in chosen}) == 10
        # its share (5 of 50 documents: 1 of 10) is drawn
        assert any(d.id.startswith("g") for d in chosen), [d.id for d in chosen]
        # and, with more wanted than there are groups, in the first round: before any group gives a second
        more = spread_documents(ids, 30, seed, lambda wanted: [held[i] for i in wanted])
        assert min(i for i, d in enumerate(more) if d.id.startswith("g")) < 24
        random_misses += not any(i.startswith("g") for i in random.Random(seed).sample(ids, 10))
    assert random_misses >= 3  # what a plain random draw of 10 does: it misses the garden


def test_the_draw_repeats_with_its_seed_and_takes_everything_from_a_small_corpus():
    held = corpus()
    ids = sorted(held)

    def fetch(wanted):
        return [held[i] for i in wanted]

    assert [d.id for d in spread_documents(ids, 8, 3, fetch)] == [d.id for d in spread_documents(ids, 8, 3, fetch)]
    assert [d.id for d in spread_documents(ids, 8, 3, fetch)] != [d.id for d in spread_documents(ids, 8, 4, fetch)]
    assert sorted(d.id for d in spread_documents(ids[:6], 10, 0, fetch)) == ids[:6]
    assert spread_documents(ids, 0, 0, fetch) == []
    # documents without a word to group by (stop words, numbers) are drawn at random, never refused
    empty = {f"e{i}": Document(f"e{i}", "the and of") for i in range(30)}
    assert len(spread_documents(sorted(empty), 5, 0, lambda wanted: [empty[i] for i in wanted])) == 5


def test_sampling_documents_for_drafts_spreads_them_and_never_draws_what_is_avoided():
    held = corpus()
    units = sample_units([("help", list(held.values()))], 10, 0, avoid={"g0", "g1"})
    assert len(units) == 10 and not {"g0", "g1"} & {u.id for u in units}
    assert any(u.id.startswith("g") for u in units)
