"""How much requests in flight at once speed up indexing through a served embedding model.

A stand-in for a hosted embeddings API (OpenAI's wire format, on 127.0.0.1) answers with the packaged MiniLM
after waiting `--latency` seconds per request, as a service across a network does. The quickstart's corpus is
prepared for an engine (chunked, every chunk embedded through the endpoint, `--batch` texts a request) with
the endpoint's `concurrency` at 1 (one request after another: the reference, measured in the same run) and at
each level asked for, each from a cold embeddings cache (the stand-in has computed each vector once before,
untimed, so a request costs its latency, not this machine's model). It prints the wall time per level, its
speed-up over one at a time, the requests sent and the most the stand-in answered at once, and whether the vectors are
byte for byte those of one at a time.

    python benchmarks/served_indexing.py [--latency 0.05] [--batch 4] [--levels 4 8 16]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

KEY = "sk-benchmark-served-indexing"
ENV = "VX_BENCH_SERVED_KEY"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the stand-in waits per request")
    parser.add_argument("--batch", type=int, default=4, help="texts a request")
    parser.add_argument("--levels", type=int, nargs="+", default=[4, 8, 16], help="requests in flight at once")
    args = parser.parse_args()

    import os

    import numpy as np

    from vx_eval.core.contracts.endpoints import ModelEndpoint
    from vx_eval.core.contracts.engine import OpenContext
    from vx_eval.core.golden.sources import FileCorpus
    from vx_eval.core.models.loading import Models
    from vx_eval.core.plugins import load_plugins
    from vx_eval.plugin import IndexOptions, prepare
    from vx_eval.testing.served import DENSE_MODEL, ServedStandIn

    class Remembering(ServedStandIn):
        """The stand-in with each text's vector computed once (in the untimed warm-up), so that a request
        costs its latency and not this machine's model: the service's own speed is not what is measured."""

        def __init__(self, **kwargs: object) -> None:
            super().__init__(**kwargs)  # type: ignore[arg-type]
            self.known: dict[str, np.ndarray] = {}

        def _embed(self, texts: list[str]) -> np.ndarray:
            todo = [t for t in dict.fromkeys(texts) if t not in self.known]
            if todo:
                self.known.update(zip(todo, super()._embed(todo), strict=True))
            return np.stack([self.known[t] for t in texts])

    os.environ[ENV] = KEY
    docs = Path(__file__).resolve().parents[1] / "configs" / "quickstart" / "docs.jsonl"
    corpus = FileCorpus(docs.read_bytes(), str(docs))
    plugins = load_plugins()
    reference: np.ndarray | None = None
    baseline: float | None = None
    print(
        f"quickstart corpus ({len(corpus)} documents), {args.batch} texts a request, "
        f"{args.latency * 1000:.0f} ms a request"
    )
    print(f"{'in flight':>9}  {'wall s':>7}  {'speed-up':>8}  {'requests':>8}  {'most at once':>12}  same vectors")
    server = Remembering(key=KEY, latency=0.0)
    server.__enter__()
    for level in ["warm-up", 1, *args.levels]:
        server.latency = 0.0 if level == "warm-up" else args.latency
        server.requests = server.most_in_flight = 0
        with tempfile.TemporaryDirectory() as folder:
            endpoint = ModelEndpoint.model_validate(
                {
                    "provider": "openai",
                    "model": DENSE_MODEL,
                    "base_url": server.url + "/v1",
                    "api_key": {"env": ENV},
                    "batch": args.batch,
                    "concurrency": 4 if level == "warm-up" else level,
                }
            )
            models = Models(plugins.models, endpoints={"served": endpoint}, providers=plugins.providers)
            options = IndexOptions(dense_models=["served"], cache=Path(folder) / "embeddings.db")
            context = OpenContext("bench", Path(folder), corpus, models=models)
            started = time.perf_counter()
            built = prepare(corpus, options, context)
            wall = time.perf_counter() - started
            vectors = built.dense["served"]
            if level == "warm-up":
                continue
            if reference is None:
                reference, baseline = vectors, wall
            same = vectors.tobytes() == reference.tobytes()
            speedup = (baseline or wall) / wall
            print(
                f"{level:>9}  {wall:>7.2f}  {speedup:>7.1f}x  {server.requests:>8}  {server.most_in_flight:>12}  "
                f"{'yes' if same else 'NO'}"
            )
    server.__exit__()


if __name__ == "__main__":
    main()
