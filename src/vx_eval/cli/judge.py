"""`vx-eval judge check`: how far a judge agrees with people's grades."""

from __future__ import annotations

from pathlib import Path

import click

from vx_eval.cli.common import config_argument, err_console, out_console
from vx_eval.cli.progress import RichProgress
from vx_eval.core.config.experiment import load_config
from vx_eval.core.judging.check import keep_check
from vx_eval.core.plugins import load_plugins
from vx_eval.core.stores import Stores
from vx_eval.core.usecases.judge_check import check_judge
from vx_eval.views.tables import show_judge_check


@click.group("judge")
def judge_group() -> None:
    """Judges that grade (question, result) pairs 0–3 where nobody labelled them."""


@judge_group.command("check")
@config_argument
@click.option("--judge", "name", required=True, help="The judge plugin to check (see `vx-eval plugins`).")
@click.option("--depth", default=10, show_default=True, type=click.IntRange(1, 1000), help="Results graded per setup.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def judge_check(config: Path, name: str, depth: int, as_json: bool) -> None:
    """Measure a judge against the human grades of CONFIG's golden file: weighted kappa, the confusion matrix,
    and whether it orders the setups as people's grades do (Kendall's tau on DCG@10). No run is saved; what
    was measured is kept in CONFIG's store, and every run graded by this judge there states it."""
    plugins = load_plugins()
    experiment = load_config(config, plugins)
    with RichProgress(err_console()) as progress:
        result = check_judge(experiment, plugins, name, depth, progress, on_plan=progress.show_plan)
    if result.agreement.pairs:
        kept = keep_check(Stores(plugins, options=experiment.stores), experiment.config.save_to, result)
        err_console().print(f"kept what was measured at {kept}", highlight=False)
    if as_json:
        click.echo(result.model_dump_json(indent=1))
        return
    show_judge_check(out_console(), result)
