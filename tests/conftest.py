"""Shared fixtures: the loaded plugins, a small collection and golden file in a temp folder, SciFact paths."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from vx_eval.core.plugins import load_plugins

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "datasets"

os.environ.setdefault("OMP_NUM_THREADS", "1")

DOCS = [
    {
        "id": "deferment",
        "title": "Payment deferment",
        "text": "Customers in disaster areas can defer loan payments with no late fees.",
    },
    {
        "id": "emergency-fund",
        "title": "Emergency fund access",
        "text": "Expedited access to funds and waived fees for displaced customers.",
    },
    {
        "id": "divestment",
        "title": "Early divestment",
        "text": "Guidance for customers who sell investments before they mature.",
    },
    {
        "id": "card-lost",
        "title": "Lost cards",
        "text": "Freeze a lost or stolen card instantly in the app; a replacement arrives in five days.",
    },
    {
        "id": "wire",
        "title": "Wire transfers",
        "text": "Send money abroad by wire in forty currencies for a fee of 35 dollars.",
    },
    {
        "id": "report.pdf",
        "title": "Annual report",
        "pages": [
            "Chairman's letter. A year of growth in deposits.",
            "Risk management. Credit losses stayed low; the loan book is diversified.",
            "Sustainability. Branches run on renewable electricity since March.",
        ],
    },
]

GOLDEN = [
    {
        "id": "q1",
        "question": "Can a customer postpone a loan payment after a wildfire?",
        "expected": ["deferment"],
    },
    {
        "id": "q2",
        "question": "A displaced customer needs cash, can fees be waived?",
        "expected": ["emergency-fund"],
    },
    {"id": "q3", "question": "Can I sell investments before they mature?", "expected": ["divestment"]},
    {"id": "q4", "question": "What does a wire abroad cost?", "expected": ["wire"], "grades": {"wire": 2}},
    {"id": "q5", "question": "Were credit losses low this year?", "expected": ["report.pdf#page=2"]},
    {"id": "t1", "question": "", "expected": ["card-lost"], "hint": "Lost cards: Freeze a lost…"},
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def plugins():
    return load_plugins()


class Project:
    """A temp folder with docs.jsonl and golden.jsonl; `write_config(**overrides)` writes a config there."""

    def __init__(self, root: Path) -> None:
        self.root = root
        write_jsonl(root / "docs.jsonl", DOCS)
        write_jsonl(root / "golden.jsonl", GOLDEN)

    def __truediv__(self, name: str) -> Path:
        return self.root / name

    def write_config(self, name: str = "config.yaml", **overrides) -> Path:
        config = {
            "name": "tiny",
            "golden": "golden.jsonl",
            "corpus": "docs.jsonl",
            "save_to": "runs",
            # keyword only: fast; the dense, hybrid and reranked methods have tests of their own
            "targets": [{"name": "Local", "engine": "sqlite", "options": {"path": ".vx/tiny.db", "dense_models": []}}],
            "evaluation": {"metrics": ["found@1", "found@10", "mrr", "recall@10", "ndcg@10"], "depth": 20},
        }
        config.update(overrides)
        path = self.root / name
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        return path


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


@pytest.fixture(scope="session")
def scifact() -> Path:
    path = SHARED / "scifact"
    if not (path / "corpus.jsonl").is_file():
        pytest.fail(f"the shared SciFact collection is missing at {path}; it is laid beside the repo")
    return path


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory) -> Path:
    """One embedding cache for the whole test session: a collection is embedded once per model."""
    return tmp_path_factory.mktemp("cache")


def quickstart_copy(folder: Path, cache: Path, *, keyword_only: bool = True, name: str = "quickstart.yaml") -> Path:
    """The shipped quickstart collection and config in `folder`; keyword only unless asked (fast)."""
    if not (folder / "quickstart").exists():
        shutil.copytree(REPO / "configs" / "quickstart", folder / "quickstart")
    config = yaml.safe_load((REPO / "configs" / "quickstart.yaml").read_text())
    config["save_to"] = "runs"
    options = config["targets"][0]["options"]
    options.update(path=f".vx/{Path(name).stem}.db", cache=str(cache / "embeddings.db"))
    if keyword_only:
        options.update(mode="dense", dense_models=[])
    config.setdefault("models", {})["scores"] = str(cache / "scores.db")
    path = folder / name
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def osmem() -> Iterator[str]:
    """osmem-server (an in-memory server speaking OpenSearch's HTTP API) on 127.0.0.1, stopped by its PID."""
    from osmem_server import OsmemServer

    server = OsmemServer.start(addr="127.0.0.1:0")
    yield server.url
    server.close()  # stdin closed, then the process (its own PID) killed after a grace period
