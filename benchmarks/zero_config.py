"""How long `vx-eval run --docs` takes on the quickstart, cold, with each kind of writer; and how much the
local writer's batches buy.

1. SmolLM2-135M (the offline writer's model) writing the same drafting prompts one at a time and in batches
   of eight (`LocalChat.width`): answers a second, and the ratio of the two measured in the same run.
2. The whole zero-configuration run (`vx-eval run --docs configs/quickstart/docs.jsonl`) in a fresh folder
   with fresh caches (index, embeddings, drafts, grades; the models' own files stay installed), once per
   writer: ``local`` (SmolLM2 in this process), ``chat`` (the same model behind an OpenAI-compatible server
   on 127.0.0.1, `transformers serve`, asked concurrently) and ``keywords`` (no model): wall time, questions
   kept and tries, the rounds drafted while the pick was not sure and the questions ranked on at the end,
   from the run's own output.

    python benchmarks/zero_config.py [--writers local,chat,keywords] [--prompts 16]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "configs" / "quickstart" / "docs.jsonl"
MODEL = "smollm2-135m"


def batch_speed(prompts: int) -> None:
    import json

    from vx_eval.llm.drafting import TOKENS, draft_prompt
    from vx_eval.llm.local import LocalChat

    rows = [json.loads(line) for line in DOCS.read_text(encoding="utf-8").splitlines()][:prompts]
    asks = [draft_prompt("fact", [r["text"]], []) for r in rows]
    chat = LocalChat(threads=2)
    chat.complete(asks[0], 4)  # load and warm
    took = {}
    for width in (1, LocalChat.width):
        started = time.perf_counter()
        for start in range(0, len(asks), width):
            chat._batch(asks[start : start + width], TOKENS["fact"])
        took[width] = time.perf_counter() - started
        print(f"SmolLM2, batches of {width}: {len(asks)} drafts in {took[width]:.1f} s", flush=True)
    print(f"batches of {LocalChat.width} against one at a time: {took[1] / took[LocalChat.width]:.2f}x as fast")


def one_run(writer: str, extra_env: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory(prefix=f"vx-zero-{writer.split(':')[0]}-") as work:
        env = {**os.environ, **extra_env, "XDG_CACHE_HOME": str(Path(work) / "cache"), "VX_EVAL_WRITER": writer}
        env["VX_EVAL_MODEL_CACHE"] = os.environ.get("VX_EVAL_MODEL_CACHE") or str(
            Path.home() / ".cache" / "vx-eval" / "models"
        )  # the converted SmolLM2 folder is an install step, not part of the run
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "vx_eval", "run", "--docs", str(DOCS)],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - started
        said = re.search(r"drafted by .*?: (\d+) of (\d+) questions from (\d+) tries", done.stderr)
        kept = f"{said.group(1)} of {said.group(2)} questions kept, {said.group(3)} tries" if said else "?"
        more = [int(n) for n in re.findall(r"drafted (\d+) more from", done.stderr)]
        rounds = f"; then {len(more)} more round(s) while not sure: +{sum(more)}" if more else ""
        asked = re.search(r": (\d+) questions, \d+ setups", done.stdout)
        ran = f"; ranked on {asked.group(1)}" if asked else ""
        print(f"{writer:<40} exit {done.returncode}; {wall / 60:.1f} min; {kept}{rounds}{ran}", flush=True)
        for line in done.stderr.splitlines():
            if line.startswith(("note: not sure with", "note: drafted")):
                print(f"    {line.removeprefix('note: ')}")
        if done.returncode:
            print(done.stderr[-2000:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writers", default="local,chat,keywords")
    parser.add_argument("--prompts", type=int, default=16)
    args = parser.parse_args()
    batch_speed(args.prompts)
    for writer in args.writers.split(","):
        if writer == "chat":
            from vx_eval.llm.local import smollm2_folder
            from vx_eval.testing.processes import free_port, start_server

            with tempfile.TemporaryDirectory(prefix="vx-chat-") as folder:
                (Path(folder) / MODEL).symlink_to(smollm2_folder())
                port = free_port()
                argv = [str(Path(sys.executable).with_name("transformers")), "serve", MODEL, "--device", "cpu"]
                env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
                with start_server(
                    [*argv, "--host", "127.0.0.1", "--port", str(port)],
                    port=port,
                    what="transformers serve",
                    env=env,
                    cwd=Path(folder),
                    seconds=180,
                ) as server:
                    one_run(f"chat:{MODEL}@{server.url}/v1", {})
        else:
            one_run(writer, {})


if __name__ == "__main__":
    main()
