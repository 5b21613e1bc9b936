"""Column files read with numpy: tokens, exact numbers, hashes, errors that name the line, and time and
memory linear in the file's size."""

from __future__ import annotations

import random
import time
import tracemalloc

import numpy as np
import pytest

from vx_eval.core.errors import VxEvalError
from vx_eval.core.trec.columns import QRELS, RUN, Form, Layout, same_bytes, scan

THREE = Layout("file", "q d x", (Form(3, (0, 1, 2)),))


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
            "0." + "1" * 40,  # longer than the vector path takes
        ]
        + [repr(rng.uniform(-1e6, 1e6)) for _ in range(500)]
        + [f"{rng.random():.7f}" for _ in range(500)]
    )
    cols = scan("".join(f"q d {t}\n" for t in tokens).encode(), THREE, "f")
    values = cols.floats(2, "score")
    for token, value in zip(tokens, values, strict=True):
        expected = float(token)
        assert (np.isnan(value) and np.isnan(expected)) or (
            value == expected and np.signbit(value) == np.signbit(expected)
        ), token


def test_a_token_that_is_no_number_is_named_with_its_line():
    cols = scan(b"q d 1.0\n\nq d 1.0.0\n", THREE, "run.txt")
    with pytest.raises(VxEvalError, match=r"run.txt:3: score '1.0.0' is not a number"):
        cols.floats(2, "score")
    bad = scan(b"q d \xff\xfe\n", THREE, "run.txt")  # bytes that are not UTF-8: named, never a decode error
    with pytest.raises(VxEvalError, match=r"run.txt:1: score '\\xff\\xfe' is not a number"):
        bad.floats(2, "score")


def test_the_line_that_does_not_fit_is_named_with_its_field_count():
    with pytest.raises(VxEvalError) as caught:
        scan(b"a Q0 d 1 2 t\n\na Q0 d 1 2\n", RUN, "run.txt")
    assert str(caught.value) == (
        "run.txt:3: a run file line is 'qid Q0 doc rank score tag' (or 3 fields); this line has 5 fields, "
        "6 or more expected"
    )
    # the form most lines take is the file's: a first line of 3 fields is the odd one, not line 2
    with pytest.raises(VxEvalError, match=r"run.txt:1: .*this line has 3 fields, 6 or more expected"):
        scan(b"a d 1\na Q0 d 1 2 t\na Q0 e 2 1 t\n", RUN, "run.txt")
    with pytest.raises(VxEvalError, match=r"q:2: a qrels file line is 'qid 0 doc grade' .*has 5 fields, 4 expected"):
        scan(b"q 0 d 1\nq 0 e 1 x\nq 0 f 0\n", QRELS, "q")


def test_comments_extra_fields_tabs_crlf_and_blank_lines_are_read_as_trec_eval_reads_them():
    raw = "# a comment line\nq1\tQ0\tdöc-1\t1\t2.5\trun\textra fields\r\n\r\n   # indented comment\n q2 Q0 d2 2 1 run\n"
    cols = scan(raw.encode(), RUN, "run")
    assert cols.rows == 2 and cols.text(1, [0, 1]) == ["döc-1", "d2"]
    assert cols.line_numbers.tolist() == [2, 5]
    assert cols.floats(2, "score").tolist() == [2.5, 1.0]


def test_hashes_tell_tokens_apart_and_equal_tokens_agree():
    tokens = ["a", "b", "ab", "ba", "a" * 40, "a" * 41, "x", "y" * 200, "y" * 199 + "z"]
    cols = scan("".join(f"q {t} 1\n" for t in tokens + tokens).encode(), THREE, "f")
    h = cols.hashes(1)
    n = len(tokens)
    assert len(set(h[:n].tolist())) == n and h[:n].tolist() == h[n:].tolist()
    assert cols.same_as_previous(0).tolist() == [False] + [True] * (2 * n - 1)
    rows = np.arange(n)
    assert same_bytes(cols, 1, rows, cols, 1, rows + n).all()
    assert not same_bytes(cols, 1, rows[:-1], cols, 1, rows[1:]).any()


@pytest.mark.parametrize("seed", range(6))
def test_neighbours_and_byte_comparisons_agree_with_python_on_random_tokens(seed):
    """Runs of equal tokens, equal lengths that differ in one byte (first, middle, last, past the eighth,
    past SHORT), tokens at the very end of the data, and non-UTF-8 bytes: as Python's own comparison says."""
    rng = random.Random(seed)
    alphabet = [b"a", b"b", b"\xff", b"7"]
    tokens: list[bytes] = []
    while len(tokens) < 400:
        base = b"".join(rng.choice(alphabet) for _ in range(rng.choice([1, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 130])))
        tokens += [base] * rng.randint(1, 3)
        if rng.random() < 0.5:  # the same length, one byte changed
            i = rng.randrange(len(base))
            tokens.append(base[:i] + (b"b" if base[i : i + 1] != b"b" else b"a") + base[i + 1 :])
    cols = scan(b"".join(b"q " + t + b" 1\n" for t in tokens)[:-1], THREE, "f")  # the last token ends the data
    expected = [False] + [tokens[i] == tokens[i - 1] for i in range(1, len(tokens))]
    assert cols.same_as_previous(1).tolist() == expected
    a = np.array([rng.randrange(len(tokens)) for _ in range(300)])
    b = np.array([rng.randrange(len(tokens)) for _ in range(300)])
    assert same_bytes(cols, 1, a, cols, 1, b).tolist() == [tokens[i] == tokens[j] for i, j in zip(a, b, strict=True)]
    h = cols.hashes(1)
    assert all(h[i] == h[j] for i, j in zip(a, b, strict=True) if tokens[i] == tokens[j])


def test_time_and_memory_stay_linear_with_one_huge_id():
    """A 20 KB question id in a few hundred KB used to make a rows x longest-token matrix (3 GiB), and a
    100 KB id took 35 s to hash."""
    lines = [f"q{i % 50} 0 d{i} 1\n" for i in range(20_000)]
    lines[10] = f"{'q' * 20_000} 0 d-huge 1\n"
    lines[11] = f"q1 0 {'d' * 100_000} 1\n"
    raw = "".join(lines).encode()
    tracemalloc.start()
    started = time.process_time()
    cols = scan(raw, QRELS, "qrels")
    cols.same_as_previous(0)
    cols.hashes(1)
    cols.floats(2, "grade")
    seconds = time.process_time() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 60 * len(raw), f"peak {peak:,} bytes for a {len(raw):,}-byte file"
    assert seconds < 10  # a bound against quadratic behaviour (seconds before), not a timing of the code
