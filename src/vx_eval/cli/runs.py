"""`vx-eval runs` (list, show, golden) and `vx-eval report`: the runs kept at a location."""

from __future__ import annotations

import json
from pathlib import Path

import click

from vx_eval.cli.common import (
    config_option,
    err_console,
    new_file,
    out_console,
    runs_place,
    where_argument,
    wide_option,
    write_page,
)


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
    from vx_eval.core.history import list_runs
    from vx_eval.display import runs_table

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
    from vx_eval.core.history import read_report
    from vx_eval.display import show_run

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
    from vx_eval.core.history import golden_bytes, read_report

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
    from vx_eval.core.history import read_report

    save_to, stores = runs_place(where, config)
    write_page(stores, html_file, read_report(stores, save_to, run_id), save_to)
