"""The corpus as every engine indexes it (`core.corpus`), read directly: windows of words that cover the text,
chunk ids and bodies, token vectors kept in a quarter of the bytes, and leftovers of dead processes swept."""

from __future__ import annotations

import itertools
import os
import time

import numpy as np
import pytest

from vx_eval.core.contracts.engine import Document
from vx_eval.core.corpus.embeddings import dequantize, quantize
from vx_eval.core.corpus.leftovers import is_stale, sweep
from vx_eval.core.corpus.prepare import chunks_of
from vx_eval.core.corpus.text import chunk_words


@pytest.mark.parametrize("n, size, overlap", [(0, 5, 1), (3, 5, 1), (5, 5, 1), (6, 5, 1), (23, 5, 2), (40, 7, 0)])
def test_windows_cover_every_word_in_order_overlapping_as_asked(n, size, overlap):
    words = [f"w{i}" for i in range(n)]
    windows = [w.split() for w in chunk_words(" ".join(words), size, overlap)]
    assert all(len(w) <= size for w in windows)
    covered = [word for i, w in enumerate(windows) for word in (w if i == 0 else w[overlap:])]
    assert covered == words or (n == 0 and windows == [[]])
    if overlap:
        assert all(a[len(a) - overlap :] == b[:overlap] for a, b in itertools.pairwise(windows))


def test_chunks_name_their_document_page_and_place_and_start_with_the_title():
    doc = Document("d1", "", "Title", pages=("one two three", "four five six seven"))
    chunks = chunks_of(doc, 3, 0)
    assert [c.chunk_id for c in chunks] == ["d1::1::0", "d1::2::0", "d1::2::1"]
    assert [c.page for c in chunks] == [1, 2, 2]
    assert chunks[0].body == "Title\none two three" and chunks[2].body == "Title\nseven"


def test_token_vectors_keep_their_cosines_within_about_one_percent_in_a_quarter_of_the_bytes():
    rng = np.random.default_rng(0)
    tokens = rng.normal(size=(50, 64)).astype(np.float32)
    tokens /= np.linalg.norm(tokens, axis=1, keepdims=True)
    blob = quantize(tokens)
    assert len(blob) == tokens.size  # one byte a value against four
    back = dequantize(blob, 64)
    cosines = (back * tokens).sum(axis=1) / np.linalg.norm(back, axis=1)
    assert cosines.min() > 0.99


def test_a_leftover_of_a_dead_process_is_swept_and_one_of_a_live_process_is_kept(tmp_path):
    dead = 2**22 + 12345  # above any PID this machine hands out (pid_max is at most 2^22)
    mine = tmp_path / f".index.{os.getpid()}.building"
    gone = tmp_path / f".index.{dead}.building"
    for path in (mine, gone):
        path.write_text("half written")
        old = time.time() - 600
        os.utime(path, (old, old))
    assert is_stale(gone) and not is_stale(mine)
    assert sweep(tmp_path, ".*.building") == [gone]
    assert mine.exists() and not gone.exists()
