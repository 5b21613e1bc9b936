"""YAML experiment configs: validated by pydantic, paths resolved against the config's folder."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    Field,
    ValidationError,
    model_validator,
)

from vx_eval.core.config.by_document import ByDocument
from vx_eval.core.config.endpoints import chat_judge_named, declared_endpoints
from vx_eval.core.config.validation import SECRET_KEY, Loc, dotted, format_validation_error, yaml_line
from vx_eval.core.config.yamlio import YamlInputError, parse_yaml
from vx_eval.core.contracts.endpoints import ModelEndpoint
from vx_eval.core.contracts.fields import (  # noqa: F401  (re-exported: plugins have always imported them from here)
    CREDENTIALS_IN_URL,
    ConfigPath,
    Device,
    Location,
    SearchConfig,
    SecretRef,
    ServiceUrl,
    Strict,
    is_uri,
)
from vx_eval.core.errors import ConfigError, did_you_mean, quoted
from vx_eval.core.measures.metrics import check_metrics, expand_cutoffs
from vx_eval.core.models.loading import ModelCatalog

if TYPE_CHECKING:
    from vx_eval.core.plugins import Plugins


if TYPE_CHECKING:
    from vx_eval.core.contracts.engine import EngineHandle, EngineOptions
    from vx_eval.core.contracts.golden import GoldenSet

DEFAULT_METRICS = ("found@1", "found@3", "found@5", "found@10", "found@20", "mrr", "recall@10", "ndcg@10")


class GoldenSource(Strict):
    """A golden source spelled out: ``{path: …, format: beir, split: test}``."""

    path: Location
    format: Literal["auto", "jsonl", "beir", "trec"] = "auto"
    """auto: a BEIR folder (queries.jsonl + qrels/), a TREC folder (one topics and one qrels file) or a file."""
    split: str = "test"
    limit: int | None = Field(None, ge=1)
    """Only the first `limit` questions (a slice for quick runs); the report keeps exactly those."""


class CorpusSource(Strict):
    """A corpus spelled out: ``{path: …, limit: 2000}`` (a slice for quick runs) or ``{path: …, sample: 20000}``
    (a seeded sample, to compare models on a corpus too large to embed whole for each)."""

    path: Location
    limit: int | None = Field(None, ge=1)
    """Only the first `limit` documents, plus every document the golden questions expect (a slice)."""
    sample: int | None = Field(None, ge=1)
    """`sample` documents drawn with `seed` from those the golden questions do not expect, plus every one they
    expect: the same sample for every setup, and the report says its scores are on a sample."""
    keep_expected: bool = True
    """With `limit` or `sample`: keep every document the golden questions expect (false: only what is drawn,
    so that expected documents may be missing, as they are from a real sample)."""
    seed: int = 0
    """The draw of `sample`."""

    @model_validator(mode="after")
    def _one_way_to_cut(self) -> CorpusSource:
        if self.limit is not None and self.sample is not None:
            raise ValueError("give limit (the first documents) or sample (a seeded draw), not both")
        return self

    @property
    def cut(self) -> bool:
        """Whether only part of the corpus is read."""
        return self.limit is not None or self.sample is not None


class TargetConfig(Strict):
    name: str = Field(min_length=1)
    engine: str = Field(min_length=1)
    options: dict[str, Any] = Field(default_factory=dict)


FUSIONS: tuple[Literal["convex", "rrf"], ...] = ("convex", "rrf")


class TuneConfig(Strict):
    """Fusion tuned by cross-validation over questions (`core.run.tuning`): the settings to try and the folds."""

    fusion: list[Literal["convex", "rrf"]] = Field(default_factory=lambda: list(FUSIONS), min_length=1)
    alpha: list[Annotated[float, Field(ge=0, le=1)]] = Field(
        default_factory=lambda: [round(0.1 * i, 1) for i in range(11)], min_length=1, max_length=101
    )
    """The dense share of the hybrid to try (keyword gets 1 - alpha)."""
    rrf_k: list[Annotated[int, Field(ge=1, le=10_000)]] = Field(default_factory=lambda: [10, 60, 100], min_length=1)
    folds: int = Field(5, ge=2, le=50)
    timed: int = Field(20, ge=1, le=1_000)
    """Questions searched for real with the chosen setting, timed (the tuned setup's times)."""


class EvaluationConfig(Strict):
    metrics: list[str] = Field(default_factory=lambda: list(DEFAULT_METRICS))
    depth: int = Field(20, ge=1, le=10_000)
    primary: str = "found@10"
    balance: float = Field(4.0, ge=0, le=100)
    time: float = Field(8.0, ge=0, le=100)
    seed: int = 0
    bootstrap: int = Field(1000, ge=0, le=100_000)
    """Bootstrap resamples for the 95% intervals (0: none)."""
    permutations: int = Field(10_000, ge=0, le=1_000_000)
    """Random sign flips for the paired tests against the leader (0: no tests)."""
    alpha: float = Field(0.05, gt=0, lt=1)
    """Family-wise significance level of those tests (Holm-corrected)."""
    relevance_threshold: int = Field(1, ge=1, le=10)
    """Binary measures count a unit as relevant from this grade on (Databricks: 2)."""
    relevance_field: str | None = Field(None, pattern=r"^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*$")
    """Grade results by this field's value (dotted path, e.g. metadata.frame_key) instead of document id."""
    by_document: ByDocument | None = None
    """Score a chunked corpus by document: each chunk counted as its document (see `ByDocument`)."""

    @model_validator(mode="after")
    def _one_unit_rule(self) -> EvaluationConfig:
        if self.by_document is not None and self.relevance_field is not None:
            raise ValueError("relevance_field and by_document both say what a result counts as: keep one")
        return self

    timing_sample: int | None = Field(None, ge=1)
    """Time this many questions (seeded sample) end to end; the rest may reuse model scores. None: all."""
    throughput: list[int] = Field(default_factory=list)
    """Optional: for each number of callers (``[1, 4, 16]``), queries a second and latency per setup, on the
    timed questions (at most 50), searched end to end after the run's searches."""
    shard_size: int = Field(50, ge=1, le=100_000)
    """Questions per checkpoint: each setup's searches are kept as every shard finishes (see --resume)."""
    judge: str | None = None
    """A judge plugin (``cross-encoder``, ``chat``) grading every unlabelled (question, result) pair in the
    first `judge_depth` places 0–3; its options go under ``judges: {name: {…}}``. Human labels always win.
    A chat endpoint of ``models.endpoints`` may be named instead: the ``chat`` judge asks it.
    With a judge, golden rows that have a question but no expected ids are searched and graded too."""
    judge_depth: int = Field(10, ge=1, le=1_000)
    ties: Literal["trec", "expected", "optimistic", "pessimistic"] = "trec"
    """Which order of tied results the measures read: trec_eval's (by id), the mean over every order, the
    best or the worst (see `core.measures.ties`); the report gives all four for every setup with ties either way."""
    tie_flag: float = Field(0.01, ge=0, le=1)
    """A setup whose primary measure can move by more than this with the order of its ties is flagged."""
    tune: TuneConfig | None = None
    """Tune every local hybrid's fusion by k-fold cross-validation over the kept rankings (`core.run.tuning`)."""


class ExecutionConfig(Strict):
    """Who runs the searches (see `core.run.executors`): serial, a thread pool, or a Dask cluster."""

    executor: Literal["serial", "thread", "dask"] = "serial"
    address: str | None = None
    """dask: the scheduler, ``tcp://host:8786``; none starts a LocalCluster of `workers` on this machine."""
    workers: int = Field(2, ge=1, le=1024)
    concurrency: int = Field(4, ge=1, le=1024)
    """thread: searches at once in all."""
    per_engine: dict[str, int] = Field(default_factory=dict)
    """thread: searches at once per engine, ``{opensearch: 2}``."""
    rate: dict[str, float] = Field(default_factory=dict)
    """thread: searches started per second per engine, ``{azure-search: 10}``."""


class ModelsConfig(Strict):
    """How models run: CPU threads (1 is fastest on a busy machine), batch size, cross-encoder passage length."""

    threads: int = Field(1, ge=1, le=256)
    batch_size: int = Field(32, ge=1, le=4_096)
    passage_tokens: int = Field(256, ge=16, le=512)
    device: Device = "auto"
    """Where in-process models run: auto (a CUDA GPU where one is seen, else the CPU), cpu, cuda or cuda:N."""

    scores: ConfigPath = Field(Path(".vx/scores.db"), validate_default=True)
    """Cross-encoder scores kept across runs (read only by untimed searches)."""
    embeddings: ConfigPath = Field(Path(".vx/embeddings.db"), validate_default=True)
    """Vectors kept by content across runs and targets: every engine built from the corpus reads them here
    (a target's own ``cache`` option overrides it)."""
    endpoints: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9][\w.-]{0,63}$")], ModelEndpoint] = Field(
        default_factory=dict
    )
    """Served models by the names this config gives them (`core.models.endpoints`): named in ``dense_models``,
    ``reranker`` and the rest exactly as a built-in model is."""


