"""The run's plan: what it will embed and judge, measured here, said before the work starts; `run --dry-run`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.conftest import Project, call, write_jsonl
from vx_eval.core.config.experiment import load_config
from vx_eval.core.usecases.pipeline import RunOptions, plan_experiment, run_experiment
from vx_eval.core.usecases.plan import SAMPLE, Plan
from vx_eval.views.format import plan_lines


def _dense(project: Project, cache: Path, **options) -> Path:
    target = {"path": ".vx/tiny.db", "mode": "dense", "dense_models": ["bge-small"], "cache": str(cache), **options}
    return project.write_config(targets=[{"name": "Local", "engine": "sqlite", "options": target}])


def test_the_plan_counts_the_chunks_no_cache_holds_measures_the_model_and_keeps_its_sample(project, plugins):
    """Each chunk is to be embedded once; the speed is measured on a sample whose vectors the cache keeps,
    so the run then embeds only the rest; once the index is built, nothing is left to plan."""
    cache = project / "emb.db"
    experiment = load_config(_dense(project, cache), plugins)
    plan = plan_experiment(experiment, plugins)
    [work] = plan.work
    chunks = 5 + 3  # five one-chunk documents and a three-page report
    assert work.items == chunks and work.what.startswith(f"embed {chunks:,} chunks with BGE")
    assert work.seconds is not None and work.seconds > 0
    assert "chunks/s, measured here on" in work.basis
    with sqlite3.connect(cache) as db:
        [(held,)] = db.execute("SELECT count(*) FROM kept WHERE space = 'dense:bge-small'")
    assert held == min(SAMPLE, chunks)
    run_experiment(experiment, plugins, RunOptions(save=False))
    assert plan_experiment(experiment, plugins).work == ()  # the index is up to date: no embedding planned


def test_a_second_target_on_the_same_cache_adds_no_embedding_work(project, plugins):
    cache = project / "emb.db"
    one = {"mode": "dense", "dense_models": ["bge-small"], "cache": str(cache)}
    config = project.write_config(
        targets=[
            {"name": "A", "engine": "sqlite", "options": {"path": ".vx/a.db", **one}},
            {"name": "B", "engine": "sqlite", "options": {"path": ".vx/b.db", **one}},
        ]
    )
    plan = plan_experiment(load_config(config, plugins), plugins)
    assert [w.items for w in plan.work] == [8]


def test_a_dense_model_that_reads_the_start_of_most_chunks_is_warned_of(project, plugins):
    words = "the bank can help you with a loan today and".split()  # a token each
    long_docs = [{"id": f"d{i}", "text": " ".join(words[(i + j) % 10] for j in range(700))} for i in range(6)]
    write_jsonl(project / "docs.jsonl", long_docs)
    write_jsonl(project / "golden.jsonl", [{"id": "q", "question": "loan today", "expected": ["d1"]}])
    whole = plan_experiment(load_config(_dense(project, project / "emb.db", chunk_words=0), plugins), plugins)
    [warning] = whole.warnings
    assert "reads the first 512 tokens" in warning and "100% of the chunks" in warning and "chunk_words" in warning
    cut = plan_experiment(load_config(_dense(project, project / "emb.db", chunk_words=150), plugins), plugins)
    assert cut.warnings == ()


def test_a_served_model_is_counted_never_called(project, plugins):
    """Its requests, tokens and cost from the price table; no time estimate, and no request is sent (the
    endpoint's address answers nothing)."""
    config = project.write_config(
        targets=[
            {
                "name": "Local",
                "engine": "sqlite",
                "options": {"path": ".vx/tiny.db", "mode": "dense", "dense_models": ["small"]},
            }
        ],
        models={
            "embeddings": str(project / "emb.db"),
            "endpoints": {
                "small": {
                    "provider": "openai",
                    "model": "text-embedding-3-small",
                    "base_url": "http://127.0.0.1:9/v1",
                    "batch": 3,
                    "api_key": {"env": "VX_PLAN_TEST_KEY"},
                }
            },
        },
    )
    [work] = plan_experiment(load_config(config, plugins), plugins).work
    assert work.items == 8 and work.seconds is None
    assert "served: 3 requests" in work.basis and "price table of" in work.basis and "$0.00" in work.basis
    assert "no time estimate" in plan_lines(Plan((work,)))[0]


def test_the_judge_is_measured_per_setup(project, plugins):
    config = project.write_config(evaluation={"metrics": ["ndcg@10"], "judge": "cross-encoder", "judge_depth": 5})
    plan = plan_experiment(load_config(config, plugins), plugins)
    [judging] = plan.work
    questions = 5  # the row with no question yet is not searched
    assert judging.items == questions * 5 and "per setup" in judging.what + judging.basis
    assert judging.seconds is not None and "pairs/s, measured here" in judging.basis


def test_dry_run_says_the_plan_and_builds_searches_and_saves_nothing(project, capsys, monkeypatch):
    monkeypatch.chdir(project.root)
    config = _dense(project, project / "emb.db")
    code, out, err = call(capsys, "run", str(config), "--dry-run")
    assert code == 0, err
    assert "plan: embed 8 chunks with BGE: about" in out and "measured here" in out
    assert "dry run: nothing was indexed, searched or saved" in out
    assert not (project / ".vx" / "tiny.db").exists() and not (project / "runs").exists()


def test_a_run_says_its_plan_before_it_embeds(project, capsys, monkeypatch):
    monkeypatch.chdir(project.root)
    code, _, err = call(capsys, "run", str(_dense(project, project / "emb.db")), "--no-save")
    assert code == 0, err
    assert err.index("plan: embed 8 chunks with BGE") < err.index("Indexing Local")


def test_dry_run_with_documents_only_says_the_drafting_the_embedding_and_the_judging_and_does_none(
    project, capsys, monkeypatch
):
    monkeypatch.chdir(project.root)
    code, out, err = call(
        capsys, "run", "--docs", "docs.jsonl", "--writer", "keywords", "--questions", "6", "--dry-run"
    )
    assert code == 0, err
    said = " ".join(out.split())
    assert "the configuration it would use:" in said
    assert "plan: draft 6 questions with the keywords writer" in said
    assert "plan: embed 8 chunks with MiniLM: about" in said and "plan: embed 8 chunks with BGE: about" in said
    assert "plan: grade up to 60 (question, passage) pairs per setup with the cross-encoder judge" in said
    assert "dry run: nothing was indexed, searched or saved" in said
    [config] = (project / ".vx" / "auto").glob("*/config.yaml")
    kept = {p.name.split(".")[0] for p in config.parent.iterdir()}
    assert kept <= {"config", "embeddings", "scores"}  # no golden file, no index: the sample's vectors only
    assert not (project / "runs").exists()


def test_a_run_with_documents_only_says_its_plan_before_it_drafts(project, capsys, monkeypatch):
    monkeypatch.chdir(project.root)
    _, _, err = call(capsys, "run", "--docs", "docs.jsonl", "--writer", "keywords", "--questions", "3", "--no-save")
    said = " ".join(err.split())
    assert "plan: draft 3 questions with the keywords writer" in said, said
    assert said.index("plan: draft 3 questions") < said.index("Writing (keywords)")


def test_golden_write_says_its_drafting_first(project, capsys, monkeypatch):
    monkeypatch.chdir(project.root)
    config = _dense(project, project / "emb.db")
    code, _, err = call(
        capsys, "golden", "write", str(config), "--out", "drafts.jsonl", "-n", "2", "--writer", "keywords"
    )
    said = " ".join(err.split())
    assert code == 0, err
    assert said.index("plan: draft 2 questions with the keywords writer") < said.index("Writing (keywords)")
    assert "plan: embed" not in said  # the corpus file is read: nothing is indexed to draft from it
