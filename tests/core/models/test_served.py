"""Served models (`models.endpoints`): the packaged MiniLM and cross-encoder served over OpenAI's, Cohere's and
Voyage's wire formats by a stand-in on 127.0.0.1 must score exactly as in process; a second run sends no
document; a 429 storm is survived with bounded retries; the key is never written or printed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from vx_eval.core.config.experiment import load_config
from vx_eval.core.errors import ConfigError, EngineError
from vx_eval.core.plugins import load_plugins
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment
from vx_eval.testing.conformance import collection, copy_collection
from vx_eval.testing.served import DENSE_MODEL, RERANK_MODEL, ServedStandIn

KEY = "sk-served-test-0123456789abcdef"
ENV = "VX_TEST_SERVED_KEY"


@pytest.fixture(scope="module")
def server() -> Any:
    with ServedStandIn(key=KEY) as running:
        yield running


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, KEY)


def project(folder: Path, endpoints: dict[str, Any], dense: list[str], reranker: str, **models: Any) -> Path:
    copy_collection(folder)
    config = {
        "name": "served",
        "golden": "golden.jsonl",
        "corpus": "docs.jsonl",
        "targets": [
            {
                "name": "Local",
                "engine": "sqlite",
                "options": {"mode": "hybrid", "dense_models": dense, "reranker": reranker, "chunk_words": 0},
            }
        ],
        # the cross-encoder reads the top 5 (20 by default): the same check, a quarter of its CPU time
        "search": {"rerank_depth": 5},
        "evaluation": {"depth": 10, "bootstrap": 0, "permutations": 0},
        "models": {"endpoints": endpoints, **models},
    }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def endpoint(server: ServedStandIn, provider: str, kind: str = "dense", **extra: Any) -> dict[str, Any]:
    base = {"openai": server.url + "/v1", "voyage": server.url + "/v1", "cohere": server.url}[provider]
    model = DENSE_MODEL if kind == "dense" else RERANK_MODEL
    return {
        "provider": provider,
        "model": model,
        "kind": kind,
        "base_url": base,
        "api_key": {"env": ENV},
        "batch": 64,
        **extra,
    }


def run(path: Path) -> Any:
    plugins = load_plugins()
    return run_experiment(load_config(path, plugins), plugins, RunOptions(save=False)).report


def per_question(report: Any, key: str) -> dict[str, dict[str, float]]:
    metrics = report.setup(key).per_question.metrics
    assert metrics, key
    return {name: list(values) for name, values in metrics.items()}


@pytest.mark.parametrize("provider", ["openai", "cohere", "voyage"])
def test_served_minilm_and_reranker_score_exactly_as_in_process(
    tmp_path: Path, server: ServedStandIn, provider: str
) -> None:
    endpoints = {"served-minilm": endpoint(server, provider), "served-rerank": endpoint(server, provider, "reranker")}
    served = run(project(tmp_path / "served", endpoints, ["served-minilm"], "served-rerank"))
    local = run(project(tmp_path / "local", {}, ["minilm"], "ms-marco-minilm"))
    for method in ("dense", "hybrid", "hybrid_reranked"):
        ours = per_question(served, f"local.{method}.served-minilm")
        theirs = per_question(local, f"local.{method}.minilm")
        assert ours == theirs, method
    (usage_dense, usage_rerank) = sorted(served.provenance.served, key=lambda u: u.kind)
    assert usage_dense.name == "served-minilm" and usage_dense.texts >= 52 and usage_dense.tokens
    assert usage_rerank.kind == "reranker" and usage_rerank.texts > 0


def test_second_run_sends_no_document(tmp_path: Path, server: ServedStandIn) -> None:
    """The index is built again (build: always), its vectors read from the cache by content: only the
    questions are sent, as every timed search embeds its question as a caller's would."""
    path = project(tmp_path, {"te": endpoint(server, "openai")}, ["te"], "ms-marco-minilm")
    first = run(path)
    docs, golden = collection()
    assert first.provenance.served[0].texts >= len(docs)
    config = yaml.safe_load(path.read_text())
    config["targets"][0]["options"]["build"] = "always"
    path.write_text(yaml.safe_dump(config))
    before = len(server.embedded)
    second = run(path)
    usage = second.provenance.served[0]
    sent = server.embedded[before:]
    assert len(sent) == usage.texts
    assert usage.cached >= len(docs)
    questions = {g["question"] for g in golden}
    assert set(sent) <= questions, "no document is sent again"


