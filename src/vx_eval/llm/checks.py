"""The deterministic checks every drafted question passes before a critic reads it, and the text helpers
they share: it must not point at "the passage" or lean on it ("the series", "he", with nothing named), copy
a run of its words, name what the source does not, name its source's title, borrow the prompt's example,
quote evidence the passage lacks, have the wrong length for its kind, repeat itself, stray off the passage,
or nearly repeat another question. Also what no question can come from (`unusable`) and how a model's answer
is read (`parse_draft`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from vx_eval.plugin import Unit

POINTING = re.compile(
    r"\b(the|this|that|above|given|following)\s+(passage|text|document|article|excerpt|paragraph|section)\b"
    r"|\baccording to (the|this)\b|\bmentioned (above|here)\b",
    re.IGNORECASE,
)
WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’-]*")
REFERENTS = frozenset(
    "series album film movie book novel song band company organisation organization team show character author "
    "writer director player game city town country event war study paper product person man woman group "
    "episode season building school university station river artist singer club league party village region "
    "species programme program project device drug treatment patient patients trial report".split()
)
"""Nouns a question may lean on as "the series", "this study": they name nothing unless the question also
names what they are."""
LEANING = re.compile(r"\b(?:the|this|that|these|those)\s+(" + "|".join(sorted(REFERENTS)) + r")\b", re.IGNORECASE)
PERSONAL = re.compile(r"\b(he|she|him|his|her|hers|they|them|their)\b", re.IGNORECASE)
MIN_WORDS = 25
COPY_RUN = 6
NEAR_DUPLICATE = 0.7


def words(text: str) -> list[str]:
    return [w.lower().strip("'’-") for w in WORD.findall(text)]


def unusable(text: str) -> str | None:
    """Why no question can come from this passage (None: it can be used)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    tokens = text.split()
    if len(words(text)) < MIN_WORDS:
        return "nearly empty"
    toc = sum(1 for line in lines if re.search(r"(\.{3,}|\s)\d{1,4}$", line))
    if len(lines) >= 5 and toc > 0.5 * len(lines):
        return "a table of contents"
    if sum(1 for t in tokens if re.fullmatch(r"[\d.,:%$€/-]+", t)) > 0.5 * len(tokens):
        return "mostly numbers"
    return None


def usable_units(units: Sequence[Unit]) -> tuple[list[Unit], dict[str, int]]:
    """The units a question can come from, in their order, and how many were left out for each reason."""
    usable: list[Unit] = []
    skipped: dict[str, int] = {}
    for unit in units:
        why = unusable(unit.text)
        if why:
            tally(skipped, why)
        else:
            usable.append(unit)
    return usable, skipped


def tally(counts: dict[str, int], name: str) -> None:
    """One more `name` in `counts` (a check failed, a passage left out)."""
    counts[name] = counts.get(name, 0) + 1


def longest_shared_run(question: str, passage: str) -> int:
    """The longest run of consecutive words the question shares with the passage."""
    q, p = words(question), words(passage)
    if not q or not p:
        return 0
    best, previous = 0, [0] * (len(p) + 1)
    for a in q:
        current = [0] * (len(p) + 1)
        for j, b in enumerate(p, start=1):
            if a == b:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best


def absent_names(question: str, sources: Sequence[str]) -> list[str]:
    """Capitalised words inside a sentence of the question (not at its start, not "I", "I'm"…) that no
    source contains: names the model made up."""
    known = {w for s in sources for w in words(s)}
    names = []
    for sentence in re.split(r"(?<=[.?!;:])\s+", question):
        for token in WORD.findall(sentence)[1:]:
            bare = token.lower().strip("'’-")
            if token[:1].isupper() and bare not in known and not re.fullmatch(r"i(['’](m|ve|d|ll))?", bare):
                names.append(token)
    return names


LENGTHS = {"fact": (4, 30), "why": (4, 30), "keyword": (2, 6), "persona": (15, 70), "two-passage": (6, 40)}
"""Tokens a draft of each kind may take (``QUESTION:`` and the words `LENGTHS` allow, with room to spare)."""
STOP = frozenset(
    "a an and are as at be by can do does for from how i if in is it its me my of on or so that the their "
    "there this to was what when where which who why will with you your".split()
)


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if w not in STOP and len(w) > 2}


