"""Indexing throughput against the model alone: how close vx-eval's indexing runs to what each model can do.

For each model, on the same SciFact documents (`--documents` of them, chunked as a run chunks them), it
measures in one run:

- raw: the model alone encoding the chunks' texts in the slices a run hands it (256 at a time), loaded and
  warmed first, `--threads` threads: the reference;
- serial: the embedded engine built from those documents with only that model, from a cold embeddings
  cache, in this process (`--threads` threads): chunking, encoding, the cache and the index, all of it;
- dask: the same build with ``executor: dask``: a LocalCluster of `--workers` workers of one thread each
  on this machine, the model loaded on each before timing (as a run's first slice would load it), the
  vectors kept by this process as they come back.

It prints texts a second for each and their ratio to raw (the goal: serial within 10% of raw, i.e. 0.90 or
more), whether the vectors the cluster made are byte for byte the serial ones, and the peak memory of this
process.

    python benchmarks/indexing.py [--documents 1000] [--models minilm bge-small] [--threads 2] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sqlite3
import tempfile
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"
EMBED_SLICE = 256


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--models", nargs="+", default=["minilm", "bge-small"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    from vx_eval.core.contracts.engine import OpenContext
    from vx_eval.core.contracts.models import DENSE, ModelSettings
    from vx_eval.core.corpus.prepare import EMBED_SLICE as RUN_SLICE
    from vx_eval.core.corpus.prepare import chunks_of
    from vx_eval.core.golden.sources import FileCorpus
    from vx_eval.core.models.loading import Models
    from vx_eval.core.plugins import load_plugins
    from vx_eval.core.run.cluster import DaskExecutor
    from vx_eval.plugins.engines.sqlite import SqliteEngine, SqliteOptions

    assert RUN_SLICE == EMBED_SLICE
    lines = (SHARED / "scifact" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in random.Random(0).sample(lines, args.documents)]
    docs = [{"id": r["_id"], "title": r.get("title", ""), "text": r.get("text", "")} for r in rows]
    corpus = FileCorpus("".join(json.dumps(d) + "\n" for d in docs).encode(), "SciFact sample")
    bodies = [c.body for doc in corpus for c in chunks_of(doc, 300, 50)]
    plugins = load_plugins()
    print(
        f"SciFact: {len(docs):,} documents, {len(bodies):,} chunks; raw and serial on {args.threads} threads, "
        f"dask on {args.workers} workers x 1 thread, the same machine"
    )
    head = f"{'model':<10} {'raw /s':>8} {'serial /s':>10} {'serial/raw':>10} {'dask /s':>8} {'dask/raw':>9}"
    print(head + "  same vectors")

    cluster = DaskExecutor("unused.yaml", "", workers=args.workers)
    try:
        work = cluster.model_work()
        for name in args.models:
            here = Models(plugins.models, ModelSettings(threads=args.threads))
            encoder = here.get(name, DENSE)
            encoder.encode_documents(bodies[:8])  # loaded and warmed, as the raw reference is
            start = time.perf_counter()
            for at in range(0, len(bodies), EMBED_SLICE):
                encoder.encode_documents(bodies[at : at + EMBED_SLICE])
            raw = len(bodies) / (time.perf_counter() - start)

            rates, kept = {}, {}
            for way in ("serial", "dask"):
                with tempfile.TemporaryDirectory() as folder:
                    threads = args.threads if way == "serial" else 1
                    on = work if way == "dask" else None
                    models = Models(plugins.models, ModelSettings(threads=threads), work=on)
                    models.get(name, DENSE)  # loaded here (a run loads it to search)
                    if way == "dask":  # and on every worker, untimed: its first slice would load it there
                        work.client.run(_load, work.recipe(models), name)
                    options = SqliteOptions(
                        path=Path(folder) / "index.db", cache=Path(folder) / "cache.db", dense_models=[name]
                    )
                    start = time.perf_counter()
                    SqliteEngine().open(options, OpenContext(way, Path(folder), corpus, models=models)).close()
                    rates[way] = len(bodies) / (time.perf_counter() - start)
                    with sqlite3.connect(Path(folder) / "cache.db") as db:
                        kept[way] = sorted(db.execute("SELECT space, key, value FROM kept").fetchall())
            same = "yes" if kept["serial"] == kept["dask"] else "NO"
            print(
                f"{name:<10} {raw:>8.1f} {rates['serial']:>10.1f} {rates['serial'] / raw:>10.2f} "
                f"{rates['dask']:>8.1f} {rates['dask'] / raw:>9.2f}  {same}",
                flush=True,
            )
    finally:
        cluster.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak memory of this process: {peak:,.0f} MB (the workers' own not included)")


def _load(recipe: object, name: str) -> None:
    """On a worker: the model loaded and warmed for the run."""
    recipe.models().get(name, "dense").encode_documents(["warm up"])  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
