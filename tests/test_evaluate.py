"""`vx_eval.evaluate` from Python: a plain function, a LangChain retriever and a LlamaIndex retriever over the
quickstart collection, ranked beside the embedded engine's own setups in one call, with the real packages."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import numpy as np
import pytest

import vx_eval
from vx_eval.core.errors import ConfigError

from .test_cli import call

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = REPO / "configs" / "quickstart"


def _docs() -> list[dict]:
    return [json.loads(line) for line in (QUICKSTART / "docs.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def minilm_chunks(tmp_path_factory):
    """The quickstart's chunks and their MiniLM vectors, exactly as every engine gets them (`prepare`)."""
    cache = tmp_path_factory.mktemp("evaluate")
    chunks, vectors = vx_eval.embed_corpus(QUICKSTART / "docs.jsonl", ["minilm"], embeddings=cache / "emb.db")
    return cache, chunks, vectors["minilm"]


def _langchain_retriever(chunks, vectors, depth):
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    minilm = vx_eval.load_model("minilm")
    known = {c.body: v for c, v in zip(chunks, vectors, strict=True)}

    class MiniLM(Embeddings):  # the documents' vectors as the index holds them; questions encoded as it does
        def embed_documents(self, texts):
            return [known[t].tolist() for t in texts]

        def embed_query(self, text):
            return minilm.encode_queries([text])[0].tolist()

    store = InMemoryVectorStore(MiniLM())
    store.add_documents([Document(page_content=c.body, metadata={"doc": c.doc_id}) for c in chunks])
    return store.as_retriever(search_kwargs={"k": depth})


def _llamaindex_retriever(chunks, vectors, depth):
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.schema import TextNode

    minilm = vx_eval.load_model("minilm")

    class MiniLM(BaseEmbedding):
        def _get_query_embedding(self, query):
            return minilm.encode_queries([query])[0].tolist()

        async def _aget_query_embedding(self, query):
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text):
            return minilm.encode_documents([text])[0].tolist()

    nodes = [
        TextNode(text=c.body, id_=c.chunk_id, embedding=v.tolist(), metadata={"doc": c.doc_id})
        for c, v in zip(chunks, vectors, strict=True)
    ]
    return VectorStoreIndex(nodes, embed_model=MiniLM()).as_retriever(similarity_top_k=depth)


def test_a_function_langchain_and_llamaindex_rank_beside_the_embedded_engine(minilm_chunks):
    cache, chunks, vectors = minilm_chunks
    docs = _docs()
    words = [set((d["title"] + " " + d["text"]).lower().split()) for d in docs]

    def overlap(question: str, k: int) -> list[tuple[str, float]]:  # a plain function: shared words
        asked = set(question.lower().split())
        scores = [len(asked & w) for w in words]
        return [(docs[i]["id"], float(scores[i])) for i in np.argsort(scores, kind="stable")[::-1][:k]]

    report = vx_eval.evaluate(
        {
            "Local": {"engine": "sqlite", "options": {"path": str(cache / "q.db"), "dense_models": ["minilm"]}},
            "Word overlap": overlap,
            "LangChain": vx_eval.Retriever(_langchain_retriever(chunks, vectors, 20), id_field="doc"),
            "LlamaIndex": vx_eval.Retriever(_llamaindex_retriever(chunks, vectors, 20), id_field="doc"),
        },
        QUICKSTART / "golden.jsonl",
        corpus=QUICKSTART / "docs.jsonl",
        metrics=["found@1", "found@10", "mrr", "ndcg@10", "recall@10"],
        depth=20,
        models={"embeddings": str(cache / "emb.db"), "scores": str(cache / "scores.db")},
    )
    keys = {s.key for s in report.setups}
    assert keys == {
        "local.keyword",
        "local.dense.minilm",
        "word-overlap.retriever",
        "langchain.retriever",
        "llamaindex.retriever",
    }
    assert report.status == "completed" and all(s.pickable for s in report.setups)
    assert sorted(s.rank for s in report.setups) == [1, 2, 3, 4, 5]
    assert report.picks.finds_the_most in keys and report.picks.best_for_time in keys
    built_in, langchain = report.setup("local.dense.minilm"), report.setup("langchain.retriever")
    for measure, values in built_in.per_question.metrics.items():  # the same embeddings: the same numbers
        assert langchain.per_question.metrics[measure] == pytest.approx(values, abs=1e-12), measure
    assert langchain.per_question.positions == built_in.per_question.positions
    llama = report.setup("llamaindex.retriever")
    assert llama.summary["ndcg@10"] == pytest.approx(built_in.summary["ndcg@10"], abs=0.01)
    assert report.targets["LangChain"].details["adapter"] == "langchain"
    assert report.setup("word-overlap.retriever").times_ms.median is not None

    frame = report.to_pandas()
    assert list(frame.index) == [s.key for s in report.setups]
    assert frame.loc["langchain.retriever", "ndcg@10"] == pytest.approx(langchain.summary["ndcg@10"])
    lo, hi = frame.loc["local.dense.minilm", ["ndcg@10_lo", "ndcg@10_hi"]]
    assert lo <= built_in.summary["ndcg@10"] <= hi
    assert frame.loc[report.picks.finds_the_most, "picks"].startswith("finds_the_most")
    long = report.per_question()
    assert len(long) == len(report.setups) * len(report.question_ids) * len(report.settings.metrics)
    one = long[(long.setup == "langchain.retriever") & (long.measure == "mrr")]
    assert one.value.tolist() == langchain.per_question.metrics["mrr"]
    html = report._repr_html_()
    assert html.startswith("<iframe srcdoc=") and "finds the most" in html.lower()
    assert "langchain.retriever" in report.table(width=200, wide=True)


