"""`vx-eval runs` (list, show, golden) and `vx-eval report`: the runs kept at a location."""

from __future__ import annotations

import json
from pathlib import Path

import click

from vx_eval.cli.common import (
    config_option,
    err_console,
    location,
    new_file,
    out_console,
    runs_place,
    where_argument,
    wide_option,
    write_page,
)
from vx_eval.cli.progress import RichProgress
from vx_eval.core.errors import VxEvalError
from vx_eval.core.report.history import golden_bytes, list_runs, read_report
from vx_eval.python.evaluation import export_trec, rescore
from vx_eval.views.display import show_run
from vx_eval.views.tables import runs_table


@click.group()
def runs() -> None:
    """The runs kept at a location (a folder, s3://…, a Blob address): list, show, golden."""


@runs.command("list")
@where_argument
@config_option
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 10_000), help="Runs per page.")
@click.option("--offset", default=0, show_default=True, type=click.IntRange(0), help="Runs to skip (newest first).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def runs_list(where: str | None, config: Path | None, limit: int, offset: int, as_json: bool) -> None:
    """Saved runs, newest first: collections, golden file, questions, picks."""
    save_to, stores = runs_place(where, config)
    entries, total = list_runs(stores, save_to, limit, offset)
    if as_json:
        click.echo(json.dumps({"total": total, "offset": offset, "runs": [e.as_dict() for e in entries]}, indent=1))
        return
    out_console().print(runs_table(entries, total, offset, save_to))


@runs.command("show")
@click.argument("run_id", metavar="RUN")
@where_argument
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@wide_option
def runs_show(run_id: str, where: str | None, config: Path | None, as_json: bool, wide: bool) -> None:
    """One run's ranking and picks (RUN is a run id, or `latest`)."""
    save_to, stores = runs_place(where, config)
    report = read_report(stores, save_to, run_id)
    if as_json:
        click.echo(report.to_json())
    else:
        show_run(out_console(), report, None, wide=wide)


@runs.command("golden")
@click.argument("run_id", metavar="RUN")
@where_argument
@config_option
@click.option("--out", "out_file", required=True, help="Where to write the golden file the run read.")
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def runs_golden(run_id: str, where: str | None, config: Path | None, out_file: str, force: bool) -> None:
    """Give back the exact golden file RUN read, even after it changed."""
    save_to, stores = runs_place(where, config)
    report = read_report(stores, save_to, run_id)
    data = golden_bytes(stores, save_to, report)
    stores.write(new_file(stores, out_file, force), data)
    sha = report.golden.sha256 or ""
    err_console().print(
        f"wrote the golden file of run {report.id} ({len(data):,} bytes, sha256 {sha[:12]}…) to {out_file}",
        highlight=False,
    )


@click.command("report")
@click.argument("run_id", metavar="RUN")
@where_argument
@config_option
@click.option("--html", "html_file", required=True, help="The HTML file to write (one file, no network needed).")
def report_page(run_id: str, where: str | None, config: Path | None, html_file: str) -> None:
    """Write RUN's page (a run id, or `latest`): picks, charts, every setup ranked and a page per setup."""
    save_to, stores = runs_place(where, config)
    write_page(stores, html_file, read_report(stores, save_to, run_id), save_to)


@runs.command("export")
@click.argument("run_id", metavar="RUN")
@where_argument
@config_option
@click.option("--trec", "trec_dir", help="A folder for one TREC run file per setup and qrels.txt.")
@click.option("--csv", "csv_file", help="A CSV file of every measure of every question of every setup.")
@click.option("--parquet", "parquet_file", help="The same as Parquet (needs pyarrow: the `notebook` extra).")
def runs_export(
    run_id: str,
    where: str | None,
    config: Path | None,
    trec_dir: str | None,
    csv_file: str | None,
    parquet_file: str | None,
) -> None:
    """RUN's kept rankings as TREC files (trec_eval on them gives the report's numbers), or its per-question
    measures as CSV or Parquet."""
    if not (trec_dir or csv_file or parquet_file):
        raise VxEvalError("name what to write: --trec FOLDER, --csv FILE or --parquet FILE")
    save_to, stores = runs_place(where, config)
    report = read_report(stores, save_to, run_id, rankings=bool(trec_dir))
    if trec_dir:
        written = export_trec(report, location(trec_dir) or trec_dir, runs=save_to)
        err_console().print(
            f"wrote {len(written) - 1} run files and qrels.txt of run {report.id} to {trec_dir}", highlight=False
        )
    for out, kind in ((csv_file, "csv"), (parquet_file, "parquet")):
        if out:
            frame = report.per_question()
            target = location(out) or out
            frame.to_csv(target, index=False) if kind == "csv" else _parquet(frame, target)
            err_console().print(f"wrote {len(frame):,} rows (setup, question, measure) to {out}", highlight=False)


def _parquet(frame: object, target: str) -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise VxEvalError('Parquet files need pyarrow: pip install "vx-eval[notebook]"') from None
    frame.to_parquet(target, index=False)  # type: ignore[attr-defined]


@runs.command("rescore")
@click.argument("run_id", metavar="RUN")
@where_argument
@click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The run's config (its save_to; a judge's options and documents).",
)
@click.option(
    "-m", "--measure", "measures", multiple=True, help="A measure to add (repeatable): err@10, bpref, ndcg@5…"
)
@click.option("--replace", is_flag=True, help="Use the -m measures instead of the run's (found@k are kept).")
@click.option("-l", "--threshold", type=click.IntRange(1, 100), help="Count this grade or more as relevant.")
@click.option("--primary", help="Rank and pick by this measure.")
@click.option("--judge", help="Grade the kept top 10 with this judge (its grades cached: asked once).")
@click.option("--no-save", is_flag=True, help="Print the new ranking without saving it.")
@wide_option
def runs_rescore(
    run_id: str,
    where: str | None,
    config: Path | None,
    measures: tuple[str, ...],
    replace: bool,
    threshold: int | None,
    primary: str | None,
    judge: str | None,
    no_save: bool,
    wide: bool,
) -> None:
    """Score RUN again from the rankings it kept, searching nothing: new measures, another relevance
    threshold or primary measure, or a judge's grades. The new report names RUN and keeps its times."""
    if not (measures or threshold or primary or judge):
        raise VxEvalError("name what to change: -m MEASURE, --threshold N, --primary MEASURE or --judge NAME")
    save_to, stores = runs_place(where, config)
    report = read_report(stores, save_to, run_id, rankings=True)
    with RichProgress(err_console()) as progress:
        new = rescore(
            report,
            measures,
            runs=save_to,
            relevance_threshold=threshold,
            primary=primary,
            replace=replace,
            judge=judge,
            config=config,
            save=not no_save,
            progress=progress,
        )
    show_run(out_console(), new, None if no_save else f"{save_to} (run {new.id})", wide=wide)