class ExperimentConfig(Strict):
    name: str = Field(min_length=1)
    golden: Location | GoldenSource
    save_to: Location = "runs"
    corpus: Location | CorpusSource | None = None
    targets: list[TargetConfig] = Field(default_factory=list)
    """At least one, unless the run is given retrievers from Python (`vx_eval.evaluate`)."""
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    stores: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Settings per store plugin: ``{s3: {endpoint_url: …}, azure-blob: {connection_string: {env: …}}}``."""
    writers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Options per question writer: ``{chat: {model: {url: …, model: …}}, local: {threads: 2}}`` (the chat
    writer's ``model`` may be the name of a chat endpoint of ``models.endpoints``)."""
    judges: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Options per judge plugin: ``{cross-encoder: {cut_points: [-1, 2.5, 6]}, chat: {url: …, model: …}}``
    (or ``chat: {endpoint: NAME}``, a chat endpoint of ``models.endpoints``)."""
    search: SearchConfig = Field(default_factory=SearchConfig)
    execution: ExecutionConfig = Field(default_factory=ExecutionConfig)
    models: ModelsConfig = Field(default_factory=dict, validate_default=True)  # validated: paths resolve

    @model_validator(mode="after")
    def _unique_target_names(self) -> ExperimentConfig:
        seen: set[str] = set()
        for target in self.targets:
            if target.name in seen:
                raise ValueError(f"two targets are named '{target.name}'; give each a name of its own")
            seen.add(target.name)
        return self

    @property
    def golden_source(self) -> GoldenSource:
        return self.golden if isinstance(self.golden, GoldenSource) else GoldenSource(path=self.golden)

    @property
    def corpus_source(self) -> CorpusSource | None:
        if self.corpus is None or isinstance(self.corpus, CorpusSource):
            return self.corpus
        return CorpusSource(path=self.corpus)


@dataclass(frozen=True)
class Experiment:
    """A loaded config: the validated model, each target's validated options, and where it came from."""

    config: ExperimentConfig
    options: tuple[EngineOptions, ...]
    """Each target's engine options, validated by its engine's `Options`, in the order of the targets."""
    path: Path | None
    sha256: str
    judges: dict[str, BaseModel] = field(default_factory=dict)
    """Each judge's validated `Options` (the config's ``judges:`` block, and the judge it names)."""
    writers: dict[str, BaseModel] = field(default_factory=dict)
    """Each question writer's validated `Options` (``writers:``)."""
    stores: dict[str, BaseModel] = field(default_factory=dict)
    """Each store's validated `Options` (``stores:``)."""
    retrievers: tuple[tuple[str, EngineHandle], ...] = ()
    """Targets given from Python as opened handles (a function, a LangChain or LlamaIndex retriever,
    wrapped by an adapter plugin), searched after the configured ones, by their names."""
    questions: GoldenSet | None = None
    """Golden questions given from Python instead of a golden file."""

    @property
    def base_dir(self) -> Path:
        return self.path.parent if self.path else Path.cwd()


