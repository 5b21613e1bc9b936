"""`vx-eval serve` and `vx-eval users`: the Evaluate server, and the people and keys it knows."""

from __future__ import annotations

import os
import re
import sys
import threading
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import click

from vx_eval.cli.common import config_option, err_console, location
from vx_eval.core.config.experiment import load_config
from vx_eval.core.errors import VxEvalError
from vx_eval.core.plugins import load_plugins
from vx_eval.core.stores import Stores
from vx_eval.serve.auth import KEY_PREFIX, Users
from vx_eval.serve.bounds import MIB, Limits

if TYPE_CHECKING:
    from vx_eval.core.plugins import Plugins


def users_file(value: str | None) -> Path:
    """The users file: --users, else VX_EVAL_USERS, else ~/.config/vx-eval/users.json."""
    chosen = value or os.environ.get("VX_EVAL_USERS") or str(Path.home() / ".config" / "vx-eval" / "users.json")
    return Path(chosen).expanduser().resolve()


users_option = click.option(
    "--users", "users_path", help="The users file (default: VX_EVAL_USERS, else ~/.config/vx-eval/users.json)."
)


@click.command()
@click.option(
    "--store", help="Where the runs are: a folder, s3://bucket/prefix or a Blob address (default: VX_EVAL_EVALUATIONS)."
)
@users_option
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="The port to listen on.")
@click.option("--no-guests", is_flag=True, help="Only people signed in and API keys may read runs.")
@click.option(
    "--access-log",
    type=click.Path(dir_okay=False, path_type=Path),
    help="JSON lines, one per request (default: access.log beside the users file).",
)
@click.option("--secure-cookies", is_flag=True, help="Send the session cookie over HTTPS only (behind a TLS proxy).")
@config_option
@click.option(
    "--experiments",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="A folder of configs the server may run (each by its name); --config's is one too.",
)
@click.option(
    "--target",
    "targets",
    multiple=True,
    metavar="NAME=ENGINE:WHERE",
    help="An index runners may start a run on with no configuration (questions drafted, grades a judge's), "
    "by NAME; repeat for more.",
)
@click.option("--workers", default=2, show_default=True, type=click.IntRange(1, 64), help="Runs at once.")
@click.option(
    "--jobs", "jobs_path", type=click.Path(file_okay=False, path_type=Path), help="Where started runs are queued."
)
@click.option(
    "--max-body", default=Limits.max_body // MIB, show_default=True, type=click.IntRange(1, 1024), metavar="MIB",
    help="Largest request body, in MiB (413 past it, refused before it is read whole).",
)  # fmt: skip
@click.option(
    "--max-dataset-rows", default=Limits.max_rows, show_default=True, type=click.IntRange(1, 10_000_000),
    help="Most questions in one dataset (any JSON array in a body), 413 past it.",
)  # fmt: skip
@click.option(
    "--max-queued", default=Limits.max_queued, show_default=True, type=click.IntRange(1, 1_000_000),
    help="Most runs waiting or running at once, from everyone (429 past it).",
)  # fmt: skip
@click.option(
    "--max-queued-per-person", default=Limits.max_queued_per_person, show_default=True,
    type=click.IntRange(1, 1_000_000), help="Most runs waiting or running at once per person and per key (429).",
)  # fmt: skip
@click.option(
    "--keep-jobs-days", default=Limits.keep_jobs_days, show_default=True, type=click.FloatRange(0, 36_500),
    help="Days a finished run's job files (status, log, progress) are kept; its report stays in the store.",
)  # fmt: skip
@click.option(
    "--keep-jobs", default=Limits.keep_jobs, show_default=True, type=click.IntRange(0),
    help="Most finished runs whose job files are kept (the newest).",
)  # fmt: skip
@click.option(
    "--head-timeout", default=Limits.head_timeout, show_default=True, type=click.FloatRange(0.1, 3600),
    metavar="SECONDS", help="Most a connection may take to send a request's headers (408 and closed past it).",
)  # fmt: skip
@click.option(
    "--body-timeout", default=Limits.body_timeout, show_default=True, type=click.FloatRange(0.1, 3600),
    metavar="SECONDS", help="Most a request's body may take to arrive in all (408 past it).",
)  # fmt: skip
def serve(
    store: str | None,
    users_path: str | None,
    host: str,
    port: int,
    no_guests: bool,
    access_log: Path | None,
    secure_cookies: bool,
    config: Path | None,
    experiments: Path | None,
    targets: tuple[str, ...],
    workers: int,
    jobs_path: Path | None,
    max_body: int,
    max_dataset_rows: int,
    max_queued: int,
    max_queued_per_person: int,
    keep_jobs_days: float,
    keep_jobs: int,
    head_timeout: float,
    body_timeout: float,
) -> None:
    """Serve the Evaluate page (newest run, older runs, each setup's page) and the REST routes over a store."""
    try:
        # lazy: an optional dependency (vx-eval[serve]), loaded only where it is used
        import uvicorn

        from vx_eval.serve.app import ServeSettings, create_app  # lazy: FastAPI (vx-eval[serve]) loads with it
        from vx_eval.serve.limits import head_deadline  # lazy: uvicorn's protocol, of the same extra
    except ImportError:
        raise VxEvalError('vx-eval serve needs its extra: pip install "vx-eval[serve]"') from None

    plugins = load_plugins()
    stores = Stores(plugins)
    known: dict[str, Path] = {}
    for path in sorted(experiments.glob("*.y*ml")) if experiments else []:
        known.setdefault(load_config(path, plugins).config.name, path.resolve())
    if config is not None:  # its save_to is the default store, its `stores:` settings reach S3 and Blob
        experiment = load_config(config, plugins)
        stores = Stores(plugins, options=experiment.stores)
        store = store or experiment.config.save_to
        known[experiment.config.name] = config.resolve()
    named = _targets(targets, plugins)
    served = location(store or os.environ.get("VX_EVAL_EVALUATIONS"))
    if not served:
        raise VxEvalError("name the runs to serve: --store LOCATION, --config CONFIG, or set VX_EVAL_EVALUATIONS")
    users = users_file(users_path)
    settings = ServeSettings(
        store=served,
        users=users,
        guests=not no_guests,
        admin_key=os.environ.get("VX_EVAL_ADMIN_KEY") or None,
        access_log=access_log or users.with_name("access.log"),
        secure_cookies=secure_cookies,
        experiments=known,
        targets=named,
        jobs=jobs_path.resolve() if jobs_path else None,
        workers=workers,
        limits=Limits(
            max_body=max_body * MIB,
            max_rows=max_dataset_rows,
            max_queued=max_queued,
            max_queued_per_person=max_queued_per_person,
            keep_jobs_days=keep_jobs_days,
            keep_jobs=keep_jobs,
            head_timeout=head_timeout,
            body_timeout=body_timeout,
        ),
    )
    app = create_app(settings, stores)
    err_console().print(
        f"serving the runs at {served} on http://{host}:{port} (access log: {settings.access_log})", highlight=False
    )

    http = head_deadline(settings.limits.head_timeout)  # a slow client's head answered 408, not waited for
    uvicorn.run(app, host=host, port=port, log_level="warning", http=http)


