"""`vx-eval compare`: two runs, every change with its interval and significance, and CI gates."""

from __future__ import annotations

import json
import sys

import click
from rich.markup import escape

from vx_eval.cli.common import err_console, location, out_console
from vx_eval.core.errors import VxEvalError
from vx_eval.core.measures.metrics import parse
from vx_eval.core.plugins import load_plugins
from vx_eval.core.report.compare import Gate, compare_reports, failed_gates, load_report, partial_setups
from vx_eval.core.stores import Stores
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
    try:
        parsed_gates = [Gate.parse(g) for g in gates]
    except VxEvalError as exc:
        raise VxEvalError(f"--fail-if: {exc}") from None
    stores = Stores(load_plugins())
    runs_at = location(runs) or runs
    first, second = load_report(before, stores, runs_at), load_report(after, stores, runs_at)
    if first.golden.sha256 != second.golden.sha256 and not allow_different_golden:
        raise VxEvalError(
            f"the runs read different golden files ({(first.golden.sha256 or '')[:12]}… and "
            f"{(second.golden.sha256 or '')[:12]}…): their questions differ, so their scores do not compare; "
            "pass --allow-different-golden to compare the questions they share"
        )
    comparison = compare_reports(first, second, allow_different_golden=True)
    if same_settings and comparison.searches_differ:
        differ = "; ".join(f"{c.name}: {c.before!r} → {c.after!r}" for c in comparison.searches_differ[:5])
        raise VxEvalError(f"the runs searched with different settings ({differ}); --same-settings refuses them")
    shown = {parse(m).name for m in only_measures}
    tripped = failed_gates(comparison, parsed_gates)
    if parsed_gates:  # a run with failed searches passes no gate, whatever its partial scores say
        tripped += partial_setups(comparison, first, second)
    if as_json:
        click.echo(json.dumps({**comparison.model_dump(mode="json"), "failed_gates": tripped}, indent=1))
    else:
        show_comparison(out_console(), comparison, shown, changed=changed)
        for line in tripped:
            err_console().print(f"[red]gate failed:[/] {escape(line)}", highlight=False)
        if parsed_gates and not tripped:
            setups = len({r.setup for r in comparison.rows})
            for gate in parsed_gates:
                out_console().print(
                    f"Gate passed: “{escape(gate.text)}” is true of none of the {setups} setups compared",
                    highlight=False,
                )
    if tripped:
        sys.exit(3)
