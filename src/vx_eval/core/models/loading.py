"""Models as plugins: short names resolved to real models, loaded once per process, with a thread setting."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Protocol

import numpy as np
from pydantic import AfterValidator, ValidationInfo

from vx_eval.core.contracts.endpoints import ModelEndpoint, ServedUsage, WorkerCounts
from vx_eval.core.contracts.models import (
    DENSE,
    LATE,
    RERANKER,
    CrossEncoder,
    DenseEncoder,
    LateEncoder,
    ModelPlugin,
    ModelSettings,
    ModelSource,
)
from vx_eval.core.errors import EngineError, did_you_mean, quoted
from vx_eval.core.models.cache import KeyedCache, pair_key
from vx_eval.core.models.families import families_of, family_of
from vx_eval.core.models.served import cache_space, load_served
from vx_eval.core.optional import on_first_use

ort = on_first_use("onnxruntime")
torch = on_first_use("torch")

if TYPE_CHECKING:
    from vx_eval.core.contracts.registry import Registry


class ModelError(EngineError):
    """A model is unknown, or its package is not installed, or it cannot load offline."""


@dataclass(frozen=True)
class ServedModel:
    """A served model a config declares (``models.endpoints``), standing where a model plugin would."""

    name: str
    endpoint: ModelEndpoint
    provider: Any
    """The provider plugin's class (`core.models.endpoints.Provider`); None while a config is only being checked."""
    cache: Path | None = None

    @property
    def kind(self) -> str:
        return self.endpoint.kind

    @property
    def label(self) -> str:
        return self.endpoint.label or self.endpoint.model

    def load(self, settings: ModelSettings) -> Any:

        return load_served(self.name, self.endpoint, self.provider, self.cache)


@dataclass(frozen=True)
class ModelCatalog:
    """Every model a run can name: the registered model plugins, and the served models its config declares."""

    registry: Any
    endpoints: Mapping[str, ModelEndpoint] = field(default_factory=dict)

    def __contains__(self, name: object) -> bool:
        return name in self.endpoints or name in self.registry

    def get(self, name: str) -> Any:
        if name in self.endpoints:
            return ServedModel(name, self.endpoints[name], None)
        return self.registry.get(name)

    def __iter__(self) -> Iterator[Any]:
        yield from self.registry
        yield from (ServedModel(name, e, None) for name, e in self.endpoints.items())


def _fallback(registry: Registry[ModelPlugin], kind: str) -> list[Any]:
    return [cls for cls in registry if getattr(cls, "accepts_any_name", False) and cls.kind == kind]


def unknown_model(registry: Registry[ModelPlugin], name: str, kind: str) -> str | None:
    """Why `name` names no `kind` model the registry can give (None when it can), without loading it."""
    if name in registry:
        cls = registry.get(name)
        return None if cls.kind == kind else f"model '{name}' is a {cls.kind} model; a {kind} model is needed here"
    if kind == DENSE and "/" in name and _fallback(registry, kind):
        return None  # a sentence-transformers id, loaded by the plugin that accepts any
    known = [cls.name for cls in registry if cls.kind == kind and not getattr(cls, "accepts_any_name", False)]
    installed = ", ".join(known) or "none"
    if getattr(registry, "endpoints", None) is not None:
        installed += "; or declare a served model under models.endpoints"
    hint = (
        "; a sentence-transformers model id such as sentence-transformers/all-MiniLM-L6-v2 also works where it "
        "can be downloaded"
        if kind == DENSE
        else ""
    )
    return f"no {kind} model named {quoted(name)}{did_you_mean(name, known)} (installed: {installed}{hint})"


def checked_name(kind: str) -> Callable[[str, ValidationInfo], str]:
    """A validator for a config field naming a `kind` model: checked against the installed models when the
    config is read (the checker passes them as the validation context), so a typo stops the run before any
    indexing."""

    def check(value: str, info: ValidationInfo) -> str:
        registry = (info.context or {}).get("models")
        problem = unknown_model(registry, value, kind) if registry is not None else None
        if problem:
            raise ValueError(problem)
        return value

    return check


DenseModel = Annotated[str, AfterValidator(checked_name(DENSE))]
RerankerModel = Annotated[str, AfterValidator(checked_name(RERANKER))]
LateModel = Annotated[str, AfterValidator(checked_name(LATE))]


class ModelWork(Protocol):
    """Where a run's model work is done besides this process (`core.run.work.ClusterWork`): `embed` gives
    each slice's place in `slices` with its vectors, as they come back, the served counts kept on `models`."""

    def embed(
        self, models: Models, name: str, kind: str, slices: Sequence[list[str]], concurrency: int
    ) -> Iterator[tuple[int, Any]]: ...


