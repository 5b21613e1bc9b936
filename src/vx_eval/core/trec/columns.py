"""Whitespace-separated column files (TREC runs and qrels) read with numpy, in time and memory linear in the
file's size.

The bytes are scanned once for tokens, split at C's blanks (space, tab, and the CR, VT and FF controls, as
trec_eval splits them: any mix of them, any number in a row); a line whose first token starts with ``#`` is a
comment and blank lines are skipped, as trec_eval does; a NUL byte is refused (trec_eval stops there). Each
file has a `Layout`: the forms its lines may take (a run line is ``qid Q0 doc rank score tag``, fields past
the sixth ignored, or ``qid doc score``), and the form most lines take is the file's; the first line that does
not fit is named with how many fields it has and how many were expected. Only the columns a form keeps are
held, as (start, end) offsets into the buffer. Identifiers are hashed eight bytes at a time (one vector pass
per eight bytes of the longest short token), compared byte for byte where hashes agree, and decoded to text
only where text is needed. Numbers take the exact fast path (an integer mantissa of at most 15 digits over a
power of ten, correctly rounded: the same double `float()` gives); anything else goes through `float()`
itself.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vx_eval.core.errors import VxEvalError, quoted

_P = np.uint64(0x100000001B3)  # FNV prime: multiplier of the polynomial hash
_MIX = np.uint64(0x9E3779B97F4A7C15)
_POW10 = 10.0 ** np.arange(23)
SHORT = 64
"""Tokens up to this many bytes are hashed and compared in vector passes; longer ones (rare) one by one."""
_NUMBER = 24  # number tokens up to this length take the vectorised exact path


@dataclass(frozen=True)
class Form:
    """One shape a line may take: how many fields, which of them are read, and whether more may follow."""

    fields: int
    keep: tuple[int, ...]
    extra: bool = False

    def fits(self, count: int) -> bool:
        return count == self.fields or (self.extra and count > self.fields)


@dataclass(frozen=True)
class Layout:
    """What a file of this kind looks like: its name, its lines' shape, and the forms they may take."""

    what: str
    shape: str
    forms: tuple[Form, ...]


RUN = Layout("run file", "qid Q0 doc rank score tag", (Form(6, (0, 2, 4), extra=True), Form(3, (0, 1, 2))))
"""A TREC run: six fields (more are ignored, as trec_eval ignores them), or ``qid doc score``."""
QRELS = Layout("qrels file", "qid 0 doc grade", (Form(4, (0, 2, 3)), Form(3, (0, 1, 2))))
"""TREC qrels (four fields), or BEIR's ``query-id corpus-id score`` (three)."""


@dataclass(frozen=True)
class Columns:
    """The kept tokens of a file: offsets into `data`, one row a line (columns as the `Layout` keeps them)."""

    raw: bytes
    data: np.ndarray  # the same bytes, as an array
    starts: np.ndarray  # (lines, kept columns)
    ends: np.ndarray
    source: str
    line_numbers: np.ndarray  # 1-based line of each row

    @property
    def rows(self) -> int:
        return int(self.starts.shape[0])

    def select(self, rows: np.ndarray) -> Columns:
        """These rows only (a mask or indices)."""
        return Columns(self.raw, self.data, self.starts[rows], self.ends[rows], self.source, self.line_numbers[rows])

    def tokens(self, column: int, rows: np.ndarray | list[int]) -> list[bytes]:
        raw = self.raw
        return [raw[s:e] for s, e in zip(self.starts[rows, column], self.ends[rows, column], strict=True)]

    def text(self, column: int, rows: np.ndarray | list[int]) -> list[str]:
        """Tokens as text; bytes that are not UTF-8 are kept as escapes (``surrogateescape``), never an error."""
        return [t.decode("utf-8", "surrogateescape") for t in self.tokens(column, rows)]

    def lengths(self, column: int) -> np.ndarray:
        result: np.ndarray = self.ends[:, column] - self.starts[:, column]
        return result

    def hashes(self, column: int) -> np.ndarray:
        """A 64-bit hash of each token: equal tokens agree; a match is still confirmed with `same_bytes`."""
        return _hash(self.raw, self.data, self.starts[:, column], self.lengths(column))

    def same_as_previous(self, column: int) -> np.ndarray:
        """Row i's token equals row i-1's, byte for byte (row 0: False)."""
        same = np.zeros(self.rows, dtype=bool)
        if self.rows < 2:
            return same
        lengths, starts = self.lengths(column), self.starts[:, column]
        equal = lengths[1:] == lengths[:-1]
        long = np.flatnonzero(equal & (lengths[1:] > SHORT)) + 1
        windows = _windows(self.data)
        for word in range(0, int(np.minimum(lengths, SHORT).max(initial=0)), 8):
            # each row's word read once and compared with the row before's (neighbours mostly agree here)
            words = _words(windows, starts + word, np.clip(lengths - word, 0, 8))
            equal &= words[1:] == words[:-1]
        same[1:] = equal
        if len(long):  # past the first SHORT bytes: compared whole
            same[long] = same_bytes(self, column, long - 1, self, column, long)
        return same

    def floats(self, column: int, what: str) -> np.ndarray:
        """The column as numbers, exactly as `float()` reads them; a token that is no number is named."""
        starts, lengths = self.starts[:, column], self.lengths(column)
        values = np.zeros(self.rows)
        short = np.flatnonzero(lengths <= _NUMBER)
        simple = np.zeros(self.rows, dtype=bool)
        if len(short):
            values[short], simple[short] = _simple_numbers(self.data, starts[short], lengths[short])
        for row in np.flatnonzero(~simple):
            token = self.text(column, [int(row)])[0]
            try:
                values[row] = float(token)
            except ValueError:
                raise VxEvalError(
                    f"{self.source}:{self.line_numbers[row]}: {what} {quoted(token)} is not a number"
                ) from None
        return values