def test_async_functions_are_awaited_and_a_failing_one_fails_per_question(project):
    seen: list[str] = []

    async def slow(question: str, k: int):
        await asyncio.sleep(0.001)
        seen.append(question)
        return ["deferment", "wire"]

    def broken(question: str) -> list[str]:
        if "wire" in question:
            raise RuntimeError("the service said no")
        return ["wire"]

    questions = [
        vx_eval.Question("Can a customer postpone a loan payment?", ("deferment",), "q1"),
        vx_eval.Question("What does a wire abroad cost?", ("wire",), "q2"),
    ]
    report = vx_eval.evaluate({"async": slow, "broken": broken}, questions, metrics=["found@1", "mrr"])
    assert len(seen) == 3  # a warm-up, then each question once
    done = report.setup("async.retriever")
    assert done.per_question.positions == [1, 2] and done.summary["mrr"] == pytest.approx(0.75)
    failed = report.setup("broken.retriever")
    assert failed.per_question.status == ["evaluated", "failed"]
    assert "the service said no" in failed.per_question.errors[1]
    assert not failed.pickable and report.picks.finds_the_most == "async.retriever"


def test_qrels_with_queries_and_bad_arguments(project):
    qrels = {"q1": {"deferment": 2, "wire": 0}, "q2": {"wire": 1}}
    queries = {"q1": "postpone a loan payment", "q2": "wire abroad"}
    report = vx_eval.evaluate({"fixed": lambda text, k: ["deferment", "wire"]}, qrels, queries=queries)
    assert report.question_ids == ["q1", "q2"]
    assert report.setup("fixed.retriever").per_question.positions == [1, 2]
    with pytest.raises(ConfigError, match="queries"):
        vx_eval.evaluate({"fixed": lambda text, k: []}, qrels)
    with pytest.raises(ConfigError, match="no adapter knows"):
        vx_eval.evaluate({"nothing": 42}, qrels, queries=queries)
    with pytest.raises(ConfigError, match="did you mean 'depth'"):
        vx_eval.evaluate({"fixed": lambda text, k: []}, qrels, queries=queries, detph=5)
    with pytest.raises(ConfigError, match="metrics"):
        vx_eval.evaluate({"fixed": lambda text, k: []}, qrels, queries=queries, metrics=["ndcg@ten"])


def test_a_qrels_mapping_keeps_every_grade_as_the_cli_and_trec_eval_read_it(project, tmp_path, capsys):
    qrels = {"q1": {"d1": 0, "d2": 1}, "q2": {"d1": 0}, "q3": {"d1": 2, "d3": -1}}
    queries = {"q1": "first", "q2": "second", "q3": "third"}
    measures = ["bpref", "map_condensed", "judged@1", "map"]
    report = vx_eval.evaluate({"fixed": lambda text, k: ["d1", "d2", "d3"]}, qrels, queries=queries, metrics=measures)
    assert report.question_ids == ["q1", "q2", "q3"]  # q2, graded only 0, is judged: it scores 0, as trec_eval
    q, r = tmp_path / "qrels", tmp_path / "run"
    q.write_text("".join(f"{qid} 0 {d} {g}\n" for qid, docs in qrels.items() for d, g in docs.items()))
    r.write_text("".join(f"{qid} Q0 {d} {i} {3 - i} r\n" for qid in qrels for i, d in enumerate(["d1", "d2", "d3"])))
    code, out, _ = call(capsys, "eval", "--json", "-m", "bpref", "-m", "map_condensed", "-m", "judged@1", "-m", "map",
                        str(q), str(r))  # fmt: skip
    assert code == 0
    summary = report.setup("fixed.retriever").summary
    assert {m: summary[m] for m in measures} == pytest.approx(json.loads(out))
    assert summary["bpref"] == pytest.approx(1 / 3)  # q1: d2 below the judged non-relevant d1: 0; q3: 1
    assert summary["judged@1"] == 1.0


