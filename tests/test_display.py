"""The ranked table as a search engineer reads it: every measure the config asks for, the primary first; at a
terminal's 80 columns no setup name broken, keys whole to copy into --only; at full width with --wide."""

from __future__ import annotations

import io
import re

from rich.console import Console

from vx_eval.views.display import show_run
from vx_eval.views.format import measures_shown

from .test_cli import call


def shown(report, width: int, wide: bool = False) -> list[str]:
    console = Console(width=width, record=True, color_system=None, force_terminal=False, file=io.StringIO())
    show_run(console, report, None, wide=wide)
    return console.export_text().splitlines()


def test_every_asked_measure_is_a_column_the_primary_first(evaluations):
    report = evaluations.newest
    asked = report.settings.metrics
    assert measures_shown(report)[0] == report.settings.primary
    header = next(line for line in shown(report, 400) if "setup" in line and "median ms" in line)
    names = re.findall(r"\b(?:found@\d+|recall@\d+|ndcg@\d+|mrr|p@\d+)\b", header)
    assert names[: len(set(asked))] == list(dict.fromkeys([report.settings.primary, *asked]))


def test_at_80_columns_no_name_is_broken_and_every_key_is_whole_on_its_line(evaluations):
    report = evaluations.newest
    lines = shown(report, 80)
    assert all(len(line) <= 80 for line in lines[: lines.index("") if "" in lines else len(lines)])
    for setup in report.setups:
        assert any(setup.label in line for line in lines), setup.label  # one line, not wrapped
        assert any(re.search(rf"(^|\s){re.escape(setup.key)}($|\s)", line) for line in lines), setup.key


def test_wide_prints_the_table_whole_whatever_the_terminal(evaluations):
    report = evaluations.newest
    lines = shown(report, 80, wide=True)
    header = next(line for line in lines if "median ms" in line)
    assert len(header) > 80 and "setup" in header
    for setup in report.setups:
        assert any(setup.key in line for line in lines)


def test_primary_found_at_3_gets_its_column_and_its_interval(project, capsys):
    config = project.write_config(evaluation={"metrics": ["found@1", "mrr"], "primary": "found@3", "depth": 20})
    code, out, err = call(capsys, "run", str(config), "--no-save", "--wide")
    assert code == 0, err
    header = next(line for line in out.splitlines() if "median ms" in line)
    assert header.index("found@3") < header.index("found@1") < header.index("mrr")
    assert "95% interval of found@3" in out


def test_the_graded_view_states_its_coverage_or_says_it_has_too_little(evaluations, project, capsys):
    lines = shown(evaluations.newest, 120)
    golden = evaluations.newest.golden
    assert f"  graded: {golden.graded} of {golden.labelled} questions carry grades above 1" in lines
    assert any(line.startswith("  strongest (DCG@10) of ") for line in lines)
    code, out, err = call(capsys, "run", str(project.write_config()), "--no-save")  # one graded question of five
    assert code == 0, err
    assert "Graded: 1 of 5 questions carry grades above 1, too few for the graded view" in " ".join(out.split())
    assert "best DCG@10" not in out


def test_progress_is_plain_lines_with_the_time_left_where_the_output_is_not_a_terminal():
    import io

    from rich.console import Console

    from vx_eval.cli.progress import RichProgress

    out = io.StringIO()
    with RichProgress(Console(file=out, width=100), every=0) as progress:
        advance = progress.start("Writing (local)", 4)
        advance(1)
        advance(3)
    lines = out.getvalue().splitlines()
    assert lines[0] == "Writing (local): started (4)"
    assert lines[1].startswith("Writing (local): 1/4 (25%)") and "left" in lines[1]
    assert lines[-1].startswith("Writing (local): 4/4 (100%)") and lines[-1].endswith("done")
    assert "━" not in out.getvalue()  # no bar drawn into a log


def test_every_stage_of_a_run_says_how_far_it_is_in_plain_lines(project, plugins):
    """Indexing, embedding per model, the graph, searching and judging each start, count and end in the log."""
    import io

    from rich.console import Console

    from vx_eval.cli.progress import RichProgress
    from vx_eval.core.config.experiment import load_config
    from vx_eval.core.usecases.pipeline import RunOptions, run_experiment

    path = project.write_config(
        targets=[
            {
                "name": "Local",
                "engine": "sqlite",
                "options": {"path": ".vx/graph.db", "mode": "graph", "dense_models": ["minilm"]},
            }
        ],
        evaluation={"metrics": ["found@10"], "depth": 10, "judge": "cross-encoder"},
        models={"embeddings": ".vx/embeddings.db", "scores": ".vx/scores.db"},
    )
    out = io.StringIO()
    with RichProgress(Console(file=out, width=100), every=0) as progress:
        run_experiment(load_config(path, plugins), plugins, RunOptions(save=False, progress=progress))
    lines = out.getvalue().splitlines()
    for stage in ("Indexing Local", "Embedding Local · MiniLM", "Graph Local · entities", "Searching", "Judging"):
        said = [line for line in lines if line.startswith(stage)]
        assert said, (stage, lines)
        assert "started" in said[0] and said[-1].endswith("done"), said


def test_the_summary_comes_first_then_the_table_and_a_legend_of_every_mark_and_measure(evaluations):
    """One screen first: what ran, the picks and how sure; the per-setup table after it; then a legend that
    says what the marks, the time columns, the points and each measure shown mean."""
    report = evaluations.newest
    lines = shown(report, 400)
    assert lines[0].startswith(f"{report.name}: ") and lines[0].endswith(f"ranked by {report.settings.primary}")
    header = next(i for i, line in enumerate(lines) if "setup" in line and "median ms" in line)
    picks = [i for i, line in enumerate(lines) if line.startswith(("★ Finds the most", "◆ Best for", "⚡ Best for"))]
    sure = next(i for i, line in enumerate(lines) if line.startswith("how sure:"))
    assert picks and max(picks) < header and sure < header
    assert len(lines[: header - 1]) <= 24  # a screen
    after = "\n".join(lines[header:])
    assert "★ finds the most · ◆ best for balance · ⚡ best for time" in after
    assert "median ms, p95 ms: each search as the caller waits for it" in after and "4 points = 0.04" in after
    for base in {m.split("@")[0] for m in measures_shown(report)}:
        assert re.search(rf"^{re.escape(base)}(@\S+)?( \(.*\))?: ", after, re.M), base