def repeated(text: str, n: int = 4) -> bool:
    """Whether a run of `n` words occurs twice (a small model looping)."""
    w = words(text)
    grams = [tuple(w[i : i + n]) for i in range(len(w) - n + 1)]
    return len(grams) != len(set(grams))


def normalise(text: str) -> str:
    return " ".join(text.replace("’", "'").split()).lower()


def similarity(a: str, b: str) -> float:
    wa, wb = set(words(a)), set(words(b))
    return len(wa & wb) / len(wa | wb) if wa | wb else 1.0


@dataclass
class Draft:
    question: str
    evidence: list[str]


def parse_draft(answer: str) -> Draft | None:
    """A ``QUESTION: …`` line (and any ``EVIDENCE: …`` lines the model quoted), or None."""
    question, evidence = None, []
    for line in answer.splitlines():
        head, _, rest = line.partition(":")
        label = head.strip().strip("*").strip().upper()
        if label in ("QUESTION", "Q") and rest.strip() and question is None:
            question = until_it_loops(rest.strip().strip('"'))
        elif label.startswith("EVIDENCE") and rest.strip():
            evidence.append(rest.strip().strip('"“”'))
    return Draft(question, evidence) if question else None


def until_it_loops(text: str) -> str:
    """The question up to where a small model stops asking and starts looping: the first ``;`` (a list of
    repeats follows it), or the second time a run of three words begins. What is left is checked like any
    draft; a loop the cut cannot mend still fails "repeats itself"."""
    text = text.split(";")[0].strip()
    tokens = text.split()
    seen: set[tuple[str, ...]] = set()
    for i in range(len(tokens) - 2):
        gram = tuple(t.lower().strip(",.") for t in tokens[i : i + 3])
        if gram in seen:
            return " ".join(tokens[:i]).rstrip(",;: ")
        seen.add(gram)
    return text


def compact(text: str) -> str:
    """Letters and digits only, lower case: ``S3 Transfer`` and ``s3transfer`` read alike."""
    return "".join(ch for ch in text.lower() if ch.isalnum())


TITLE_RUN = 4


def names_title(question: str, titles: Sequence[str]) -> str | None:
    """The source's title, when the question names it: a title of two to four words in full (spaces and
    punctuation ignored: ``S3 Transfer`` is ``s3transfer``), a one-word title that is a name (digits, inner
    capitals, joined words: ``s3transfer``, ``FastAPI``) or that the question spells apart, or four words
    of a longer title in a row. A question that names its document finds it by that name alone and
    measures nothing else; a one-word title that is a plain word (``Wire``) may be asked about."""
    squeezed, asked = compact(question), set(words(question))
    for title in titles:
        n, whole = len(words(title)), compact(title)
        if n > TITLE_RUN:
            if longest_shared_run(question, title) >= TITLE_RUN:
                return title
        elif len(whole) >= 4 and whole in squeezed:
            name_like = n > 1 or not title.isalpha() or any(c.isupper() for c in title[1:])
            if name_like or whole not in asked:
                return title
    return None


GENERIC = frozenset("long take time new use get need want much many one two".split())


def copied_example(question: str, passages: Sequence[str]) -> str | None:
    """The prompt's example a draft borrowed from: two or more of its words (beyond the generic ones) that the
    source does not have (a small model writes "replacement card delivery time" for any passage)."""
    source = content_words(" ".join(passages))
    asked = content_words(question) - source - GENERIC
    for example in EXAMPLE_QUESTIONS:
        if len(asked & content_words(example)) >= 2:
            return example
    return None


def leans_on_its_passage(question: str, kind: str) -> str | None:
    """Why the question needs its passage to make sense, or None: it says "the series" or "he" and names
    nothing (no name, no number) a reader of the question alone would know; a keyword query of nothing but
    such nouns and numbers ("1991 album") finds no one passage."""
    named = any(w[:1].isupper() for w in WORD.findall(question)[1:]) or any(c.isdigit() for c in question)
    if kind == "keyword":
        specific = [w for w in content_words(question) if w not in REFERENTS and not w.isdigit()]
        if not specific:
            return f'"{question.strip()}" names nothing that one passage would hold; add what it is about'
        return None
    if named:
        return None
    leaning = LEANING.search(question) or PERSONAL.search(question)
    if leaning:
        return f'"{leaning[0]}" names nothing a reader of the question alone would know; say who or what it is'
    return None