def test_a_report_is_saved_and_loaded_back(project, tmp_path):
    questions = [vx_eval.Question("Can a customer postpone a loan payment?", ("deferment",), "q1")]
    report = vx_eval.evaluate({"fixed": lambda text, k: ["deferment"]}, questions, save_to=tmp_path / "runs")
    again = vx_eval.load_report(report.id, runs=tmp_path / "runs")
    assert again == report
    where = report.save(tmp_path / "one.json")
    assert vx_eval.load_report(where) == report
    assert math.isclose(again.setup("fixed.retriever").summary["found@10"], 1.0)


def test_four_retrievers_made_to_tie_are_picked_by_the_seeds_rule_and_the_table_agrees():
    """The issue's four retrievers: 96%, 96%, 92% and 88% of 25 questions found in the top 10, found@1 the
    other way round. The most found wins (the 96% with more right answers first), the tie is said and decided
    among the two leaders only, and the balance and time picks are the fastest within 4 and 8 points."""
    import time

    import vx_eval

    golden = [{"id": f"q{i}", "question": f"question {i}", "expected": [f"d{i}"]} for i in range(25)]

    def retriever(found10: int, found1: int, ms: float):
        def search(text: str, k: int) -> list[str]:
            i = int(text.split()[1])
            time.sleep(ms / 1000)
            others = [f"x{j}" for j in range(k)]
            if i < found1:
                return [f"d{i}", *others][:k]
            return [*others[:5], f"d{i}", *others[5:]][:k] if i < found10 else others

        return search

    made = {
        "a": retriever(24, 15, 12),
        "b": retriever(24, 16, 24),
        "c": retriever(23, 20, 6),
        "d": retriever(22, 21, 0),
    }
    report = vx_eval.evaluate(made, golden)
    found = {s.key.split(".")[0]: (s.summary["found@10"], s.summary["found@1"]) for s in report.setups}
    assert found == {"a": (0.96, 0.6), "b": (0.96, 0.64), "c": (0.92, 0.8), "d": (0.88, 0.84)}
    assert [s.key.split(".")[0] for s in report.setups] == ["b", "a", "c", "d"]  # the table's order is the rule's
    assert report.picks.finds_the_most == "b.retriever"
    assert report.picking is not None and report.picking.measure == "found@10"
    assert report.picking.note == (
        "found@10 is 96% for 2 of 4 setups: among those 2 only, the one with more right answers first (found@1) "
        "leads, then the faster"
    )
    assert "more right answers first (found@1 0.640) than a.retriever" in report.picking.reasons["finds_the_most"].text
    assert report.picks.best_for_balance == "c.retriever"  # the fastest within 4 points (92% counts at 96%)
    assert report.picks.best_for_time == "d.retriever"  # within 8 points, and surely the fastest


def test_the_report_reads_as_a_read_only_mapping_and_missing_documents_are_warned(project):
    """As the seed's code reads it: ``"missing" in report``, ``keys()``, iteration, ``len``, ``dict(report)``;
    a value changed by the reader never changes the report. An expected document the engine does not hold
    is a `MissingDocumentsWarning`, as the command line warns."""
    rows = [json.loads(line) for line in (project / "golden.jsonl").read_text().splitlines()]
    rows[0]["expected"] = ["deferement"]
    (project / "golden.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    engine = {"engine": "sqlite", "options": {"path": str(project / ".vx" / "m.db"), "dense_models": []}}
    with pytest.warns(vx_eval.MissingDocumentsWarning, match="deferement") as warned:
        report = vx_eval.evaluate({"Local": engine}, project / "golden.jsonl", corpus=project / "docs.jsonl")
    assert len(warned) == 1 and "deferment" in str(warned[0].message)  # the id most likely meant
    assert "missing" in report and "picks" in report and "nothing" not in report
    assert list(report) == list(report.keys()) and len(report) == len(list(report)) > 10
    assert report["missing"]["Local"]["documents"] == ["deferement"]
    plain = dict(report)
    assert plain["picks"] == report["picks"] and plain["setups"][0]["summary"]["found"]["10"] >= 0
    assert dict(report.items()).keys() == plain.keys() and len(list(report.values())) == len(report)
    assert report.get("nothing", "default") == "default"
    report["picks"]["finds_the_most"] = "changed by the reader"
    assert report["picks"]["finds_the_most"] != "changed by the reader"
    with pytest.raises(KeyError):
        report["nothing"]
    with pytest.raises(TypeError):
        report["picks"] = {}  # type: ignore[index]
