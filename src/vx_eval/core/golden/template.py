"""Golden templates: rows to fill in, drawn from collections' own documents or pages, with a seed.

By document (the default), `n` documents are drawn at random with the seed. By page, every page that
holds some text is a unit (a document without pages is one unit), and `n` units are taken evenly spaced
through the collection, from a seeded start, so a 300-page report is sampled from front to back rather
than in clumps. Each row names its unit in `expected` and gives a `hint`: the page, its printed number,
the heading above it and the start of its text. Several collections sample into one file, in proportion
to their units.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from vx_eval.core.contracts.engine import Document, EngineHandle
from vx_eval.core.contracts.golden import GoldenRow
from vx_eval.core.contracts.writer import Unit
from vx_eval.core.golden.spread import shares, spread_documents

HINT_CHARS = 160
MIN_PAGE_WORDS = 20
"""Pages with fewer words (a blank, a title page, a lone figure) are left out of page templates."""

_NUMBER = r"(\d{1,4}|[ivxlcdm]{1,7})"
PRINTED = re.compile(rf"^\s*(?:page\s+|p\.\s*|-\s*)?{_NUMBER}(?:\s*-)?(?:\s*(?:of|/)\s*\d{{1,5}})?\s*$", re.I)
"""A page number printed alone: ``41``, ``- 41 -``, ``Page 41``, ``Page 41 of 200``, ``41/200``, ``iii``."""
RUNNING = re.compile(rf"^\s*(?:{_NUMBER}\s*\|\s*\S.{{0,80}}|\S.{{0,80}}?\s*\|\s*{_NUMBER})\s*$", re.I)
"""A running head or foot with the number beside a title: ``41 | Annual report 2025``, ``Annual report | 41``."""
HEADING = re.compile(r"^(?:\d+(?:\.\d+)*\.?\s+)?[A-Z][^.!?]{2,80}$")
MARKED = re.compile(r"^\s*(?:#{1,6}\s+(?P<hash>.+?)\s*#*|\*\*(?P<bold>[^*]+)\*\*|__(?P<under>[^_]+)__)\s*$")
"""A heading as kept Markdown writes one: ``## Risk factors``, or a line in bold alone."""


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + "…"


def hint(unit: Unit | Document, limit: int = HINT_CHARS) -> str:
    """For whoever writes the question: where the unit is, and the start of its text, cut at a word."""
    if isinstance(unit, Document):
        unit = Unit(unit.id, unit.title, unit.text)
    if unit.page is None:
        return _cut(f"{unit.title}: {unit.text}" if unit.title else unit.text, limit)
    place = f"page {unit.page}" + (f", printed {unit.printed}" if unit.printed else "")
    where = " · ".join(p for p in (unit.title, place, f"under {unit.heading}" if unit.heading else "") if p)
    return f"{where}: {_cut(unit.text, limit)}"


def _printed_number(lines: list[str]) -> str | None:
    """A page number printed alone on one of the page's first or last two lines."""
    for line in lines[:2] + lines[-2:]:
        match = PRINTED.match(line) or RUNNING.match(line)
        if match:
            return next(g for g in match.groups() if g)
    return None


def _heading(lines: list[str]) -> str | None:
    """The page's first heading-like line: short, capitalised, no sentence end, not a page number."""
    for line in lines[:8]:
        text = line.strip()
        marked = MARKED.match(text)
        if marked:
            return next(g for g in marked.groups() if g).strip()
        numbered = PRINTED.match(text) or RUNNING.match(text)
        if text and not numbered and HEADING.match(text) and len(text.split()) <= 10:
            return text
    return None