def _standalone(question: str, kind: str) -> list[tuple[str, str]]:
    """The question read without its passage: it must neither point at the passage nor lean on it."""
    if POINTING.search(question):
        return [("points at the passage", "it points at the passage; ask as if the reader has never seen it")]
    if leaning := leans_on_its_passage(question, kind):
        return [("needs its passage", f"it needs its passage to make sense: {leaning}")]
    return []


def check(
    draft: Draft,
    passages: Sequence[str],
    accepted: Sequence[str],
    kind: str = "fact",
    titles: Sequence[str] = (),
) -> list[tuple[str, str]]:
    """Every deterministic check the draft fails: the check's name and the reason the model is told.
    `titles`: the sources' titles, which the question must not name."""
    failed = []
    if title := names_title(draft.question, titles):
        failed.append(("names its source's title", f'it names the title "{title[:60]}"; ask without naming it'))
    if example := copied_example(draft.question, passages):
        failed.append(("copies the prompt's example", f'it borrows from the example "{example}"; ask about this'))
    failed += _standalone(draft.question, kind)
    source = "\n".join(passages)
    run = longest_shared_run(draft.question, source)
    if run >= COPY_RUN:
        failed.append(("copies the passage", f"it copies {run} words in a row from the passage; use your own words"))
    if names := absent_names(draft.question, passages):
        failed.append(
            (
                "names what the source does not",
                f"it names {', '.join(dict.fromkeys(names))}, which the passage does not",
            )
        )
    for piece in draft.evidence:
        if normalise(piece) not in normalise(source):
            failed.append(
                ("evidence not word for word", f'the evidence "{piece[:80]}" is not in the passage word for word')
            )
    if len(passages) > 1:
        covered = [any(normalise(e) in normalise(p) for e in draft.evidence) for p in passages]
        if not all(covered):
            failed.append(("evidence from one passage only", "it needs evidence from each of the two passages"))
    n = len(words(draft.question))
    low, high = LENGTHS.get(kind, LENGTHS["fact"])
    if not low <= n <= high:
        failed.append(("wrong length for its kind", f"it has {n} words; a {kind} question has {low} to {high}"))
    if repeated(draft.question):
        failed.append(("repeats itself", "it repeats itself; ask once, plainly"))
    asked = content_words(draft.question)
    if any(not asked & content_words(p) for p in passages) or not asked & content_words(" ".join(draft.evidence)):
        where = "each passage" if len(passages) > 1 else "the passage"
        failed.append(("off the passage", f"it shares no word with {where} and its evidence; ask about them"))
    for other in accepted:
        if similarity(draft.question, other) >= NEAR_DUPLICATE:
            failed.append(
                ("near-duplicate", f'it nearly repeats another question ("{other[:80]}"); ask something else')
            )
            break
    return failed


EXAMPLE_PASSAGES = (
    "Cards reported lost are frozen at once. A new card arrives within five days.",
    "Savings accounts pay 2.1% interest, paid monthly. There is no minimum balance.",
)
EXAMPLES: dict[str, tuple[str, str]] = {
    "fact": ("How long does a replacement card take?", "Is there a minimum balance on savings?"),
    "why": ("Why can't I use my card after reporting it missing?", "Why do I see interest every month?"),
    "keyword": ("replacement card delivery time", "savings minimum balance"),
    "persona": (
        "I am travelling next week and just noticed my card is gone. I reported it already. Will a new card "
        "reach me before I leave on Saturday?",
        "My daughter wants to start saving her pocket money but only has a few dollars. Can she open a savings "
        "account without a minimum amount?",
    ),
}

EXAMPLE_QUESTIONS = (
    *(q for pair in EXAMPLES.values() for q in pair),
    "If I lose my card, when can I top up my savings with it?",
)


SENTENCE = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    """The passage's sentences long enough to ask about."""
    return [t.strip() for t in SENTENCE.split(" ".join(text.split())) if len(words(t)) >= 5]


def best_sentence(question: str, passage: str) -> str:
    """The passage's sentence sharing the most content words with the question (the first on a tie)."""
    mine = content_words(question)
    return max(sentences(passage) or [" ".join(passage.split())], key=lambda t: len(mine & content_words(t)))
