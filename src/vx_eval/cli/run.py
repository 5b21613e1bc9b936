"""`vx-eval run` and `vx-eval watch`: the main job, once or whenever the golden file changes."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from dotenv import dotenv_values
from rich.markup import escape
from rich.syntax import Syntax

from vx_eval.cli.common import config_argument, err_console, location, out_console, wide_option, write_page
from vx_eval.cli.progress import FileProgress, RichProgress
from vx_eval.core.config.experiment import load_config, with_overrides
from vx_eval.core.errors import SEARCHES_FAILED
from vx_eval.core.plugins import load_plugins
from vx_eval.core.stores import Stores
from vx_eval.core.usecases.pipeline import RunOptions, plan_experiment, run_experiment
from vx_eval.core.usecases.plan import drafting
from vx_eval.core.usecases.watch import Outcome, Watcher
from vx_eval.views.display import show_run
from vx_eval.views.format import plan_lines
from vx_eval.zeroconfig.autoconfig import (
    GOLDEN,
    JudgeChoice,
    choose_judge,
    choose_writer,
    from_docs,
    from_target,
    prepare,
    refusals,
    write_config,
)
from vx_eval.zeroconfig.drafted import MOST, run_drafted

if TYPE_CHECKING:
    from vx_eval.core.config.experiment import Experiment
    from vx_eval.core.contracts.engine import Progress
    from vx_eval.core.plugins import Plugins
    from vx_eval.core.report.schema import Report
    from vx_eval.core.usecases.pipeline import RunResult
    from vx_eval.core.usecases.plan import Plan
    from vx_eval.zeroconfig.autoconfig import AutoConfig, Source, WriterChoice


@dataclass(frozen=True)
class RunRequest:
    """`vx-eval run` as typed: every option of the command line, checked together (`check`) before any work."""

    config: Path | None
    docs: Path | None
    target_spec: str | None
    field_models: tuple[str, ...]
    save_config: Path | None
    questions: int
    most_questions: int | None
    writer: str | None
    judge: str | None
    save_to: str | None
    only: tuple[str, ...]
    skip: tuple[str, ...]
    balance: float | None
    time_points: float | None
    as_json: bool
    no_save: bool
    resume: str | None
    executor: str | None
    address: str | None
    html_file: str | None
    run_id: str | None
    golden: str | None
    metrics: tuple[str, ...]
    k_values: tuple[int, ...]
    allow_failures: bool
    progress_file: Path | None
    dry_run: bool
    wide: bool

    def check(self) -> None:
        """Options that do not go together: a usage error (exit 2) naming them."""
        if sum(given is not None for given in (self.config, self.docs, self.target_spec)) != 1:
            raise click.UsageError("name a CONFIG, or give --docs FILE or --target ENGINE:WHERE to run with none (one)")
        if self.config is not None and self.save_config is not None:
            raise click.UsageError("--save-config goes with --docs or --target (a CONFIG is already a file)")
        if self.config is not None and self.most_questions is not None:
            raise click.UsageError("--most-questions goes with --docs or --target (a config's golden file is as it is)")
        if self.field_models and self.target_spec is None:
            raise click.UsageError("--model goes with --target (a config names its models itself)")
        if self.judge is not None and self.config is not None:
            raise click.UsageError("--judge goes with --docs or --target (a config names its judge: evaluation.judge)")

    def options(self, progress: Progress, on_plan: Callable[[Plan], None] | None) -> RunOptions:
        return RunOptions(
            save_to=location(self.save_to),
            only=self.only,
            skip=self.skip,
            balance=self.balance,
            time=self.time_points,
            save=not self.no_save,
            progress=progress,
            resume=self.resume,
            executor=self.executor,
            address=self.address,
            run_id=self.run_id,
            on_plan=on_plan,
        )


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
@click.option(
    "--judge",
    metavar="JUDGE",
    help="With --docs or --target: who grades the results: chat:MODEL[@URL] (a served chat model, by UMBRELA's "
    "rubric; found as --writer chat: is) or cross-encoder (offline). Default: $VX_EVAL_JUDGE, else cross-encoder.",
)
@click.option(
    "--save-to",
    help="Where the report goes (overrides the config's save_to). Default: the config's save_to where it names "
    "one, else $VX_EVAL_EVALUATIONS (where `vx-eval serve` reads runs), else runs/.",
)
@click.option(
    "--env-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Read settings from this file first (KEY=VALUE lines, as the server's settings file): "
    "VX_EVAL_EVALUATIONS, keys for the engines. What the environment sets already is kept.",
)
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
def run(**given: Any) -> None:
    """Index what CONFIG declares, search every setup, print the ranking and the picks, save the report.

    With --docs FILE and no CONFIG, nothing else is needed: the documents are indexed for every method the
    embedded engine has, with and without the reranker; a model drafts questions from them (half natural
    language, half keywords; marked drafts); the judge (--judge; the cross-encoder by default) grades every
    setup's top 10; DCG@10 ranks the setups, grade 2 and up counting as relevant. --target ENGINE:WHERE does
    the same on an index that exists (sqlite:PATH, qdrant:URL/COLLECTION, pgvector:postgresql://USER@HOST:PORT/DBNAME/TABLE,
    opensearch:URL/INDEX; credentials from the environment), with every method what it holds allows. The
    config it used is printed and kept (--save-config writes it where you say): run it again for the same
    numbers."""
    env_file = given.pop("env_file")
    request = RunRequest(**given)
    request.check()
    if env_file is not None:
        _read_env_file(env_file)
    plugins = load_plugins()
    made = chosen = None
    if request.config is None:
        request = _evaluations(request, names_save_to=False)
        source, chosen, judge = _source(request, plugins), choose_writer(request.writer), choose_judge(request.judge)
        if request.dry_run:
            _dry_run_without_config(source, request.questions, chosen, judge, request.save_to, plugins)
            return
        made = _without_config(source, request.questions, chosen, judge, request.save_to, request.save_config, plugins)
    experiment = _experiment(request, made.path if made else request.config, plugins)
    if made is None:
        request = _evaluations(request, names_save_to="save_to" in experiment.config.model_fields_set)
    if request.dry_run:
        _dry_run(experiment, plugins)
        return
    result = _searched(request, experiment, plugins, made, chosen)
    _shown(request, result, experiment, plugins)


EVALUATIONS = "VX_EVAL_EVALUATIONS"
"""Where runs are kept when neither --save-to nor the config says (`vx-eval serve` reads them there too)."""


def _read_env_file(path: Path) -> None:
    """The settings file's variables into this process's environment, those already set kept (python-dotenv
    reads it as the server's own settings loader does: quotes, ``export``, comments)."""
    try:
        values = dotenv_values(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"cannot read {path}: {exc}", param_hint="--env-file") from None
    for name, value in values.items():
        if value is not None and name not in os.environ:
            os.environ[name] = value


def _evaluations(request: RunRequest, *, names_save_to: bool) -> RunRequest:
    """The request with $VX_EVAL_EVALUATIONS as where its report goes, where neither --save-to nor the config
    (`names_save_to`) says."""
    kept = os.environ.get(EVALUATIONS, "").strip()
    if request.save_to or names_save_to or not kept:
        return request
    return dataclasses.replace(request, save_to=kept)


def _source(request: RunRequest, plugins: Plugins) -> Source:
    """`--docs` / `--target`: what the run with no config searches."""
    if request.docs is not None:
        return from_docs(request.docs)
    return from_target(str(request.target_spec), plugins, tuple(request.field_models))


def _experiment(request: RunRequest, config: Path | None, plugins: Plugins) -> Experiment:
    if config is None:  # neither given nor filled in: `check` refuses that before any work
        raise click.UsageError("name a CONFIG, or give --docs FILE or --target ENGINE:WHERE")
    return with_overrides(load_config(config, plugins), location(request.golden), request.metrics, request.k_values)


def _searched(
    request: RunRequest,
    experiment: Experiment,
    plugins: Plugins,
    made: AutoConfig | None,
    chosen: WriterChoice | None,
) -> RunResult:
    """The run: once, or (documents only) in rounds that draft more while the pick is not sure."""
    with RichProgress(err_console()) as shown:
        progress = FileProgress(request.progress_file, also=shown) if request.progress_file else shown
        said_before = made is not None and made.drafted_now  # the plan was said before drafting
        options = request.options(progress, None if said_before else shown.show_plan)
        if made is None or chosen is None or request.golden is not None:
            return run_experiment(experiment, plugins, options)

        def load() -> Experiment:
            return with_overrides(load_config(made.path, plugins), None, request.metrics, request.k_values)

        def say(line: str) -> None:
            err_console().print(f"[yellow]note:[/] {escape(line)}", highlight=False)

        most = max(request.questions, request.most_questions or MOST * request.questions)
        return run_drafted(made, chosen, load, plugins, options, most=most, say=say)


def _shown(request: RunRequest, result: RunResult, experiment: Experiment, plugins: Plugins) -> None:
    """The run printed (or its JSON), its page written beside its report, and the exit code it earns."""
    if request.as_json:
        click.echo(result.report.to_json())
    else:
        show_run(out_console(), result.report, result.location, wide=request.wide)
    html_file = request.html_file
    if not html_file and result.location and not request.as_json:
        html_file = beside(result.location, "page.html")  # the run's page, always kept with its report
    if html_file:
        where = location(request.save_to) or experiment.config.save_to
        write_page(
            Stores(plugins, options=experiment.stores), html_file, result.report, where if result.location else None
        )
    if result.report.status == "failed":
        err_console().print(
            "[red]error:[/] the run failed: no setup could be scored "
            "(every search failed, or every question was skipped; the reasons are above)"
        )
        sys.exit(1)
    _failed_searches(result.report, request.allow_failures)


def _dry_run(experiment: Experiment, plugins: Plugins) -> None:
    """`run --dry-run`: the plan alone, on the standard output."""
    _say_plan(plan_experiment(experiment, plugins))


def _zero_config_plan(path: Path, drafts: int | None, chosen: WriterChoice, plugins: Plugins) -> Plan:
    """The plan of a run with no config: the config filled in at `path`, `drafts` questions to draft first."""
    plan = plan_experiment(load_config(path, plugins), plugins, drafts)
    if drafts is None:
        return plan
    return dataclasses.replace(plan, work=(drafting(drafts, chosen.said), *plan.work))


def _dry_run_without_config(
    source: Source, questions: int, chosen: WriterChoice, judge: JudgeChoice, save_to: str | None, plugins: Plugins
) -> None:
    """`run --docs/--target --dry-run`: the config is filled in (and said where), nothing drafted or built."""
    path = write_config(source, chosen, Path(save_to) if save_to and not location(save_to) else None, judge)
    drafts = None if path.with_name(GOLDEN).exists() else questions
    out_console().print(f"the configuration it would use: {path}", highlight=False)
    _say_plan(_zero_config_plan(path, drafts, chosen, plugins))


def _say_plan(plan: Plan) -> None:
    out = out_console()
    lines = plan_lines(plan) or ["nothing to embed or judge: every index is up to date"]
    for line in lines:
        out.print(f"plan: {escape(line)}", highlight=False)
    for warning in plan.warnings:
        out.print(f"warning: {escape(warning)}", highlight=False)
    out.print("dry run: nothing was indexed, searched or saved", highlight=False)


def _failed_searches(report: Report, allowed: bool) -> None:
    """A run whose searches failed somewhere exits `SEARCHES_FAILED` (its report kept), unless allowed."""
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
    judge: JudgeChoice,
    save_to: str | None,
    save_config: Path | None,
    plugins: Plugins,
) -> AutoConfig:
    """`run --docs` / `--target`: the config filled in for `source` (its questions drafted when none are
    kept yet), printed with where it is kept and what the target's engine found in its index."""
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
            judge=judge,
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