# ---------------------------------------------------------------------------------------------- loading


def _check_secrets(options: object, prefix: Loc) -> list[tuple[Loc, str]]:
    """Options whose key names a secret must reference an environment variable, never hold the value (a
    number included). The value itself is never repeated."""
    problems: list[tuple[Loc, str]] = []
    if not isinstance(options, dict):
        return problems
    for key, value in options.items():
        if isinstance(value, dict):
            problems += _check_secrets(value, (*prefix, key))
        elif isinstance(key, str) and SECRET_KEY.search(key) and value not in (None, "", True, False):
            problems.append(
                (
                    (*prefix, key),
                    f"a secret is written into the config; write `{key}: {{env: VARIABLE}}` "
                    "and export VARIABLE instead",
                )
            )
    return problems


def load_config(path: str | Path, plugins: Plugins) -> Experiment:
    """Read, validate and resolve an experiment config; every problem is reported at once."""
    path = Path(path)
    try:
        raw_bytes = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"{path} is a folder; name the YAML config file inside it") from None
    except OSError as exc:
        raise ConfigError(f"config file {path} cannot be read ({exc.strerror or exc})") from None
    return parse_config(raw_bytes, plugins, path=path.resolve(), source=str(path))


# What each options-like block of a config is checked against: the registry of the plugins it names.
BLOCKS = (("judges", "judges", "judge"), ("writers", "writers", "question writer"), ("stores", "stores", "store"))


