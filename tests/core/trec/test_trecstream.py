"""The streamed reader of `vx-eval eval` gives exactly what the careful whole-file reader gives, chunk
boundaries and all, and hands every file it cannot take as trec_eval would to the careful reader."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from vx_eval.core.errors import VxEvalError
from vx_eval.core.measures.metrics import parse
from vx_eval.core.trec import stream as trecstream
from vx_eval.core.trec.files import read_judgements, read_run, score

from ..measures.test_measures_datasets import COLLECTIONS, draw_run, load_qrels

MEASURES = [parse(m) for m in ("ndcg@10", "map", "recall@100", "mrr", "p@5", "found@10", "bpref", "err@10", "rprec")]


def _write(
    folder: Path, qrels: dict, run: dict, *, shuffle: bool = False, sep: str = " ", form: int = 6
) -> tuple[Path, Path]:
    q = folder / "qrels.txt"
    q.write_text("".join(f"{qid} 0 {d} {g}\n" for qid, docs in qrels.items() for d, g in docs.items()))
    lines = []
    for qid, docs in run.items():
        ordered = sorted(docs.items(), key=lambda r: -r[1])
        if shuffle:
            random.Random(len(qid)).shuffle(ordered)
        for rank, (d, s) in enumerate(ordered, start=1):
            fields = [qid, "Q0", d, str(rank), repr(s), "tag"] if form == 6 else [qid, d, repr(s)]
            lines.append(sep.join(fields) + "\n")
    r = folder / "run.txt"
    r.write_text("".join(lines))
    return q, r


def _both(q: Path, r: Path, threshold: int = 1):
    judgements = read_judgements(q)
    streamed = score(judgements, r, MEASURES, threshold)
    careful = score(judgements, read_run(r), MEASURES, threshold)
    return streamed, careful


@pytest.mark.parametrize("name", sorted(COLLECTIONS))
@pytest.mark.parametrize("shape", ["sorted", "shuffled lines", "tabs, three fields"])
def test_streamed_equals_careful_across_chunk_boundaries(name, shape, tmp_path, monkeypatch):
    monkeypatch.setattr(trecstream, "CHUNK_LINES", 997)  # many chunks, boundaries inside questions
    monkeypatch.setattr(trecstream, "WHOLE", 0)  # (small files are otherwise one chunk)
    qrels = load_qrels(name)
    run = draw_run(qrels, seed=7)  # coarse scores: many ties; some questions without results
    run["unjudged-question"] = {"d1": 1.0}
    q, r = _write(
        tmp_path, qrels, run, shuffle=shape == "shuffled lines", sep="\t" if "tabs" in shape else " ",
        form=3 if "three" in shape else 6,
    )  # fmt: skip
    for threshold in (1, 2):
        streamed, careful = _both(q, r, threshold)
        np.testing.assert_allclose(streamed.values, careful.values, atol=1e-12, err_msg=f"{name} {shape}")
        assert (streamed.num_ret == careful.num_ret).all() and (streamed.num_rel_ret == careful.num_rel_ret).all()


def test_what_the_streamed_reader_cannot_take_goes_to_the_careful_one(tmp_path):
    qrels = {"q1": {"a": 1, "b": 0}, "q2": {"c": 2}}
    q, _ = _write(tmp_path, qrels, {})
    cases = {
        "a comment": "# made by hand\nq1 Q0 a 1 2 t\nq2 Q0 c 1 1 t\n",
        "two spaces": "q1  Q0 a 1 2 t\nq2 Q0 c 1 1 t\n",
        "a seventh field": "q1 Q0 a 1 2 t x\nq2 Q0 c 1 1 t\n",
        "a question apart": "q1 Q0 a 1 2 t\nq2 Q0 c 1 1 t\nq1 Q0 b 2 1 t\n",
        "nan": "q1 Q0 a 1 nan t\nq2 Q0 c 1 1 t\n",
    }
    for what, text in cases.items():
        r = tmp_path / "run.txt"
        r.write_text(text)
        judgements = read_judgements(q)
        judged = trecstream.judged_of(
            judgements.columns, judgements.grades, judgements.rows_question, judgements.question_ids, 1
        )
        with pytest.raises(trecstream.Unstreamable):
            trecstream.score_stream(r, judged, MEASURES, 1)
        streamed, careful = _both(q, r)
        np.testing.assert_allclose(streamed.values, careful.values, atol=1e-12, err_msg=what)
        assert streamed.warnings == careful.warnings, what
    r.write_text("q1 Q0 a 1 2 t\nq1 Q0 a 2 1 t\n")  # listed twice: refused, naming both lines, as before
    with pytest.raises(VxEvalError, match="lines 1 and 2"):
        score(read_judgements(q), r, MEASURES, 1)
