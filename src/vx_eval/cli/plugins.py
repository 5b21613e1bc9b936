"""`vx-eval plugins`: what is installed, with the packages that ship it."""

from __future__ import annotations

import json
import os

import click
from rich.table import Table

from vx_eval.cli.common import out_console
from vx_eval.core.contracts.registry import DISABLE_ENV
from vx_eval.core.plugins import load_plugins

ROLES = ("engines", "setups", "stores", "writers", "judges", "models", "adapters", "providers")


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def plugins_command(as_json: bool) -> None:
    """What is installed (engines, setups, stores, writers, judges, models, adapters, providers), and from where."""
    plugins = load_plugins()
    roles = {role: getattr(plugins, role).names() for role in ROLES}
    if as_json:
        click.echo(json.dumps({"roles": roles, "plugins": plugins.distributions()}, indent=1))
        return
    out = out_console()
    table = Table(title="vx-eval plugins", title_justify="left")
    for column in ("plugin", "package", "version", "module"):
        table.add_column(column)
    for row in plugins.distributions():
        table.add_row(row["name"], row["package"] or "", row["version"] or "", row["module"])
    out.print(table)
    for role, names in roles.items():
        out.print(f"{role}: {', '.join(names) or '—'}", highlight=False)
    disabled = os.environ.get(DISABLE_ENV)
    if disabled:
        out.print(f"disabled by {DISABLE_ENV}: {disabled}", highlight=False)