@dataclass
class _Checker:
    """Collects every problem of one config, each with its line, while the parts are checked."""

    plugins: Plugins
    root: yaml.Node | None
    source: str
    context: dict[str, Any]
    problems: list[tuple[int, str]] = field(default_factory=list)

    def problem(self, loc: Loc, message: str) -> None:
        line = yaml_line(self.root, loc) or 0
        self.problems.append((line, f"{self.source}:{line}: {dotted(loc)}: {message}"))

    def validation(self, exc: ValidationError, model: type[BaseModel], prefix: Loc = ()) -> None:
        self.problems += format_validation_error(exc, model, prefix=prefix, source=self.source, root=self.root)

    def plugin_block(self, registry_name: str, role: str, name: str, raw: object, loc: Loc) -> Any:
        """One plugin's options block, validated by that plugin's own `Options` model (unknown plugin names
        and keys named, with the YAML line and a did-you-mean). Returns the options (None when wrong)."""
        registry = getattr(self.plugins, registry_name)
        if name not in registry:
            names = registry.names()
            self.problem(
                loc,
                f"no {role} named {quoted(name)}{did_you_mean(str(name), names)} "
                f"(installed: {', '.join(names) or 'none'}; see `vx-eval plugins`)",
            )
            return None
        if raw is not None and not isinstance(raw, dict):
            self.problem(loc, f"the {role}'s options are a mapping of settings (got {type(raw).__name__})")
            return None
        for secret_loc, message in _check_secrets(raw or {}, loc):
            self.problem(secret_loc, message)
        options_model = getattr(registry.get(name), "Options", None)
        if options_model is None:
            return raw or {}
        try:
            return options_model.model_validate(raw or {}, context=self.context)
        except ValidationError as exc:
            self.validation(exc, options_model, loc)
            return None

    def targets(self, data: dict[str, Any]) -> list[Any]:
        """Each target's engine options, validated by its engine (None where the target is wrong)."""
        options: list[Any] = []
        raw_targets = data.get("targets")
        for i, target in enumerate(raw_targets if isinstance(raw_targets, list) else []):
            engine = target.get("engine") if isinstance(target, dict) else None
            if not isinstance(engine, str):
                options.append(None)
                continue
            if engine not in self.plugins.engines:
                names = self.plugins.engines.names()
                self.problem(
                    ("targets", i, "engine"),
                    f"no engine named {quoted(engine)}{did_you_mean(engine, names)} "
                    f"(installed: {', '.join(names) or 'none'}; see `vx-eval plugins`)",
                )
                options.append(None)
                continue
            options.append(
                self.plugin_block("engines", "engine", engine, target.get("options"), ("targets", i, "options"))
            )
        return options

    def blocks(self, data: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """The judges, writers and stores blocks, each plugin's options validated by that plugin."""
        out: dict[str, dict[str, Any]] = {}
        for key, registry_name, role in BLOCKS:
            out[key] = {}
            raw_block = data.get(key)
            if not isinstance(raw_block, dict):
                continue  # absent, or a type error pydantic has named already
            for name, raw in raw_block.items():
                value = self.plugin_block(registry_name, role, name, raw, (key, name))
                if value is not None:
                    out[key][name] = value
        return out

    def endpoints(self, endpoints: dict[str, ModelEndpoint]) -> None:
        """Each served model's provider is installed and serves its kind; its name is not a built-in's."""
        for name, endpoint in endpoints.items():
            loc = ("models", "endpoints", name)
            if name in self.plugins.models:
                self.problem(loc, f"'{name}' is the name of an installed model; give the endpoint another name")
            providers = self.plugins.providers
            if endpoint.provider not in providers:
                names = providers.names()
                self.problem(
                    (*loc, "provider"),
                    f"no model provider named {quoted(endpoint.provider)}{did_you_mean(endpoint.provider, names)} "
                    f"(installed: {', '.join(names) or 'none'})",
                )
                continue
            provider = providers.get(endpoint.provider)
            absent = getattr(provider, "missing", lambda: None)()
            if absent:
                self.problem((*loc, "provider"), f"provider {endpoint.provider}: {absent}")
            if endpoint.kind not in provider.kinds:
                self.problem((*loc, "kind"), f"provider {endpoint.provider} serves no {endpoint.kind} models")
            if endpoint.kind == "chat" and name in self.plugins.judges:
                self.problem(loc, f"'{name}' is the name of a judge plugin; give the chat endpoint another name")

    def chat_judge(self, data: dict[str, Any], endpoints: dict[str, ModelEndpoint]) -> None:
        """``evaluation.judge`` naming a chat endpoint: the `chat` judge asking it (`chat_judge_named`)."""
        problem = chat_judge_named(data, endpoints)
        if problem is not None:
            self.problem(("judges", "chat"), problem)

    def evaluation(self, data: dict[str, Any], judges: dict[str, Any]) -> None:
        """The measures (and the depth they need), and the judge the evaluation names."""
        raw = data.get("evaluation")
        evaluation: dict[str, Any] = raw if isinstance(raw, dict) else {}
        depth = evaluation.get("depth", EvaluationConfig.model_fields["depth"].default)
        known_depth = depth if isinstance(depth, int) and not isinstance(depth, bool) else None
        for loc, message in check_metrics(evaluation.get("metrics"), evaluation.get("primary"), known_depth):
            self.problem(loc, message)
        judge = evaluation.get("judge")
        if isinstance(judge, str) and judge not in judges:
            value = self.plugin_block("judges", "judge", judge, {}, ("evaluation", "judge"))
            if value is not None:
                judges[judge] = value


def parse_config(
    raw_bytes: bytes, plugins: Plugins, *, path: Path | None, source: str = "config", more_targets: int = 0
) -> Experiment:
    """Validate config bytes; every problem (keys, types, engines, options, measures) is raised at once."""
    try:
        text = raw_bytes.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        at = raw_bytes[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{source}:{at}: not UTF-8 text; a config is a YAML file saved as UTF-8") from None
    try:
        parsed = parse_yaml(text)
    except YamlInputError as exc:
        where = f"{source}:{exc.line}:{exc.column}" if exc.line else source
        raise ConfigError(f"{where}: not valid YAML: {exc.message}") from None
    data = parsed.data
    if not isinstance(data, dict):
        what = "nothing" if data is None else f"a YAML {type(data).__name__}"
        raise ConfigError(f"{source}: a config is a YAML mapping with name, golden, targets; this file holds {what}")
    endpoints = declared_endpoints(data)
    catalog = ModelCatalog(plugins.models, endpoints)
    checker = _Checker(
        plugins, parsed.root, source, {"base_dir": path.parent if path else Path.cwd(), "models": catalog}
    )
    checker.endpoints(endpoints)
    checker.chat_judge(data, endpoints)
    config = None
    try:
        config = ExperimentConfig.model_validate(data, context=checker.context)
    except ValidationError as exc:
        checker.validation(exc, ExperimentConfig)
    options = checker.targets(data)
    blocks = checker.blocks(data)
    checker.evaluation(data, blocks["judges"])
    if config is not None and not config.targets and not more_targets:
        checker.problems.append((0, f"{source}: targets: name at least one target (name, engine, options)"))
    if checker.problems or config is None:
        ordered = sorted(dict.fromkeys(checker.problems), key=lambda p: p[0])
        raise ConfigError("\n".join(message for _, message in ordered))
    return Experiment(
        config,
        tuple(options),
        path,
        hashlib.sha256(raw_bytes).hexdigest(),
        judges=blocks["judges"],
        writers=blocks["writers"],
        stores=blocks["stores"],
    )


def with_overrides(
    experiment: Experiment, golden: str | None = None, metrics: Sequence[str] = (), k_values: Sequence[int] = ()
) -> Experiment:
    """The experiment with another golden file and other measures (the command line's, a server request's),
    the measures checked as a config's are."""
    config = experiment.config
    if golden:
        config = config.model_copy(update={"golden": GoldenSource(path=golden)})
    if metrics:
        names = expand_cutoffs(metrics, k_values)
        ev = config.evaluation
        problems = check_metrics(names, ev.primary, ev.depth)
        if problems:
            raise ConfigError("\n".join(message for _, message in problems))
        config = config.model_copy(update={"evaluation": ev.model_copy(update={"metrics": names})})
    return dataclasses.replace(experiment, config=config)
