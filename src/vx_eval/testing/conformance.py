"""One conformance suite for every engine plugin, built in or a third party's.

Subclass `EngineConformance` in a test module, name your engine and its options, and pytest runs every
check on it::

    from vx_eval.testing.conformance import EngineConformance

    class TestMyEngine(EngineConformance):
        engine = "my-engine"
        options = {"url": "http://127.0.0.1:9200", "dense_models": ["minilm"]}
        absent_options = {"url": "http://127.0.0.1:9200", "collection": "no-such-index", "build": "never"}

The suite builds your engine from a small collection (52 documents, 26 golden questions: a bank's help
centre), the way ``vx-eval run`` does, beside the embedded engine (`sqlite`) built from the same documents,
and checks: what it holds (ids, missing-document look-ups, documents), its setups (unique keys under the
target, hits that name held documents, at most k, best first), its errors (an unknown capability, an index
that is not there), questions with nothing to search, and its rankings against the embedded engine's: for
each method in `same_ranking` (default: single-model dense search, where both do exact cosine search over
the same vectors), the top 10 must equal the embedded engine's for at least `agreement` of the questions.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from vx_eval.core.config.experiment import load_config
from vx_eval.core.contracts.engine import (
    OpenContext,
    Query,
    Setup,
    SilentProgress,
    Target,
    TargetDescription,
    reuse_allowed,
)
from vx_eval.core.errors import EngineError, VxEvalError
from vx_eval.core.plugins import load_plugins
from vx_eval.core.run.selection import enumerate_setups
from vx_eval.core.run.targets import close_targets, open_targets
from vx_eval.core.stores import Stores

REFERENCE = "Reference"
CANDIDATE = "Candidate"


def collection() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The suite's documents and golden questions."""
    data = resources.files("vx_eval.testing") / "data"
    docs = [json.loads(line) for line in (data / "docs.jsonl").read_text(encoding="utf-8").splitlines() if line]
    golden = [json.loads(line) for line in (data / "golden.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return docs, golden


def copy_collection(folder: Path) -> None:
    """The suite's ``docs.jsonl`` and ``golden.jsonl`` copied into `folder` (made if absent)."""
    folder.mkdir(parents=True, exist_ok=True)
    data = resources.files("vx_eval.testing") / "data"
    for name in ("docs.jsonl", "golden.jsonl"):
        with resources.as_file(data / name) as source:
            shutil.copy(source, folder / name)


def write_project(
    folder: Path, engine: str, options: dict[str, Any], reference: dict[str, Any], cache: Path | None = None
) -> Path:
    """A config with the suite's corpus and golden file, the embedded reference and the engine under test.
    `cache`: a folder for the vectors and the reranker's scores, shared by every engine checked in a session
    (the same documents and questions: each model's work is done once)."""
    copy_collection(folder)
    config: dict[str, Any] = {
        "name": "conformance",
        "golden": "golden.jsonl",
        "corpus": "docs.jsonl",
        "targets": [
            {"name": REFERENCE, "engine": "sqlite", "options": reference},
            {"name": CANDIDATE, "engine": engine, "options": options},
        ],
        "evaluation": {"depth": 10},
    }
    if cache is not None:
        config["models"] = {"embeddings": str(cache / "embeddings.db"), "scores": str(cache / "scores.db")}
    path = folder / "conformance.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


class Opened:
    """The reference and candidate targets opened once for a test class, with their setups."""

    def __init__(
        self, folder: Path, engine: str, options: dict[str, Any], reference: dict[str, Any], cache: Path | None = None
    ) -> None:
        self.plugins = load_plugins()
        self.config_path = write_project(folder, engine, options, reference, cache)
        self.experiment = load_config(self.config_path, self.plugins)
        stores = Stores(self.plugins, options=self.experiment.stores)
        self.targets = open_targets(self.experiment, self.plugins, stores, SilentProgress())
        self.reference, self.candidate = self.targets
        self.setups = enumerate_setups(self.targets, self.plugins)
        self.docs, self.golden = collection()
        # no search here is timed: what a model scored once (kept in `cache`) is reused, as in a run's
        # untimed searches
        self._reuse = reuse_allowed.set(True)

    def setups_of(self, target: Target) -> list[Setup]:
        return [s for s in self.setups if s.target == target.name]

    def close(self) -> None:
        reuse_allowed.reset(self._reuse)
        close_targets(self.targets)


class EngineConformance:
    """Checks every engine must pass. Set `engine` and `options`; override the rest where your engine differs."""

    engine: ClassVar[str]
    options: ClassVar[dict[str, Any]]
    absent_options: ClassVar[dict[str, Any] | None] = None
    """Options naming an index that does not exist (with ``build: never`` where the engine has it)."""
    reference_options: ClassVar[dict[str, Any]] = {"mode": "hybrid", "dense_models": ["minilm"], "chunk_words": 0}
    same_ranking: ClassVar[tuple[str, ...]] = ("dense.minilm",)
    """Setup keys (after the target's key) whose top 10 must match the embedded engine's."""
    agreement: ClassVar[float] = 0.95

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A check that cannot apply to this engine is not collected at all (never a skip that hides
        nothing): an engine with no `absent_options` has no absent-index check, one with no `same_ranking`
        no ranking comparison."""
        super().__init_subclass__(**kwargs)
        if cls.absent_options is None:
            cls.test_absent_index_is_a_clear_error = None  # type: ignore[assignment,method-assign]
        if not cls.same_ranking:
            cls.test_same_method_same_ranking = None  # type: ignore[assignment,method-assign]

    @pytest.fixture(scope="class")
    @classmethod
    def opened(cls, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Opened]:
        folder = tmp_path_factory.mktemp(f"conformance-{cls.engine}")
        cache = tmp_path_factory.getbasetemp() / "conformance-cache"  # one per session: models work once
        cache.mkdir(exist_ok=True)
        opened = Opened(folder, cls.engine, dict(cls.options), dict(cls.reference_options), cache)
        yield opened
        opened.close()

    # ------------------------------------------------------------------------------------------ holdings

    def test_holds_every_document(self, opened: Opened) -> None:
        ids = sorted(d["id"] for d in opened.docs)
        assert opened.candidate.handle.document_ids() == ids

    def test_describes_itself(self, opened: Opened) -> None:
        description = TargetDescription.of(opened.candidate.handle.describe())
        assert description.documents == len(opened.docs)
        assert description.collection, "describe() must name the collection or index"
        json.dumps(description.model_dump(mode="json"))  # it goes into the report as it is
        assert "@" not in (description.location or "").split("//")[-1].split("/")[0], "no credentials in location"

    def test_missing_names_only_absent_documents(self, opened: Opened) -> None:
        held = opened.docs[0]["id"]
        assert opened.candidate.handle.missing([held, "no-such-document"]) == {"no-such-document"}
        assert opened.candidate.handle.missing([]) == set()

    def test_documents_come_back_in_the_order_asked(self, opened: Opened) -> None:
        first, second = opened.docs[3], opened.docs[1]
        found = opened.candidate.handle.documents([first["id"], "no-such-document", second["id"]])
        assert [d.id for d in found] == [first["id"], second["id"]]
        assert found[0].title == first.get("title", "")
        assert found[0].text == first.get("text", "")

    # ------------------------------------------------------------------------------------------ setups

    def test_offers_setups_under_its_own_key(self, opened: Opened) -> None:
        setups = opened.setups_of(opened.candidate)
        assert setups, f"no setup composes over capabilities {sorted(opened.candidate.capabilities)}"
        keys = [s.key for s in setups]
        assert len(keys) == len(set(keys))
        assert all(k.startswith(opened.candidate.key + ".") for k in keys)
        assert all(s.label and s.method for s in setups)

    def test_every_setup_returns_held_documents_best_first(self, opened: Opened) -> None:
        held = {d["id"] for d in opened.docs}
        for setup in opened.setups_of(opened.candidate):
            for row in opened.golden[:3]:
                hits = setup.search(row["question"], 5)
                assert 0 < len(hits) <= 5, f"{setup.key}: {len(hits)} hits for k=5"
                assert {h.doc_id for h in hits} <= held, f"{setup.key} returned ids the collection does not hold"
                scores = [h.score for h in hits]
                assert scores == sorted(scores, reverse=True), f"{setup.key}: results not best first: {scores}"

    def test_finds_answers(self, opened: Opened) -> None:
        """Every setup finds an expected document in its top 10 for most questions (a working search)."""
        for setup in opened.setups_of(opened.candidate):
            found = sum(
                any(h.doc_id in {u.split("#")[0] for u in row["expected"]} for h in setup.search(row["question"], 10))
                for row in opened.golden
            )
            assert found >= len(opened.golden) // 2, f"{setup.key} found {found} of {len(opened.golden)}"

    def test_questions_with_nothing_to_search(self, opened: Opened) -> None:
        for setup in opened.setups_of(opened.candidate):
            for text in ("the of and", "?!", "zzzzqqq xxyyzz"):
                hits = setup.search(text, 5)
                assert isinstance(hits, list) and len(hits) <= 5, setup.key

    # ------------------------------------------------------------------------------------------ errors

    def test_unknown_capability_is_an_engine_error(self, opened: Opened) -> None:
        with pytest.raises(EngineError, match="no-such-capability"):
            opened.candidate.handle.search(Query("loan payment", 5, "no-such-capability"))

    def test_absent_index_is_a_clear_error(self, opened: Opened) -> None:
        engine = opened.plugins.engines.get(self.engine)()
        options = engine.Options.model_validate(self.absent_options, context={"base_dir": opened.config_path.parent})
        context = OpenContext("Absent", opened.config_path.parent, None, models=opened.candidate.models)
        with pytest.raises(VxEvalError) as caught:
            engine.open(options, context)
        assert "corpus" in str(caught.value) or "exist" in str(caught.value), str(caught.value)

    # ------------------------------------------------------------------------------------------ rankings

    def test_same_method_same_ranking(self, opened: Opened) -> None:
        by_key = {s.key: s for s in opened.setups}
        compared = 0
        for suffix in self.same_ranking:
            ours = by_key.get(f"{opened.candidate.key}.{suffix}")
            theirs = by_key.get(f"{opened.reference.key}.{suffix}")
            assert ours is not None, f"the engine offers no setup '{suffix}' (same_ranking names it)"
            assert theirs is not None, f"the embedded reference has no setup '{suffix}'"
            same = sum(
                [h.doc_id for h in ours.search(row["question"], 10)]
                == [h.doc_id for h in theirs.search(row["question"], 10)]
                for row in opened.golden
            )
            assert same >= self.agreement * len(opened.golden), (
                f"{suffix}: top 10 equal to the embedded engine's for {same} of {len(opened.golden)} questions"
            )
            compared += 1
        assert compared == len(self.same_ranking)