GPU_BATCH = 256
"""Texts a GPU encodes at once to start with (halved after each out-of-memory error until they fit)."""


def torch_device(settings: ModelSettings) -> str:
    """The torch device for `settings.device`: ``auto`` is CUDA where torch sees a GPU, else the CPU; a
    named CUDA device torch cannot see is refused in one line."""

    wanted = settings.device
    if wanted == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if wanted.startswith("cuda"):
        index = int(wanted.partition(":")[2] or 0)
        if not torch.cuda.is_available() or index >= torch.cuda.device_count():
            raise ModelError(
                f"models.device is {wanted}, but torch sees {torch.cuda.device_count()} CUDA devices "
                f"(torch {torch.__version__}); use device: auto or cpu, or install a CUDA build of torch"
            )
    return wanted


def check_device(settings: ModelSettings) -> None:
    """Refuse, before any work, a CUDA device that neither torch nor onnxruntime can use (each model still
    checks its own runtime when it loads)."""
    if not settings.device.startswith("cuda"):
        return
    problems = []
    for check in (torch_device, onnx_providers):
        try:
            check(settings)
            return
        except ModelError as exc:
            problems.append(str(exc).split(";")[0].removeprefix(f"models.device is {settings.device}, but "))
        except ImportError:
            continue
    raise ModelError(
        f"models.device is {settings.device}, but {' and '.join(problems) or 'no model runtime is installed'}; "
        "use device: auto or cpu, or install a CUDA build of torch or onnxruntime-gpu"
    )


def onnx_providers(settings: ModelSettings) -> list[str | tuple[str, dict[str, str]]]:
    """onnxruntime's execution providers for `settings.device`: its CUDA provider first where asked (or, with
    ``auto``, where the installed onnxruntime has one), the CPU always last."""

    wanted = settings.device
    has_cuda = "CUDAExecutionProvider" in ort.get_available_providers()
    if wanted.startswith("cuda") and not has_cuda:
        raise ModelError(
            f"models.device is {wanted}, but onnxruntime {ort.__version__} has no CUDA provider; use device: "
            "auto or cpu, or install onnxruntime-gpu"
        )
    if wanted == "cpu" or not has_cuda:
        return ["CPUExecutionProvider"]
    device_id = wanted.partition(":")[2] or "0"
    return [("CUDAExecutionProvider", {"device_id": device_id}), "CPUExecutionProvider"]


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """numpy's BLAS on one thread for the block: a search's matrix product right after a model encoded its
    question. Measured on 2 cores (10,000 x 384 vectors): encoding then scoring took 103 ms with BLAS's two
    threads waking while the model's still spun, against 17 + 0.4 ms each alone; 23 ms on one BLAS thread."""
    controller = _blas()
    if controller is None:
        yield
        return
    with controller.limit(limits=1):
        yield


@functools.cache
def _blas() -> Any:
    """The process's BLAS libraries, found once (finding them takes a millisecond); None without threadpoolctl."""
    try:
        # lazy: threadpoolctl takes long to load; only the commands that use it pay for it
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController().select(user_api="blas")


def maxsim(query: np.ndarray, documents: Sequence[np.ndarray]) -> np.ndarray:
    """Late interaction: for each document, the sum over query tokens of the best cosine with its tokens."""
    with one_blas_thread():
        return np.array([float((query @ doc.T).max(axis=1).sum()) if len(doc) else 0.0 for doc in documents])


class PairScores(KeyedCache):
    """Cross-encoder scores kept on disk by (model, question, passage text), across runs.

    Only searches whose time is not recorded read them (see `core.run.engine.reuse_allowed`); a timed search
    always runs its model, and writes what it computed here for the others.
    """

    key = staticmethod(pair_key)

    def scores(self, model: str, keys: Sequence[str]) -> dict[str, float]:
        return {k: float(v) for k, v in self.values(model, keys).items()}

    def keep(self, model: str, scores: dict[str, float]) -> None:
        self.put(model, scores)


