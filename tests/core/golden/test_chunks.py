"""A corpus already cut into chunks, scored by document (`evaluation.by_document`): labels naming every chunk
of the right report count that report once, a hit is any of its chunks at the place of its first, by a
separator in the ids or a field of each chunk's record, and the two give the same numbers; with no rule, a
golden file whose labels name many chunks of one document is said as such, with the rule to set."""

from __future__ import annotations

import json

import pytest

from vx_eval.core.config.experiment import load_config
from vx_eval.core.golden.chunks import chunked_labels, rescored_by_document
from vx_eval.core.golden.files import parse_golden
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment

TOPICS = {
    "acme-2023": "acme widgets revenue growth europe",
    "bolt-2023": "bolt turbines wind energy offshore",
    "cora-2023": "cora coffee roasting exports brazil",
}


def _write(project, *, with_field: bool) -> None:
    docs, golden = [], []
    for report, words in TOPICS.items():
        for c in range(14):
            chunk = {"id": f"{report}::c{c}", "text": f"{words} part {c} " + " ".join(f"w{c}{i}" for i in range(8))}
            if with_field:
                chunk = {"id": f"x{len(docs):03d}", "text": chunk["text"], "metadata": {"report": report}}
            docs.append(chunk)
    by_report = {r: [d["id"] for d in docs if (d.get("metadata", {}).get("report") or d["id"].split("::")[0]) == r]
                 for r in TOPICS}  # fmt: skip
    for i, (report, words) in enumerate(TOPICS.items()):
        golden.append(
            {"id": f"q{i}", "question": f"{words.split()[1]} {words.split()[2]} part", "expected": by_report[report]}
        )
    (project / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (project / "golden.jsonl").write_text("".join(json.dumps(g) + "\n" for g in golden))


def _run(project, plugins, name: str, by_document=None):
    evaluation = {"metrics": ["found@1", "found@10", "recall@10", "ndcg@10", "p@5"], "depth": 20}
    if by_document:
        evaluation["by_document"] = by_document
    config = project.write_config(
        f"{name}.yaml",
        evaluation=evaluation,
        targets=[{"name": "Local", "engine": "sqlite", "options": {"path": f".vx/{name}.db", "dense_models": []}}],
    )
    notes: list[str] = []

    class Progress:
        def start(self, description, total):
            return lambda n: None

        def note(self, message):
            notes.append(message)

    report = run_experiment(load_config(config, plugins), plugins, RunOptions(save=False, progress=Progress())).report
    return report, notes


def test_labels_naming_every_chunk_of_a_report_count_the_report_once_by_separator_or_by_field(project, plugins):
    _write(project, with_field=False)
    chunked, notes = _run(project, plugins, "chunks")
    assert any("3 of 3 questions name several chunks of one document each" in n and "{separator: '::'}" in n
               for n in notes), notes  # fmt: skip
    (setup,) = chunked.setups
    assert setup.summary["recall@10"] <= 10 / 14  # fourteen chunks a question: at most ten of them in the top 10

    by_doc, notes = _run(project, plugins, "by-separator", {"separator": "::"})
    assert not any("several chunks" in n for n in notes)
    (setup,) = by_doc.setups
    assert by_doc.settings.by_document == {"separator": "::"}
    assert setup.summary["found@1"] == setup.summary["found@10"] == setup.summary["recall@10"] == 1.0
    assert setup.summary["ndcg@10"] == 1.0  # each report once, first: ideal
    assert setup.summary["p@5"] == pytest.approx(1 / 5)  # one relevant document in five places (trec_eval's P@5)
    units = [u for u, _ in setup.per_question.results[0]]
    assert units[0] == "acme-2023" and list(dict.fromkeys(units))[1:] == ["bolt-2023"]  # each hit named as its report

    _write(project, with_field=True)
    by_field, _ = _run(project, plugins, "by-field", {"field": "metadata.report"})
    (field_setup,) = by_field.setups
    assert field_setup.summary == setup.summary
    assert field_setup.per_question.metrics == setup.per_question.metrics


def test_the_hint_needs_shared_prefixes_and_a_rescore_reads_labels_as_the_run_did():
    raw = "".join(
        json.dumps({"id": f"q{i}", "question": f"question {i}?", "expected": [f"r{i}_a", f"r{i}_b", f"other{i}"]})
        + "\n"
        for i in range(4)
    ).encode()
    golden = parse_golden(raw, "g.jsonl")
    assert chunked_labels(golden) is None  # "other3" holds no "_": not every label is a chunk of something
    raw = "".join(
        json.dumps(
            {"id": f"q{i}", "question": f"question {i}?", "expected": [f"r{i}_a", f"r{i}_b"], "grades": {f"r{i}_b": 3}}
        )
        + "\n"
        for i in range(4)
    ).encode()
    golden = parse_golden(raw, "g.jsonl")
    assert "{separator: '_'}" in (chunked_labels(golden) or "")
    (first, *_) = rescored_by_document(golden.questions, {"separator": "_"})
    assert first.expected == ("r0",) and first.relevance() == {"r0": 3}  # the highest grade of its chunks
    assert rescored_by_document(golden.questions, None) == list(golden.questions)
    with pytest.raises(Exception, match="through the field metadata.report"):
        rescored_by_document(golden.questions, {"field": "metadata.report"})
