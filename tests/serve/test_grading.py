"""The grading page's routes and what they keep: people who may grade get the pairs the leaders disagree on
(pairs another rater graded first), each grade is kept beside the golden file (never in a run), two raters'
weighted kappa is given, and the experiment's next run scores with what they graded and says how many
grades it rests on. Who may grade: a signed-in rater or admin; not a guest, a reader or an API key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from vx_eval.core.config.experiment import load_config
from vx_eval.core.golden.human import HumanGrade, agreement, consensus, grades_location, read_grades
from vx_eval.core.plugins import load_plugins
from vx_eval.core.stores import Stores
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment
from vx_eval.serve.app import ServeSettings, create_app
from vx_eval.serve.auth import Users

from ..conftest import quickstart_copy


@pytest.fixture(scope="module")
def graded(tmp_path_factory, shared_cache):
    """A keyword-only quickstart run saved in a store, its config the server's experiment, and three people."""
    folder = tmp_path_factory.mktemp("grading")
    config = quickstart_copy(folder, shared_cache)
    plugins = load_plugins()
    experiment = load_config(config, plugins)
    first = run_experiment(experiment, plugins, RunOptions()).report
    users = Users(folder / "users.json")
    users.add_person("rita", "rita-password", "rater")
    users.add_person("ada", "ada-password", "admin")
    users.add_person("gus", "gus-password", "reader")
    key = users.add_key("ada")
    store = str(folder / "runs")
    return {"folder": folder, "config": config, "store": store, "users": folder / "users.json", "first": first,
            "key": key, "golden": experiment.config.golden_source.path}  # fmt: skip


def _client(graded) -> TestClient:
    settings = ServeSettings(store=graded["store"], users=graded["users"], experiments={"quickstart": graded["config"]})
    return TestClient(create_app(settings, Stores(load_plugins())))


def _sign_in(c: TestClient, name: str) -> None:
    answer = c.post("/login", data={"username": name, "password": f"{name}-password"}, follow_redirects=False)
    assert answer.status_code == 303