def test_a_429_storm_on_a_fifth_of_calls_is_survived(tmp_path: Path) -> None:
    with ServedStandIn(key=KEY, storm=0.2) as stormy:
        path = project(tmp_path, {"te": endpoint(stormy, "openai", batch=8)}, ["te"], "ms-marco-minilm")
        report = run(path)
        usage = report.provenance.served[0]
        assert stormy.refused > 0
        assert usage.retried == stormy.refused
        assert usage.requests + usage.retried == stormy.requests


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_storm_that_never_ends_stops_after_bounded_retries(tmp_path: Path, concurrency: int) -> None:
    """One request after another: the first batch's three tries, then the run stops. With requests in flight
    at once, those already sent end their own tries: never more than three for each slot."""
    with ServedStandIn(key=KEY, storm=1.0) as refusing:
        given = endpoint(refusing, "openai", retries=2, batch=8, concurrency=concurrency)
        path = project(tmp_path, {"te": given}, ["te"], "ms-marco-minilm")
        with pytest.raises(EngineError, match=r"model te: .* failed after 3 tries while embedding"):
            run(path)
        sent = refusing.requests
        assert sent == 3 if concurrency == 1 else 3 <= sent <= 3 * concurrency, sent


def test_a_wrong_key_is_one_line_naming_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with ServedStandIn(key=KEY) as server:
        monkeypatch.setenv(ENV, "sk-wrong-key-000000000")
        path = project(tmp_path, {"te": endpoint(server, "cohere")}, ["te"], "ms-marco-minilm")
        with pytest.raises(EngineError, match=rf"refused the key named by api_key \(env {ENV}\) \(401\)") as caught:
            run(path)
        assert "sk-wrong" not in str(caught.value)


def test_the_key_appears_in_no_file_and_no_output(tmp_path: Path, server: ServedStandIn) -> None:
    import subprocess
    import sys

    path = project(tmp_path, {"te": endpoint(server, "voyage")}, ["te"], "ms-marco-minilm")
    done = subprocess.run(
        [sys.executable, "-m", "vx_eval", "run", str(path), "--only", "local.dense.te"],
        capture_output=True,
        text=True,
        env={**os.environ, ENV: KEY, "VX_EVAL_THREADS": "1"},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert KEY not in done.stdout + done.stderr
    for file in tmp_path.rglob("*"):
        if file.is_file():
            assert KEY.encode() not in file.read_bytes(), file
    headers = server.seen_headers[-1]
    assert headers.get("authorization") == f"Bearer {KEY}", "the key goes to the service, and only there"


def test_config_problems_are_named_before_any_work(tmp_path: Path, server: ServedStandIn) -> None:
    bad = {
        "x": {"provider": "opneai", "model": "m"},
        "minilm": {"provider": "openai", "model": "m"},
        "y": {"provider": "openai", "model": "m", "api_key": "sk-literal-key"},
    }
    path = project(tmp_path, bad, ["nope"], "ms-marco-minilm")
    with pytest.raises(ConfigError) as caught:
        load_config(path, load_plugins())
    message = str(caught.value)
    assert "no model provider named 'opneai'; did you mean 'openai'?" in message
    assert "'minilm' is the name of an installed model" in message
    assert "a secret is never written into a config" in message
    assert "no dense model named 'nope'" in message and "models.endpoints" in message
    assert "sk-literal-key" not in message


def test_estimated_cost_from_the_price_table(tmp_path: Path) -> None:
    from vx_eval.core.contracts.endpoints import ModelEndpoint
    from vx_eval.core.models.prices import price_of

    small = ModelEndpoint(provider="openai", model="text-embedding-3-small")
    assert price_of(small) is not None and price_of(small).usd == 0.02  # type: ignore[union-attr]
    assert price_of(ModelEndpoint(provider="openai", model="bge-m3")) is None
    own = ModelEndpoint(provider="openai", model="bge-m3", price=0.5)
    assert price_of(own).usd == 0.5  # type: ignore[union-attr]
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"as_of": "2027-01", "prices": {"openai": {"bge-m3": 0.01}}}))
    assert price_of(ModelEndpoint(provider="openai", model="bge-m3"), table).source == "price table of 2027-01"  # type: ignore[union-attr]


