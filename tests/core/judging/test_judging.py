"""Judges in a run: unlabelled pairs graded, human labels winning, grades cached, agreement measures."""

from __future__ import annotations

import json
import math

import pytest
from sklearn.metrics import cohen_kappa_score

from vx_eval.core.config.experiment import load_config
from vx_eval.core.contracts.golden import Question
from vx_eval.core.contracts.judge import Verdict
from vx_eval.core.errors import VxEvalError
from vx_eval.core.judging.check import agreement, same_order
from vx_eval.core.judging.grading import GradeCache, grade_pairs, with_judged_grades
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment

from ...conftest import GOLDEN, write_jsonl


class CountingJudge:
    name = "counting"

    def __init__(self, answers: dict[str, int | None]) -> None:
        self.answers, self.asked = answers, []

    def fingerprint(self) -> str:
        return "counting:1"

    def describe(self) -> dict:
        return {"judge": self.name}

    def grade(self, pairs):
        self.asked.extend(pairs)
        return [Verdict(self.answers.get(p, 0), str(self.answers.get(p))) for _, p in pairs]


def test_weighted_kappa_and_the_confusion_matrix_follow_their_definitions():
    human = [0, 1, 2, 3, 3, 2, 1, 0, 2, 2]
    judged = [0, 2, 2, 3, 2, 2, 0, 1, 3, 2]
    result = agreement(human, judged)
    # quadratic weights by hand: kappa = 1 - sum(w * observed) / sum(w * expected), w = (i - j)^2 / 9
    n = len(human)
    observed = [
        [sum(1 for h, j in zip(human, judged, strict=True) if (h, j) == (a, b)) for b in range(4)] for a in range(4)
    ]
    rows = [sum(r) for r in observed]
    cols = [sum(observed[a][b] for a in range(4)) for b in range(4)]
    w = [[(a - b) ** 2 / 9 for b in range(4)] for a in range(4)]
    num = sum(w[a][b] * observed[a][b] for a in range(4) for b in range(4))
    den = sum(w[a][b] * rows[a] * cols[b] / n for a in range(4) for b in range(4))
    assert math.isclose(result.kappa_quadratic, 1 - num / den)
    assert math.isclose(result.kappa_linear, cohen_kappa_score(human, judged, weights="linear"))
    assert result.confusion == observed and result.exact == 0.5
    assert agreement(human, human).kappa_quadratic == 1.0
    assert same_order([3, 2, 1], [30, 20, 10])[0] == 1.0
    assert same_order([3, 2, 1], [10, 20, 30])[0] == -1.0
    assert same_order([1.0], [2.0])[0] is None


def test_grades_are_asked_once_and_kept_and_unreadable_answers_are_not_grades(tmp_path):
    judge = CountingJudge({"a": 3, "b": 1, "c": None})
    cache = GradeCache(tmp_path / "grades.db")
    pairs = [("q", "a"), ("q", "b"), ("q", "c"), ("q", "a")]
    first = grade_pairs(judge, pairs, cache)
    assert first.asked == 3 and first.cached == 0 and first.unparsable == 1
    assert first.verdicts[("q", "a")].grade == 3
    judge.asked.clear()
    second = grade_pairs(judge, pairs, cache)
    assert judge.asked == [("q", "c")]  # only the unreadable answer is asked again
    assert second.cached == 2 and second.verdicts[("q", "b")].grade == 1
    cache.close()


def test_human_labels_win_over_the_judge():
    q = Question("q1", "text", ("doc-a",), {"doc-a": 3, "doc-z": 0})
    mixed = with_judged_grades(q, {"doc-a": 0, "doc-z": 3, "doc-b": 2})
    assert mixed.relevance() == {"doc-a": 3, "doc-z": 0, "doc-b": 2}


@pytest.fixture
def judged_project(project):
    """The tiny project with one unlabelled question (a reference, no ids) and the cross-encoder judge."""
    write_jsonl(
        project / "golden.jsonl",
        [*GOLDEN, {"id": "u1", "question": "How much is a wire transfer abroad?", "reference": "35 dollars"}],
    )
    return project.write_config(
        evaluation={"metrics": ["found@1", "found@10", "ndcg@10"], "depth": 20, "judge": "cross-encoder"},
        models={"threads": 1, "scores": str(project / "scores.db")},  # its grades.db beside: this test's own
    )


