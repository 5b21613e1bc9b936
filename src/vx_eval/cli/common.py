"""What the command groups share: the consoles, locations given on the command line, where runs are kept."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from vx_eval.core.config.experiment import load_config
from vx_eval.core.contracts.fields import is_uri
from vx_eval.core.errors import GoldenError, VxEvalError, redact
from vx_eval.core.plugins import load_plugins
from vx_eval.core.stores import Stores
from vx_eval.html import page_for


def _width() -> int | None:
    """Piped output (CI logs, files) gets a wide page instead of rich's 80 columns; COLUMNS still wins."""
    return None if _on_screen() else 150


def _on_screen() -> bool:
    """Whether a person reads the output at a known width (a terminal, or COLUMNS set): then prose is
    wrapped between words at that width; piped output keeps each note on one line, for grep and logs."""
    return sys.stdout.isatty() or bool(os.environ.get("COLUMNS"))


@functools.cache
def err_console() -> Console:
    return Console(stderr=True, width=_width(), soft_wrap=not _on_screen())


@functools.cache
def out_console() -> Console:
    return Console(width=_width(), soft_wrap=not _on_screen())


def location(value: str | None) -> str | None:
    """A location given on the command line: local paths are relative to the current folder."""
    return value if value is None or is_uri(value) else str(Path(value).expanduser().resolve())


def shown_path(path: str) -> str:
    """A local path as the person typing knows it: relative to the working folder when it lies inside it."""
    if "://" in path:
        return path
    try:
        inside = Path(path).resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path
    return inside.as_posix()


def new_file(stores: Stores, out_file: str, force: bool) -> str:
    """The location of --out, refused when something is there already and --force was not given."""
    target = location(out_file)
    if target is None or (stores.exists(target) and not force):
        raise GoldenError(f"{out_file} exists; choose another --out, or pass --force to overwrite it")
    return target


DEFAULT_RUNS = "runs"
"""A config's default save_to: runs are looked for here when no location or config is named."""


def runs_place(where: str | None, config: Path | None) -> tuple[str, Stores]:
    """Where runs are kept: LOCATION, or the config's save_to (with the config's store settings), or ./runs
    where runs were saved there."""
    plugins = load_plugins()
    if config is not None:
        experiment = load_config(config, plugins)
        return location(where) or experiment.config.save_to, Stores(plugins, options=experiment.stores)
    if where is None:
        if Path(DEFAULT_RUNS, "retrieval", "runs").is_dir():  # where `vx-eval run` saves by default
            return DEFAULT_RUNS, Stores(plugins)
        raise VxEvalError(
            f"name where the runs are kept: `vx-eval runs list LOCATION`, or --config CONFIG for its save_to "
            f"(there is no ./{DEFAULT_RUNS} with runs here)"
        )
    return location(where) or where, Stores(plugins)


def write_page(stores: Stores, html_file: str, report: Any, save_to: str | None) -> None:
    page = redact(page_for(report, stores, save_to)).encode("utf-8")  # whatever a service said, masked again
    stores.write(location(html_file) or html_file, page)
    err_console().print(
        f"wrote the page of run {report.id} ({len(page) / 1e6:.2f} MB, self-contained) to {html_file}", highlight=False
    )


where_argument = click.argument("where", metavar="LOCATION", required=False)
wide_option = click.option(
    "--wide", is_flag=True, help="The table at its full width whatever the terminal's (for wide screens and files)."
)
config_option = click.option(
    "--config", type=click.Path(dir_okay=False, path_type=Path), help="Read the runs at this config's save_to."
)
config_argument = click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
