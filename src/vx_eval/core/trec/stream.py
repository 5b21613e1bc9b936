"""`vx-eval eval` at scale: a TREC run file streamed through pyarrow's CSV reader in chunks of whole questions,
each chunk scored as it comes, so time and memory follow the chunk, not the file.

Arrow's multi-threaded CSV reader splits the lines (one separator, spaces or tabs, no quoting) and reads the
scores; everything after works on its raw buffers with numpy, exactly as the whole-file reader
(`core.trec.files.run_batch`) does: documents matched to judgements by 64-bit hashes and every match confirmed
byte for byte, results in trec_eval's order (score descending, then document id descending; ids compared
only where scores tie), each chunk a `metrics.Batch` the measures read. (No pyarrow compute function is
used: any of them imports pandas where it is installed, a sixth of a second this command does not need.)

Whatever this reader does not take exactly as trec_eval would (a comment or blank first line, a line with
another number of fields or two separators in a row, a number Arrow does not read, ids that are not UTF-8,
a document listed twice for a question, a question whose lines are not together, a score that is no
number) raises `Unstreamable`, and the caller reads the file the careful way (`core.trec.files`), which names the
line or says what it did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vx_eval.core.measures import metrics
from vx_eval.core.measures.trec_only import relevance_strings
from vx_eval.core.optional import on_first_use
from vx_eval.core.trec.columns import Columns, as_bytes, same_bytes

csv = on_first_use("pyarrow.csv")
_pyarrow = on_first_use("pyarrow")

QID, DOC = 0, 1
CHUNK_LINES = 1 << 18
"""Lines scored at once (whole questions, so a chunk may run a little over): small enough that a chunk's
arrays stay in the processor's caches and the memory held stays low (measured: 2^18 lines beat 2^20 on
10 million lines in both)."""
BLOCK = 1 << 24
"""Bytes Arrow reads at a time."""
WHOLE = 1 << 24
"""A file up to this many bytes (about half a million lines) is scored as one chunk: splitting it saves no
memory worth having and costs a second pass of the per-chunk work."""
_MIX = np.int64(0x9E3779B97F4A7C15 - (1 << 64))

if TYPE_CHECKING:
    import pyarrow as pa


class Unstreamable(Exception):
    """The file needs the careful reader (see the module)."""


@dataclass
class Judged:
    """The judgements as the streaming reader matches against them: sorted (question, document) hashes."""

    columns: Columns
    grades: np.ndarray
    question_of: dict[bytes, int]
    pairs: np.ndarray  # sorted (question, document) hashes
    rows: np.ndarray  # the judgement row of each sorted pair
    rows_question: np.ndarray
    ideal: np.ndarray
    n_rel: np.ndarray
    n_judged: np.ndarray


def judged_of(
    columns: Columns, grades: np.ndarray, rows_question: np.ndarray, question_ids: Sequence[str], threshold: int
) -> Judged:
    """What scoring needs of the judgements (`core.trec.files.Judgements`' columns, grades, question rows and
    question ids). Every judged question is matched, one whose every grade is below 0 (and so has no row
    here) included: its results are counted, as trec_eval counts them."""
    nq = len(question_ids)
    with np.errstate(over="ignore"):
        pairs = rows_question * _MIX ^ columns.hashes(DOC)
    order = np.argsort(pairs, kind="stable")
    positive = grades > 0
    p_order = np.lexsort((-grades[positive], rows_question[positive]))
    p_q, p_g = rows_question[positive][p_order], grades[positive][p_order]
    counts = np.bincount(p_q, minlength=nq)
    rank = np.arange(len(p_q)) - np.concatenate([[0], np.cumsum(counts)[:-1]])[p_q]
    ideal = np.zeros((nq, max(int(counts.max(initial=0)), 1)))
    ideal[p_q, rank] = p_g
    question_of = {as_bytes(qid): i for i, qid in enumerate(question_ids)}
    return Judged(
        columns,
        grades.astype(float),
        question_of,
        pairs[order],
        order,
        rows_question,
        ideal,
        np.bincount(rows_question[(grades >= threshold) & positive], minlength=nq).astype(float),
        np.bincount(rows_question, minlength=nq).astype(float),
    )


@dataclass
class Scored:
    """Every judged question's values (questions x measures), its results and its relevant results."""

    values: np.ndarray
    num_ret: np.ndarray
    num_rel_ret: np.ndarray
    texts: dict[int, list[str]] = field(default_factory=dict)
    """trec_eval's relstring of each question, by its length (those asked for)."""


@dataclass(frozen=True)
class Bytes:
    """What one pass over a run file's bytes found (see `_looked_at`)."""

    refused: str
    """Why Arrow would split the lines otherwise than trec_eval whatever the fields hold, or ""."""
    other_blanks: bool
    """Whether a tab, VT or FF is anywhere in the file: a field may then hold a blank Arrow did not split at."""