def test_only_people_who_may_grade_reach_the_pairs(graded):
    c = _client(graded)
    page = c.get("/grade/quickstart", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"].startswith("/login")  # a guest signs in first
    assert c.get("/api/v1/grading/quickstart/next").status_code in (401, 403)
    keyed = c.get("/api/v1/grading/quickstart/next", headers={"Authorization": f"Bearer {graded['key']}"})
    assert keyed.status_code == 403  # a key never reads question text, even an admin's
    _sign_in(c, "gus")
    assert c.get("/api/v1/grading/quickstart/next").status_code == 403  # a reader
    assert c.get("/grade/quickstart").status_code == 403


def test_two_raters_grade_their_kappa_is_given_and_the_next_run_rests_on_their_grades(graded):
    rita, ada = _client(graded), _client(graded)
    _sign_in(rita, "rita")
    _sign_in(ada, "ada")
    assert rita.get("/grade/quickstart").status_code == 200
    asked = rita.get("/api/v1/grading/quickstart/next", params={"limit": 6}).json()["pairs"]
    assert len(asked) == 6 and all(p["passage"] and p["question"] for p in asked)
    assert [p["settles"] for p in asked] == sorted((p["settles"] for p in asked), reverse=True)
    labelled = {json.loads(line)["id"]: json.loads(line) for line in Path(graded["golden"]).read_text().splitlines()}
    for p in asked:  # never a unit the golden file grades already
        row = labelled[p["question_id"]]
        assert p["unit"] not in row["expected"] and p["unit"] not in row.get("grades", {})
    grades = [3, 0, 2, 1, 0, 3]
    for p, g in zip(asked, grades, strict=True):
        kept = rita.post("/api/v1/grading/quickstart/grades", json={"question": p["question_id"], "unit": p["unit"],
                                                                    "grade": g})  # fmt: skip
        assert kept.status_code == 201
    assert kept.json()["yours"] == 6 and kept.json()["pairs"] == 6
    first_for_ada = ada.get("/api/v1/grading/quickstart/next", params={"limit": 6}).json()["pairs"]
    assert {(p["question_id"], p["unit"]) for p in first_for_ada} == {(p["question_id"], p["unit"]) for p in asked}
    for p, g in zip(first_for_ada, [3, 1, 2, 1, 0, 2], strict=True):
        state = ada.post("/api/v1/grading/quickstart/grades", json={"question": p["question_id"], "unit": p["unit"],
                                                                    "grade": g}).json()  # fmt: skip
    by_pair = {(p["question_id"], p["unit"]): g for p, g in zip(asked, grades, strict=True)}
    ada_by_pair = {(p["question_id"], p["unit"]): g for p, g in zip(first_for_ada, [3, 1, 2, 1, 0, 2], strict=True)}
    pairs = sorted(by_pair)
    from sklearn.metrics import cohen_kappa_score

    expected = cohen_kappa_score([by_pair[p] for p in pairs], [ada_by_pair[p] for p in pairs], weights="quadratic")
    assert state["agreement"]["pairs"] == 6 and state["agreement"]["kappa"] == pytest.approx(expected)
    assert state["raters"] == ["ada", "rita"]
    kept = read_grades(Stores(load_plugins()), grades_location(graded["golden"])).grades
    assert len(kept) == 12 and Path(grades_location(graded["golden"])).is_file()
    assert not list(Path(graded["store"]).rglob("*.grades.jsonl"))  # beside the golden file, never in a run

    plugins = load_plugins()
    again = run_experiment(load_config(graded["config"], plugins), plugins, RunOptions()).report
    agreed = consensus(kept)
    assert again.golden.human_grades == len(agreed) >= 6
    assert again.golden.sha256 == graded["first"].golden.sha256  # the golden file itself is unchanged
    assert again.golden.human_grades_sha256 is not None
    assert graded["first"].golden.human_grades == 0


def test_a_grade_for_a_pair_the_page_does_not_offer_is_refused_and_nothing_is_kept(graded):
    """A hostile rater's grades: an unknown question, a unit the run never showed, a unit the golden file
    grades, a grade out of range, markup as ids; each refused (422), the grades file unchanged."""
    c = _client(graded)
    _sign_in(c, "rita")
    offered = c.get("/api/v1/grading/quickstart/next", params={"limit": 1}).json()["pairs"][0]
    row = json.loads(Path(graded["golden"]).read_text().splitlines()[0])
    location = grades_location(graded["golden"])
    before = Path(location).read_bytes() if Path(location).exists() else b""
    for body in (
        {"question": "no-such-question", "unit": offered["unit"], "grade": 2},
        {"question": offered["question_id"], "unit": "never-shown-doc", "grade": 2},
        {"question": row["id"], "unit": row["expected"][0], "grade": 0},
        {"question": offered["question_id"], "unit": offered["unit"], "grade": 7},
        {"question": "<script>alert(1)</script>", "unit": "<img src=x onerror=alert(1)>", "grade": 1},
    ):
        answer = c.post("/api/v1/grading/quickstart/grades", json=body)
        assert answer.status_code == 422, (body, answer.text)
        assert "<script>" not in answer.text
    assert (Path(location).read_bytes() if Path(location).exists() else b"") == before


def test_kappa_is_none_where_it_is_undefined_and_a_pair_takes_the_median_of_its_raters():
    one = [HumanGrade(question="q", unit=f"d{i}", grade=2, rater="a") for i in range(3)]
    other = [HumanGrade(question="q", unit=f"d{i}", grade=g, rater="b") for i, g in enumerate([1, 2, 3])]
    assert agreement(one + other).kappa is None  # a gave one grade to all: kappa is undefined
    assert agreement(one + other).exact == pytest.approx(1 / 3)
    third = [HumanGrade(question="q", unit="d0", grade=0, rater="c")]
    assert consensus(one + other + third)[("q", "d0")] == 1  # grades 2, 1, 0: the median
    assert consensus(one + other)[("q", "d2")] == 2  # 2 and 3: the lower middle


def test_the_next_runs_page_and_summary_say_how_many_grades_it_rests_on(graded):
    from rich.console import Console

    from vx_eval.core.golden.human import add_grade
    from vx_eval.html import page_for
    from vx_eval.views.display import print_summary

    plugins = load_plugins()
    stores = Stores(plugins)
    first = graded["first"]
    row = json.loads(Path(graded["golden"]).read_text().splitlines()[0])
    index = first.question_ids.index(row["id"])
    held = set(row["expected"]) | set(row.get("grades", {}))
    unit = next(u for u, _ in first.setups[0].per_question.results[index] if u and u not in held)
    add_grade(stores, grades_location(graded["golden"]), HumanGrade(question=row["id"], unit=unit,
                                                                       grade=2, rater="page-test"))  # fmt: skip
    newest = run_experiment(load_config(graded["config"], plugins), plugins, RunOptions()).report
    human = newest.golden.human_grades
    assert human >= 1
    html = page_for(newest, stores, graded["store"])
    assert f'<strong id="human-grades">{human}</strong> grade' in html
    console = Console(record=True, width=200)
    print_summary(console, newest)
    assert f"{human} grade{'s' * (human != 1)} from the grading page" in console.export_text()


def test_a_grade_posted_from_another_site_is_refused_and_a_rater_is_never_shown_answers_or_other_grades(graded):
    """Cross-site: a page elsewhere posting with the rater's session (its Origin or Referer names another host)
    gets 403 and nothing is kept. Blind: what a rater is sent names no expected document, no grade the golden
    file or another rater gave, and the page puts every text it is sent in place as text, never as markup."""
    c = _client(graded)
    _sign_in(c, "rita")
    offered = c.get("/api/v1/grading/quickstart/next", params={"limit": 50}).json()["pairs"]
    location = grades_location(graded["golden"])
    before = Path(location).read_bytes() if Path(location).exists() else b""
    body = {"question": offered[0]["question_id"], "unit": offered[0]["unit"], "grade": 3}
    for header in ({"Origin": "https://evil.example"}, {"Referer": "https://evil.example/grade"}):
        answer = c.post("/api/v1/grading/quickstart/grades", json=body, headers=header)
        assert answer.status_code == 403 and "this server's own pages" in answer.text
    assert (Path(location).read_bytes() if Path(location).exists() else b"") == before
    rows = {json.loads(line)["id"]: json.loads(line) for line in Path(graded["golden"]).read_text().splitlines()}
    for pair in offered:
        assert set(pair) == {"question_id", "question", "unit", "title", "passage", "settles", "graded_by"}
        assert pair["unit"] not in rows[pair["question_id"]]["expected"]
    page = c.get("/grade/quickstart").text
    assert "innerHTML" not in page and "insertAdjacentHTML" not in page and "document.write" not in page
    assert "textContent = current.question" in page and "textContent = body" in page