def test_a_run_with_a_judge_grades_unlabelled_pairs_and_reports_where_grades_came_from(judged_project, plugins):
    first = run_experiment(load_config(judged_project, plugins), plugins, RunOptions()).report.model_dump(mode="json")
    judge = first["judge"]
    assert judge["judge"] == "cross-encoder" and judge["cut_points"] == [-1.0, 5.7, 7.2] and judge["depth"] == 10
    assert judge["asked"] == judge["pairs"] > 0 and judge["unparsable"] == 0
    assert judge["grades_from"]["human"] > 0 and judge["grades_from"]["judge"] > 0
    assert "u1" in first["question_ids"]  # searched and scored: the judge grades its results
    assert first["golden"]["labelled"] == 5 and first["golden"]["unlabelled"] == 1
    (setup,) = first["setups"]
    graded = setup["graded"]
    for name in ("dcg", "mean_rel", "p_strict", "mrr_strict"):
        lo, hi = graded["ci"][name]
        assert lo <= graded[name] <= hi
    # q4's wire document is graded 2 by a person: the judge never overrides it
    q4 = first["question_ids"].index("q4")
    units = [u for u, _ in setup["per_question"]["results"][q4]]
    wire = units.index("wire")
    if wire < 10:
        assert setup["per_question"]["grades"][q4][wire] == 2
    dashboard = first["graded_questions"]
    assert dashboard["best"]["key"] == setup["key"]
    # six questions: the strongest three and the weakest three, never one question in both lists
    strongest, weakest = ({q["id"] for q in dashboard[name]} for name in ("strongest", "weakest"))
    assert len(strongest) == 3 and len(weakest) == 3 and not strongest & weakest
    second = run_experiment(load_config(judged_project, plugins), plugins, RunOptions()).report.model_dump(mode="json")
    assert second["judge"]["asked"] == 0 and second["judge"]["from_cache"] == judge["pairs"]
    assert second["setups"][0]["graded"] == graded