def _targets(given: tuple[str, ...], plugins: Plugins) -> dict[str, str]:
    """``NAME=ENGINE:WHERE`` each: the engine must be installed (what its index holds is read by the run)."""
    named: dict[str, str] = {}
    for item in given:
        name, _, spec = item.partition("=")
        engine, sep, where = spec.partition(":")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}", name) or not sep or not where:
            raise click.BadParameter(
                "write NAME=ENGINE:WHERE, e.g. help=sqlite:.vx/help.db (NAME: letters, digits, - _ .)",
                param_hint="--target",
            )
        plugins.engines.get(engine, where="--target")
        if name in named:
            raise click.BadParameter(f"the name {name!r} is given twice", param_hint="--target")
        named[name] = spec
    return named


@click.group()
def users() -> None:
    """People and API keys of `vx-eval serve`."""


@users.command("add")
@click.argument("name")
@click.option(
    "--role",
    type=click.Choice(["reader", "rater", "runner", "admin"]),
    default="reader",
    show_default=True,
    help="What they may do: read runs; also grade pairs on the grading page (rater); also start runs and manage "
    "datasets (runner); all of it and read golden text (admin).",
)
@users_option
@click.option("--password-stdin", is_flag=True, help="Read the password from standard input instead of a prompt.")
def users_add(name: str, role: str, users_path: str | None, password_stdin: bool) -> None:
    """Add a person (or change their role and password); the password is kept only as an argon2 hash."""
    if password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    path = users_file(users_path)
    Users(path).add_person(name, password, role)
    err_console().print(f"{name} ({role}) is in {path}", highlight=False)


