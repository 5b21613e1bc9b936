"""Whitespace-separated column files (TREC runs and qrels) read with numpy, a million lines in a blink.

The bytes are scanned once for tokens; identifiers are kept as (start, end) offsets into the buffer, hashed
in a few vector passes, and decoded to text only where text is needed. Numbers take the exact fast path
(an integer mantissa of at most 15 digits over a power of ten, correctly rounded: the same double
`float()` gives); anything else goes through `float()` itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vx_eval.core.errors import VxEvalError

_P = np.uint64(0x100000001B3)  # FNV prime: multiplier of the polynomial hash
_POW10 = 10.0 ** np.arange(23)


@dataclass(frozen=True)
class Columns:
    """Tokens of a file with the same number on every non-blank line: offsets into `data`, one row a line."""

    raw: bytes
    data: np.ndarray  # the same bytes, as an array
    starts: np.ndarray  # (lines, width)
    ends: np.ndarray
    source: str
    line_numbers: np.ndarray  # 1-based line of each row

    @property
    def rows(self) -> int:
        return self.starts.shape[0]

    def text(self, column: int, rows: np.ndarray | list[int]) -> list[str]:
        raw = self.raw
        return [
            raw[s:e].decode("utf-8") for s, e in zip(self.starts[rows, column], self.ends[rows, column], strict=True)
        ]

    def matrix(self, column: int, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The column's tokens as a zero-padded byte matrix, and their lengths."""
        starts = self.starts[:, column] if rows is None else self.starts[rows, column]
        lengths = (self.ends[:, column] if rows is None else self.ends[rows, column]) - starts
        width = int(lengths.max(initial=0))
        index = np.minimum(starts[:, None] + np.arange(width)[None, :], max(len(self.data) - 1, 0))
        matrix = (
            np.where(np.arange(width)[None, :] < lengths[:, None], self.data[index], 0)
            if len(self.data)
            else np.zeros((len(starts), 0), dtype=np.uint8)
        )
        return matrix.astype(np.uint8), lengths

    def hashes(self, column: int) -> np.ndarray:
        """A 64-bit polynomial hash of each token (its length mixed in)."""
        starts, lengths = self.starts[:, column], self.ends[:, column] - self.starts[:, column]
        h = np.zeros(len(starts), dtype=np.uint64)
        last = max(len(self.data) - 1, 0)
        with np.errstate(over="ignore"):
            for j in range(int(lengths.max(initial=0))):
                byte = self.data[np.minimum(starts + j, last)].astype(np.uint64)
                h = np.where(lengths > j, h * _P + byte + np.uint64(1), h)
            h ^= lengths.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        return h.view(np.int64)

    def same_as_previous(self, column: int) -> np.ndarray:
        """Row i's token equals row i-1's, byte for byte (row 0: False)."""
        matrix, lengths = self.matrix(column)
        same = np.zeros(self.rows, dtype=bool)
        same[1:] = (lengths[1:] == lengths[:-1]) & (matrix[1:] == matrix[:-1]).all(axis=1)
        return same

    def floats(self, column: int, what: str) -> np.ndarray:
        """The column as numbers, exactly as `float()` reads them; a token that is no number is named."""
        matrix, lengths = self.matrix(column)
        digit = (matrix >= 48) & (matrix <= 57)
        dot = matrix == 46
        signed = (matrix[:, 0] == 45) | (matrix[:, 0] == 43) if matrix.shape[1] else np.zeros(self.rows, dtype=bool)
        body = np.arange(matrix.shape[1])[None, :] < lengths[:, None]
        if matrix.shape[1]:
            body[:, 0] &= ~signed
        n_digits = digit.sum(axis=1)
        simple = ((digit | dot) | ~body).all(axis=1) & (dot.sum(axis=1) <= 1) & (n_digits >= 1) & (n_digits <= 15)
        mantissa = np.zeros(self.rows, dtype=np.int64)
        for j in range(matrix.shape[1]):
            d = digit[:, j]
            mantissa = np.where(d, mantissa * 10 + (matrix[:, j].astype(np.int64) - 48), mantissa)
        after_dot = (np.cumsum(dot, axis=1) > 0) & digit
        values = mantissa / _POW10[np.minimum(after_dot.sum(axis=1), 22)]
        values = np.where(matrix[:, 0] == 45, -values, values) if matrix.shape[1] else values
        for row in np.flatnonzero(~simple):
            token = self.text(column, [row])[0]
            try:
                values[row] = float(token)
            except ValueError:
                raise VxEvalError(f"{self.source}:{self.line_numbers[row]}: {what} '{token}' is not a number") from None
        return values


def read_columns(path: Path, widths: tuple[int, ...], shape: str, what: str) -> Columns:
    """Tokens of a file whose non-blank lines all hold one of `widths` fields (the first line decides)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise VxEvalError(f"{what} {path} does not exist") from None
    except IsADirectoryError:
        raise VxEvalError(f"{what} {path} is a folder, not a file") from None
    return scan(raw, widths, shape, str(path))


def scan(raw: bytes, widths: tuple[int, ...], shape: str, source: str) -> Columns:
    data = np.frombuffer(raw, dtype=np.uint8)
    text = data > 32  # space, tab, CR, LF and other controls separate tokens
    edges = np.diff(text.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    newlines = np.flatnonzero(data == 10)
    before = np.searchsorted(starts, newlines)
    per_line = np.diff(np.concatenate([[0], before, [len(starts)]]))
    lines = np.flatnonzero(per_line)
    counts = per_line[lines]
    width = int(counts[0]) if len(counts) else widths[0]
    bad = np.flatnonzero(counts != width)
    if width not in widths or len(bad):
        at = lines[bad[0]] if len(bad) and width in widths else lines[0]
        raise VxEvalError(f"{source}:{at + 1}: expected '{shape}' ({per_line[at]} fields)")
    shape2 = (len(lines), width)
    return Columns(raw, data, starts.reshape(shape2), ends.reshape(shape2), source, lines + 1)
