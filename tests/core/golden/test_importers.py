"""Importers: Bedrock evaluation conversations (unscored until labelled) and TREC topics + qrels."""

from __future__ import annotations

import json

import pytest

from vx_eval.core.errors import GoldenError
from vx_eval.core.golden.files import parse_golden
from vx_eval.core.golden.importers import bedrock_golden_bytes
from vx_eval.core.golden.sources import read_topics, trec_golden_bytes

BEDROCK = "\n".join(
    json.dumps(c)
    for c in [
        {
            "conversationTurns": [
                {
                    "prompt": {"content": [{"text": "Can a customer postpone a loan payment after a wildfire?"}]},
                    "referenceResponses": [{"content": [{"text": "Yes, for up to 90 days."}]}],
                }
            ]
        },
        {
            "conversationTurns": [
                {
                    "prompt": {"content": [{"text": "What does a wire abroad cost?"}]},
                    "referenceResponses": [{"content": [{"text": "35 dollars."}]}],
                },
                {
                    "prompt": {"content": [{"text": "And in euros?"}]},
                    "referenceResponses": [{"content": [{"text": "About 32 euros."}]}],
                },
            ]
        },
    ]
).encode()

CLASSIC = """<top>
<num> Number: 401
<title> foreign minorities, Germany
<desc> Description:
What language and cultural differences impede the integration of foreign minorities in Germany?
<narr> Narrative:
A relevant document will focus on the causes of the lack of integration.
</top>
<top>
<num> Number: 402
<title> behavioral genetics
<desc> Description:
What is happening in the field of behavioral genetics?
</top>
"""


def test_bedrock_conversations_become_questions_with_references_that_are_counted_not_scored():
    data, count = bedrock_golden_bytes(BEDROCK, "bedrock.jsonl")
    assert count == 3
    rows = [json.loads(line) for line in data.splitlines()]
    assert [r["id"] for r in rows] == ["bedrock-1", "bedrock-2-1", "bedrock-2-2"]
    assert rows[0] == {
        "id": "bedrock-1",
        "question": "Can a customer postpone a loan payment after a wildfire?",
        "expected": [],
        "reference": "Yes, for up to 90 days.",
    }
    assert rows[2]["metadata"] == {"conversation": 2, "turn": 2}
    golden = parse_golden(data, "bedrock.jsonl")
    assert golden.labelled == 0 and golden.unlabelled == 3


def test_a_bedrock_line_of_another_shape_is_named():
    with pytest.raises(
        GoldenError, match=r"bedrock\.jsonl:2: not a Bedrock evaluation conversation \('conversationTurns'\)"
    ):
        bedrock_golden_bytes(BEDROCK.splitlines()[0] + b'\n{"turns": []}\n', "bedrock.jsonl")
    with pytest.raises(GoldenError, match="bedrock.jsonl:1:2: invalid JSON"):
        bedrock_golden_bytes(b"{oops\n", "bedrock.jsonl")


def test_a_labelled_row_beside_unlabelled_ones_is_the_only_one_scored(project, plugins):
    from vx_eval.core.config.experiment import load_config
    from vx_eval.core.usecases.pipeline import RunOptions, run_experiment

    data, _ = bedrock_golden_bytes(BEDROCK, "bedrock.jsonl")
    labelled = b'{"id": "w", "question": "How much is a wire transfer?", "expected": ["wire"]}\n'
    (project.root / "golden.jsonl").write_bytes(data + labelled)
    report = run_experiment(
        load_config(project.write_config(), plugins), plugins, RunOptions(save=False)
    ).report.model_dump(mode="json")
    assert report["golden"]["labelled"] == 1 and report["golden"]["unlabelled"] == 3
    assert report["question_ids"] == ["w"]


def test_classic_trec_topics_and_qrels():
    qrels = "401 0 FBIS3-1 1\n401 0 FBIS3-2 0\n402 0 LA-9 2\n403 0 X 1\n"
    data, left_out = trec_golden_bytes(CLASSIC, qrels, "topics.401-402", "qrels.txt")
    rows = [json.loads(line) for line in data.splitlines()]
    assert len(rows) == 2
    # the import says what it left out and why: judgements of a topic that is not in the topics file
    assert [f.render() for f in left_out] == [
        "left out 1 query of qrels.txt's judgements: their ids are not in topics.401-402: '403'"
    ]
    assert rows[0] == {
        "id": "401",
        "question": "foreign minorities, Germany",
        "expected": ["FBIS3-1"],
        "grades": {"FBIS3-2": 0},
    }
    assert rows[1]["grades"] == {"LA-9": 2}
    desc = read_topics(CLASSIC, "topics", "desc")
    assert desc["402"] == "What is happening in the field of behavioral genetics?"
    assert read_topics("1\tlunar craters\n2\tmars rovers\n", "t.tsv") == {"1": "lunar craters", "2": "mars rovers"}


def test_the_real_vaswani_topics_and_qrels_import(request):
    root = request.config.rootpath.parent / "shared" / "datasets" / "vaswani"
    data, left_out = trec_golden_bytes(
        (root / "query-text.trec").read_text(), (root / "qrels").read_text(), "query-text.trec", "qrels"
    )
    golden = parse_golden(data, "vaswani")
    assert golden.labelled == 93 and left_out == ()
    first = golden.questions[0]
    assert (
        first.id == "1"
        and first.question == "MEASUREMENT OF DIELECTRIC CONSTANT OF LIQUIDS BY THE USE OF MICROWAVE TECHNIQUES"
    )
    assert "1239" in first.expected


def test_topics_without_judgements_are_a_clear_error():
    with pytest.raises(
        GoldenError, match="no topic of topics has a relevant judgement in qrels; are they the same track"
    ):
        trec_golden_bytes(CLASSIC, "999 0 d 1\n", "topics", "qrels")
