"""`vx-eval compare`: two runs, every change with its interval and significance, and CI gates."""

from __future__ import annotations

import json
import sys

import click
from rich.markup import escape

from vx_eval.cli.common import err_console, location, out_console
from vx_eval.core.measures.metrics import parse
from vx_eval.core.plugins import load_plugins
from vx_eval.core.stores import Stores
from vx_eval.core.usecases.compare import CompareRequest, compare_runs
from vx_eval.views.tables import show_comparison


@click.command()
@click.argument("before")
@click.argument("after")
@click.option(
    "--runs",
    default="runs",
    show_default=True,
    help="Where run ids are looked up: the save_to of the config (a folder, s3://… or a Blob address).",
)
@click.option(
    "--fail-if",
    "gates",
    multiple=True,
    metavar="GATE",
    help="Exit 3 when a setup's measure drops beyond a tolerance AND significantly, e.g. "
    '"ndcg@10 drops by more than 0.02" (repeatable).',
)
@click.option("--allow-different-golden", is_flag=True, help="Compare runs that read different golden files.")
@click.option("-m", "--measure", "only_measures", multiple=True, metavar="MEASURE", help="Show only these measures.")
@click.option("--changed", is_flag=True, help="Show only the changes whose 95% interval excludes 0.")
@click.option(
    "--same-settings",
    is_flag=True,
    help="Refuse (exit 2) when the runs searched with different settings (depth, search, models, an index).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def compare(
    before: str,
    after: str,
    runs: str,
    gates: tuple[str, ...],
    allow_different_golden: bool,
    only_measures: tuple[str, ...],
    changed: bool,
    same_settings: bool,
    as_json: bool,
) -> None:
    """Compare two runs (ids, `latest`, or paths): every change with its interval and significance."""
    request = CompareRequest(before, after, location(runs) or runs, gates, allow_different_golden, same_settings)
    compared = compare_runs(request, Stores(load_plugins()))
    comparison, tripped = compared.comparison, compared.tripped
    if as_json:
        click.echo(json.dumps({**comparison.model_dump(mode="json"), "failed_gates": tripped}, indent=1))
    else:
        show_comparison(out_console(), comparison, {parse(m).name for m in only_measures}, changed=changed)
        for line in tripped:
            err_console().print(f"[red]gate failed:[/] {escape(line)}", highlight=False)
        if compared.gates and not tripped:
            setups = len({r.setup for r in comparison.rows})
            for gate in compared.gates:
                out_console().print(
                    f"Gate passed: “{escape(gate.text)}” is true of none of the {setups} setups compared",
                    highlight=False,
                )
    if tripped:
        sys.exit(3)
