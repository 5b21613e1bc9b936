"""Column files read with numpy: tokens, exact numbers, hashes, and errors that name the line."""

from __future__ import annotations

import random

import numpy as np
import pytest

from vx_eval.core.columns import scan
from vx_eval.core.errors import VxEvalError


def test_numbers_are_the_doubles_float_gives():
    rng = random.Random(3)
    tokens = (
        [
            "0",
            "-0.0",
            "1.",
            ".5",
            "+2.25",
            "007",
            "123456789012345",
            "1234567890123456789",
            "1e-05",
            "-3.2E+4",
            "inf",
            "-nan",
        ]
        + [repr(rng.uniform(-1e6, 1e6)) for _ in range(500)]
        + [f"{rng.random():.7f}" for _ in range(500)]
    )
    cols = scan("".join(f"q d {t}\n" for t in tokens).encode(), (3,), "q d x", "f")
    values = cols.floats(2, "score")
    for token, value in zip(tokens, values, strict=True):
        expected = float(token)
        assert (np.isnan(value) and np.isnan(expected)) or (
            value == expected and np.signbit(value) == np.signbit(expected)
        ), token


def test_a_token_that_is_no_number_is_named_with_its_line():
    cols = scan(b"q d 1.0\n\nq d 1.0.0\n", (3,), "q d x", "run.txt")
    with pytest.raises(VxEvalError, match=r"run.txt:3: score '1.0.0' is not a number"):
        cols.floats(2, "score")


def test_lines_of_the_wrong_width_are_named():
    with pytest.raises(VxEvalError, match=r"run.txt:3: expected 'qid Q0 doc rank score tag' \(5 fields\)"):
        scan(b"a Q0 d 1 2 t\n\na Q0 d 1 2\n", (6, 3), "qid Q0 doc rank score tag", "run.txt")
    with pytest.raises(VxEvalError, match=r"run.txt:1: expected .* \(2 fields\)"):
        scan(b"a b\n", (6, 3), "qid Q0 doc rank score tag", "run.txt")


def test_tabs_crlf_blank_lines_and_utf8_ids():
    cols = scan("q1\t0\tdöc-1\t2\r\n\r\n  q2 0 d2 1  \r\n".encode(), (4, 3), "qid 0 doc grade", "qrels")
    assert cols.rows == 2 and cols.text(2, [0, 1]) == ["döc-1", "d2"]
    assert cols.line_numbers.tolist() == [1, 3]
    assert cols.floats(3, "grade").tolist() == [2.0, 1.0]


def test_hashes_tell_tokens_apart_and_equal_tokens_agree():
    tokens = ["a", "b", "ab", "ba", "a" * 40, "a" * 41, "", "x"]
    tokens = [t for t in tokens if t]
    cols = scan("".join(f"q {t} 1\n" for t in tokens + tokens).encode(), (3,), "q d x", "f")
    h = cols.hashes(1)
    n = len(tokens)
    assert len(set(h[:n].tolist())) == n and h[:n].tolist() == h[n:].tolist()
    assert cols.same_as_previous(0).tolist() == [False] + [True] * (2 * n - 1)
