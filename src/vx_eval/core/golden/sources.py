"""Where golden questions and documents come from: JSONL files, BEIR folders, TREC topics + qrels (files or a
folder), any store."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from vx_eval.core.config.experiment import CorpusSource, GoldenSource
from vx_eval.core.config.jsonio import JsonInputError, jsonl_lines, read_json
from vx_eval.core.contracts.engine import Document
from vx_eval.core.contracts.golden import GoldenSet, LeftOut
from vx_eval.core.errors import GoldenError, VxEvalError, brief, quoted
from vx_eval.core.golden.files import dump_rows, parse_golden
from vx_eval.core.report.views import CorpusCut
from vx_eval.core.stores import Stores, join, local_file, local_folder


class CorpusError(VxEvalError):
    """The declared corpus cannot be read."""


def is_beir_folder(location: str) -> bool:
    return local_file(join(location, "queries.jsonl")) if local_folder(location) else False


# ---------------------------------------------------------------------------------------------- golden


def read_golden(source: GoldenSource | str, stores: Stores, *, judged: bool = False) -> GoldenSet:
    """Read golden questions from a JSONL file in any store, or import a BEIR folder's queries and qrels or a
    TREC folder's topics and qrels. `judged`: a judge grades the run (`parse_golden`)."""
    if isinstance(source, str):
        source = GoldenSource(path=source)
    beir = source.format == "beir" or (source.format == "auto" and is_beir_folder(source.path))
    trec = source.format == "trec" or (source.format == "auto" and trec_folder(source.path) is not None)
    left_out: tuple[LeftOut, ...] = ()
    if beir:
        raw, left_out = beir_golden_bytes(source.path, source.split)
        where = f"{source.path} (BEIR {source.split})"
    elif trec:
        raw, left_out, where = trec_folder_bytes(source.path)
    elif local_folder(source.path):
        raise _neither(source.path)
    else:
        raw, where = stores.read(source.path), source.path
    if source.limit is not None:
        raw, where = first_lines(raw, source.limit), f"{where} (first {source.limit})"
    golden = parse_golden(raw, where, judged=judged)
    return dataclasses.replace(golden, left_out=left_out) if left_out else golden


def first_lines(raw: bytes, count: int) -> bytes:
    """The first `count` non-blank lines of a JSONL file, each ending in a newline."""
    lines = [line for line in raw.splitlines() if line.strip()][:count]
    return b"".join(line + b"\n" for line in lines)


