"""A run with no configuration and no golden file: ``vx-eval run --docs corpus.jsonl``.

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
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vx_eval.core.engine import slug
from vx_eval.core.errors import ConfigError, GoldenError
from vx_eval.core.golden import GoldenRow

METRICS = ("dcg@10", "ndcg@10", "found@10", "mrr", "recall@10")
MIX = {"fact": 0.35, "why": 0.15, "keyword": 0.5}
"""Natural-language questions (fact, why) and keyword queries, half and half."""
QUESTIONS = 24
WRITER = "local"
JUDGE = "cross-encoder"


@dataclass(frozen=True)
class AutoConfig:
    """The config a run with none was given: where it is kept, its text, and whether its questions were
    drafted just now (else they were drafted by an earlier run on the same documents)."""

    path: Path
    text: str
    drafted_now: bool
    questions: int


GENERIC = {"docs", "documents", "corpus", "data", "passages", "collection"}


def name_for(docs: Path) -> str:
    """The run's name: the file's, or its folder's when the file is called something like ``docs.jsonl``."""
    stem = docs.name.split(".")[0]
    folder = Path(os.path.abspath(docs)).parent.name
    return slug(folder if stem.lower() in GENERIC and folder else stem)


def workspace(docs: Path, root: Path) -> Path:
    """Where the config, its drafted questions and its index are kept: named by the documents' sha256."""
    digest = hashlib.sha256()
    with docs.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return root / ".vx" / "auto" / f"{name_for(docs)}-{digest.hexdigest()[:12]}"


def config_data(docs: Path, work: Path, save_to: Path, here: Path, *, judge: str = JUDGE) -> dict[str, Any]:
    """The config for `docs` whose questions and index are kept in `work`, with every path relative to
    `here` (the folder it is written to)."""

    def rel(path: Path) -> str:
        return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(here))).as_posix()

    return {
        "name": name_for(docs),
        "corpus": rel(docs),
        "golden": rel(work / "golden.jsonl"),
        "save_to": rel(save_to),
        "targets": [
            {
                "name": "Local",
                "engine": "sqlite",
                "options": {"path": rel(work / "index.db"), "mode": "hybrid", "dense_models": ["minilm", "bge-small"]},
            }
        ],
        "evaluation": {
            "metrics": list(METRICS),
            "primary": "dcg@10",
            "relevance_threshold": 2,
            "judge": judge,
            "judge_depth": 10,
            "depth": 20,
            "seed": 0,
        },
        "models": {"embeddings": rel(work / "embeddings.db"), "scores": rel(work / "scores.db")},
    }


def prepare(
    docs: Path,
    *,
    questions: int = QUESTIONS,
    writer: str = WRITER,
    save_to: Path | None = None,
    save_config: Path | None = None,
    progress: Any = None,
) -> AutoConfig:
    """The config for `docs` (written to its workspace, and to `save_config` when given) with its golden
    questions drafted by `writer` if the workspace has none yet."""
    from vx_eval.api import write_golden_rows
    from vx_eval.core.golden import dump_rows

    if not docs.is_file():
        raise ConfigError(f"--docs {docs}: no such file; name a JSONL file of documents (id, text)")
    work = workspace(docs, Path.cwd())
    runs = save_to or Path.cwd() / "runs"
    path = work / "config.yaml"
    _write(path, config_data(docs, work, runs, work))
    golden = work / "golden.jsonl"
    drafted_now = False
    if not golden.exists():
        rows, summary = write_golden_rows([path], questions, writer_plugin=writer, mix=MIX, progress=progress)
        if not rows:
            raise GoldenError(
                f"the {writer} writer drafted no question that passed its checks ({summary.tries} tries on "
                f"{summary.passages} passages); give a config with a golden file instead"
            )
        partial = golden.with_name(".golden.jsonl.partial")
        partial.write_bytes(dump_rows([judged_only(row) for row in rows]))
        partial.replace(golden)
        drafted_now = True
    count = sum(1 for line in golden.read_text(encoding="utf-8").splitlines() if line.strip())
    if save_config is not None:
        _write(save_config, config_data(docs, work, runs, save_config.parent))
    return AutoConfig(path, path.read_text(encoding="utf-8"), drafted_now, count)


def judged_only(row: GoldenRow) -> GoldenRow:
    """A drafted row whose grades all come from the judge, as Databricks grades its generated queries: the
    passage it was written from is kept (``metadata.source``) but not labelled, since a writer's label
    carries no grade (a bare id would be grade 1, below the relevance at 2 these runs count)."""
    return row.model_copy(update={"expected": [], "metadata": {**row.metadata, "source": row.expected}})


def _write(path: Path, data: Mapping[str, Any]) -> None:
    text = (
        "# Filled in by `vx-eval run --docs`: the documents' own defaults, questions drafted by a model (marked\n"
        "# draft: true) and graded by a judge. Run it again with `vx-eval run <this file>`.\n"
        + yaml.safe_dump(dict(data), sort_keys=False, allow_unicode=True)
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)