def units_of(doc: Document, collection: str | None = None, min_words: int = MIN_PAGE_WORDS) -> list[Unit]:
    """A document's page units (nearly empty pages left out; a heading carries on to the pages below it),
    or the document itself when it has no pages."""
    if not doc.pages:
        return [Unit(doc.id, doc.title, doc.text, collection=collection)]
    units, heading = [], None
    for number, text in enumerate(doc.pages, start=1):
        lines = [line for line in text.splitlines() if line.strip()]
        heading = _heading(lines) or heading
        if len(text.split()) < min_words:
            continue
        units.append(Unit(doc.id, doc.title, text, number, _printed_number(lines), heading, collection))
    return units


def spread(units: Sequence[Unit], n: int, seed: int) -> list[Unit]:
    """`n` units evenly spaced through `units`, from a start drawn with `seed` within the first step."""
    if n >= len(units):
        return list(units)
    step = len(units) / n
    start = random.Random(seed).random() * step
    return [units[int(start + i * step)] for i in range(n)]


def sample_units(
    collections: Sequence[tuple[str, Iterable[Document] | EngineHandle]],
    n: int,
    seed: int,
    by: str = "document",
    avoid: Collection[str] = (),
) -> list[Unit]:
    """`n` units from one or several collections: ``by="document"`` draws documents spread over their
    topics (a random pool grouped by its words, each group its share),
    ``by="page"`` spreads page units evenly. Each collection is a name and its documents (or a handle).
    Units whose ids are in `avoid` (those earlier questions were drafted from) are never drawn."""
    if by not in ("document", "page"):
        raise ValueError(f"by is 'document' or 'page', not {by!r}")
    avoid = set(avoid)
    if by == "document":
        return _sample_documents(collections, n, seed, avoid)
    return _sample_pages(collections, n, seed, avoid)


Source = Iterable[Document] | EngineHandle


def _sample_documents(collections: Sequence[tuple[str, Source]], n: int, seed: int, avoid: set[str]) -> list[Unit]:
    """Documents spread over each collection's topics (`spread_documents`), each collection its share of `n`
    (its own seed where there are several)."""
    pools: list[tuple[str, list[str], Callable[[list[str]], list[Document]]]] = []
    for name, source in collections:
        if isinstance(source, EngineHandle):
            ids = [i for i in source.document_ids() if i not in avoid]
            pools.append((name, ids, source.documents))
        else:
            held = {d.id: d for d in source if d.id not in avoid}
            pools.append((name, sorted(held), functools.partial(_pick, held)))
    counts = shares([len(ids) for _, ids, _ in pools], n)
    several = len(pools) > 1
    out = []
    for (name, ids, fetch), count in zip(pools, counts, strict=True):
        chosen = spread_documents(ids, count, f"{seed}:{name}" if several else seed, fetch)
        out += [Unit(d.id, d.title, d.text, collection=name if several else None) for d in chosen]
    return out


def _sample_pages(collections: Sequence[tuple[str, Source]], n: int, seed: int, avoid: set[str]) -> list[Unit]:
    """Page units spread evenly over each collection, each its share of `n`."""
    per_collection = []
    for name, source in collections:
        documents = source.documents(source.document_ids()) if isinstance(source, EngineHandle) else list(source)
        tag = name if len(collections) > 1 else None
        units = [u for d in sorted(documents, key=lambda d: d.id) for u in units_of(d, tag)]
        per_collection.append([u for u in units if u.id not in avoid])
    counts = shares([len(u) for u in per_collection], n)
    return [u for units, count in zip(per_collection, counts, strict=True) for u in spread(units, count, seed)]


def _pick(held: Mapping[str, Document], ids: list[str]) -> list[Document]:
    return [held[i] for i in ids]


def drafted(rows: Sequence[GoldenRow], units: Sequence[Unit], writer: Callable[[str], str]) -> list[GoldenRow]:
    """Rows whose questions a `writer` (any function from a unit's text to a question) drafted: marked
    ``draft: true`` until a person has read them."""
    out = []
    for row, unit in zip(rows, units, strict=True):
        question = " ".join(str(writer(unit.text)).split())
        out.append(row.model_copy(update={"question": question, "draft": True}) if question else row)
    return out
