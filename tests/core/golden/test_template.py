"""Templates by page: units, printed numbers and headings, even spread, several collections, drafted rows."""

from __future__ import annotations

import itertools
import json

from vx_eval.core.contracts.engine import Document
from vx_eval.core.contracts.writer import Unit
from vx_eval.core.golden.template import hint, sample_units, shares, spread, units_of
from vx_eval.python.commands import template_rows

WORDS = " ".join(f"word{i}" for i in range(30))
REPORT = Document(
    id="report.pdf",
    title="Annual report",
    text="",
    pages=(
        "Annual report 2025",  # a title page: nearly empty, left out
        f"iii\nRisk management\nCredit losses stayed low. {WORDS}",
        f"The loan book is diversified across sectors. {WORDS}\n- 2 -",
        f"4.1 Sustainability\nBranches run on renewable electricity. {WORDS}\nPage 3",
    ),
)


def test_pages_with_text_become_units_with_their_printed_number_and_heading():
    units = units_of(REPORT, "bank")
    assert [u.id for u in units] == ["report.pdf#page=2", "report.pdf#page=3", "report.pdf#page=4"]
    assert [u.printed for u in units] == ["iii", "2", "3"]
    assert [u.heading for u in units] == ["Risk management", "Risk management", "4.1 Sustainability"]
    assert hint(units[0]).startswith(
        "Annual report · page 2, printed iii · under Risk management: iii Risk management Credit"
    )
    plain = units_of(Document(id="faq", title="FAQ", text="Short answer."))
    assert [u.id for u in plain] == ["faq"] and hint(plain[0]) == "FAQ: Short answer."


def test_the_hint_says_the_page_its_printed_number_and_the_heading_it_sits_under_as_the_seed_words_it():
    """Kept Markdown's headings (``## …``, a bold line), numbers printed as ``Page 41 of 200``, ``41/200``, or
    beside a running title (``41 | Annual report``); the printed number said even where it equals the page's
    place, as the seed's hint says it."""
    body = f"Credit losses stayed low. {WORDS}"
    pages = (
        f"## Risk factors\n{body}\nPage 1 of 3",
        f"**Liquidity**\n{body}\n2/3",
        f"3 | Annual report 2025\n{body}",
        f"Annual report 2025 | 47\nOutlook for 2026\n{body}",
    )
    units = units_of(Document(id="r.pdf", title="Annual report", text="", pages=pages))
    assert [u.printed for u in units] == ["1", "2", "3", "47"]
    assert [u.heading for u in units] == ["Risk factors", "Liquidity", "Liquidity", "Outlook for 2026"]
    assert hint(units[0]).startswith("Annual report · page 1, printed 1 · under Risk factors: ## Risk factors")
    assert hint(units[3]).startswith("Annual report · page 4, printed 47 · under Outlook for 2026: ")


def test_units_are_spread_evenly_from_a_seeded_start():
    units = [Unit(f"d{i:03d}", "", "t", page=1) for i in range(100)]
    picked = spread(units, 10, seed=0)
    positions = [int(u.doc_id[1:]) for u in picked]
    assert len(positions) == 10 and all(9 <= b - a <= 11 for a, b in itertools.pairwise(positions))
    assert spread(units, 10, seed=0) == picked and spread(units, 10, seed=1) != picked
    assert spread(units[:3], 10, seed=0) == units[:3]


def test_rows_are_shared_across_collections_in_proportion():
    assert shares([300, 100], 8) == [6, 2]
    assert shares([1, 100], 5) == [0, 5] or shares([1, 100], 5) == [1, 4]
    assert sum(shares([3, 4, 5], 7)) == 7 and shares([2, 0], 5) == [2, 0]
    bank = [REPORT, Document(id="faq", title="FAQ", text=WORDS)]
    other = [Document(id=f"o{i}", title="", text=WORDS) for i in range(6)]
    units = sample_units([("bank", bank), ("other", other)], 6, seed=0, by="page")
    assert {u.collection for u in units} == {"bank", "other"} and len(units) == 6


def test_template_from_two_configs_by_page_and_drafted_by_a_writer(project, tmp_path):
    paged = [
        {"id": "report.pdf", "title": "Annual report", "pages": list(REPORT.pages)},
        {"id": "faq", "title": "FAQ", "text": WORDS},
    ]
    (project.root / "bank.jsonl").write_text("".join(json.dumps(d) + "\n" for d in paged))
    first = project.write_config("bank.yaml", corpus="bank.jsonl")
    first.write_text(first.read_text().replace("name: tiny", "name: bank"))
    second = project.write_config("tiny.yaml")
    rows, names = template_rows([first, second], 6, seed=0, by="page")
    assert names == ["bank", "tiny"] and len(rows) == 6
    pages = [r for r in rows if "#page=" in r.expected[0]]
    assert pages and all(r.metadata["collection"] in ("bank", "tiny") for r in rows)
    assert all(r.question == "" and r.hint for r in rows)
    drafted, _ = template_rows([first], 3, seed=0, by="page", writer=lambda text: f"What does this say: {text[:20]}?")
    assert all(r.draft is True and r.question.startswith("What does this say") for r in drafted)
    again, _ = template_rows([first, second], 6, seed=0, by="page")
    assert again == rows  # same seed, same collections: same rows
