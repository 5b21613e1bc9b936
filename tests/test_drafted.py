"""A zero-configuration run whose pick is not sure drafts more questions and runs again (`vx_eval.zeroconfig.drafted`),
up to ``--most-questions``; and the judge's noise is stated from vx-eval's own check where the run's store
has none."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from vx_eval.core.report.schema import Picking
from vx_eval.core.report.views import JudgeNoise
from vx_eval.zeroconfig.drafted import more_questions

from .test_autoconfig import QUICKSTART_DOCS
from .test_cli import call


def _report(sure: str | None = "not sure", needed: int | None = None, judge_sure: bool | None = None):
    noise = None
    if judge_sure is not None:
        noise = JudgeNoise(measure="dcg@10", draws=200, leads={"a": 0.9, "b": 0.1}, sure=judge_sure)
    picking = Picking(measure="dcg@10", sure=sure, questions_needed=needed, judge_noise=noise)
    return SimpleNamespace(picking=picking, picks=SimpleNamespace(finds_the_most="a"))


def test_more_questions_are_drafted_only_where_they_would_settle_the_pick_and_never_past_the_most():
    assert more_questions(_report(sure=None), 24, 96) is None  # sure: nothing more
    assert more_questions(_report(sure=None, judge_sure=True), 24, 96) is None
    # the paired test's estimate is followed, at least half as many again
    assert more_questions(_report(needed=60), 24, 96).count == 36
    assert more_questions(_report(needed=26), 24, 96).count == 12
    assert more_questions(_report(needed=96), 24, 96).count == 72
    # past the most: drafting would not settle it, and the run says what would
    far = more_questions(_report(needed=150), 24, 96)
    assert far.count == 0 and "about 150 would tell" in far.said and "--most-questions 150" in far.said
    hopeless = more_questions(_report(needed=734054), 24, 96)
    assert hopeless.count == 0 and "differ too little" in hopeless.said and "--most-questions 7" not in hopeless.said
    # no estimate (the leaders differ too little): none; only the judge's noise in doubt: twice as many
    assert more_questions(_report(), 24, 96).count == 0
    only_judge = more_questions(_report(sure=None, judge_sure=False), 24, 96)
    assert only_judge.count == 24 and "the judge's measured noise" in only_judge.said
    # at the most, or a step too small to tell anything: no more, and why
    assert more_questions(_report(needed=60), 60, 60).count == 0
    small = more_questions(_report(needed=96), 94, 96)
    assert small.count == 0 and "would not tell" in small.said


@pytest.mark.slow
def test_a_drafted_run_that_is_not_sure_drafts_more_and_keeps_one_report_that_a_run_again_repeats(
    tmp_path, monkeypatch, capsys
):
    folder = tmp_path / "bank"
    folder.mkdir()
    docs = folder / "docs.jsonl"
    docs.write_text("\n".join(QUICKSTART_DOCS.read_text(encoding="utf-8").splitlines()[:40]) + "\n")
    monkeypatch.chdir(tmp_path)
    ask = ["run", "--docs", str(docs), "--writer", "keywords", "--questions", "10", "--most-questions", "16"]
    # whether these few questions settle the pick is the data's business (`more_questions` has its own test):
    # here the first round is not sure, so the loop itself is what runs
    import vx_eval.zeroconfig.drafted

    decided = iter(
        [vx_eval.zeroconfig.drafted.More(6, "not sure with 10 questions: drafting 6 more (at most 16 in all)")]
    )
    monkeypatch.setattr(vx_eval.zeroconfig.drafted, "more_questions", lambda report, have, most: next(decided, None))

    code, out, err = call(capsys, *ask, "--json", "--run-id", "first-look")
    assert code == 0, err
    said = " ".join(err.split())
    assert "not sure with 10 questions" in said and "drafting 6 more (at most 16 in all)" in said, said
    assert "drafted 6 more from 6 tries" in said, said  # from passages no question was drafted from
    report = json.loads(out)
    (golden,) = tmp_path.glob(".vx/auto/bank-*/golden.jsonl")
    rows = [json.loads(line) for line in golden.read_text().splitlines()]
    assert len(report["question_ids"]) == len(rows) > 10  # the last round ran every question drafted
    assert len({r["id"] for r in rows}) == len(rows)  # no id twice
    sources = [tuple(r["metadata"]["source"]) for r in rows]
    assert len(set(sources)) == len(sources)  # each from a passage of its own
    assert all(r["draft"] and not r.get("expected") for r in rows)  # drafts, graded by the judge alone
    saved = list(tmp_path.glob("runs/**/report.json"))
    assert len(saved) == 1 and saved[0].parent.name == "first-look"  # only the last round, under the id asked
    kept = json.loads(saved[0].read_text())
    assert kept["golden"]["sha256"] == report["golden"]["sha256"]
    (copy,) = tmp_path.glob("runs/golden_dataset/*.jsonl")
    assert copy.read_bytes() == golden.read_bytes()  # the golden file it ran, kept byte for byte

    # a run again drafts nothing more and gives the same numbers
    code, out, err = call(capsys, *ask, "--json")
    assert code == 0, err
    assert "drafted by an earlier run" in err and "drafting" not in " ".join(err.split()).replace("drafting no", "")
    again = {s["key"]: s["per_question"]["metrics"] for s in json.loads(out)["setups"]}
    assert again == {s["key"]: s["per_question"]["metrics"] for s in report["setups"]}


def test_the_default_judge_states_vx_evals_own_check_where_the_store_has_none(tmp_path, plugins):
    """The shipped check matches the default cross-encoder judge exactly (plugin, model, rubric, cut points):
    change any of them and it must be measured again (`python benchmarks/judge_check.py --ship`)."""
    from vx_eval.core.judging.check import measured
    from vx_eval.core.judging.grading import judge_info
    from vx_eval.core.stores import Stores
    from vx_eval.plugins.judges.cross_encoder import CrossEncoderJudge

    info = judge_info(CrossEncoderJudge(CrossEncoderJudge.Options(), models=None))  # as a run describes it
    stores = Stores(plugins)
    agreed = measured(stores, str(tmp_path), info)
    assert agreed is not None and agreed.shipped and "TREC DL 2019" in agreed.golden
    assert len(agreed.confusion) == 4 and sum(map(sum, agreed.confusion)) == agreed.pairs > 800
    other = info.model_copy(update={"cut_points": [0.0, 5.0, 8.0]})
    assert measured(stores, str(tmp_path), other) is None  # other cut points: not what was checked
    assert Path(__file__).parents[1].joinpath("pyproject.toml").read_text().count('"measured/*.json"') == 1


def test_more_drafts_drop_a_question_the_golden_file_already_holds_by_its_own_rule(tmp_path, monkeypatch):
    """A new draft worded as a held question, up to case and spacing as the golden file compares questions
    (casefold: "STRASSE" is "straße"), is dropped; the file is rewritten whole, the held rows first."""
    import vx_eval.zeroconfig.drafted
    from vx_eval.core.contracts.golden import GoldenRow
    from vx_eval.core.golden.files import dump_rows, lint
    from vx_eval.python.commands import WriteSummary
    from vx_eval.zeroconfig.autoconfig import AutoConfig, WriterChoice
    from vx_eval.zeroconfig.drafted import draft_more

    held = GoldenRow(id="q1", question="Where is the Straße?", draft=True, metadata={"source": ["d1"]})
    (tmp_path / "golden.jsonl").write_bytes(dump_rows([held]))
    made = AutoConfig(tmp_path / "config.yaml", "", None, 1)
    drafts = [
        GoldenRow(id="q2", question="where  is the STRASSE?", expected=["d2"], draft=True),
        GoldenRow(id="q3", question="Who paved it?", expected=["d3"], draft=True),
    ]
    asked: dict = {}

    def write(configs, n, **options):
        asked.update(options, n=n)
        return drafts, WriteSummary("local", "m", "c", 2, 2, 5, n, {}, 0, 0, {})

    monkeypatch.setattr(vx_eval.zeroconfig.drafted, "write_golden_rows", write)  # the name draft_more calls
    summary = draft_more(made, 2, WriterChoice("local", None, ""), None)
    assert summary.accepted == 1 and asked["avoid"] == {"d1"} and asked["seed"] == 1
    defects, rows = lint((tmp_path / "golden.jsonl").read_bytes())
    assert [r.id for _, r in rows] == ["q1", "q3"]
    new = rows[1][1]
    assert new.expected == [] and new.metadata["source"] == ["d3"]  # graded by the judge alone
    assert not [d for d in defects if "same question" in d.message]
    assert not list(tmp_path.glob(".*.partial"))