def test_the_command_line_shows_the_graded_dashboard_and_judge_check_measures(judged_project, capsys):
    from ...test_cli import call

    page = judged_project.parent / "page.html"
    code, out, err = call(capsys, "run", str(judged_project), "--html", str(page))
    assert code == 0, err
    html = page.read_text()
    assert 'id="judge-line"' in html and "from the cross-encoder judge" in html and 'id="graded-measures"' in html
    assert "Graded relevance (0–3), grades from" in out and "from the cross-encoder judge" in out
    assert (
        "best DCG@10" in out
        and "strongest (DCG@10) of " in out
        and "failed (first result graded 0 or ungraded) of " in out
    )
    # people graded 5 of the 6 questions and the judge their results too: its agreement there is measured here;
    # no check in this store yet: vx-eval's own check of the default judge on TREC DL 2019 is stated as elsewhere
    said = " ".join(out.split())
    assert "which agreed with people on this run's 5 person-graded questions at weighted kappa" in said
    assert "(measured here)" in said
    assert "measured elsewhere, not on this run: on TREC DL 2019" in said
    assert "vx-eval's own check measured weighted kappa 0.46" in said
    code, out, err = call(capsys, "judge", "check", str(judged_project), "--judge", "cross-encoder", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["agreement"]["pairs"] == len([p for p in result["pairs"] if p["id"] != "u1"])
    assert sum(map(sum, result["agreement"]["confusion"])) == result["agreement"]["pairs"]
    assert "kept what was measured at" in err
    # every later run graded by the same judge in this store states what the check measured
    code, out, err = call(capsys, "run", str(judged_project), "--json")
    assert code == 0, err
    said = json.loads(out)["judge"]["agreement"]
    assert said["kappa_quadratic"] == result["agreement"]["kappa_quadratic"] and said["pairs"] > 0
    assert not said["shipped"]  # the store's own check, no longer vx-eval's
    fooled = result["gullibility"]  # the check probed the judge with stuffed passages, and runs state it
    assert fooled["pairs"] > 0 and said["gullibility"] == fooled
    assert said["golden_sha256"] == result["golden"]["sha256"]
    code, out, err = call(capsys, "run", str(judged_project), "--html", str(page))
    kappa = f"{said['kappa_quadratic']:.2f}"
    said = " ".join(out.split())  # the store's check is from elsewhere (its golden file), this run's own measure first
    assert "measured elsewhere, not on this run: on golden.jsonl `vx-eval judge check` (" in said
    assert f"measured weighted kappa {kappa}" in said and "this run's 5 person-graded questions" in said
    assert f"weighted kappa {kappa}" in page.read_text()
    code, _, err = call(capsys, "judge", "check", str(judged_project), "--judge", "oracle")
    assert code == 2 and "no judge named 'oracle'" in err


def test_judge_options_are_checked_before_anything_runs(project, plugins):
    config = project.write_config(
        evaluation={"judge": "cross-encoder"}, judges={"cross-encoder": {"cut_points": [3, 2, 1]}}
    )
    with pytest.raises(VxEvalError, match="three rising logits"):
        run_experiment(load_config(config, plugins), plugins, RunOptions(save=False))


def _noise_case(confusion):
    """Two setups over four questions that differ only where the judge graded: setup a finds the passage the
    judge graded 2, setup b the two it graded 1 (neither finds the one people graded), so a leads on the
    judge's grades, and under a judge whose grades tell nothing of people's, b may as well."""
    from vx_eval.core.contracts.engine import Setup
    from vx_eval.core.judging.noise import judge_noise
    from vx_eval.core.report.views import MeasuredAgreement
    from vx_eval.core.run.search import SetupRun

    human = [Question(id=f"q{i}", question=f"question {i}", expected=(), grades={"h": 3}) for i in range(4)]
    merged = [with_judged_grades(q, {"x": 2, "y": 1, "z": 1}) for q in human]

    def run(key, ranked):
        setup = Setup(key=key, target="t", engine="e", method=key, label=key, run=lambda text, k: [])
        return SetupRun(setup, results=[[(u, 1.0 - n / 10) for n, u in enumerate(ranked)] for _ in human])

    runs = [run("a", ["x"]), run("b", ["y", "z"])]
    agreement = MeasuredAgreement(confusion=confusion, pairs=sum(map(sum, confusion)), kappa_quadratic=0.5)
    return judge_noise(runs, merged, human, ["a", "b"], "ndcg@10", agreement, depth=10, draws=100)


def test_how_sure_a_pick_is_under_the_judge_follows_its_measured_agreement_with_people():
    """A judge people agree with keeps the pick (it leads in every redraw); a judge whose grades say nothing of
    people's (every column alike) leaves the two setups apart only by chance: not sure, and said so."""
    from vx_eval.core.judging.noise import noise_words, people_given_judge

    faithful = [[1000, 0, 0, 0], [0, 1000, 0, 0], [0, 0, 1000, 0], [0, 0, 0, 1000]]
    column = people_given_judge(faithful)
    assert column.shape == (4, 4) and column[2, 2] > 0.99 and abs(column[:, 1].sum() - 1) < 1e-9
    sure = _noise_case(faithful)
    assert sure is not None and sure.sure and sure.leads["a"] >= 0.95
    assert noise_words(sure, "a").startswith("the pick holds: with its grades redrawn")
    blind = _noise_case([[10, 10, 10, 10]] * 4)
    assert blind is not None and not blind.sure and 0 < blind.leads["a"] < 0.95 and blind.leads["b"] > 0
    said = noise_words(blind, "a")
    assert said.startswith("not sure: with its grades redrawn") and "cannot be told apart" in said and "b in" in said
    assert _noise_case([]) is None  # no confusion matrix measured: nothing to redraw from


def test_after_a_judge_check_a_judged_run_says_how_sure_its_pick_is_under_the_judge(project, capsys):
    """The check keeps its confusion matrix; a later run graded by the same judge redraws the judge's grades
    from it and says, on the terminal, in the report and on the page, how often the leaders lead."""
    from ...test_cli import call

    write_jsonl(
        project / "golden.jsonl",
        [*GOLDEN, {"id": "u1", "question": "How much is a wire abroad?", "reference": "35 dollars"}],
    )
    config = project.write_config(
        # BGE, not MiniLM: the cross-encoder judge is of MiniLM's family, and would make MiniLM's setups circular
        targets=[
            {"name": "Local", "engine": "sqlite", "options": {"path": ".vx/two.db", "dense_models": ["bge-small"]}}
        ],
        evaluation={"metrics": ["found@10", "ndcg@10"], "depth": 20, "judge": "cross-encoder"},
        models={"threads": 1, "scores": str(project / "scores.db"), "embeddings": str(project / "embeddings.db")},
    )
    code, out, err = call(capsys, "judge", "check", str(config), "--judge", "cross-encoder", "--json")
    assert code == 0, err
    confusion = json.loads(out)["agreement"]["confusion"]
    page = project / "page.html"
    code, out, err = call(capsys, "run", str(config), "--json", "--html", str(page))
    assert code == 0, err
    report = json.loads(out)
    assert report["judge"]["agreement"]["confusion"] == confusion
    noise = report["picking"]["judge_noise"]
    assert noise["draws"] == 200 and abs(sum(noise["leads"].values()) - 1) < 0.01
    assert next(iter(noise["leads"])) == report["picks"]["finds_the_most"]  # the pick first
    assert noise["sure"] == (noise["leads"][report["picks"]["finds_the_most"]] >= 0.95)
    assert report["picking"]["judge_sure"] in page.read_text().replace("&#39;", "'")
    code, out, err = call(capsys, "run", str(config))
    said = " ".join(out.split())
    assert "under the judge: the pick holds: with" in said or "under the judge: not sure: with" in said


def test_a_check_fits_cut_points_on_half_its_questions_and_measures_them_on_the_other_half():
    """For a judge that cuts a score: halfway between the medians of neighbouring human grades, fitted on every
    other question and measured on the rest against the judge's own; nothing for a judge that answers words,
    or where a grade has no pair."""
    from vx_eval.core.judging.check import PairCheck, calibrate, midpoints

    assert midpoints([0, 1, 2, 3, 0, 1, 2, 3], [0.0, 2.0, 4.0, 6.0, 0.0, 2.0, 4.0, 6.0]) == [1.0, 3.0, 5.0]
    assert midpoints([0, 0, 1, 2], [0.0, 1.0, 2.0, 3.0]) is None  # no grade 3
    pairs = [
        PairCheck(id=f"q{q}", unit=f"d{g}", human=g, judge=0, raw=f"{2.0 * g + 0.1 * q:.4f}")
        for q in range(6)
        for g in range(4)
    ]
    fitted = calibrate(pairs, [-1.0, 5.7, 7.2])  # the judge's own points put every grade 1 and 2 at 0 or 1
    assert fitted is not None and fitted.fitted_on == 3 and fitted.held_out == 12
    assert fitted.cut_points == sorted(fitted.cut_points) and len(fitted.cut_points) == 3
    assert fitted.kappa_fitted == 1.0 and fitted.kappa_current < 1.0
    words = [p.model_copy(update={"raw": "2"}) for p in pairs[:4]] + [
        p.model_copy(update={"raw": "fine"}) for p in pairs[4:]
    ]
    assert calibrate(words, [-1.0, 5.7, 7.2]) is None
    assert calibrate(pairs, None) is None


def test_gullibility_is_the_share_of_unrelated_passages_a_stuffing_raises_to_2():
    """A judge that grades by the question's words is fooled by every stuffed passage; one that reads what
    the passage is about is fooled by none; a passage it already graded 2 is not counted."""
    from vx_eval.core.contracts.judge import Verdict
    from vx_eval.core.judging.gullible import STUFFING, probe, stuffed

    passages = {"wire": "Send money abroad by wire for 35 dollars.", "card": "Freeze a lost card in the app."}
    questions = [("what does a wire abroad cost", ["wire"]), ("how do I freeze a lost card", ["card"])]

    class Words:  # grades by the question's words found in the passage
        def grade(self, pairs):
            return [Verdict(3 if set(q.lower().split()) <= set(p.lower().split()) else 0, "") for q, p in pairs]

    class Topic:  # grades by what the passage is about, whatever is pasted after it
        def grade(self, pairs):
            return [Verdict(3 if p.split("\n")[0] == passages["wire"] and "wire" in q else 0, "") for q, p in pairs]

    fooled = probe(Words(), questions, passages)
    assert fooled is not None and (fooled.pairs, fooled.raised, fooled.share) == (2, 2, 1.0)
    assert fooled.example in {q for q, _ in questions}
    steady = probe(Topic(), questions, passages)
    assert steady is not None and (steady.pairs, steady.raised, steady.share, steady.example) == (2, 0, 0.0, None)
    assert stuffed("q", "p") == f"p\nq {STUFFING}"
    assert probe(Words(), [("q", ["wire", "card"])], passages) is None  # no passage that does not answer it


def test_the_graded_views_mean_relevance_is_databricks_mean_over_every_result_returned():
    """Mean relevance is the mean grade over every (question, result) pair: a question that got 4 results
    back is averaged over 4, never divided by 10 as mean_rel@10 is (ir_measures' definition, kept for it)."""
    from vx_eval.core.measures import metrics
    from vx_eval.core.measures.batch import Batch, Judged
    from vx_eval.core.report.schema import Settings
    from vx_eval.core.run.scoring import graded_summary

    grades = {"q1": {"a": 3, "b": 2, "c": 0, "d": 1}, "q2": {f"u{i}": i % 4 for i in range(10)}}
    ranked = {"q1": ("a", "b", "c", "d"), "q2": tuple(f"u{i}" for i in range(10))}
    batch = Batch.of([Judged(ranked[q], ranked[q], grades[q]) for q in grades])
    graded = graded_summary(batch, [0, 1], Settings())
    pairs = [3, 2, 0, 1] + [i % 4 for i in range(10)]
    assert graded.mean_rel == pytest.approx(sum(pairs) / len(pairs))  # 20 / 14
    assert metrics.parse("mean_rel@10").compute(batch)[0] == pytest.approx(6 / 10)  # ir_measures' own, unchanged
    lo, hi = graded.ci["mean_rel"]
    assert lo <= graded.mean_rel <= hi


def test_the_graded_view_per_type_is_the_same_view_over_each_types_questions_only():
    """DCG@10, mean relevance and the mean grade by place per type of question equal the graded view of that
    type's questions alone; a golden row's `type` is the question's kind (over a drafted `metadata.kind`)."""
    from vx_eval.core.golden.files import parse_golden
    from vx_eval.core.measures.batch import Batch, Judged
    from vx_eval.core.report.schema import Settings
    from vx_eval.core.run.scoring import graded_summary

    ranked = [("a", "b", "c"), ("u", "v"), ("x", "y", "z", "w")]
    grades = [{"a": 3, "c": 1}, {"v": 2}, {"x": 1, "y": 3, "w": 2}]
    kinds = ["keyword", "natural", "keyword"]
    batch = Batch.of([Judged(r, r, g) for r, g in zip(ranked, grades, strict=True)])
    whole = graded_summary(batch, [0, 1, 2], Settings(), kinds)
    assert set(whole.by_kind) == {"keyword", "natural"}
    keyword = graded_summary(Batch.of([Judged(ranked[i], ranked[i], grades[i]) for i in (0, 2)]), [0, 1], Settings())
    assert whole.by_kind["keyword"].questions == 2
    assert whole.by_kind["keyword"].dcg == pytest.approx(keyword.dcg)
    assert whole.by_kind["keyword"].mean_rel == pytest.approx((3 + 0 + 1 + 1 + 3 + 0 + 2) / 7)
    assert whole.by_kind["keyword"].mean_grade_by_place == keyword.mean_grade_by_place
    assert whole.by_kind["natural"].mean_grade_by_place[:2] == [0.0, 2.0]
    assert graded_summary(batch, [0, 1, 2], Settings()).by_kind == {}  # no types: no view per type

    raw = b'{"id": "a", "question": "q?", "expected": ["d"], "type": "keyword", "metadata": {"kind": "fact"}}\n'
    raw += b'{"id": "b", "question": "r?", "expected": ["d"], "metadata": {"kind": "fact"}}\n'
    assert [q.kind for q in parse_golden(raw, "g").questions] == ["keyword", "fact"]
