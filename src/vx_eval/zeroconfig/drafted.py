"""A zero-configuration run that drafts more questions while its pick is not sure.

A run on drafted questions (`vx_eval.zeroconfig.autoconfig`) ranks its setups on a few dozen questions. Where the paired
test cannot tell the leader from the setup ranked next (`Picking.sure`), or the judge's measured noise cannot
(`Picking.judge_noise`), the run drafts more, from passages its questions do not draw on yet, and runs again
(the index, the vectors, the drafts and the judge's grades are kept by content, so only the new questions cost
anything), until the pick is sure, more questions would not tell the leaders apart, or ``--most-questions``
is reached. Only the last round's report is saved; it says how sure it is, as any run does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from vx_eval.core.golden.files import lint, question_key
from vx_eval.core.report.saving import check_run_id, save_report
from vx_eval.core.stores import Stores
from vx_eval.core.usecases.pipeline import RunResult, run_experiment
from vx_eval.python.commands import write_golden_rows
from vx_eval.zeroconfig.autoconfig import FEWEST, MIX, AutoConfig, WriterChoice, judged_only, refusals, write_golden

if TYPE_CHECKING:
    from vx_eval.core.config.experiment import Experiment
    from vx_eval.core.plugins import Plugins
    from vx_eval.core.report.schema import Report
    from vx_eval.core.usecases.pipeline import RunOptions, RunResult
    from vx_eval.python.commands import WriteSummary

MOST = 4
"""By default a run drafts up to this many times ``--questions`` while its pick is not sure."""


@dataclass(frozen=True)
class More:
    """After a run on drafted questions whose pick is not sure: how many more to draft (0: none) and why."""

    count: int
    said: str


def more_questions(report: Report, have: int, most: int) -> More | None:
    """Whether a zero-configuration run should draft more questions and run again: None when its pick is
    sure (the paired test tells the leader from the next, and under the judge where its noise was measured);
    else, where the paired test's estimate of the questions that would tell the leaders apart is within
    `most`, how many more reach it (at least half as many again); where only the judge's noise is in doubt,
    twice as many (at most `most`); otherwise 0 and why not: drafting is slow, and questions that would not
    settle it are not worth the wait."""
    picking = report.picking
    if picking is None or report.picks.finds_the_most is None:
        return None
    noisy = picking.judge_noise is not None and not picking.judge_noise.sure
    if picking.sure is None and not noisy:
        return None
    needed = picking.questions_needed
    if picking.sure is None:  # the paired test tells them apart; the judge's noise does not
        why, wanted = "the paired test tells the leaders apart, the judge's measured noise does not", 2 * have
    elif needed is None:
        return More(
            0,
            f"not sure with {have} questions: the leaders differ too little on them to say how many "
            "more would tell them apart, so none are drafted",
        )
    elif needed > 10 * most:
        return More(
            0,
            f"not sure with {have} questions: about {needed:,} would tell the leaders apart; they differ too "
            "little for more drafted questions to settle it",
        )
    elif needed > most:
        return More(
            0,
            f"not sure with {have} questions: about {needed} would tell the leaders apart, more than "
            f"--most-questions {most}; give --most-questions {needed} to draft them",
        )
    else:
        why, wanted = f"about {needed} questions would tell the leaders apart", needed
    if have >= most:
        return More(0, f"not sure with {have} questions ({why}); --most-questions {most} drafts no more")
    count = min(most, max(wanted, have + (have + 1) // 2)) - have
    if count < max(2, have // 4):  # the detectable difference would shrink by a tenth or less
        return More(
            0, f"not sure with {have} questions ({why}); {count} more up to --most-questions {most} would not tell"
        )
    return More(count, f"not sure with {have} questions ({why}): drafting {count} more (at most {most} in all)")


def draft_more(made: AutoConfig, count: int, writer: WriterChoice, progress: Any = None) -> WriteSummary:
    """Draft `count` more questions for `made` from passages its golden file's questions were not drafted from
    (a sample seeded by how many it holds, so a run again drafts the same ones), appended to it atomically;
    a draft worded as one held is dropped."""

    held = [row for _, row in lint(made.golden.read_bytes())[1]]
    used = {str(unit) for row in held for unit in row.metadata.get("source") or ()}
    rows, summary = write_golden_rows(
        [made.path], count, writer_plugin=writer.name, mix=MIX, seed=len(held), progress=progress, avoid=used
    )
    # `avoid` keeps every new draft's passages, and so its id, apart from those held: only its words may repeat,
    # and the golden file refuses a question twice
    asked = {question_key(row.question) for row in held}
    fresh = []
    for row in map(judged_only, rows):
        key = question_key(row.question)
        if key not in asked:
            fresh.append(row)
            asked.add(key)
    write_golden(made.golden, [*held, *fresh])
    return replace(summary, accepted=len(fresh))


def run_drafted(
    made: AutoConfig,
    writer: WriterChoice,
    load: Callable[[], Experiment],
    plugins: Plugins,
    options: RunOptions,
    *,
    most: int,
    say: Callable[[str], None] = lambda _: None,
) -> RunResult:
    """Run `made`'s config (as `load` reads it), drafting more questions and running again while the pick
    is not sure (`more_questions`, up to `most` questions in all, only where a ranking was asked for: at
    least `FEWEST` questions); the last round's result, saved as `options` say."""

    have = made.questions
    if have < FEWEST or most <= have or options.resume:  # a resumed run finishes what it was
        return run_experiment(load(), plugins, options)
    quiet = replace(options, save=False)
    while True:
        experiment = load()
        result = run_experiment(experiment, plugins, quiet)
        more = more_questions(result.report, have, most)
        if more is not None:
            say(more.said)
        if more is None or not more.count:
            break
        drafted = draft_more(made, more.count, writer, options.progress)
        say(
            f"drafted {drafted.accepted} more from {drafted.tries} tries on {drafted.passages} passages; "
            f"{refusals(drafted)}"
        )
        if not drafted.accepted:
            break
        have += drafted.accepted
    if not options.save:
        return result
    raw = made.golden.read_bytes()
    kept = raw if hashlib.sha256(raw).hexdigest() == result.report.golden.sha256 else None
    where = options.save_to or experiment.config.save_to
    last = result.report
    if options.run_id is not None:  # the rounds ran unsaved: the id asked for goes to the one kept
        last = last.model_copy(update={"id": check_run_id(options.run_id)})
    report, location = save_report(last, kept, Stores(plugins, options=experiment.stores), where)
    return RunResult(report, location)