class _KeyGroup(click.Group):
    """`users key NAME` makes a key, as it always did; `users key list` and `users key revoke ID` manage them."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["make", *args]
        return super().parse_args(ctx, args)


@users.group("key", cls=_KeyGroup)
def users_key() -> None:
    """API keys: `key NAME` makes one (printed once, kept only as a hash), `key list`, `key revoke ID`. A key
    acts with the lesser of its role and its person's current one, and ends when its person is removed, signs
    out everywhere or changes password."""


@users_key.command("make")
@click.argument("name")
@click.option(
    "--role", type=click.Choice(["reader", "rater", "runner", "admin"]), help="The key's role (default: the person's)."
)
@users_option
def users_key_make(name: str, role: str | None, users_path: str | None) -> None:
    """Make an API key for NAME; it is printed once and kept only as a hash."""
    click.echo(Users(users_file(users_path)).add_key(name, role))


@users_key.command("list")
@users_option
def users_key_list(users_path: str | None) -> None:
    """Every key: its id, whose it is, its role, and whether it acts now (never its secret)."""
    for key_id, key, standing in Users(users_file(users_path)).list_keys():
        click.echo(f"{key_id}\t{key.name}\t{key.role}\t{standing}")


@users_key.command("revoke")
@click.argument("key_id", metavar="ID")
@users_option
def users_key_revoke(key_id: str, users_path: str | None) -> None:
    """Revoke the key with this ID (as `users key list` shows it, or the 8 characters after vxk_)."""
    given = key_id.removeprefix(KEY_PREFIX).split("_", 1)[0]  # a whole key pasted is read as its id
    key = Users(users_file(users_path)).revoke_key(given)
    err_console().print(f"the key {given} of {key.name} is revoked", highlight=False)


@users.command("remove")
@click.argument("name")
@users_option
def users_remove(name: str, users_path: str | None) -> None:
    """Remove NAME: their sessions and every key made for them end at once."""
    path = users_file(users_path)
    keys = Users(path).remove_person(name)
    err_console().print(f"{name} is removed from {path}, with {keys} key{'s' * (keys != 1)}", highlight=False)


@users.command("signout")
@click.argument("name")
@users_option
def users_signout(name: str, users_path: str | None) -> None:
    """End every session NAME has, on every device (a new password does this too)."""
    path = users_file(users_path)
    Users(path).sign_out_everywhere(name)
    err_console().print(f"every session of {name} has ended ({path})", highlight=False)


@click.command("grade")
@click.argument("config", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@users_option
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="The port to listen on.")
@click.option("--no-browser", is_flag=True, help="Print the page's address; open no browser.")
def grade(config: Path, users_path: str | None, port: int, no_browser: bool) -> None:
    """Grade (question, passage) pairs of CONFIG's newest run in your browser, 0-3 by keyboard: the grading
    page of `vx-eval serve`, on this machine only. The grades are kept beside the golden file and the next
    `vx-eval run CONFIG` uses them."""
    name = load_config(config, load_plugins()).config.name
    people = Users(users_file(users_path)).load().people
    if not any(person.role in ("rater", "admin") for person in people.values()):
        raise VxEvalError(
            f"nobody in {users_file(users_path)} may grade: add yourself first, "
            "`vx-eval users add NAME --role rater` (a password is asked)"
        )
    url = f"http://127.0.0.1:{port}/grade/{quote(name)}"
    err_console().print(f"the grading page of {name}: {url} (sign in as a rater or an admin)", highlight=False)
    if not no_browser:
        threading.Timer(1.5, webbrowser.open, args=(url,)).start()
    click.get_current_context().invoke(serve, config=config, users_path=users_path, host="127.0.0.1", port=port)
