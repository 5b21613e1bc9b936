"""The run's page: self-contained, the report's picks and numbers, the graded views, run-by-run history."""

from __future__ import annotations

import copy
import json
import math
import re
from html.parser import HTMLParser

from vx_eval.core.report.history import read_report, same_questions
from vx_eval.core.report.schema import Report, load_report
from vx_eval.core.stores import Stores
from vx_eval.html import page_for
from vx_eval.html.render import render_page
from vx_eval.html.view import graded_view, setup_views
from vx_eval.views.format import fmt

from ..test_cli import call


class Page(HTMLParser):
    """The tags of a page with their attributes, and the text of elements with an id."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text_by_id: dict[str, str] = {}
        self._open: list[tuple[str, str | None]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag not in ("meta", "input", "br", "circle", "line", "rect", "polyline", "link"):
            self._open.append((tag, attributes.get("id")))
            if attributes.get("id"):
                self.text_by_id[attributes["id"]] = ""

    def handle_endtag(self, tag):
        while self._open:
            name, _ = self._open.pop()
            if name == tag:
                break

    def handle_data(self, data):
        for _, ident in self._open:
            if ident:
                self.text_by_id[ident] += data

    def find(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in attrs.items())]


def test_the_page_needs_no_network_and_holds_the_reports_picks_and_numbers(evaluations):
    report = evaluations.newest
    html = render_page(report)
    page = Page(html)
    # nothing fetched: no external script, style sheet, image or font; every link stays in the page
    for tag, attrs in page.tags:
        for name in ("src", "href"):
            value = attrs.get(name) or ""
            assert not re.match(r"^(https?:)?//", value), f"<{tag} {name}={value}> reaches the network"
    assert not page.find("link", rel="stylesheet")
    assert all(attrs.get("src") is None for tag, attrs in page.tags if tag == "script")
    assert "@import" not in html and "url(" not in html
    for pick, key in report.picks.items():
        (card,) = page.find("div", **{"data-pick": pick})
        assert card["data-key"] == key
    primary = report.settings.primary
    rows = {a["data-key"]: a for a in page.find("tr") if a.get("data-key")}
    assert list(rows) == [s.key for s in sorted(report.setups, key=lambda s: s.rank)]
    for setup in report.setups:
        shown = re.search(
            rf'<tr data-key="{re.escape(setup.key)}".*?data-metric="{primary}">([^<]+)<', html, re.S
        ).group(1)
        assert shown == fmt(primary, setup.summary[primary])
    assert page.text_by_id["golden-questions"] == str(report.golden.questions)
    assert "cannot be found there: q-oslo" in html  # the missing-document note, in the CLI's words


def test_the_chart_has_one_mark_per_timed_setup_and_the_frontier_in_speed_order(evaluations):
    report = evaluations.newest
    page = Page(render_page(report))
    marks = [a["data-key"] for a in page.find("g") if "mark" in (a.get("class") or "").split()]
    assert sorted(marks) == sorted(s.key for s in report.setups if s.error is None)
    (frontier,) = page.find("polyline", **{"class": "frontier"})
    keys = frontier["data-keys"].split(",")
    assert sorted(keys) == sorted(report.frontier)
    times = [report.setup(k).times_ms.median for k in keys]
    assert times == sorted(times)
    xs = [float(p.split(",")[0]) for p in frontier["points"].split()]
    assert xs == sorted(xs)


def test_every_setup_has_its_own_page_with_place_times_neighbours_and_history(evaluations):
    report = evaluations.newest
    earlier = same_questions(Stores(_plugins()), str(evaluations.runs), report)
    assert [r.id for r in earlier] == [r.id for r in [*evaluations.quick, *evaluations.rich[:-1]]]
    views = {v.key: v for v in setup_views(report, earlier)}
    html = render_page(report, earlier)
    page = Page(html)
    for setup in report.setups:
        view = views[setup.key]
        (section,) = page.find("section", id=view.anchor)
        assert section["data-key"] == setup.key
        assert math.isclose(view.place, 1 / setup.summary["mrr"])
        assert sum(n for _, n, _ in view.positions) == setup.counts.evaluated
        assert {n.key for n in view.neighbours} == {n.key for n in setup.neighbours}
    # run by run: keyword ran in all fourteen runs (on two indexes: quick.db, then rich.db twice)
    keyword = views["local.keyword"]
    assert len(keyword.history) == 14
    assert keyword.history[-1].this_run
    # the rich index changed between its two runs (a document was added): marked; the quick runs' index never
    changes = [h.index_changed for h in keyword.history]
    assert changes == [False] * 12 + [True, True]
    dense = views["local.dense.minilm"]
    assert [h.index_changed for h in dense.history] == [False, True]
    assert "● index changed" in html


def test_a_graded_run_shows_the_best_dcg_the_reranker_pairs_and_the_failed_questions(evaluations):
    report = evaluations.newest
    assert report.settings.graded and report.golden.max_grade == 3
    view = graded_view(report)
    graded = [s for s in report.setups if s.graded]
    best = max(graded, key=lambda s: s.graded.dcg)
    assert view.best_dcg == best.graded.dcg
    plain = [row for row in view.with_without if row.plain is not None and row.reranked]
    assert plain, "hybrid with and without the cross-encoder"
    ids = report.question_ids
    grades = best.per_question.grades
    assert view.failed == [ids[i] for i, g in enumerate(grades) if g is not None and (not g or not g[0])]
    page = Page(render_page(report))
    assert page.text_by_id["best-dcg"] == f"{best.graded.dcg:.3f}"


def test_graded_measures_follow_their_formulas(evaluations):
    report = evaluations.newest
    for setup in report.setups:
        grades = setup.per_question.grades
        dcg = [sum((g or 0) / math.log2(r + 2) for r, g in enumerate(row)) for row in grades if row is not None]
        assert math.isclose(setup.graded.dcg, sum(dcg) / len(dcg), abs_tol=1e-9)
        first = [row[0] for row in grades if row]
        assert math.isclose(setup.graded.mean_grade_by_place[0], sum(g or 0 for g in first) / len(first))
        lo, hi = setup.graded.ci["dcg"]
        assert lo <= setup.graded.dcg <= hi


def test_a_scifact_sized_run_makes_a_page_under_two_megabytes(evaluations):
    """300 questions x 14 setups x 100 results, as a SciFact run: the page carries no per-question lists."""
    base = evaluations.newest.model_dump(mode="json")
    big = copy.deepcopy(base)
    big["question_ids"] = [f"q{i}" for i in range(300)]
    setups = []
    for i in range(14):
        for s in base["setups"]:
            if len(setups) == 14:
                break
            setup = copy.deepcopy(s)
            setup["key"], setup["rank"] = f"{s['key']}.{i}", len(setups) + 1
            pq = setup["per_question"]
            for name, values in list(pq.items()):
                if isinstance(values, list):
                    pq[name] = (values * 60)[:300]
            pq["results"] = [[[f"scifact-doc-{j:05d}", 1.0 - j / 100] for j in range(100)] for _ in range(300)]
            setups.append(setup)
    big["setups"] = setups
    assert len(json.dumps(big)) > 10_000_000
    html = render_page(Report.model_validate(big), [evaluations.newest for _ in range(20)])
    assert len(html.encode()) < 2_000_000


def test_the_report_command_and_run_html_write_the_page(evaluations, tmp_path, project, capsys):
    out = tmp_path / "page.html"
    code, _, err = call(capsys, "report", "latest", str(evaluations.runs), "--html", str(out))
    assert code == 0, err
    assert "self-contained" in err
    html = out.read_text(encoding="utf-8")
    assert f'data-run="{evaluations.newest.id}"' in html
    assert html == page_for(
        read_report(Stores(_plugins()), str(evaluations.runs), "latest"), Stores(_plugins()), str(evaluations.runs)
    )
    code, _, err = call(capsys, "report", "nope", str(evaluations.runs), "--html", str(out))
    assert code == 2 and "no run 'nope'" in err and "vx-eval runs list" in err
    config = project.write_config()
    code, _, err = call(capsys, "run", str(config), "--html", str(tmp_path / "run.html"))
    assert code == 0, err
    assert 'data-pick="finds_the_most" data-key="local.keyword"' in (tmp_path / "run.html").read_text()


def _plugins():
    from vx_eval.core.plugins import load_plugins

    return load_plugins()


def test_older_runs_without_the_newer_fields_still_make_a_page(evaluations):
    old = evaluations.quick[0].model_dump(mode="json")
    old["format"] = 1
    for key in ("collections", "missing_notes", "frontier", "detectable_difference"):
        old.pop(key, None)
    old["settings"].pop("graded", None)
    for setup in old["setups"]:
        setup.pop("graded", None)
        setup.pop("server_ms", None)
        setup["summary"].pop("mrr", None)
    html = render_page(load_report(json.dumps(old), "old report"))
    assert 'data-pick="finds_the_most"' in html


def test_scatter_labels_stay_inside_and_never_overlap_even_when_marks_crowd_the_top(evaluations):
    from vx_eval.html.charts import CHAR_W, LABEL_H, H, Point, W, quality_vs_time

    # twelve setups at 100%, a few milliseconds apart: the marks crowd the top edge
    points = [Point(f"s{i}", f"setup {i}", i, 4.0 + 1.3 * i, 1.0, f"setup {i}") for i in range(1, 13)]
    svg = str(quality_vs_time(points, [], "found"))
    boxes = []
    for x, y, anchor, text in re.findall(r'<text x="([\d.]+)" y="([\d.]+)" text-anchor="(\w+)">([^<]+)</text>', svg):
        x, y, width = float(x), float(y), CHAR_W * len(text)
        left = x if anchor == "start" else x - width if anchor == "end" else x - width / 2
        boxes.append((left, y - LABEL_H, left + width, y))
    assert len(boxes) >= 4  # marks close together share a label, but not all twelve one
    for i, a in enumerate(boxes):
        assert a[0] >= 0 and a[2] <= W and a[1] >= 0 and a[3] <= H
        for b in boxes[i + 1 :]:
            assert min(a[2], b[2]) <= max(a[0], b[0]) or min(a[3], b[3]) <= max(a[1], b[1]), (a, b)


def test_the_ranked_table_has_the_configs_measures_and_the_depth_chart_a_legend(evaluations):
    report = evaluations.newest
    html = render_page(report)
    head = html[html.index('<table id="ranked"') : html.index("</thead>", html.index('<table id="ranked"'))]
    for metric in report.settings.metrics:
        if metric != report.settings.primary:
            assert f">{metric}</th>" in head, metric
    assert "hit rate@10, success@10" in html and "recall@k / hit rate" not in html
    legend = html[html.index('<ul class="legend">') : html.index("</ul>", html.index('<ul class="legend">'))]
    assert all(f"{s.rank}. {s.label}" in legend.replace("&amp;", "&") for s in report.setups if s.scored)
    colours = re.findall(r'<g class="series" data-name="\d+" stroke="(#\w+)"', html)
    assert len(set(colours[: len(report.setups)])) == min(12, len(report.setups))


def test_each_pick_says_why_on_the_page(evaluations):
    report = evaluations.newest
    html = render_page(report)
    assert report.picking is not None
    for name, reason in report.picking.reasons.items():
        card = html[html.index(f'data-pick="{name}"') :][:3000]
        assert 'class="pick-reason' in card and reason.text.split(";")[0][:40].replace("&", "&amp;") in card
