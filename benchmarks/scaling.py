"""Cost against corpus size: indexing and search time of keyword and dense search at 10k, 30k, 100k documents.

The corpora are built from the shared collections: SciFact, MS MARCO (DL19 5k) and Vaswani abstracts (about
21,000 distinct documents), repeated with new ids up to 100,000. Repeated texts get their vectors from the
embedding cache, so the dense indexing times past the distinct documents measure the index build without
the model; the model's own cost is stated separately as documents a second (it grows linearly by nature).
Search times are medians over 100 SciFact questions, searched end to end, on the embedded engine.

    python benchmarks/scaling.py [--sizes 10000 30000 100000] [--questions 100]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from vx_eval.core.golden.sources import FileCorpus
from vx_eval.core.models.loading import DENSE, Models, ModelSettings
from vx_eval.core.plugins import load_plugins
from vx_eval.core.run.engine import DENSE_PREFIX, KEYWORD, OpenContext, Query
from vx_eval.plugins.engines.sqlite import SqliteEngine, SqliteOptions

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"
REPO_CACHE = Path(__file__).resolve().parents[1] / ".vx" / "embeddings.db"


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
    rows, copy = [], 0
    while len(rows) < size:
        for doc in docs:
            if len(rows) == size:
                break
            rows.append({**doc, "id": doc["id"] if copy == 0 else f"{doc['id']}~{copy}"})
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    plugins = load_plugins()
    models = Models(plugins.models, ModelSettings(threads=args.threads))
    docs = distinct_documents()
    asked = questions(args.questions)
    work = Path(tempfile.mkdtemp(prefix="vx-scaling-"))
    cache = work / "embeddings.db"
    if REPO_CACHE.exists():  # start from what earlier runs embedded (SciFact); the rest is embedded here
        shutil.copy(REPO_CACHE, cache)
    print(f"{len(docs):,} distinct documents from SciFact, MS MARCO (DL19 5k) and Vaswani")
    rows = []
    try:
        for size in args.sizes:
            corpus = corpus_of(docs, size)
            result = {"size": size}
            for mode, dense in (("keyword", []), ("dense", ["minilm"])):
                options = SqliteOptions(path=work / f"{mode}-{size}.db", cache=cache, dense_models=dense, chunk_words=0)
                start = time.perf_counter()
                handle = SqliteEngine().open(options, OpenContext(f"{mode}-{size}", work, corpus, models=models))
                result[f"{mode}_index_s"] = time.perf_counter() - start
                capability = KEYWORD if mode == "keyword" else DENSE_PREFIX + "minilm"
                handle.search(Query(asked[0], 10, capability))  # warm
                times = []
                for text in asked:
                    start = time.perf_counter()
                    handle.search(Query(text, 10, capability))
                    times.append((time.perf_counter() - start) * 1000)
                result[f"{mode}_search_ms"] = statistics.median(times)
                handle.close()
            rows.append(result)
            keyword = f"keyword index {result['keyword_index_s']:.1f} s, search {result['keyword_search_ms']:.2f} ms"
            dense = f"dense index {result['dense_index_s']:.1f} s, search {result['dense_search_ms']:.2f} ms"
            print(f"{size:>8,} docs: {keyword} | {dense}", flush=True)
        encoder = models.get("minilm", DENSE)
        sample = [f"{d['title']}\n{d['text']}" for d in docs[-256:]]
        start = time.perf_counter()
        encoder.encode_documents(sample)
        rate = len(sample) / (time.perf_counter() - start)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sizes = [r["size"] for r in rows]
    print("\ngrowth exponents (log-log slope; 1.0 = linear):")
    for key in ("keyword_index_s", "keyword_search_ms", "dense_search_ms"):
        print(f"  {key:18} {exponent(sizes, [r[key] for r in rows]):.2f}")
    print("  (no exponent for dense indexing: it is the model's, and repeated texts come from the cache)")
    print(f"  MiniLM embedding: {rate:.1f} documents a second here, linear in the documents it has not seen")
    ratio = rows[-1]["dense_search_ms"] / rows[-1]["keyword_search_ms"]
    print(f"  dense / keyword search time at {sizes[-1]:,} documents: {ratio:.1f}")


if __name__ == "__main__":
    main()