def _looked_at(path: Path) -> Bytes:
    """One pass over the bytes at memory speed (single-byte searches), before Arrow reads them: a carriage
    return that does not end a line (Arrow ends a row there; trec_eval reads it as a blank between fields) or
    a NUL byte (trec_eval stops reading there) refuses the file. (A Python file handed to Arrow instead would
    be read from Arrow's own thread, which aborts the process where it still runs as the interpreter exits.)"""
    other = False
    with path.open("rb") as handle:
        while block := handle.read(BLOCK):
            if b"\0" in block:
                return Bytes("a NUL byte", False)
            if b"\r" in block and block.count(b"\r") != block.count(b"\r\n"):
                return Bytes("a carriage return inside a line (or across two blocks)", False)
            other = other or b"\t" in block or b"\x0b" in block or b"\x0c" in block
    return Bytes("", other)


RUN_NAMES = ["qid", "q0", "doc", "rank", "score", "tag"]
KEPT = ["qid", "doc", "score"]
WHOLE_FIELDS = ("qid", "q0", "doc", "rank")
"""The fields that must each be one token: a blank inside one means Arrow split the line otherwise than
trec_eval, which splits at every run of blanks (spaces, tabs, and the other C blanks)."""


def _reader(path: Path) -> tuple[Any, bool]:
    """Arrow's reader of the run, every field as text, and whether a field may hold a blank (a file with tabs,
    or with another blank than the one Arrow splits at): `_check_fields` looks inside them then."""

    with path.open("rb") as handle:
        head = handle.readline(1 << 16)
    if not head.strip() or head.lstrip().startswith(b"#"):
        raise Unstreamable("a comment or blank first line")
    delimiter = "\t" if b"\t" in head else " "
    fields = len(head.rstrip(b"\r\n").split(delimiter.encode()))
    if fields not in (3, 6):
        raise Unstreamable("neither 6 fields nor 3")
    names = RUN_NAMES if fields == 6 else KEPT
    seen = _looked_at(path)
    if seen.refused:
        raise Unstreamable(seen.refused)
    try:
        reader = csv.open_csv(
            path,
            read_options=csv.ReadOptions(column_names=names, block_size=BLOCK),
            parse_options=csv.ParseOptions(delimiter=delimiter, quote_char=False, double_quote=False),
            convert_options=csv.ConvertOptions(
                column_types={name: _pyarrow.float64() if name == "score" else _pyarrow.string() for name in names},
                null_values=[],
                strings_can_be_null=False,
            ),
            memory_pool=_pyarrow.system_memory_pool(),  # freed at once: jemalloc's pool kept a quarter more, slower
        )
    except (_pyarrow.ArrowInvalid, ValueError) as exc:
        raise Unstreamable(str(exc)) from None
    return reader, delimiter == "\t" or seen.other_blanks


def _check_fields(table: pa.Table, blanks: bool) -> None:
    """`Unstreamable` where a line's fields are not what trec_eval would read: an empty field (two separators
    in a row: trec_eval sees one fewer field and reads the line otherwise), or, where a field may hold a blank
    (`blanks`), a blank inside or around one, or a tag that does not start with a token."""
    for name in table.column_names:
        if name == "score":
            continue
        column = table.column(name)
        if not blanks:  # the offsets alone: no field is empty
            if any((np.diff(_offsets(chunk)) == 0).any() for chunk in column.chunks):
                raise Unstreamable(f"an empty {name} field")
            continue
        data, starts, lengths = _strings(column)
        if not len(starts):
            continue
        if name in WHOLE_FIELDS:
            if (data <= 32).any() or (lengths == 0).any():
                raise Unstreamable(f"a blank around or inside a {name} field")
        elif (lengths == 0).any() or (data[starts[lengths > 0]] <= 32).any():  # the tag: its first token counts
            raise Unstreamable("a missing tag")


def _offsets(chunk: pa.Array) -> np.ndarray:
    """Where each value of an Arrow string array starts in its data, and where the last ends (its raw buffer)."""
    return np.frombuffer(chunk.buffers()[1], dtype=np.int32)[chunk.offset : chunk.offset + len(chunk) + 1]