@dataclass
class Models:
    """Loads models by name through the registered model plugins, each once, and remembers them."""

    registry: Any
    settings: ModelSettings = field(default_factory=ModelSettings)
    pair_scores: PairScores | None = None
    embeddings: Path | None = None
    """Where engines keep embeddings by content (`models.embeddings` in the config)."""
    endpoints: Mapping[str, ModelEndpoint] = field(default_factory=dict)
    """Served models the config declares (`models.endpoints`), by the names it gives them."""
    providers: Any = None
    """The provider plugins' registry (`Plugins.providers`), which speak the endpoints' wire formats."""
    work: ModelWork | None = None
    """Where the run's model work goes besides this process: its Dask cluster (`core.run.work.ClusterWork`)."""
    _served: dict[str, Any] = field(default_factory=dict, init=False, repr=False)
    """Served models loaded for this run (never shared across runs: each counts what it sends)."""
    _remote: WorkerCounts = field(default_factory=WorkerCounts, init=False, repr=False)
    """What each cluster worker has sent to each served model in this run."""

    def plugin(self, name: str, kind: str) -> Any:
        if name in self.endpoints:
            endpoint = self.endpoints[name]
            provider = self.providers.get(endpoint.provider, where=f"models.endpoints.{name}.provider")
            plugin: Any = ServedModel(name, endpoint, provider, self.embeddings)
        elif name in self.registry:
            plugin = self.registry.get(name)()
        else:
            problem = unknown_model(self.registry, name, kind)
            if problem:
                raise ModelError(problem)
            plugin = _fallback(self.registry, kind)[0](name)
        if plugin.kind != kind:
            raise ModelError(f"model '{name}' is a {plugin.kind} model; a {kind} model is needed here")
        return plugin

    def label(self, name: str) -> str:
        if name in self.endpoints:
            endpoint = self.endpoints[name]
            return endpoint.label or endpoint.model
        return self.registry.get(name).label if name in self.registry else name.split("/")[-1]

    def family(self, name: str) -> str | None:
        """The family of model `name` (`core.models.families`): what its plugin says, else what its model id
        says (a served model's provider model, a registered model's name and label)."""
        if name in self.endpoints:
            endpoint = self.endpoints[name]
            return family_of(endpoint.model, endpoint.label)
        if name in self.registry:
            plugin = self.registry.get(name)
            return getattr(plugin, "family", None) or family_of(name, plugin.label)
        return family_of(name)

    def families(self, name: str) -> frozenset[str]:
        """Every family model `name` belongs to by base model or training lineage (`core.models.families`): its
        plugin's `family` and `lineage`, and what its names tell."""
        if name in self.endpoints:
            endpoint = self.endpoints[name]
            return families_of(endpoint.model, endpoint.label)
        if name in self.registry:
            plugin = self.registry.get(name)
            said = {getattr(plugin, "family", None), *getattr(plugin, "lineage", ())}
            return frozenset(f for f in said if f) | families_of(name, plugin.label)
        return families_of(name)

    def cache_space(self, name: str) -> str:
        """Where what model `name` computed is kept by content: a served model's provider, model and size
        (two configs may give it different names), else the name itself."""
        if name in self.endpoints:
            return cache_space(self.endpoints[name], "document")
        return name

    def usage(self) -> list[ServedUsage]:
        """What this run sent to each served model, from this process and from its cluster's workers."""
        with _LOCK:
            counted = {name: model.calls.usage() for name, model in self._served.items()}
        for _, sent in self._remote.items():
            counted[sent.name] = counted[sent.name].plus(sent) if sent.name in counted else sent
        return [counted[name] for name in sorted(counted)]

    def absorb(self, source: str, usage: Sequence[ServedUsage]) -> None:
        """What a source on the cluster (one worker's searches, or its model work) has sent so far."""
        self._remote.keep(source, usage)

    def dense(self, name: str) -> DenseEncoder:
        """The dense encoder `name` (``minilm``, ``bge-small``, or a hub id where it can be downloaded)."""
        encoder: DenseEncoder = self.get(name, DENSE)
        return encoder

    def reranker(self, name: str) -> CrossEncoder:
        encoder: CrossEncoder = self.get(name, RERANKER)
        return encoder

    def late(self, name: str) -> LateEncoder:
        encoder: LateEncoder = self.get(name, LATE)
        return encoder

    def get(self, name: str, kind: str) -> Any:
        """The loaded model (loading it the first time in this process); its kind is checked on every call."""
        plugin = self.plugin(name, kind)
        if isinstance(plugin, ServedModel):
            with _LOCK:
                if name not in self._served:
                    self._served[name] = plugin.load(self.settings)
                return self._served[name]
        key = (name, self.settings)
        with _LOCK:
            if key not in _LOADED:
                _LOADED[key] = plugin.load(self.settings)
            return _LOADED[key]


# Loaded models live as long as the process: loading takes seconds, and several runs may share them.
_LOADED: dict[tuple[str, ModelSettings], Any] = {}
_LOCK = threading.Lock()


def own_models(source: ModelSource) -> Models:
    """The run's own `Models` behind the `ModelSource` a target or an open context holds: the core made it,
    and only the core reads what the contract leaves out (the cluster's work, the served counts)."""
    if not isinstance(source, Models):
        raise TypeError(f"the run's models are a core.models.loading.Models, not {type(source).__name__}")
    return source
