"""Cost against corpus size: indexing (keyword + MiniLM) and search at 10k, 30k and 100k documents.

The corpora are built from the shared collections: SciFact, MS MARCO (DL19 5k) and Vaswani abstracts (about
21,000 distinct documents), repeated with new ids up to 100,000, each repeat's words shuffled (seeded), so
every text is new to the model and the index: nothing comes from the embedding cache, and the dense indexing
time is the whole cost (the model's included). Each size is indexed from nothing in a process of its own
(its peak memory is its own) by the embedded engine: full text (BM25) and MiniLM vectors, one chunk per
document. Search times are medians over 100 SciFact questions searched end to end, keyword and exact dense.
It prints wall time, peak memory and search medians per size, and the growth exponents (log-log slope:
1.0 is linear; goals: indexing 1.1 or less, each search 1.0 or less).

    python benchmarks/scaling.py [--sizes 10000 30000 100000] [--questions 100] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vx_eval.core.contracts.engine import DENSE_PREFIX, KEYWORD, OpenContext, Query
from vx_eval.core.contracts.models import DENSE, ModelSettings
from vx_eval.core.golden.sources import FileCorpus
from vx_eval.core.models.loading import Models
from vx_eval.core.plugins import load_plugins
from vx_eval.plugins.engines.sqlite import SqliteEngine, SqliteOptions

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def distinct_documents() -> list[dict]:
    docs = []
    for name in ("scifact", "msmarco-dl19-5k"):
        for line in (SHARED / name / "corpus.jsonl").read_text(encoding="utf-8").split("\n"):
            if not line.strip():
                continue
            row = json.loads(line)
            docs.append({"id": f"{name}:{row['_id']}", "title": row.get("title", ""), "text": row.get("text", "")})
    raw = (SHARED / "vaswani" / "doc-text.trec").read_text(encoding="utf-8", errors="replace")
    for number, body in re.findall(r"<DOCNO>\s*(\S+)\s*</DOCNO>(.*?)</DOC>", raw, re.S):
        docs.append({"id": f"vaswani:{number}", "title": "", "text": " ".join(body.split())})
    return docs


def corpus_of(docs: list[dict], size: int) -> FileCorpus:
    """`size` documents: the distinct ones in a seeded order (every size has the same mix of the three
    collections, whose documents differ in length), then repeats under new ids with their words shuffled."""
    docs = random.Random(0).sample(docs, len(docs))
    rows, copy = [], 0
    while len(rows) < size:
        for doc in docs:
            if len(rows) == size:
                break
            if copy == 0:
                rows.append(doc)
                continue
            words = doc["text"].split()
            random.Random(f"{doc['id']}~{copy}").shuffle(words)
            rows.append({"id": f"{doc['id']}~{copy}", "title": doc["title"], "text": " ".join(words)})
        copy += 1
    return FileCorpus("".join(json.dumps(r) + "\n" for r in rows).encode(), f"{size} documents")


def questions(count: int) -> list[str]:
    lines = (SHARED / "scifact" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines[:count]]


def exponent(sizes: list[int], values: list[float]) -> float:
    """The slope of log(value) against log(size), least squares: 1.0 is linear growth."""
    xs, ys = [math.log(s) for s in sizes], [math.log(max(v, 1e-9)) for v in values]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def one_size(size: int, count: int, threads: int) -> dict[str, float]:
    """In a process of its own: one corpus size indexed from nothing and searched."""
    plugins = load_plugins()
    models = Models(plugins.models, ModelSettings(threads=threads))
    models.get("minilm", DENSE).encode_queries(["warm up"])  # the model loaded before the clock starts
    corpus = corpus_of(distinct_documents(), size)
    asked = questions(count)
    with tempfile.TemporaryDirectory(prefix="vx-scaling-") as work:
        folder = Path(work)
        options = SqliteOptions(
            path=folder / "index.db", cache=folder / "embeddings.db", dense_models=["minilm"], chunk_words=0
        )
        start = time.perf_counter()
        handle = SqliteEngine().open(options, OpenContext(f"scaling-{size}", folder, corpus, models=models))
        result = {"size": size, "index_s": time.perf_counter() - start}
        result["words"] = statistics.fmean(len(f"{d.title} {d.text}".split()) for d in corpus)
        for mode, capability in (("keyword", KEYWORD), ("dense", DENSE_PREFIX + "minilm")):
            handle.search(Query(asked[0], 10, capability))  # warm
            times = []
            for text in asked:
                begin = time.perf_counter()
                handle.search(Query(text, 10, capability))
                times.append((time.perf_counter() - begin) * 1000)
            result[f"{mode}_search_ms"] = statistics.median(times)
        handle.close()
    result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child: one size, its numbers as JSON
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_size(args.one, args.questions, args.threads)))
        return
    print(f"{len(distinct_documents()):,} distinct documents from SciFact, MS MARCO (DL19 5k) and Vaswani")
    print(
        f"{'documents':>10} {'words/doc':>9} {'index s':>8} {'docs/s':>7} {'peak MB':>8} {'keyword ms':>11} "
        f"{'dense ms':>9}"
    )
    rows = []
    for size in args.sizes:
        argv = [sys.executable, __file__, "--one", str(size), "--questions", str(args.questions)]
        done = subprocess.run([*argv, "--threads", str(args.threads)], capture_output=True, text=True, check=True)
        row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"{size:>10,} {row['words']:>9.1f} {row['index_s']:>8.1f} {size / row['index_s']:>7.1f} "
            f"{row['peak_mb']:>8,.0f} {row['keyword_search_ms']:>11.2f} {row['dense_search_ms']:>9.2f}",
            flush=True,
        )
    sizes = [r["size"] for r in rows]
    print("\ngrowth exponents (log-log slope; 1.0 = linear; goals: indexing <= 1.1, each search <= 1.0):")
    for key, goal in (("index_s", 1.1), ("keyword_search_ms", 1.0), ("dense_search_ms", 1.0), ("peak_mb", None)):
        slope = exponent(sizes, [r[key] for r in rows])
        verdict = "" if goal is None else ("  within the goal" if slope <= goal else f"  ABOVE the goal of {goal}")
        print(f"  {key:18} {slope:5.2f}{verdict}")


if __name__ == "__main__":
    main()