def _strings(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An Arrow string column's bytes, and each value's start and length in them (its raw buffers)."""
    parts, starts, lengths, base = [], [], [], 0
    for chunk in column.chunks:
        offsets = _offsets(chunk)
        data = np.frombuffer(chunk.buffers()[2], dtype=np.uint8) if len(chunk) else np.zeros(0, np.uint8)
        data = data[offsets[0] : offsets[-1]]
        parts.append(data)
        starts.append(offsets[:-1].astype(np.int64) - offsets[0] + base)
        lengths.append(np.diff(offsets).astype(np.int64))
        base += len(data)
    return np.concatenate(parts), np.concatenate(starts), np.concatenate(lengths)


def _floats(column: pa.ChunkedArray) -> np.ndarray:
    return np.concatenate(
        [np.frombuffer(c.buffers()[1], dtype=np.float64)[c.offset : c.offset + len(c)] for c in column.chunks]
    )


@dataclass
class Chunk:
    """Lines of the run as the whole-file reader holds them: question and document tokens over one buffer."""

    columns: Columns
    scores: np.ndarray

    @classmethod
    def of(cls, table: pa.Table, source: str) -> Chunk:
        q_data, q_starts, q_len = _strings(table.column("qid"))
        d_data, d_starts, d_len = _strings(table.column("doc"))
        data = np.concatenate([q_data, d_data])
        starts = np.column_stack([q_starts, d_starts + len(q_data)])
        ends = starts + np.column_stack([q_len, d_len])
        raw = data.tobytes()
        lines = np.zeros(len(q_starts), dtype=np.int64)
        return cls(Columns(raw, data, starts, ends, source, lines), _floats(table.column("score")))


def score_stream(
    path: Path, judged: Judged, measures: list[metrics.Measure], threshold: int, strings: Sequence[int] = ()
) -> Scored:
    """The run at `path` scored in chunks of whole questions (see the module), with the relstrings of the
    lengths in `strings`; `Unstreamable` where the careful reader is needed."""

    nq = len(judged.ideal)
    out = Scored(np.zeros((nq, len(measures))), np.zeros(nq, dtype=np.int64), np.zeros(nq, dtype=np.int64))
    out.texts = {n: [""] * nq for n in strings}
    seen = np.zeros(nq, dtype=bool)
    pending: list[Any] = []
    held = 0
    limit = CHUNK_LINES if path.stat().st_size > WHOLE else float("inf")
    try:
        reader, blanks = _reader(path)
        for whole in reader:
            _check_fields(_pyarrow.Table.from_batches([whole]), blanks)
            batch = whole.select(KEPT)  # the other fields were only looked at
            pending.append(batch)
            held += batch.num_rows
            if held >= limit:
                table = _pyarrow.Table.from_batches(pending)
                keep = _before_last_question(table)
                if keep:
                    _score_chunk(Chunk.of(table.slice(0, keep), str(path)), judged, measures, threshold, seen, out)
                pending, held = table.slice(keep).to_batches(), table.num_rows - keep
        if held:
            _score_chunk(
                Chunk.of(_pyarrow.Table.from_batches(pending), str(path)), judged, measures, threshold, seen, out
            )
    except _pyarrow.ArrowInvalid as exc:  # a line Arrow cannot read as trec_eval would (see the module)
        raise Unstreamable(str(exc)) from None
    unseen = np.flatnonzero(~seen)  # judged questions the run never answers score on no results (trec_eval -c)
    if len(unseen) and measures:
        out.values[unseen] = np.column_stack([m.compute(_batch(unseen, np.zeros(len(unseen), np.int64), judged,
                                                               threshold)) for m in measures])  # fmt: skip
    return out


def _before_last_question(table: pa.Table) -> int:
    """Rows before the last question's own lines, which may go on in the next block (0: one question fills
    the whole chunk, and reading goes on)."""
    data, starts, lengths = _strings(table.column("qid").slice(max(0, table.num_rows - CHUNK_LINES)))
    last = data[starts[-1] : starts[-1] + lengths[-1]].tobytes()
    i = len(starts) - 1
    while i > 0 and data[starts[i - 1] : starts[i - 1] + lengths[i - 1]].tobytes() == last:
        i -= 1
    return int(table.num_rows - (len(starts) - i))


def _score_chunk(
    chunk: Chunk, judged: Judged, measures: list[metrics.Measure], threshold: int, seen: np.ndarray, out: Scored
) -> None:
    columns, scores = chunk.columns, chunk.scores
    if np.isnan(scores).any():
        raise Unstreamable("a score that is no number: the careful reader names its lines")
    stretch = np.flatnonzero(~columns.same_as_previous(QID))
    asked = columns.tokens(QID, stretch)
    per_stretch = np.array([judged.question_of.get(bytes(t), -1) for t in asked], dtype=np.int64)
    question = np.repeat(per_stretch, np.diff(np.append(stretch, columns.rows)))
    rows = np.flatnonzero(question >= 0)  # a question nobody judged is left out, as trec_eval leaves it out
    if not len(rows):
        return
    if len(rows) == columns.rows:  # every line is of a judged question: nothing to leave out
        part, q, s = columns, question, scores
    else:
        part, q, s = columns.select(rows), question[rows], scores[rows]
    starts = np.flatnonzero(np.concatenate([[True], q[1:] != q[:-1]]))
    order_q = q[starts]
    ordered = np.sort(order_q)  # (np.unique would import numpy.ma: a tenth of a small file's time)
    if (ordered[1:] == ordered[:-1]).any() or seen[order_q].any():
        raise Unstreamable("a question's lines are not together")
    seen[order_q] = True
    with np.errstate(over="ignore"):
        pair = q * _MIX ^ part.hashes(DOC)
    if _twice(part, q, pair):
        raise Unstreamable("a document listed twice for a question: the careful reader names both lines")
    order = _trec_order(part, q, s)
    grade, is_judged = _grades(part, pair, judged)
    length = np.diff(np.append(starts, len(q)))
    batch = _batch(order_q, length, judged, threshold, grade[order], is_judged[order])
    if measures:
        out.values[order_q] = np.column_stack([m.compute(batch) for m in measures])
    for n, texts in out.texts.items():
        for i, text in zip(order_q.tolist(), relevance_strings(batch, n), strict=True):
            texts[i] = text
    out.num_ret[order_q] = batch.length
    out.num_rel_ret[order_q] = batch.hit.sum(axis=1)


def _twice(part: Columns, q: np.ndarray, pair: np.ndarray) -> bool:
    ordered = np.sort(pair)  # (a plain sort answers "no two alike" fastest; the order is wanted only if some are)
    if not (ordered[1:] == ordered[:-1]).any():
        return False
    order = np.argsort(pair, kind="stable")
    at = np.flatnonzero(pair[order][1:] == pair[order][:-1])
    if not len(at):
        return False
    first, second = order[at], order[at + 1]
    return bool((same_bytes(part, DOC, first, part, DOC, second) & (q[first] == q[second])).any())


def _grades(part: Columns, pair: np.ndarray, judged: Judged) -> tuple[np.ndarray, np.ndarray]:
    """Each line's grade and whether it is judged: its (question, document) hash found among the
    judgements', and the document's bytes confirmed."""
    at = np.minimum(np.searchsorted(judged.pairs, pair), max(len(judged.pairs) - 1, 0))
    hit = np.flatnonzero(judged.pairs[at] == pair) if len(judged.pairs) else np.zeros(0, dtype=np.int64)
    row = judged.rows[at[hit]]
    confirmed = same_bytes(part, DOC, hit, judged.columns, DOC, row)
    is_judged = np.zeros(len(pair), dtype=bool)
    is_judged[hit[confirmed]] = True
    grade = np.zeros(len(pair))
    grade[hit[confirmed]] = judged.grades[row[confirmed]]
    return grade, is_judged


def _trec_order(part: Columns, q: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Lines in trec_eval's order: by question as they come (a question's lines are together), score
    descending, document id descending among equal scores (as bytes: strcmp's order)."""
    same_q = q[1:] == q[:-1]
    if np.any(same_q & (s[1:] > s[:-1])):  # some question's lines are not best first
        order = np.lexsort((-s, np.cumsum(np.concatenate([[0], ~same_q]))))
    else:
        order = np.arange(len(q))
    qs, ss = q[order], s[order]
    equal = (qs[1:] == qs[:-1]) & (ss[1:] == ss[:-1])
    tie = np.zeros(len(order), dtype=bool)
    tie[1:] |= equal
    tie[:-1] |= equal
    if tie.any():
        at = np.flatnonzero(tie)
        names = part.tokens(DOC, order[at])
        rank = {name: i for i, name in enumerate(sorted(set(names)))}
        codes = np.fromiter(map(rank.__getitem__, names), dtype=np.int64, count=len(names))
        stretch = np.cumsum(np.concatenate([[True], ~equal]))[at]
        order[at] = order[at][np.lexsort((-codes, stretch))]
    return order


def _batch(
    questions: np.ndarray,
    length: np.ndarray,
    judged: Judged,
    threshold: int,
    grade: np.ndarray | None = None,
    is_judged: np.ndarray | None = None,
) -> metrics.Batch:
    """The chunk's questions as a `metrics.Batch` (grades in trec_eval's order), as `core.trec.files.run_batch`."""
    n = len(questions)
    width = max(int(length.max(initial=0)), 1)
    grades = np.zeros((n, width))
    judged_m = np.zeros((n, width), dtype=bool)
    if grade is not None and is_judged is not None and len(grade):
        row = np.repeat(np.arange(n), length)
        rank = np.arange(len(grade)) - np.repeat(np.concatenate([[0], np.cumsum(length)[:-1]]), length)
        grades[row, rank] = grade
        judged_m[row, rank] = is_judged
    rel = (grades >= threshold) & (grades > 0)
    return metrics.Batch(
        grades, judged_m, rel, judged.ideal[questions], judged.n_rel[questions], length, length, threshold,
        n_judged=judged.n_judged[questions],
    )  # fmt: skip
