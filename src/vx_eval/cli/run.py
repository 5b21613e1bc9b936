"""`vx-eval run` and `vx-eval watch`: the main job, once or whenever the golden file changes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape

from vx_eval.cli.common import config_argument, err_console, location, out_console, wide_option, write_page

if TYPE_CHECKING:
    from vx_eval.autoconfig import AutoConfig, Source, WriterChoice
    from vx_eval.core.config.experiment import Experiment
    from vx_eval.core.plugins import Plugins
    from vx_eval.core.report.schema import Report
    from vx_eval.core.run.plan import Plan


@click.command()
@click.argument("config", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--docs",
    type=click.Path(dir_okay=False, path_type=Path),
    help="No config: index these documents (JSONL), draft questions, judge the results (see below).",
)
@click.option(
    "--target",
    "target_spec",
    metavar="ENGINE:WHERE",
    help="No config: an index that exists (sqlite:PATH, qdrant:URL/COLLECTION, pgvector:postgresql://USER@HOST/DB/"
    "TABLE, opensearch:URL/INDEX), searched as it is; otherwise as --docs.",
)
@click.option(
    "--model",
    "field_models",
    multiple=True,
    metavar="FIELD=MODEL",
    help="With --target: the model that made a vector field's vectors (minilm, or PROVIDER:MODEL such as "
    "openai:text-embedding-3-small; PROVIDER:MODEL@URL for a server of your own), so questions are embedded by it.",
)
@click.option(
    "--save-config", type=click.Path(dir_okay=False, path_type=Path), help="With --docs or --target: keep the config."
)
@click.option(
    "--questions", default=24, show_default=True, type=click.IntRange(1, 1000), help="With --docs: questions drafted."
)
@click.option(
    "--most-questions",
    type=click.IntRange(1, 10000),
    help="With --docs or --target: while the pick is not sure, draft more questions and run again, up to this "
    "many in all. Default: 4 times --questions.",
)
@click.option(
    "--writer",
    metavar="WRITER",
    help="With --docs or --target: who drafts them: chat:MODEL[@URL] (a served chat model: recommended), local "
    "(SmolLM2 offline), keywords (no model). Default: $VX_EVAL_WRITER, else local where installed, else keywords.",
)
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
@click.option("--run-id", help="The id the new run takes (as the server names its runs); default: made from the time.")
@click.option("--golden", "golden", help="Read these golden questions instead of the config's (a path, s3://…).")
@click.option("-m", "--metric", "metrics", multiple=True, help="Measure instead of the config's (repeatable).")
@click.option("-k", "k_values", multiple=True, type=click.IntRange(1), help="Cut-offs for measures named without one.")
@click.option(
    "--allow-failures",
    is_flag=True,
    help="Exit 0 even where some searches failed after every try (by default such a run exits 4: its setups' "
    "averages leave the failed questions out).",
)
@click.option(
    "--progress-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Keep how far the run is in this JSON file.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Say what the run would embed and judge, with estimates at this machine's measured speed (served "
    "models: requests and cost), and stop: nothing is indexed, searched or saved.",
)
@wide_option
def run(
    config: Path | None,
    docs: Path | None,
    target_spec: str | None,
    field_models: tuple[str, ...],
    save_config: Path | None,
    questions: int,
    most_questions: int | None,
    writer: str | None,
    save_to: str | None,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    balance: float | None,
    time_points: float | None,
    as_json: bool,
    no_save: bool,
    resume: str | None,
    executor: str | None,
    address: str | None,
    html_file: str | None,
    run_id: str | None,
    golden: str | None,
    metrics: tuple[str, ...],
    k_values: tuple[int, ...],
    allow_failures: bool,
    progress_file: Path | None,
    dry_run: bool,
    wide: bool,
) -> None:
    """Index what CONFIG declares, search every setup, print the ranking and the picks, save the report.

    With --docs FILE and no CONFIG, nothing else is needed: the documents are indexed for every method the
    embedded engine has, with and without the reranker; a model drafts questions from them (half natural
    language, half keywords; marked drafts); the cross-encoder judge grades every setup's top 10; DCG@10 ranks
    the setups, grade 2 and up counting as relevant. --target ENGINE:WHERE does the same on an index that
    exists (sqlite:PATH, qdrant:URL/COLLECTION, pgvector:postgresql://USER@HOST:PORT/DBNAME/TABLE,
    opensearch:URL/INDEX; credentials from the environment), with every method what it holds allows. The
    config it used is printed and kept (--save-config writes it where you say): run it again for the same
    numbers."""
    from vx_eval.cli.progress import FileProgress, RichProgress
    from vx_eval.core.config.experiment import load_config, with_overrides
    from vx_eval.core.plugins import load_plugins
    from vx_eval.core.run.pipeline import RunOptions, run_experiment
    from vx_eval.core.stores import Stores
    from vx_eval.display import show_run

    if sum(given is not None for given in (config, docs, target_spec)) != 1:
        raise click.UsageError("name a CONFIG, or give --docs FILE or --target ENGINE:WHERE to run with none (one)")
    if config is not None and save_config is not None:
        raise click.UsageError("--save-config goes with --docs or --target (a CONFIG is already a file)")
    if config is not None and most_questions is not None:
        raise click.UsageError("--most-questions goes with --docs or --target (a config's golden file is as it is)")
    plugins = load_plugins()
    made = chosen = None
    if config is None:
        from vx_eval.autoconfig import choose_writer, from_docs, from_target

        if field_models and target_spec is None:
            raise click.UsageError("--model goes with --target (a config names its models itself)")
        source = from_docs(docs) if docs is not None else from_target(str(target_spec), plugins, tuple(field_models))
        chosen = choose_writer(writer)
        if dry_run:
            _dry_run_without_config(source, questions, chosen, save_to, plugins)
            return
        made = _without_config(source, questions, chosen, save_to, save_config, plugins)
        config = made.path
    experiment = with_overrides(load_config(config, plugins), location(golden), metrics, k_values)
    if dry_run:
        _dry_run(experiment, plugins)
        return
    with RichProgress(err_console()) as shown:
        progress = FileProgress(progress_file, also=shown) if progress_file else shown
        options = RunOptions(
            save_to=location(save_to),
            only=only,
            skip=skip,
            balance=balance,
            time=time_points,
            save=not no_save,
            progress=progress,
            resume=resume,
            executor=executor,
            address=address,
            run_id=run_id,
            on_plan=None if made is not None and made.drafted_now else shown.show_plan,  # said before drafting
        )
        if made is None or chosen is None or golden is not None:
            result = run_experiment(experiment, plugins, options)
        else:
            from vx_eval.drafted import MOST, run_drafted

            def load() -> Experiment:
                return with_overrides(load_config(made.path, plugins), None, metrics, k_values)

            def say(line: str) -> None:
                err_console().print(f"[yellow]note:[/] {escape(line)}", highlight=False)

            most = max(questions, most_questions or MOST * questions)
            result = run_drafted(made, chosen, load, plugins, options, most=most, say=say)
    if as_json:
        click.echo(result.report.to_json())
    else:
        show_run(out_console(), result.report, result.location, wide=wide)
    if not html_file and result.location and not as_json:
        html_file = beside(result.location, "page.html")  # the run's page, always kept with its report
    if html_file:
        where = location(save_to) or experiment.config.save_to
        write_page(
            Stores(plugins, options=experiment.stores), html_file, result.report, where if result.location else None
        )
    if result.report.status == "failed":
        err_console().print(
            "[red]error:[/] the run failed: no setup could be scored "
            "(every search failed, or every question was skipped; the reasons are above)"
        )
        sys.exit(1)
    _failed_searches(result.report, allow_failures)


def _dry_run(experiment: Experiment, plugins: Plugins) -> None:
    """`run --dry-run`: the plan alone, on the standard output."""
    from vx_eval.core.run.pipeline import plan_experiment

    _say_plan(plan_experiment(experiment, plugins))


def _zero_config_plan(path: Path, drafts: int | None, chosen: WriterChoice, plugins: Plugins) -> Plan:
    """The plan of a run with no config: the config filled in at `path`, `drafts` questions to draft first."""
    import dataclasses

    from vx_eval.core.config.experiment import load_config
    from vx_eval.core.run.pipeline import plan_experiment
    from vx_eval.core.run.plan import drafting

    plan = plan_experiment(load_config(path, plugins), plugins, drafts)
    if drafts is None:
        return plan
    return dataclasses.replace(plan, work=(drafting(drafts, chosen.said), *plan.work))


def _dry_run_without_config(
    source: Source, questions: int, chosen: WriterChoice, save_to: str | None, plugins: Plugins
) -> None:
    """`run --docs/--target --dry-run`: the config is filled in (and said where), nothing drafted or built."""
    from vx_eval.autoconfig import GOLDEN, write_config

    path = write_config(source, chosen, Path(save_to) if save_to and not location(save_to) else None)
    drafts = None if path.with_name(GOLDEN).exists() else questions
    out_console().print(f"the configuration it would use: {path}", highlight=False)
    _say_plan(_zero_config_plan(path, drafts, chosen, plugins))


def _say_plan(plan: Plan) -> None:
    from vx_eval.format import plan_lines

    out = out_console()
    lines = plan_lines(plan) or ["nothing to embed or judge: every index is up to date"]
    for line in lines:
        out.print(f"plan: {escape(line)}", highlight=False)
    for warning in plan.warnings:
        out.print(f"warning: {escape(warning)}", highlight=False)
    out.print("dry run: nothing was indexed, searched or saved", highlight=False)


def _failed_searches(report: Report, allowed: bool) -> None:
    """A run whose searches failed somewhere exits `SEARCHES_FAILED` (its report kept), unless allowed."""
    from vx_eval.core.errors import SEARCHES_FAILED

    failed = {s.key: s.counts.failed for s in report.setups if s.counts.failed}
    if not failed:
        return
    where = ", ".join(f"{key} {n}" for key, n in list(failed.items())[:5]) + (" …" if len(failed) > 5 else "")
    line = (
        f"{sum(failed.values())} searches failed after every try ({where}); those setups' averages leave the "
        "failed questions out and are never picked"
    )
    if allowed:
        err_console().print(f"[yellow]warning:[/] {escape(line)} (--allow-failures)", highlight=False)
        return
    err_console().print(
        f"[red]error:[/] {escape(line)}; the report is kept (--allow-failures exits 0)", highlight=False
    )
    sys.exit(SEARCHES_FAILED)


def beside(report: str, name: str) -> str:
    """A file in the folder of the saved report at `report` (a path, ``s3://…`` or a Blob address)."""
    folder, sep, _ = report.replace("\\", "/").rpartition("/")
    return f"{folder}{sep}{name}"


def _without_config(
    source: Source,
    questions: int,
    chosen: WriterChoice,
    save_to: str | None,
    save_config: Path | None,
    plugins: Plugins,
) -> AutoConfig:
    """`run --docs` / `--target`: the config filled in for `source` (its questions drafted when none are
    kept yet), printed with where it is kept and what the target's engine found in its index."""
    from rich.syntax import Syntax

    from vx_eval.autoconfig import prepare, refusals
    from vx_eval.cli.progress import RichProgress

    err = err_console()
    with RichProgress(err) as progress:

        def plan(path: Path, drafts: int | None) -> None:
            if drafts is not None:  # a later run on the same documents plans as a run with a config does
                progress.show_plan(_zero_config_plan(path, drafts, chosen, plugins))

        made = prepare(
            source,
            questions=questions,
            writer=chosen,
            save_to=Path(save_to) if save_to and not location(save_to) else None,
            save_config=save_config,
            progress=progress,
            before=plan,
        )
    for line in made.found:
        err.print(f"found in {source.name}: {line}", highlight=False)
    if made.drafted is not None:
        done = made.drafted
        err.print(
            f"drafted by {chosen.said}: {done.accepted} of {questions} questions from {done.tries} tries on "
            f"{done.passages} passages; {refusals(done)}",
            highlight=False,
        )
        if chosen.advice:
            err.print(f"[yellow]note:[/] {escape(chosen.advice)}", highlight=False)
    how = "drafted now" if made.drafted_now else f"drafted by an earlier run on {source.name}"
    err.print(f"the configuration used ({made.questions} questions {how}; kept at {made.path}):", highlight=False)
    err.print(Syntax(made.text, "yaml", background_color="default"))
    again = save_config or made.path
    err.print(f"run it again: vx-eval run {again}", highlight=False)
    return made


@click.command()
@config_argument
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
    from vx_eval.cli.progress import RichProgress
    from vx_eval.core.plugins import load_plugins
    from vx_eval.core.run.pipeline import RunOptions
    from vx_eval.core.run.watch import Outcome, Watcher
    from vx_eval.display import show_run

    plugins = load_plugins()

    def report(outcome: Outcome) -> bool:
        if outcome.action == "ran" and outcome.result is not None:
            show_run(out_console(), outcome.result.report, outcome.result.location)
        elif once:
            err_console().print(f"golden {outcome.sha256[:12]}… was run before; nothing to do")
        return once

    with RichProgress(err_console()) as progress:
        err_console().print(
            f"watching the golden file of {config} (settle {settle:g} s, every {poll:g} s); Ctrl-C stops",
            highlight=False,
        )
        options = RunOptions(progress=progress, on_plan=progress.show_plan)
        Watcher(config, plugins, settle, options=options).watch(poll, until=report)
