"""The `vx-eval` command line: one module per command group, each only parsing arguments and calling the core.

Nothing heavy is imported to start: the group knows each command's module and one-line help, and imports a
command's module (and what it needs) only when that command runs, so ``vx-eval --help`` answers at once.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from vx_eval.core.errors import VxEvalError, install_redacting_excepthook, redact
from vx_eval.core.optional import on_first_use

_rich_markup = on_first_use("rich.markup")

# name -> (module under vx_eval.cli, attribute, one-line help for `vx-eval --help`)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": ("run", "run", "Index what CONFIG declares, search every setup, print the ranking and the picks, save."),
    "golden": ("golden", "golden", "Write, check and import golden questions."),
    "runs": ("runs", "runs", "The runs kept at a location: list, show, golden, export, rescore."),
    "report": ("runs", "report_page", "Write a run's page: one self-contained HTML file."),
    "compare": ("compare", "compare", "Compare two runs: every change with its interval and significance."),
    "eval": ("eval", "eval_command", "Score a TREC run file against qrels, as trec_eval -c does."),
    "judge": ("judge", "judge_group", "Judges that grade (question, result) pairs 0–3 where nobody labelled them."),
    "watch": ("run", "watch", "Run CONFIG whenever its golden file has new content."),
    "serve": ("serve", "serve", "Serve the Evaluate page and the REST routes over a store of runs."),
    "users": ("serve", "users", "People and API keys of `vx-eval serve`."),
    "grade": ("serve", "grade", "Grade (question, passage) pairs of CONFIG's newest run in your browser, 0-3."),
    "plugins": ("plugins", "plugins_command", "What is installed: engines, setups, stores, writers, judges."),
}


class LazyGroup(click.Group):
    """A group whose commands are imported when they are used, listed from `COMMANDS` without importing."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attribute, _ = COMMANDS[name]
        command = getattr(importlib.import_module(f"vx_eval.cli.{module}"), attribute)
        return command if isinstance(command, click.Command) else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from vx_eval import __version__  # lazy: reading the installed version costs 20 ms (importlib.metadata)

        click.echo(f"vx-eval, version {__version__}")
        ctx.exit()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_version, help="Show the version.")
def cli() -> None:
    """Evaluate every search setup on your own golden questions."""


def _show_error(exc: Any) -> None:

    from vx_eval.cli.common import err_console  # lazy: it loads rich too

    lines = redact(str(exc)).splitlines() or [type(exc).__name__]
    console = err_console()

    console.print(f"[red]error:[/] {_rich_markup.escape(lines[0])}", highlight=False)
    for line in lines[1:]:
        console.print(f"  {_rich_markup.escape(line)}", highlight=False)


LOCAL_ONLY = frozenset({"eval"})
"""Commands that read local files and load no client library: they skip loading `logging` (6 ms of a
process that may take 0.3 s in all, the time trec_eval users compare)."""


def main(argv: list[str] | None = None) -> None:
    """Entry point: a `VxEvalError` is a clear message and exit 2; anything else is a bug (exit 1) whose
    traceback is printed with every secret this process read masked."""
    install_redacting_excepthook()
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in LOCAL_ONLY:
        # Client libraries log every retried request (opensearch-py at WARNING, with the address); vx-eval
        # reports what failed itself, so their records go nowhere instead of Python's last-resort stderr.
        import logging  # lazy: 6 ms `eval` does not pay (LOCAL_ONLY)

        logging.getLogger().addHandler(logging.NullHandler())
    try:
        cli.main(args=argv, prog_name="vx-eval", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except VxEvalError as exc:
        _show_error(exc)
        sys.exit(exc.exit_code)
    except OSError as exc:  # a full or read-only disk wherever it is met (an index, a cache): one line, exit 2
        from vx_eval.core.stores import full_error  # lazy: pydantic is loaded only on a full disk

        full = full_error(exc, exc.filename or "a file vx-eval was writing")
        if full is None:
            raise
        _show_error(f"{full}: free space and run the command again")
        sys.exit(2)
