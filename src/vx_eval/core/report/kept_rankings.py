"""The rankings a run kept, in a columnar file beside its report.

Every question's ranking of every setup (unit ids and scores) is what makes new measures, exports and
judges possible without searching again, and it is most of a report's bytes: a SciFact run with every setup
holds 360,000 of them. `report.json` keeps the summaries, intervals, picks and per-question measures that
history, the server and `compare` read; the rankings go to ``rankings.parquet`` beside it (Zstandard
compressed, one row a result: setup, question, place, unit, score), read only by what needs them
(`vx-eval runs rescore`, `runs export`, `vx_eval.load_report`). Reports saved before kept their rankings
inline and are read as they are.
"""

from __future__ import annotations

import hashlib
import io
from typing import TYPE_CHECKING

import numpy as np

from vx_eval.core.errors import StoreError
from vx_eval.core.optional import on_first_use
from vx_eval.core.report.schema import RankingsFile, Report, Result
from vx_eval.core.stores import join as place

pa = on_first_use("pyarrow")
pq = on_first_use("pyarrow.parquet")

if TYPE_CHECKING:
    from vx_eval.core.stores import Stores

FILE = "rankings.parquet"


def held(report: Report) -> bool:
    """Whether the report holds rankings inline."""
    return any(s.per_question.results for s in report.setups)


def split(report: Report) -> tuple[Report, bytes | None]:
    """The report without its rankings (naming the file that holds them), and that file's bytes; a report
    that holds none is given back as it is."""

    if not held(report):
        return report, None
    setups, questions, places, units, scores = [], [], [], [], []
    for s in report.setups:
        for q, results in enumerate(s.per_question.results):
            n = len(results)
            setups.append(np.full(n, s.key, dtype=object))
            questions.append(np.full(n, q, dtype=np.int32))
            places.append(np.arange(n, dtype=np.int32))
            units += [u for u, _ in results]
            scores.append(np.fromiter((sc for _, sc in results), dtype=np.float64, count=n))
    table = pa.table(
        {
            "setup": pa.array(np.concatenate(setups) if setups else [], type=pa.string()).dictionary_encode(),
            "question": pa.array(np.concatenate(questions) if questions else [], type=pa.int32()),
            "place": pa.array(np.concatenate(places) if places else [], type=pa.int32()),
            "unit": pa.array(units, type=pa.string()),
            "score": pa.array(np.concatenate(scores) if scores else [], type=pa.float64()),
        }
    )
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", compression_level=6)
    data = sink.getvalue()
    light = report.model_copy(
        update={
            "setups": [
                s.model_copy(update={"per_question": s.per_question.model_copy(update={"results": []})})
                for s in report.setups
            ],
            "rankings": RankingsFile(file=FILE, rows=table.num_rows, sha256=hashlib.sha256(data).hexdigest()),
        }
    )
    return light, data


def join(report: Report, data: bytes) -> Report:
    """The report with its rankings read back from the file's bytes (checked against the sha256 it names)."""

    info = report.rankings
    if info is None:
        return report
    if hashlib.sha256(data).hexdigest() != info.sha256:
        raise StoreError(f"the rankings of run {report.id} are not the ones it saved (their sha256 differs)")
    table = pq.read_table(io.BytesIO(data))
    setup = table.column("setup").to_pylist()
    question = table.column("question").to_numpy()
    units = table.column("unit").to_pylist()
    scores = table.column("score").to_numpy()
    n = len(report.question_ids)
    kept: dict[str, list[list[Result]]] = {}
    for i, key in enumerate(setup):  # rows are in (setup, question, place) order, as written
        lists = kept.get(key)
        if lists is None:
            lists = kept[key] = [[] for _ in range(n)]
        lists[int(question[i])].append((units[i], float(scores[i])))
    return report.model_copy(
        update={
            "setups": [
                s.model_copy(update={"per_question": s.per_question.model_copy(update={"results": kept[s.key]})})
                if s.key in kept
                else s
                for s in report.setups
            ],
        }
    )


def attach(report: Report, stores: Stores, location: str) -> Report:
    """`report` (read from `location`) with its rankings from the file beside it, where it names one."""
    if report.rankings is None or held(report):
        return report

    folder = location.replace("\\", "/").rsplit("/", 1)[0]
    return join(report, stores.read(place(folder, report.rankings.file)))