def read_qrels(text: str, where: str) -> dict[str, dict[str, int]]:
    """TREC (``qid 0 doc grade``) or BEIR (``query-id corpus-id score``, header optional) judgements."""
    qrels: dict[str, dict[str, int]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts or (number == 1 and not parts[-1].lstrip("-").isdigit()):
            continue  # blank line or a header
        if len(parts) == 4:
            qid, _, doc, grade = parts
        elif len(parts) == 3:
            qid, doc, grade = parts
        else:
            raise GoldenError(f"{where}:{number}: a judgement is 'query doc grade' or 'query 0 doc grade'")
        try:
            qrels.setdefault(qid, {})[doc] = int(grade)
        except ValueError:
            raise GoldenError(f"{where}:{number}: grade '{grade}' is not a whole number") from None
    return qrels


def beir_golden_bytes(folder: str, split: str) -> tuple[bytes, tuple[LeftOut, ...]]:
    """A BEIR folder's questions as golden JSONL: grade > 0 is expected; other grades go to `grades`. With
    them, the queries left out and why (none of the split's judgements, or none above 0)."""
    root = Path(folder)
    qrels_path = root / "qrels" / f"{split}.tsv"
    if not local_file(str(qrels_path)):
        splits = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
        raise GoldenError(f"{qrels_path} does not exist; this BEIR folder has splits: {', '.join(splits) or 'none'}")
    queries = (root / "queries.jsonl").read_text(encoding="utf-8")
    qrels = qrels_path.read_text(encoding="utf-8")
    return beir_text_bytes(
        queries, qrels, str(root / "queries.jsonl"), str(qrels_path), said=("queries.jsonl", f"qrels/{split}.tsv")
    )


def beir_text_bytes(
    queries_text: str, qrels_text: str, queries_name: str, qrels_name: str, said: tuple[str, str] | None = None
) -> tuple[bytes, tuple[LeftOut, ...]]:
    """BEIR's queries.jsonl and a qrels split's TSV, given as text (`beir_golden_bytes` reads a folder's),
    as golden JSONL and what was left out (the files named as `said` says there, else by their names)."""
    qrels = read_qrels(qrels_text, qrels_name)
    rows = []
    ids: list[str] = []
    for number, line in enumerate(jsonl_lines(queries_text), start=1):
        if not line.strip():
            continue
        try:
            query = read_json(line)
            qid, text = str(query["_id"]), query["text"]
        except JsonInputError as exc:
            raise GoldenError(f"{queries_name}:{number}: {exc.message}") from None
        except (KeyError, TypeError) as exc:
            raise GoldenError(
                f"{queries_name}:{number}: not a BEIR query ({type(exc).__name__} {brief(exc.args)}); "
                'each line is {"_id": …, "text": …}'
            ) from None
        ids.append(qid)
        judged = qrels.get(qid, {})
        expected = [doc for doc, grade in judged.items() if grade > 0]
        if expected:
            grades = {doc: g for doc, g in judged.items() if g != 1}
            rows.append({"id": qid, "question": text, "expected": expected, "grades": grades})
    if not rows:
        raise GoldenError(f"no query in {queries_name} has a relevant judgement in {qrels_name}")
    queries_said, qrels_said = said or (queries_name, qrels_name)
    return dump_rows(rows), left_out_of(ids, qrels, qrels_said, queries_said)


def left_out_of(
    ids: Iterable[str], qrels: dict[str, dict[str, int]], qrels_name: str, queries_name: str
) -> tuple[LeftOut, ...]:
    """What an import of queries and their judgements leaves out, and why: queries with no judgement
    (another split's, or never judged), queries judged with no grade above 0 (nothing to find), and
    judgements of queries that are not there."""
    ids = list(ids)
    known = set(ids)
    unjudged = tuple(i for i in ids if i not in qrels)
    nothing = tuple(i for i in ids if i in qrels and not any(g > 0 for g in qrels[i].values()))
    stray = tuple(q for q in qrels if q not in known)
    found = (
        LeftOut(f"with no judgement in {qrels_name} (another split's, or never judged)", unjudged),
        LeftOut(f"judged in {qrels_name} with no grade above 0 (nothing to find)", nothing),
        LeftOut(f"of {qrels_name}'s judgements: their ids are not in {queries_name}", stray),
    )
    return tuple(f for f in found if f.ids)


# ---------------------------------------------------------------------------------------------- corpus


@dataclass
class FileCorpus:
    """Documents from JSONL bytes (``id``/``_id``, ``title``, ``text`` or ``pages``, ``metadata``)."""

    raw: bytes = field(repr=False)
    source: str
    fingerprint: str = ""
    cut: CorpusCut | None = None
    """Where only part of a corpus was read (`read_corpus` with a limit or a sample): which part."""

    def __post_init__(self) -> None:
        self.fingerprint = hashlib.sha256(self.raw).hexdigest()
        self._count: int | None = None

    def __iter__(self) -> Iterator[Document]:
        seen: set[str] = set()
        try:
            text = self.raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            at = self.raw[: exc.start].count(b"\n") + 1
            raise CorpusError(f"{self.source}:{at}: not UTF-8 text; save the corpus as UTF-8") from None
        for number, line in enumerate(io.StringIO(text), start=1):
            if not line.strip():
                continue
            doc = self._parse(line, number)
            if doc.id in seen:
                raise CorpusError(f"{self.source}:{number}: document id {quoted(doc.id)} appears twice")
            seen.add(doc.id)
            yield doc

    def __len__(self) -> int:
        if self._count is None:
            self._count = sum(1 for line in self.raw.splitlines() if line.strip())
        return self._count

    def _parse(self, line: str, number: int) -> Document:
        where = f"{self.source}:{number}"
        try:
            data = read_json(line)
        except JsonInputError as exc:
            raise CorpusError(f"{where}{f':{exc.column}' if exc.column else ''}: {exc.message}") from None
        if not isinstance(data, dict):
            raise CorpusError(f"{where}: each line is one JSON object with id and text")
        doc_id = data.get("id", data.get("_id"))
        if doc_id is None or isinstance(doc_id, dict | list | bool) or str(doc_id).strip() == "":
            raise CorpusError(f'{where}: the document has no id (write "id": "…", a string or a number)')
        pages = data.get("pages") or []
        text = data.get("text") or ""
        metadata = data.get("metadata") or {}
        if not isinstance(pages, list) or not isinstance(text, str) or not all(isinstance(p, str) for p in pages):
            raise CorpusError(f"{where}: text must be a string and pages a list of strings")
        if not isinstance(metadata, dict):
            raise CorpusError(f"{where}: metadata must be an object of fields")
        if not text.strip() and not any(p.strip() for p in pages):
            text = ""  # an empty document is kept: it exists, it just cannot be found by its words
        return Document(
            id=str(doc_id),
            text=text or "\n\n".join(pages),
            title=str(data.get("title") or ""),
            pages=tuple(pages),
            metadata=metadata,
        )


def read_corpus(source: CorpusSource | str, stores: Stores, keep: Iterable[str] = ()) -> FileCorpus:
    """The corpus at a JSONL location, or the ``corpus.jsonl`` of a BEIR folder. With a `limit`, the first
    `limit` documents; with a `sample`, that many drawn with the seed from those not in `keep`; either way
    (unless ``keep_expected: false``) every document whose id is in `keep` (those the golden questions
    expect) too, in the file's order. The corpus says which part it is (`FileCorpus.cut`)."""
    if isinstance(source, str):
        source = CorpusSource(path=source)
    location = _corpus_file(source.path)
    raw = stores.read(location)
    if not source.cut:
        return FileCorpus(raw, location)
    numbered = [(n, line) for n, line in enumerate(raw.splitlines(), start=1) if line.strip()]
    ids = [_document_id(line, location, n) for n, line in numbered]
    wanted = set(keep)
    expected = {i for i, doc_id in enumerate(ids) if doc_id in wanted}
    drawn = _drawn(source, len(ids), expected)
    chosen = sorted(drawn | expected) if source.keep_expected else sorted(drawn)
    cut = CorpusCut(
        source=location,
        how="first" if source.limit is not None else "sample",
        documents=len(chosen),
        of=len(ids),
        drawn=len(drawn),
        expected_added=len(expected - drawn) if source.keep_expected else 0,
        expected_left_out=len(wanted - {ids[i] for i in chosen}),
        seed=source.seed if source.sample is not None else None,
    )
    part = f"first {source.limit}" if source.limit is not None else f"sample of {source.sample}, seed {source.seed}"
    label = f"{location} ({part}{' + expected' if source.keep_expected else ''})"
    return FileCorpus(b"".join(numbered[i][1] + b"\n" for i in chosen), label, cut=cut)


def _corpus_file(location: str) -> str:
    """The JSONL file at `location`: itself, or a BEIR folder's corpus.jsonl."""
    if not local_folder(location):
        return location
    inner = join(location, "corpus.jsonl")
    if not local_file(inner):
        raise CorpusError(f"corpus {location} is a folder without corpus.jsonl; name the JSONL file")
    return inner


def _drawn(source: CorpusSource, count: int, expected: set[int]) -> set[int]:
    """The documents (by place) a cut draws: the first `limit`, or `sample` of those not expected, seeded."""
    if source.limit is not None:
        return set(range(min(source.limit, count)))
    others = [i for i in range(count) if i not in expected]
    return set(random.Random(source.seed).sample(others, min(source.sample or 0, len(others))))


def _document_id(line: bytes, location: str, number: int) -> str:
    try:
        found = read_json(line)
        return str(found.get("id", found.get("_id")))
    except (JsonInputError, AttributeError):
        raise CorpusError(f"{location}:{number}: each line is one JSON object with id and text") from None


# ---------------------------------------------------------------------------------------------- TREC

TOP = re.compile(r"<top>(.*?)</top>", re.S | re.I)
FIELD = re.compile(r"<(num|title|desc|narr)>(.*?)(?=<(?:num|title|desc|narr)>|$)", re.S | re.I)
CLOSING = re.compile(r"</\w+>")  # some collections close each field (Vaswani: <num>1</num>)
LABEL = re.compile(r"^\s*(number|description|narrative)\s*:\s*", re.I)


def read_topics(text: str, source: str, field: str = "title") -> dict[str, str]:
    """TREC topics: the classic ``<top> <num> <title> <desc> <narr> </top>`` format, or ``qid<TAB>text``
    lines (as TREC Deep Learning ships them). `field` picks title or desc from the classic format."""
    topics: dict[str, str] = {}
    if "<top>" in text.lower():
        for number, block in enumerate(TOP.findall(text), start=1):
            fields = {
                name.lower(): LABEL.sub("", " ".join(CLOSING.sub(" ", value).split()))
                for name, value in FIELD.findall(block)
            }
            if "num" not in fields or not fields.get(field):
                raise GoldenError(f"{source}: topic {number} has no <num> or no <{field}>")
            topics[fields["num"].strip()] = fields[field].strip()
        return topics
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        qid, sep, query = line.partition("\t")
        if not sep or not query.strip():
            raise GoldenError(f"{source}:{number}: a topic line is 'id<TAB>text' (or use the <top> format)")
        topics[qid.strip()] = query.strip()
    return topics


def trec_golden_bytes(
    topics_text: str, qrels_text: str, topics_source: str, qrels_source: str, field: str = "title"
) -> tuple[bytes, tuple[LeftOut, ...]]:
    """TREC topics + qrels: grade > 0 is expected, other grades kept in `grades`; topics no judgement
    finds relevant are left out (they could not be scored). Returns the golden bytes and what was left out."""
    topics = read_topics(topics_text, topics_source, field)
    qrels = read_qrels(qrels_text, qrels_source)
    rows = []
    for qid, text in topics.items():
        judged = qrels.get(qid, {})
        expected = [doc for doc, grade in judged.items() if grade > 0]
        if expected:
            rows.append(
                {
                    "id": qid,
                    "question": text,
                    "expected": expected,
                    "grades": {d: g for d, g in judged.items() if g != 1},
                }
            )
    if not rows:
        raise GoldenError(
            f"no topic of {topics_source} has a relevant judgement in {qrels_source}; are they the same track?"
        )
    return dump_rows(rows), left_out_of(topics, qrels, qrels_source, topics_source)


def trec_folder(location: str) -> tuple[Path, Path] | None:
    """A folder of TREC files, as collections ship them: exactly one topics file (a name with ``topic``,
    ``quer`` or ``qry`` in it, not a BEIR ``queries.jsonl``) and one qrels file (``qrel`` in its name);
    (topics, qrels), or None where `location` is not such a folder."""
    if not local_folder(location) or is_beir_folder(location):
        return None
    files = [p for p in sorted(Path(location).iterdir()) if p.is_file() and "readme" not in p.name.lower()]
    qrels = [p for p in files if "qrel" in p.name.lower()]
    topics = [p for p in files if p not in qrels and any(w in p.name.lower() for w in ("topic", "quer", "qry"))]
    return (topics[0], qrels[0]) if len(topics) == 1 and len(qrels) == 1 else None


def trec_folder_bytes(location: str, field: str = "title") -> tuple[bytes, tuple[LeftOut, ...], str]:
    """A TREC folder's topics and qrels as golden JSONL, what was left out, and what was read (for messages)."""
    found = trec_folder(location)
    if found is None:
        raise GoldenError(
            f"{location} is not a TREC folder: it holds exactly one topics file (a name with 'topic', 'quer' or "
            "'qry' in it) and one qrels file ('qrel' in its name); name the files with golden import --from trec"
        )
    topics, qrels = found
    try:
        qrels_text = qrels.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise GoldenError(f"{qrels} is not UTF-8 text; save the qrels as UTF-8") from None
    topics_text = topics.read_text(encoding="utf-8", errors="replace")
    data, left_out = trec_golden_bytes(topics_text, qrels_text, str(topics), str(qrels), field)
    return data, left_out, f"{location} (TREC {topics.name} + {qrels.name})"


def folder_golden(location: str, split: str = "test") -> tuple[bytes, tuple[LeftOut, ...], str] | None:
    """A BEIR or TREC folder's questions as golden JSONL, what was left out and what was read; None where
    `location` is no folder (a file, or a store's address). A folder that is neither is refused."""
    if is_beir_folder(location):
        raw, left_out = beir_golden_bytes(location, split)
        return raw, left_out, f"{location} (BEIR {split})"
    if trec_folder(location) is not None:
        return trec_folder_bytes(location)
    if local_folder(location):
        raise _neither(location)
    return None


def _neither(location: str) -> GoldenError:
    return GoldenError(
        f"golden {location} is a folder with neither queries.jsonl (BEIR) nor one topics and one qrels file "
        "(TREC); name a .jsonl file, a BEIR folder or a TREC folder"
    )