def test_a_real_index_is_searched_densely_with_the_model_named_on_the_command_line(
    tmp_path: Path, server: ServedStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--target qdrant:FOLDER/COLLECTION --model FIELD=PROVIDER:MODEL@URL`: a collection whose vectors
    came from a served model is searched densely through it, with no config written by hand."""
    from vx_eval import open_engine
    from vx_eval.zeroconfig.autoconfig import config_data, from_target

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # the provider's usual variable, named in the config it writes
    docs, golden = collection()
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (tmp_path / "golden.jsonl").write_text("".join(json.dumps(g) + "\n" for g in golden), encoding="utf-8")
    options = {"path": "qdrant", "collection": "docs", "dense_models": ["minilm"], "vectors": {"minilm": "embedding"}}
    with open_engine("qdrant", {**options, "mode": "dense", "exact": True}, corpus="docs.jsonl"):
        pass
    plugins = load_plugins()
    with pytest.raises(ConfigError, match="no vector field 'nope' \\(it has: embedding\\)"):
        from_target("qdrant:qdrant/docs", plugins, ("nope=minilm",))
    spec = f"embedding=openai:{DENSE_MODEL}@{server.url}/v1"
    source = from_target("qdrant:qdrant/docs", plugins, (spec,))
    assert source.discovered is not None
    assert source.discovered.options.dense_models == ["all-minilm-l6-v2"]  # type: ignore[attr-defined]
    assert source.endpoints == {"all-minilm-l6-v2": {"provider": "openai", "model": DENSE_MODEL, "kind": "dense",
                                "base_url": f"{server.url}/v1", "timeout": 30.0, "retries": 4, "concurrency": 4,
                                "api_key": {"env": "OPENAI_API_KEY"}}}  # fmt: skip
    data = config_data(source, tmp_path / "work", tmp_path / "runs", tmp_path)
    data["golden"] = "golden.jsonl"
    data["evaluation"] = {"depth": 10, "bootstrap": 0, "permutations": 0}
    data["targets"][0]["options"]["exact"] = True
    (tmp_path / "auto.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    before = server.texts["embed"]
    report = run(tmp_path / "auto.yaml")
    dense = report.setup("docs.dense.all-minilm-l6-v2")
    assert dense.error is None and not dense.counts.failed
    assert server.texts["embed"] > before, "questions are embedded by the served model"
    assert dense.summary["found@10"] >= 0.8


def test_a_served_reranker_is_the_judge(tmp_path: Path, server: ServedStandIn) -> None:
    """Named as the cross-encoder judge's model exactly as ms-marco-minilm is: it grades through the endpoint."""
    endpoints = {"judge-rerank": endpoint(server, "openai", "reranker")}
    path = project(tmp_path, endpoints, ["minilm"], "ms-marco-minilm")
    config = yaml.safe_load(path.read_text())
    config["evaluation"] |= {"judge": "cross-encoder", "judge_depth": 3}
    config["judges"] = {"cross-encoder": {"model": "judge-rerank"}}
    path.write_text(yaml.safe_dump(config))
    before = server.texts["rerank"]
    report = run(path)
    assert report.judge is not None and report.judge.model == "judge-rerank" and report.judge.asked > 0
    assert server.texts["rerank"] - before >= report.judge.asked
    assert [u.name for u in report.provenance.served] == ["judge-rerank"]


def test_a_corpus_is_embedded_with_requests_in_flight_at_once_and_scores_as_one_at_a_time(tmp_path: Path) -> None:
    """`concurrency` (default 4) requests at once while the corpus is embedded, within the rate: the index
    and every score are those of one request at a time."""
    scores = {}
    for concurrency in (1, 4):
        with ServedStandIn(key=KEY, latency=0.02) as slow:
            endpoints = {"served-minilm": endpoint(slow, "openai", batch=4, concurrency=concurrency)}
            report = run(project(tmp_path / f"at-{concurrency}", endpoints, ["served-minilm"], "ms-marco-minilm"))
            assert slow.most_in_flight == concurrency if concurrency == 1 else slow.most_in_flight >= 2
        scores[concurrency] = per_question(report, "local.dense.served-minilm")
        (usage,) = report.provenance.served
        assert usage.texts >= 52 and usage.requests >= 13
    assert scores[1] == scores[4]


def test_a_chat_judge_asked_by_two_callers_at_once_keeps_its_concurrency_in_all() -> None:
    """The tasks a Dask worker runs at once share the judge it made for the run: `concurrency` bounds the
    requests in flight in all, not per caller."""
    from concurrent.futures import ThreadPoolExecutor

    from vx_eval.llm.chat import ChatOptions
    from vx_eval.plugins.judges.chat import ChatJudge
    from vx_eval.testing.served import GRADER_MODEL

    pairs = [(f"question {i} about wire fees", "A wire abroad costs 35 dollars.") for i in range(12)]
    with ServedStandIn(latency=0.05) as running:
        judge = ChatJudge(ChatOptions(url=f"{running.url}/v1", model=GRADER_MODEL, concurrency=3))
        with ThreadPoolExecutor(max_workers=2) as callers:
            verdicts = list(callers.map(judge.grade, [pairs[:6], pairs[6:]]))
        assert [len(v) for v in verdicts] == [6, 6] and running.texts["chat"] == 12
        assert running.most_in_flight == 3  # two callers of width 3 each, three in flight in all
