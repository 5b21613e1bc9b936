"""The `vx-eval` command line: parses arguments, calls the core, shows the result. Nothing else."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vx_eval import __version__
from vx_eval.api import template_rows
from vx_eval.core.config import load_config
from vx_eval.core.errors import GoldenError, VxEvalError, redact
from vx_eval.core.golden import dump_rows, lint
from vx_eval.core.history import golden_bytes, list_runs, read_report
from vx_eval.core.importers import bedrock_golden_bytes, trec_golden_bytes
from vx_eval.core.plugins import load_plugins
from vx_eval.core.run import RunOptions, open_targets, run_experiment
from vx_eval.core.sources import beir_golden_bytes
from vx_eval.core.stores import Stores
from vx_eval.core.watch import Outcome, Watcher
from vx_eval.display import RichProgress, runs_table, show_comparison, show_judge_check, show_run

# Piped output (CI logs, files) gets a wide page instead of rich's 80 columns; COLUMNS still wins.
_WIDTH = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 150
err = Console(stderr=True, width=_WIDTH, soft_wrap=True)
out = Console(width=_WIDTH, soft_wrap=True)


def _location(value: str | None) -> str | None:
    """A location given on the command line: local paths are relative to the current folder."""
    from vx_eval.core.config import is_uri

    return value if value is None or is_uri(value) else str(Path(value).expanduser().resolve())


def _new_file(stores: Stores, out_file: str, force: bool) -> str:
    """The location of --out, refused when something is there already and --force was not given."""
    location = _location(out_file)
    if stores.exists(location) and not force:
        raise GoldenError(f"{out_file} exists; choose another --out, or pass --force to overwrite it")
    return location


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vx-eval")
def cli() -> None:
    """Evaluate every search setup on your own golden questions."""


@cli.command()
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--save-to", help="Where the report goes (overrides the config's save_to).")
@click.option("--only", multiple=True, metavar="KEY", help="Run only these setup keys (globs allowed).")
@click.option("--skip", multiple=True, metavar="METHOD", help="Leave out a method (keyword, dense, …).")
@click.option("--balance", type=click.FloatRange(0, 100), help="Points for best_for_balance (default 4).")
@click.option("--time", "time_points", type=click.FloatRange(0, 100), help="Points for best_for_time (default 8).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON instead of the table.")
@click.option("--no-save", is_flag=True, help="Do not save the report.")
@click.option("--resume", metavar="RUN", help="Finish a run that was stopped: only what did not finish is searched.")
@click.option(
    "--executor", type=click.Choice(["serial", "thread", "dask"]), help="Who runs the searches (default: the config's)."
)
@click.option("--address", help="With --executor dask: the scheduler, tcp://host:8786 (default: a LocalCluster).")
@click.option("--html", "html_file", help="Also write the run's page, one self-contained HTML file, here.")
def run(
    config, save_to, only, skip, balance, time_points, as_json, no_save, resume, executor, address, html_file
) -> None:
    """Index what CONFIG declares, search every setup, print the ranking and the picks, save the report."""
    plugins = load_plugins()
    experiment = load_config(config, plugins)
    with RichProgress(err) as progress:
        options = RunOptions(
            save_to=_location(save_to),
            only=only,
            skip=skip,
            balance=balance,
            time=time_points,
            save=not no_save,
            progress=progress,
            resume=resume,
            executor=executor,
            address=address,
        )
        result = run_experiment(experiment, plugins, options)
    if as_json:
        click.echo(json.dumps(result.report, indent=1, ensure_ascii=False))
    else:
        show_run(out, result.report, result.location)
    if html_file:
        save_to = _location(save_to) or experiment.config.save_to
        stores = Stores(plugins, options=experiment.stores)
        _write_page(stores, html_file, result.report, save_to if result.location else None)
    if result.report["status"] == "failed":
        err.print(
            "[red]error:[/] the run failed: no setup could be scored "
            "(every search failed, or every question was skipped; the reasons are above)"
        )
        sys.exit(1)


@cli.group()
def golden() -> None:
    """Write, check and import golden questions."""


@golden.command("check")
@click.argument("file")
@click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also look every expected id up on this config's targets.",
)
def golden_check(file: str, config: Path | None) -> None:
    """Lint a golden FILE: every defect on every line, at once."""
    plugins = load_plugins()
    stores = Stores(plugins)
    raw = stores.read(_location(file))
    defects, rows = lint(raw)
    for defect in defects:
        err.print(escape(defect.render(file)), highlight=False)
    filled = [r for _, r in rows if r.question.strip()]
    problems = len(defects)
    if config is not None and not defects:
        experiment = load_config(config, plugins)
        targets = open_targets(experiment, plugins, stores, RichProgress(err))
        wanted = {u.split("#page=")[0] for r in filled for u in r.expected}
        for target in targets:
            absent = sorted(target.handle.missing(wanted))
            target.handle.close()
            for doc in absent:
                err.print(f"{file}: expected document '{doc}' is not in {target.name}", highlight=False)
            problems += len(absent)
    if problems:
        err.print(f"[red]{problems} problem{'s' * (problems != 1)}[/] in {file}")
        sys.exit(2)
    unfilled = len(rows) - len(filled)
    unlabelled = sum(1 for r in filled if not r.expected)
    out.print(
        f"{file}: {len(filled) - unlabelled} questions ok"
        + (f", {unlabelled} with a reference answer but no expected ids yet (not scored)" if unlabelled else "")
        + (f", {unfilled} rows still to fill" if unfilled else "")
    )


@golden.command("template")
@click.argument("configs", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "out_file", required=True, help="The golden file to write (never overwritten).")
@click.option("-n", "count", default=50, show_default=True, type=click.IntRange(1), help="Rows to write.")
@click.option("--seed", default=0, show_default=True, help="Same seed + same collection = same rows.")
@click.option(
    "--by",
    type=click.Choice(["document", "page"]),
    default="document",
    show_default=True,
    help="A row per document drawn at random, or per page spread evenly through the collection.",
)
@click.option("--writer", default="template", show_default=True, help="Question writer plugin.")
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def golden_template(configs, out_file: str, count: int, seed: int, by: str, writer: str, force: bool) -> None:
    """Rows to fill in from the collections of CONFIGS (one file for all): expected filled, a hint saying
    where the unit is and how it starts."""
    plugins = load_plugins()
    stores = Stores(plugins)
    target_location = _new_file(stores, out_file, force)
    with RichProgress(err) as progress:
        rows, names = template_rows(list(configs), count, seed=seed, by=by, writer_plugin=writer, progress=progress)
    stores.write(target_location, dump_rows(rows))
    out.print(f"Wrote {len(rows)} rows to {out_file} from {', '.join(names)}; fill in each `question`.")


@golden.command("write")
@click.argument("configs", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "out_file", required=True, help="The golden file to write (never overwritten).")
@click.option("-n", "count", default=50, show_default=True, type=click.IntRange(1), help="Questions wanted.")
@click.option(
    "--writer", required=True, help="A model writer: local (offline) or chat (an OpenAI-compatible endpoint)."
)
@click.option("--seed", default=0, show_default=True, help="Same seed + same collection = same passages and prompts.")
@click.option("--by", type=click.Choice(["document", "page"]), default="document", show_default=True)
@click.option("--mix", metavar="KIND=SHARE,…", help="Kinds of question: fact, why, keyword, persona, two-passage.")
@click.option(
    "--threshold", default=3, show_default=True, type=click.IntRange(1, 5), help="The critic's lowest score (1-5)."
)
def golden_write(configs, out_file, count, writer, seed, by, mix, threshold) -> None:
    """Draft questions from the documents of one or several CONFIGs (spread over their collections) with a
    model, check each, let a critic judge it (rows marked draft: true); the writer's options come from the
    first config. Answers are cached: a rerun costs nothing and an interrupted one resumes."""
    from vx_eval.api import write_golden_rows

    plugins = load_plugins()
    stores = Stores(plugins)
    target = _location(out_file)
    if stores.exists(target):
        raise GoldenError(f"{out_file} exists; a written golden file is never overwritten: choose another --out")
    from vx_eval.plugins.writers.drafting import parse_mix

    shares = parse_mix(mix) if mix else None
    with RichProgress(err) as progress:
        rows, summary = write_golden_rows(
            configs, count, writer_plugin=writer, seed=seed, by=by, mix=shares, threshold=threshold, progress=progress
        )
    if not rows:
        raise GoldenError(f"no draft passed the checks and the critic ({summary['tries']} tries); nothing written")
    stores.write(target, dump_rows(rows))
    failed = ", ".join(f"{k}: {v}" for k, v in sorted(summary["failed_checks"].items())) or "none"
    err.print(
        f"wrote {len(rows)} draft questions to {out_file} ({summary['tries']} drafts tried on {summary['passages']} "
        f"passages; failed checks {failed}; refused by the critic {summary['critic_refused']}, its answer unreadable "
        f"{summary['critic_unreadable']}; model calls {summary['asked']})",
        highlight=False,
    )
    if len(rows) < count:
        err.print(f"[yellow]warning:[/] {count} asked, {len(rows)} passed; try another --seed or a stronger --writer")


@golden.command("import")
@click.option("--from", "fmt", type=click.Choice(["beir", "bedrock", "trec"]), required=True, help="The source format.")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option("--out", "out_file", required=True, help="The golden JSONL to write.")
@click.option("--split", default="test", show_default=True, help="beir: the qrels split to read.")
@click.option("--qrels", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="trec: the qrels file.")
@click.option(
    "--field",
    type=click.Choice(["title", "desc"]),
    default="title",
    show_default=True,
    help="trec: which topic field is the question.",
)
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def golden_import(
    fmt: str, source: Path, out_file: str, split: str, qrels: Path | None, field: str, force: bool
) -> None:
    """Convert SOURCE into a golden file: a BEIR folder (queries.jsonl + qrels/SPLIT.tsv), a Bedrock evaluation
    dataset (JSONL conversations: questions with reference answers, unscored until labelled), or TREC topics
    (with --qrels)."""
    stores = Stores(load_plugins())
    target_location = _new_file(stores, out_file, force)
    if fmt == "beir":
        if not source.is_dir():
            raise GoldenError(f"{source} is not a BEIR folder (queries.jsonl + qrels/); name the folder")
        data = beir_golden_bytes(str(source), split)
        note = ""
    elif fmt == "bedrock":
        data, _ = bedrock_golden_bytes(source.read_bytes(), str(source))
        note = " with reference answers and no expected ids yet: they are counted, not scored, until labelled"
    else:
        if qrels is None:
            raise GoldenError("--from trec needs --qrels QRELS (the judgements for these topics)")
        data, _ = trec_golden_bytes(
            source.read_text(encoding="utf-8", errors="replace"),
            qrels.read_text(encoding="utf-8"),
            str(source),
            str(qrels),
            field,
        )
        note = ""
    stores.write(target_location, data)
    count = len(data.splitlines())
    out.print(f"Wrote {count} questions to {out_file}{note}")


@cli.command()
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--settle",
    default=60.0,
    show_default=True,
    type=click.FloatRange(0),
    help="Seconds a new golden file must stay the same before it runs.",
)
@click.option(
    "--poll",
    default=10.0,
    show_default=True,
    type=click.FloatRange(0.1),
    help="Seconds between looks at the golden file.",
)
@click.option("--once", is_flag=True, help="Look once (settling if it is new), run if needed, and stop.")
def watch(config: Path, settle: float, poll: float, once: bool) -> None:
    """Run CONFIG whenever its golden file (a path, s3://…, a Blob address) has new content."""
    plugins = load_plugins()

    def report(outcome: Outcome) -> bool:
        if outcome.action == "ran":
            show_run(out, outcome.result.report, outcome.result.location)
        elif once:
            err.print(f"golden {outcome.sha256[:12]}… was run before; nothing to do")
        return once

    with RichProgress(err) as progress:
        err.print(f"watching the golden file of {config} (settle {settle:g} s, every {poll:g} s); Ctrl-C stops")
        Watcher(config, plugins, settle, options=RunOptions(progress=progress)).watch(poll, until=report)


def _runs_place(location: str | None, config: Path | None) -> tuple[str, Stores]:
    """Where runs are kept: LOCATION, or the config's save_to (with the config's store settings)."""
    plugins = load_plugins()
    if config is not None:
        experiment = load_config(config, plugins)
        return _location(location) or experiment.config.save_to, Stores(plugins, options=experiment.stores)
    if location is None:
        raise VxEvalError(
            "name where the runs are kept: `vx-eval runs list LOCATION`, or --config CONFIG for its save_to"
        )
    return _location(location), Stores(plugins)


_where = click.argument("location", required=False)
_config = click.option(
    "--config", type=click.Path(dir_okay=False, path_type=Path), help="Read the runs at this config's save_to."
)


@cli.group()
def runs() -> None:
    """The runs kept at a location (a folder, s3://…, a Blob address): list, show, golden."""


@runs.command("list")
@_where
@_config
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1), help="Runs per page.")
@click.option("--offset", default=0, show_default=True, type=click.IntRange(0), help="Runs to skip (newest first).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def runs_list(location, config, limit, offset, as_json) -> None:
    """Saved runs, newest first: collections, golden file, questions, picks."""
    save_to, stores = _runs_place(location, config)
    entries, total = list_runs(stores, save_to, limit, offset)
    if as_json:
        click.echo(json.dumps({"total": total, "offset": offset, "runs": [e.as_dict() for e in entries]}, indent=1))
        return
    out.print(runs_table(entries, total, offset, save_to))


@runs.command("show")
@click.argument("run_id", metavar="RUN")
@_where
@_config
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def runs_show(run_id, location, config, as_json) -> None:
    """One run's ranking and picks (RUN is a run id, or `latest`)."""
    save_to, stores = _runs_place(location, config)
    report = read_report(stores, save_to, run_id)
    if as_json:
        click.echo(json.dumps(report, indent=1, ensure_ascii=False))
    else:
        show_run(out, report, None)


@runs.command("golden")
@click.argument("run_id", metavar="RUN")
@_where
@_config
@click.option("--out", "out_file", required=True, help="Where to write the golden file the run read.")
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def runs_golden(run_id, location, config, out_file, force) -> None:
    """Give back the exact golden file RUN read, even after it changed."""
    save_to, stores = _runs_place(location, config)
    report = read_report(stores, save_to, run_id)
    data = golden_bytes(stores, save_to, report)
    target = _new_file(stores, out_file, force)
    stores.write(target, data)
    sha = report["golden"]["sha256"]
    err.print(f"wrote the golden file of run {report['id']} ({len(data):,} bytes, sha256 {sha[:12]}…) to {out_file}")


def _write_page(stores: Stores, html_file: str, report: dict, save_to: str | None) -> None:
    from vx_eval.html import page_for

    page = page_for(report, stores, save_to).encode("utf-8")
    stores.write(_location(html_file), page)
    err.print(f"wrote the page of run {report['id']} ({len(page) / 1e6:.2f} MB, self-contained) to {html_file}")


@cli.command("report")
@click.argument("run_id", metavar="RUN")
@_where
@_config
@click.option("--html", "html_file", required=True, help="The HTML file to write (one file, no network needed).")
def report_page(run_id, location, config, html_file) -> None:
    """Write RUN's page (a run id, or `latest`): picks, charts, every setup ranked and a page per setup."""
    save_to, stores = _runs_place(location, config)
    _write_page(stores, html_file, read_report(stores, save_to, run_id), save_to)


@cli.group("judge")
def judge_group() -> None:
    """Judges that grade (question, result) pairs 0–3 where nobody labelled them."""


@judge_group.command("check")
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--judge", "name", required=True, help="The judge plugin to check (see `vx-eval plugins`).")
@click.option("--depth", default=10, show_default=True, type=click.IntRange(1), help="Results graded per setup.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def judge_check(config: Path, name: str, depth: int, as_json: bool) -> None:
    """Measure a judge against the human grades of CONFIG's golden file: weighted kappa, the confusion matrix,
    and whether it orders the setups as people's grades do (Kendall's tau on DCG@10). Nothing is saved."""
    from vx_eval.core.judging import check_judge

    plugins = load_plugins()
    experiment = load_config(config, plugins)
    with RichProgress(err) as progress:
        result = check_judge(experiment, plugins, name, depth, progress)
    if as_json:
        click.echo(json.dumps(result, indent=1))
        return
    show_judge_check(out, result)


def _users_file(value: str | None) -> Path:
    """The users file: --users, else VX_EVAL_USERS, else ~/.config/vx-eval/users.json."""
    chosen = value or os.environ.get("VX_EVAL_USERS") or str(Path.home() / ".config" / "vx-eval" / "users.json")
    return Path(chosen).expanduser().resolve()


_users_option = click.option(
    "--users", "users_file", help="The users file (default: VX_EVAL_USERS, else ~/.config/vx-eval/users.json)."
)


@cli.command()
@click.option(
    "--store", help="Where the runs are: a folder, s3://bucket/prefix or a Blob address (default: VX_EVAL_EVALUATIONS)."
)
@_users_option
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="The port to listen on.")
@click.option("--no-guests", is_flag=True, help="Only people signed in and API keys may read runs.")
@click.option(
    "--access-log",
    type=click.Path(dir_okay=False, path_type=Path),
    help="JSON lines, one per request (default: access.log beside the users file).",
)
@click.option("--secure-cookies", is_flag=True, help="Send the session cookie over HTTPS only (behind a TLS proxy).")
@_config
def serve(store, users_file, host, port, no_guests, access_log, secure_cookies, config) -> None:
    """Serve the Evaluate page (newest run, older runs, each setup's page) and the REST routes over a store."""
    try:
        import uvicorn

        from vx_eval.serve.app import ServeSettings, create_app
    except ImportError:
        raise VxEvalError('vx-eval serve needs its extra: pip install "vx-eval[serve]"') from None

    plugins = load_plugins()
    stores = Stores(plugins)
    if config is not None:  # its save_to is the default store, its `stores:` settings reach S3 and Blob
        experiment = load_config(config, plugins)
        stores = Stores(plugins, options=experiment.stores)
        store = store or experiment.config.save_to
    store = _location(store or os.environ.get("VX_EVAL_EVALUATIONS"))
    if not store:
        raise VxEvalError("name the runs to serve: --store LOCATION, --config CONFIG, or set VX_EVAL_EVALUATIONS")
    users = _users_file(users_file)
    settings = ServeSettings(
        store=store,
        users=users,
        guests=not no_guests,
        admin_key=os.environ.get("VX_EVAL_ADMIN_KEY") or None,
        access_log=access_log or users.with_name("access.log"),
        secure_cookies=secure_cookies,
    )
    app = create_app(settings, stores)
    err.print(f"serving the runs at {store} on http://{host}:{port} (access log: {settings.access_log})")
    uvicorn.run(app, host=host, port=port, log_level="warning")


@cli.group()
def users() -> None:
    """People and API keys of `vx-eval serve`."""


@users.command("add")
@click.argument("name")
@click.option(
    "--role", type=click.Choice(["reader", "admin"]), default="reader", show_default=True, help="What they may do."
)
@_users_option
@click.option("--password-stdin", is_flag=True, help="Read the password from standard input instead of a prompt.")
def users_add(name, role, users_file, password_stdin) -> None:
    """Add a person (or change their role and password); the password is kept only as an argon2 hash."""
    from vx_eval.serve.auth import Users

    if password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    path = _users_file(users_file)
    Users(path).add_person(name, password, role)
    err.print(f"{name} ({role}) is in {path}")


@users.command("key")
@click.argument("name")
@click.option("--role", type=click.Choice(["reader", "admin"]), help="The key's role (default: the person's).")
@_users_option
def users_key(name, role, users_file) -> None:
    """Make an API key for NAME; it is printed once and kept only as a hash."""
    from vx_eval.serve.auth import Users

    click.echo(Users(_users_file(users_file)).add_key(name, role))


@cli.command("eval")
@click.argument("qrels", type=click.Path(path_type=Path))
@click.argument("run_file", metavar="RUN", type=click.Path(path_type=Path))
@click.option(
    "-m",
    "--measure",
    "measures",
    multiple=True,
    metavar="MEASURE",
    help="A measure to compute (repeatable; trec_eval names work too). Default: ndcg@10 map recall@100 mrr p@10.",
)
@click.option(
    "-l",
    "--level",
    "threshold",
    default=1,
    show_default=True,
    type=click.IntRange(1),
    help="Grade from which a document counts as relevant for binary measures (trec_eval -l).",
)
@click.option("-q", "--per-query", is_flag=True, help="Also print every question's values.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: measure -> mean (with -q, per question too).")
def eval_command(
    qrels: Path, run_file: Path, measures: tuple[str, ...], threshold: int, per_query: bool, as_json: bool
) -> None:
    """Score a TREC RUN file against QRELS (TREC qrels or a golden file), as `trec_eval -c` does."""
    from vx_eval.core.trec import DEFAULT_MEASURES, evaluate_run, read_judgements, read_run

    evaluation = evaluate_run(
        read_judgements(qrels), read_run(run_file), measures or DEFAULT_MEASURES, threshold=threshold
    )
    for warning in evaluation.warnings:
        err.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    means = evaluation.means()
    if as_json:
        if per_query:
            rows = {
                q: dict(zip(evaluation.measures, map(float, v), strict=True))
                for q, v in zip(evaluation.question_ids, evaluation.values, strict=True)
            }
            click.echo(json.dumps({"all": means, "per_query": rows}, indent=1))
        else:
            click.echo(json.dumps(means, indent=1))
        return
    if per_query:
        for qid, values in zip(evaluation.question_ids, evaluation.values, strict=True):
            for name, value in zip(evaluation.measures, values, strict=True):
                click.echo(f"{name:<16}\t{qid}\t{value:.4f}")
    click.echo(f"{'num_q':<16}\tall\t{len(evaluation.question_ids)}")
    for name, value in means.items():
        click.echo(f"{name:<16}\tall\t{value:.4f}")


@cli.command()
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
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def compare(
    before: str,
    after: str,
    runs: str,
    gates: tuple[str, ...],
    allow_different_golden: bool,
    only_measures: tuple[str, ...],
    as_json: bool,
) -> None:
    """Compare two runs (ids, `latest`, or paths): every change with its interval and significance."""
    from vx_eval.core.compare import Gate, compare_reports, failed_gates, load_report
    from vx_eval.core.metrics import parse

    parsed_gates = [Gate.parse(g) for g in gates]
    stores = Stores(load_plugins())
    runs_at = _location(runs)
    comparison = compare_reports(
        load_report(before, stores, runs_at),
        load_report(after, stores, runs_at),
        allow_different_golden=allow_different_golden,
    )
    shown = {parse(m).name for m in only_measures}
    tripped = failed_gates(comparison, parsed_gates)
    if as_json:
        click.echo(json.dumps({**comparison, "failed_gates": tripped}, indent=1))
    else:
        show_comparison(out, comparison, shown)
        for line in tripped:
            err.print(f"[red]gate failed:[/] {escape(line)}", highlight=False)
        if parsed_gates and not tripped:
            out.print(f"All {len(parsed_gates)} gate{'s' * (len(parsed_gates) != 1)} passed.")
    if tripped:
        sys.exit(3)


@cli.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def plugins_command(as_json: bool) -> None:
    """What is installed: engines, setups, stores, writers, judges, with the packages that ship them."""
    plugins = load_plugins()
    roles = {
        role: getattr(plugins, role).names() for role in ("engines", "setups", "stores", "writers", "judges", "models")
    }
    if as_json:
        click.echo(json.dumps({"roles": roles, "plugins": plugins.distributions()}, indent=1))
        return
    table = Table(title="vx-eval plugins", title_justify="left")
    for column in ("plugin", "package", "version", "module"):
        table.add_column(column)
    for row in plugins.distributions():
        table.add_row(row["name"], row["package"] or "", row["version"] or "", row["module"])
    out.print(table)
    for role, names in roles.items():
        out.print(f"{role}: {', '.join(names) or '—'}", highlight=False)
    disabled = os.environ.get("VX_EVAL_DISABLE_PLUGINS")
    if disabled:
        out.print(f"disabled by VX_EVAL_DISABLE_PLUGINS: {disabled}", highlight=False)


def main(argv: list[str] | None = None) -> None:
    """Entry point: a `VxEvalError` is a one-line message and exit 2; anything else is a bug (exit 1)."""
    try:
        cli.main(args=argv, prog_name="vx-eval", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2)
    except click.exceptions.Abort:
        err.print("aborted")
        sys.exit(130)
    except VxEvalError as exc:
        lines = redact(str(exc)).splitlines() or [type(exc).__name__]
        err.print(f"[red]error:[/] {escape(lines[0])}", highlight=False)
        for line in lines[1:]:
            err.print(f"  {escape(line)}", highlight=False)
        sys.exit(exc.exit_code)
