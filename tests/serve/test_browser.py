"""The served page in a real browser: Debian's headless Chromium, driven by Playwright, against `vx-eval serve`
started as its own process on 127.0.0.1 (stopped by its PID). Screenshots land in the test's folder, and in
VX_EVAL_SCREENSHOTS when that is set."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from vx_eval.serve.auth import Users
from vx_eval.testing.processes import free_port, start_server
from vx_eval.views.display import fmt

ADMIN_KEY = "browser-tests-admin-key"


@pytest.fixture(scope="module")
def server(evaluations, tmp_path_factory) -> Iterator[dict]:
    folder = tmp_path_factory.mktemp("server")
    users = Users(folder / "users.json")
    users.add_person("ada", "ada-password", "admin")
    users.add_person("gus", "gus-password", "reader")
    port = free_port()
    env = {**os.environ, "VX_EVAL_ADMIN_KEY": ADMIN_KEY}
    argv = [sys.executable, "-m", "vx_eval", "serve", "--store", evaluations.runs, "--users", folder / "users.json"]
    with start_server(
        [*argv, "--port", str(port), "--access-log", folder / "access.log"],
        port=port,
        what="vx-eval serve",
        cwd=folder,  # outside the checkout, so the installed package is the one imported
        env=env,
    ) as served:
        yield {"url": served.url, "folder": folder, "key": users.add_key("ada")}


def shot(page, tmp_path: Path, name: str, full: bool = False) -> Path:
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=full)
    if folder := os.environ.get("VX_EVAL_SCREENSHOTS"):
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(folder) / path.name)
    assert path.stat().st_size > 10_000
    return path


def test_the_newest_run_shows_its_picks_the_chart_and_pages_of_seven(server, page, evaluations, tmp_path):
    report = evaluations.newest_json
    page.goto(server["url"] + "/")
    primary = report["settings"]["primary"]
    by_key = {s["key"]: s for s in report["setups"]}
    for pick, key in report["picks"].items():
        card = page.locator(f'[data-pick="{pick}"]')
        assert card.is_visible()
        assert card.get_attribute("data-key") == key
        assert by_key[key]["label"] in card.inner_text()
        assert fmt(primary, by_key[key]["summary"][primary]) in card.locator(".pick-primary").inner_text()
    marks = page.locator("svg.scatter g.mark")
    assert marks.count() == len([s for s in report["setups"] if s["error"] is None])
    frontier = page.locator("svg.scatter polyline.frontier")
    assert frontier.is_visible()
    assert sorted(frontier.get_attribute("data-keys").split(",")) == sorted(report["frontier"])
    box = marks.first.locator("circle").bounding_box()
    assert box and box["width"] > 5  # drawn, not just present
    # the ranked table: seven to a page
    rows = page.locator("#ranked tbody tr")
    assert rows.count() == len(report["setups"]) > 7
    visible = [rows.nth(i).get_attribute("data-key") for i in range(rows.count()) if rows.nth(i).is_visible()]
    ranked = [s["key"] for s in sorted(report["setups"], key=lambda s: s["rank"])]
    assert visible == ranked[:7]
    assert page.locator("#page-label").inner_text() == f"page 1 of {(len(ranked) + 6) // 7}"
    shot(page, tmp_path, "evaluate-page")
    page.click("#page-next")
    visible = [rows.nth(i).get_attribute("data-key") for i in range(rows.count()) if rows.nth(i).is_visible()]
    assert visible == ranked[7:14]
    assert page.locator("#page-prev").is_enabled()
    for key in visible:
        cell = page.locator(f'#ranked tr[data-key="{key}"] [data-metric="{primary}"]')
        assert cell.inner_text() == fmt(primary, by_key[key]["summary"][primary])
    shot(page, tmp_path, "evaluate-page-full", full=True)


@pytest.mark.slow
def test_a_setup_page_leads_with_the_place_and_gives_mrr_in_its_tooltip(server, page, evaluations, tmp_path):
    report = evaluations.newest_json
    setup = next(s for s in report["setups"] if s["key"] == report["picks"]["finds_the_most"])
    page.goto(server["url"] + "/")
    page.click('[data-pick="finds_the_most"] a.setup')
    section = page.locator(f'section.setup-page[data-key="{setup["key"]}"]')
    expect(section).to_be_visible()
    expect(page.locator("#ranked")).to_be_hidden()
    place = section.locator("abbr.place")
    assert place.inner_text() == f"{1 / setup['summary']['mrr']:.2f}"
    assert f"MRR {setup['summary']['mrr']:.3f}" in place.get_attribute("title")
    assert section.locator("svg.positions g.bar").count() >= 11
    assert section.locator("table.history tbody tr").count() == 2  # this config ran twice on these questions
    assert "index changed" in section.locator("table.history").inner_text()
    shot(page, tmp_path, "setup-page", full=True)
    section.locator("a.back").click()
    expect(page.locator("#ranked")).to_be_visible()
    expect(section).to_be_hidden()


@pytest.mark.slow
def test_the_run_menu_opens_an_older_run_and_leads_back(server, page, evaluations, tmp_path):
    page.goto(server["url"] + "/")
    links = page.locator("#run-menu li a")
    assert links.count() == 12
    assert links.first.inner_text().endswith("— quickstart")  # each run named by its collections
    assert links.nth(2).inner_text().endswith("— quickstart-keyword")
    # each click below is a link to another page: wait for that page, never read the one being left
    page.click("#menu-older")
    expect(page.locator("#run-menu li a")).to_have_count(2)
    oldest = evaluations.quick[0].id
    page.click(f'#run-menu a[data-run="{oldest}"]')
    expect(page.locator("body")).to_have_attribute("data-run", oldest)
    expect(page.locator("#older-run")).to_be_visible()
    shot(page, tmp_path, "older-run")
    page.click("#older-run a")
    expect(page.locator("body")).to_have_attribute("data-run", evaluations.newest_json["id"])


def test_golden_download_works_for_an_admin_and_is_refused_otherwise(server, page, evaluations, tmp_path):
    route = server["url"] + f"/api/v1/evaluations/{evaluations.newest_json['id']}/golden"
    page.goto(server["url"] + "/")
    assert page.locator("#golden-download").count() == 0  # a guest sees no button
    assert page.request.get(route).status == 403
    assert page.request.get(route, headers={"X-API-Key": server["key"]}).status == 403
    assert page.request.get(route, headers={"X-API-Key": ADMIN_KEY}).status == 403
    page.click("#sign-in-link")
    page.fill("#username", "gus")
    page.fill("#password", "gus-password")
    page.click("#sign-in")
    expect(page.locator("#signed-in")).to_have_text("gus")
    assert page.locator("#golden-download").count() == 0 and page.request.get(route).status == 403
    page.click("#sign-out")
    page.click("#sign-in-link")
    page.fill("#username", "ada")
    page.fill("#password", "ada-password")
    page.click("#sign-in")
    expect(page.locator("#signed-in")).to_have_text("ada")
    with page.expect_download() as info:
        page.click("#golden-download")
    data = Path(info.value.path()).read_bytes()
    assert hashlib.sha256(data).hexdigest() == evaluations.newest_json["golden"]["sha256"]
    shot(page, tmp_path, "signed-in-admin")
    log = [json.loads(line) for line in (server["folder"] / "access.log").read_text().splitlines()]
    downloads = [e for e in log if e.get("event") == "golden download"]
    assert downloads and downloads[-1]["person"] == "ada"
    assert all(e["person"] for e in downloads)


@pytest.mark.slow
def test_the_saved_page_opens_offline_with_the_reports_picks_and_numbers(browser, evaluations, tmp_path, capsys):
    from ..test_cli import call

    html = tmp_path / "run.html"
    code, _, err = call(capsys, "report", "latest", str(evaluations.runs), "--html", str(html))
    assert code == 0, err
    context = browser.new_context(viewport={"width": 1100, "height": 900}, offline=True)
    asked: list[str] = []
    context.route("**/*", lambda route: (asked.append(route.request.url), route.continue_()))
    page = context.new_page()
    page.goto(html.as_uri())
    assert asked == [html.as_uri()]  # the file itself, nothing else
    report = evaluations.newest_json
    primary = report["settings"]["primary"]
    by_key = {s["key"]: s for s in report["setups"]}
    for pick, key in report["picks"].items():
        card = page.locator(f'[data-pick="{pick}"]')
        assert card.get_attribute("data-key") == key
        assert fmt(primary, by_key[key]["summary"][primary]) in card.inner_text()
    rows = page.locator("#ranked tbody tr")
    for i in range(rows.count()):
        key = rows.nth(i).get_attribute("data-key")
        cell = rows.nth(i).locator(f'[data-metric="{primary}"]')
        assert cell.text_content() == fmt(primary, by_key[key]["summary"][primary])
    assert page.locator("svg.scatter g.mark").count() == len(report["setups"])
    assert page.locator("#account").count() == 0 and page.locator("#run-menu").count() == 0  # served only
    context.close()


def test_the_graded_view_per_type_of_question_and_any_measure_over_runs_in_chromium(
    server, page, evaluations, tmp_path
):
    """Databricks' dashboard per query type: for a run with questions of two types and reranked setups, DCG@10
    without and with the reranker as bars and in a table, mean relevance in another, the mean grade by place as
    a line a type; a setup's page draws any measure over runs, chosen from a menu."""
    report = evaluations.newest_json
    kinds = {}
    for s in report["setups"]:
        if s["graded"]:
            kinds.update(s["graded"]["by_kind"])
    assert set(kinds) == {"keyword", "natural language"}
    page.goto(server["url"] + "/")
    section = page.locator("#by-type")
    expect(section).to_be_visible()
    for table in ("#kind-dcg", "#kind-relevance"):
        rows = page.locator(f"{table} tbody tr")
        expect(rows).to_have_count(2)
        expect(rows.first.locator("td").first).to_have_text("keyword")
    expect(page.locator("#kind-dcg tbody tr").first.locator("td").nth(2)).not_to_have_text("–")  # without
    expect(page.locator("#kind-dcg tbody tr").first.locator("td").nth(3)).not_to_have_text("–")  # with the reranker
    assert page.locator("svg.kind-bars rect").count() >= 4  # two types, each without and with
    assert page.locator("svg.kind-places path, svg.kind-places polyline").count() >= 2  # a line a type
    picture = tmp_path / "graded-by-type.png"
    section.screenshot(path=str(picture))  # docs/graded-by-type.png: VX_EVAL_SCREENSHOTS=docs pytest -k per_type
    assert picture.stat().st_size > 10_000
    if folder := os.environ.get("VX_EVAL_SCREENSHOTS"):
        shutil.copy(picture, Path(folder) / picture.name)

    best = report["picks"]["finds_the_most"]
    anchor = page.locator(f'section.setup-page[data-key="{best}"]').get_attribute("id")
    page.goto(f"{server['url']}/#{anchor}")
    setup = page.locator(f"#{anchor}")
    menu = setup.locator("select.history-measure")
    expect(menu).to_be_visible()
    expect(setup.locator('.over-runs[data-measure="found@10"]')).to_be_visible()
    menu.select_option("ndcg@10")
    expect(setup.locator('.over-runs[data-measure="ndcg@10"]')).to_be_visible()
    expect(setup.locator('.over-runs[data-measure="found@10"]')).to_be_hidden()
    assert "dcg@10" in [o.get_attribute("value") for o in menu.locator("option").all()]