def as_bytes(text: str) -> bytes:
    """An id read as text (`Columns.text`) back as the bytes it was read from, whether or not they are UTF-8:
    what trec_eval compares and sorts (strcmp)."""
    return text.encode("utf-8", "surrogateescape")


def _simple_numbers(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values of tokens written as [sign] digits [. digits] (at most 15 digits), and which tokens are so."""
    width = int(lengths.max(initial=0))
    index = np.minimum(starts[:, None] + np.arange(width)[None, :], max(len(data) - 1, 0))
    inside = np.arange(width)[None, :] < lengths[:, None]
    matrix = np.where(inside, data[index], 0).astype(np.uint8) if len(data) else np.zeros((len(starts), 0), np.uint8)
    digit = (matrix >= 48) & (matrix <= 57)
    dot = matrix == 46
    signed = (matrix[:, 0] == 45) | (matrix[:, 0] == 43) if width else np.zeros(len(starts), dtype=bool)
    body = inside.copy()
    if width:
        body[:, 0] &= ~signed
    n_digits = digit.sum(axis=1)
    simple = ((digit | dot) | ~body).all(axis=1) & (dot.sum(axis=1) <= 1) & (n_digits >= 1) & (n_digits <= 15)
    mantissa = np.zeros(len(starts), dtype=np.int64)
    for j in range(width):
        d = digit[:, j]
        mantissa = np.where(d, mantissa * 10 + (matrix[:, j].astype(np.int64) - 48), mantissa)
    after_dot = (np.cumsum(dot, axis=1) > 0) & digit
    values = mantissa / _POW10[np.minimum(after_dot.sum(axis=1), 22)]
    values = np.where(matrix[:, 0] == 45, -values, values) if width else values
    return values, simple


def _windows(data: np.ndarray) -> np.ndarray:
    """Every 8-byte window of `data` (a view, no copy; data shorter than 8 bytes is padded first)."""
    if len(data) < 8:
        data = np.concatenate([data, np.zeros(8 - len(data), dtype=np.uint8)])
    return np.lib.stride_tricks.as_strided(data, shape=(len(data) - 7, 8), strides=(data.strides[0], data.strides[0]))


def _words(windows: np.ndarray, at: np.ndarray, left: np.ndarray) -> np.ndarray:
    """The bytes at `at` (up to `left` of them, at most 8) as little-endian words, the bytes past `left` zero.
    A position in the last seven bytes reads the last window, shifted (no padded copy of the data)."""
    last = len(windows) - 1
    if len(at) and int(at.max()) > last:
        past = np.maximum(at - last, 0)
        word: np.ndarray = windows[at - past].view(np.uint64)[:, 0] >> (past.astype(np.uint64) * np.uint64(8))
    else:
        word = windows[at].view(np.uint64)[:, 0]
    if int(left.min(initial=8)) >= 8:
        return word
    masked: np.ndarray = word & _MASKS[np.minimum(left, 8)]
    return masked


_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)
"""The low k bytes of a word, for k = 0..8."""


def _hash(raw: bytes, data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Short tokens: a polynomial hash over their bytes taken eight at a time (one vector pass per eight
    bytes, over the tokens that long); long tokens: BLAKE2b, one by one."""
    out = np.zeros(len(starts), dtype=np.uint64)
    short = np.flatnonzero(lengths <= SHORT)
    if len(short):
        windows = _windows(data)
        s, n = starts[short], lengths[short]
        h = np.zeros(len(short), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for word in range(0, int(n.max(initial=0)), 8):
                if (n > word).all():  # every token this long: no subset to take
                    h = h * _P + _words(windows, s + word, n - word) + np.uint64(1)
                    continue
                live = np.flatnonzero(n > word)
                h[live] = h[live] * _P + _words(windows, s[live] + word, n[live] - word) + np.uint64(1)
            h ^= n.astype(np.uint64) * _MIX
        out[short] = h
    long = np.flatnonzero(lengths > SHORT)
    for row in long:
        start = int(starts[row])
        digest = hashlib.blake2b(raw[start : start + int(lengths[row])], digest_size=8).digest()
        out[row] = np.frombuffer(digest, dtype=np.uint64)[0]
    return out.view(np.int64)


def same_bytes(a: Columns, a_col: int, a_rows: np.ndarray, b: Columns, b_col: int, b_rows: np.ndarray) -> np.ndarray:
    """Row by row, whether a's token and b's token are the same bytes (in time linear in their lengths)."""
    a_rows, b_rows = np.asarray(a_rows, dtype=np.int64), np.asarray(b_rows, dtype=np.int64)
    la, lb = a.lengths(a_col)[a_rows], b.lengths(b_col)[b_rows]
    same = la == lb
    short = np.flatnonzero(same & (la <= SHORT))
    if len(short):
        sa, sb, n = a.starts[a_rows[short], a_col], b.starts[b_rows[short], b_col], la[short]
        wa = _windows(a.data)
        wb = wa if b.data is a.data else _windows(b.data)
        equal = np.ones(len(short), dtype=bool)
        for word in range(0, int(n.max(initial=0)), 8):  # eight bytes at a time
            live = np.flatnonzero(n > word)
            left = n[live] - word
            equal[live] &= _words(wa, sa[live] + word, left) == _words(wb, sb[live] + word, left)
        same[short] = equal
    for i in np.flatnonzero(same & (la > SHORT)):
        same[i] = a.tokens(a_col, [a_rows[i]])[0] == b.tokens(b_col, [b_rows[i]])[0]
    result: np.ndarray = same
    return result


def read_columns(path: Path, layout: Layout) -> Columns:
    """The kept tokens of the file at `path` (see `scan`)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise VxEvalError(f"{layout.what} {path} does not exist") from None
    except IsADirectoryError:
        raise VxEvalError(f"{layout.what} {path} is a folder, not a file") from None
    except OSError as exc:
        raise VxEvalError(f"{layout.what} {path} cannot be read ({exc.strerror or exc})") from None
    return scan(raw, layout, str(path))


def scan(raw: bytes, layout: Layout, source: str) -> Columns:
    """Tokens of `raw`, blank and comment lines skipped, every line in the form most lines take."""
    data = np.frombuffer(raw, dtype=np.uint8)
    nul = raw.find(b"\0")
    if nul >= 0:  # trec_eval stops reading at one, silently
        line = raw.count(b"\n", 0, nul) + 1
        raise VxEvalError(f"{source}:{line}: a NUL byte; a {layout.what} is text: remove it or write the file again")
    text = _TOKEN_BYTE[data]  # C's blanks separate tokens, as in trec_eval (isspace); one array, no temporaries
    edges = np.diff(text.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    del edges, text
    newlines = np.flatnonzero(data == 10)
    line_of = np.searchsorted(newlines, starts)  # 0-based line of each token
    first = np.ones(len(starts), dtype=bool)
    first[1:] = line_of[1:] != line_of[:-1]
    comment = first & (data[starts] == 35) if len(starts) else first  # '#' opens a comment line
    line_comment = np.zeros(len(newlines) + 1, dtype=bool)
    line_comment[line_of[comment]] = True
    keep = ~line_comment[line_of]
    starts, ends, line_of, first = starts[keep], ends[keep], line_of[keep], first[keep]
    heads = np.flatnonzero(first)
    counts = np.diff(np.append(heads, len(starts)))
    lines = line_of[heads]
    form = _form_of(counts, layout)
    bad = np.flatnonzero(~_fits(form, counts))
    if len(bad):
        at, count = int(bad[0]), int(counts[bad[0]])
        expected = f"{form.fields}{' or more' if form.extra else ''}"
        raise VxEvalError(
            f"{source}:{lines[at] + 1}: a {layout.what} line is '{layout.shape}'"
            + (f" (or {_other_forms(layout, form)})" if len(layout.forms) > 1 else "")
            + f"; this line has {count} field{'s' * (count != 1)}, {expected} expected"
        )
    index = heads[:, None] + np.asarray(form.keep)[None, :]
    return Columns(raw, data, starts[index], ends[index], source, lines + 1)


_TOKEN_BYTE = np.ones(256, dtype=bool)
_TOKEN_BYTE[[9, 10, 11, 12, 13, 32]] = False
"""Whether a byte is part of a token: every byte but C's blanks (tab, LF, VT, FF, CR, space)."""


def _fits(form: Form, counts: np.ndarray) -> np.ndarray:
    result: np.ndarray = (counts == form.fields) | ((counts > form.fields) if form.extra else False)
    return result


def _form_of(counts: np.ndarray, layout: Layout) -> Form:
    """The form most lines take (the first listed on a tie, or for an empty file)."""
    if not len(counts):
        return layout.forms[0]
    seen = Counter(counts.tolist())
    return max(layout.forms, key=lambda f: sum(n for c, n in seen.items() if f.fits(c)))


def _other_forms(layout: Layout, form: Form) -> str:
    return ", ".join(f"{f.fields} fields" for f in layout.forms if f is not form)
