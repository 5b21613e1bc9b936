"""How a run looks in a terminal once it is done: the summary, the ranked table and the notes (the bars while it
works: `vx_eval.cli.progress`)."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Literal

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vx_eval.core.optional import on_first_use
from vx_eval.views.format import (
    audit_headline,
    circular_note,
    corpus_note,
    fmt,
    fmt_ms,
    is_share,
    judge_line,
    legend,
    measures_shown,
    pick_doubts,
    sources_note,
    suspect_lines,
    tie_notes,
    timing_note,
    tuning_notes,
)

_rich_text = on_first_use("rich.text")

Justify = Literal[  # the columns' alignments
    "left", "right", "center"
]

if TYPE_CHECKING:
    from vx_eval.core.report.schema import Report, SetupResult

PICK_TEXT = {
    "finds_the_most": "Finds the most",
    "best_for_balance": "Best for balance",
    "best_for_time": "Best for time",
}
PICK_MARK = {"finds_the_most": "★", "best_for_balance": "◆", "best_for_time": "⚡"}
CIRCULAR_MARK = "○"
"""A setup the judge's own model ranks or embeds: its grades are circular, it is never picked on them alone."""
RELATED_MARK = "◌"
"""A setup a model of the judge's family or training lineage ranks or embeds: related, never picked on the
judge's grades alone."""


def relation_mark(report: Report, key: str) -> str:
    """○ or ◌ where the setup stands in a relation to the run's judge, else nothing."""
    relation = report.judge.relation(key) if report.judge else None
    return {"circular": CIRCULAR_MARK, "related": RELATED_MARK, None: ""}[relation]


def _interval(metric: str, ci: tuple[float, float] | None) -> str:
    if not ci:
        return ""
    lo, hi = ci
    return f" [dim][{lo * 100:.0f}–{hi * 100:.0f}][/]" if is_share(metric) else f" [dim][{lo:.3f}–{hi:.3f}][/]"


def _marks(report: Report) -> dict[str, str]:
    marks: dict[str, str] = {}
    for pick, key in report.picks.items():
        if key:
            marks[key] = marks.get(key, "") + PICK_MARK[pick]
    for key in report.judge.circular if report.judge else ():
        marks[key] = marks.get(key, "") + relation_mark(report, key)
    return marks


def _rank(report: Report, setup: SetupResult) -> str:
    best = setup.key == report.picks.finds_the_most
    return f"≈{setup.rank}" if setup.tied_with_best and not best else str(setup.rank)


def _title(report: Report) -> str:
    human = report.golden.human_grades
    graded = f", {human:,} grade{'s' * (human != 1)} from the grading page" if human else ""
    return f"{report.name}: {scored_questions(report)} questions{graded}, {len(report.setups)} setups"


def scored_questions(report: Report) -> int:
    """The questions the measures were taken on (a judge's included), else the labelled ones."""
    return len(report.question_ids) or report.golden.labelled


def _caption(report: Report, width: int | None = None) -> str:
    """The table's key; where times were sampled or taken under load, how (wrapped to `width` if given)."""
    note = timing_note(report)
    text = f"[lo–hi] 95% interval of {report.settings.primary}; ≈ a paired test cannot tell it from the leader"
    if report.judge and report.judge.circular:
        fixed = report.picking.corrected if report.picking else None
        fate = "re-admitted by people's grades" if fixed is not None and fixed.readmitted else "never picked"
        text += (
            f"; {CIRCULAR_MARK} ranked or embedded by the judge's own model (circular), {RELATED_MARK} by a model of "
            f"its family or lineage (related): {fate}"
        )
    if note:
        text += f"\ntimes: {note}"
    if width is None:
        return text

    return "\n".join(w for line in text.splitlines() for w in textwrap.wrap(line, width))


def run_table(report: Report) -> Table:
    """One row a setup: its name over its key (whole, to copy into --only), every measure asked for with the
    primary's interval, the search times."""
    primary = report.settings.primary
    columns = measures_shown(report)
    many_targets = len(report.targets) > 1
    skipped = any(s.counts.skipped for s in report.setups)
    marks = _marks(report)
    table = Table(title=_title(report), title_justify="left", caption=escape(_caption(report)), caption_justify="left")
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("setup", no_wrap=True)
    if many_targets:
        table.add_column("target", no_wrap=True)
    for name in columns:
        table.add_column(name, justify="right", no_wrap=True)
    if skipped:
        table.add_column("skipped", justify="right")
    table.add_column("median ms", justify="right", no_wrap=True)
    table.add_column("p95 ms", justify="right", no_wrap=True)
    server = any(s.server_ms for s in report.setups)  # a service that says its own time
    if server:
        table.add_column("server ms", justify="right", no_wrap=True)
    for setup in report.setups:
        label = f"{marks[setup.key]} " if setup.key in marks else ""
        label += f"{escape(setup.label)}\n[dim]{escape(setup.key)}[/]"
        row = [_rank(report, setup), label] + ([escape(setup.target)] if many_targets else [])
        if not setup.scored:
            row += ("failed", *("" for _ in range(len(columns) + skipped + 1 + server)))
        else:
            for m in columns:
                cell = fmt(m, setup.summary.get(m))
                row.append(cell + _interval(m, setup.ci.get(m)) if m == primary else cell)
            if skipped:
                row.append(str(setup.counts.skipped))
            row += [fmt_ms(setup.times_ms.median), fmt_ms(setup.times_ms.p95)]
            if server:
                row.append(fmt_ms(setup.server_ms.median) if setup.server_ms else "")
        table.add_row(*row, style="red" if setup.error else None)
    return table


def stacked_lines(report: Report, width: int) -> list[str]:
    """The table for a narrow terminal: per setup, its rank, marks and name on one line, its key on the next
    when both do not fit, then its measures and times wrapped under it; no name is ever broken."""
    primary = report.settings.primary
    marks = _marks(report)
    lines = [f"[bold]{escape(_title(report))}[/]"]
    for setup in report.setups:
        head = f"{_rank(report, setup):>3} {marks.get(setup.key, '')}{' ' if setup.key in marks else ''}"
        name = setup.label if len(head) + len(setup.label) <= width else setup.label[: width - len(head) - 1] + "…"
        if len(head) + len(name) + 3 + len(setup.key) <= width:
            lines.append(f"{head}[bold]{escape(name)}[/]   [dim]{escape(setup.key)}[/]")
        else:
            lines += [f"{head}[bold]{escape(name)}[/]", f"    [dim]{escape(setup.key)}[/]"]
        if not setup.scored:
            lines.append(f"    [red]failed[/]{': ' + escape(setup.error) if setup.error else ''}")
            continue
        cells = []
        for m in measures_shown(report):
            cell = f"{m} {fmt(m, setup.summary.get(m))}"
            cells.append(cell + _interval(m, setup.ci.get(m)) if m == primary else cell)
        cells.append(f"median {fmt_ms(setup.times_ms.median)} ms, p95 {fmt_ms(setup.times_ms.p95)}")
        if setup.server_ms:
            cells.append(f"server ms {fmt_ms(setup.server_ms.median)}")
        if setup.counts.skipped:
            cells.append(f"{setup.counts.skipped} skipped")
        lines += _wrapped(cells, width, indent=4)
    lines += [f"[dim]{escape(line)}[/]" for line in _caption(report, width).splitlines()]
    return lines


def _wrapped(cells: list[str], width: int, indent: int) -> list[str]:
    """Cells joined by ' · ', wrapped between cells at `width` (markup not counted)."""

    lines, current, used = [], "", indent
    for cell in cells:
        size = _rich_text.Text.from_markup(cell).cell_len
        if current and used + 3 + size > width:
            lines.append(" " * indent + current)
            current, used = "", indent
        current += (" · " if current else "") + cell
        used += (3 if used > indent else 0) + size
    if current:
        lines.append(" " * indent + current)
    return lines


def print_table(console: Console, report: Report, *, wide: bool = False) -> None:
    """The table if it fits the terminal (or `wide`: at its full width, whatever the terminal), else the
    stacked lines."""
    table = run_table(report)
    needed = console.measure(table, options=console.options.update(max_width=100_000)).maximum
    if wide and needed > console.width:
        console.width = needed  # rich clamps a print's width to the console's; what follows is wide too
    if needed <= console.width:
        console.print(table)
        return
    for line in stacked_lines(report, console.width):
        console.print(line, highlight=False, crop=False, overflow="ignore")


def pick_lines(report: Report) -> list[str]:
    """Each pick and why: the measure that decided, the points, how much and how surely it is faster."""
    if report.best is None:
        if report.judge is not None and report.judge.golden_looks_wrong():
            return ["[red]No picks: the golden file looks wrong (above); a pick on its labels would mean nothing.[/]"]
        return list(("[red]No setup can be picked: every setup failed.[/]",))
    picking = report.picking
    lines = [f"[yellow]note:[/] {escape(picking.note)}"] if picking and picking.note else []
    for pick, key in report.picks.items():
        if key is None:
            continue
        setup = report.setup(key)
        name = f"{PICK_MARK[pick]} [bold]{PICK_TEXT[pick]}[/]: {escape(setup.label)} [dim]({escape(key)})[/] — "
        reason = picking.reasons.get(pick) if picking else None
        lines.append(name + escape(reason.text if reason else _older_reason(report, pick, key)))
    return lines


def _older_reason(report: Report, pick: str, key: str) -> str:
    """What a report saved before picks carried their reasons can say."""
    settings, best, setup = report.settings, report.best, report.setup(key)
    primary = settings.primary
    value, median = fmt(primary, setup.summary.get(primary)), setup.times_ms.median
    if pick == "finds_the_most" or best is None:
        return f"{primary} {value}, found@1 {fmt('found@1', setup.summary.get('found@1'))}, median {fmt_ms(median)} ms"
    points = settings.balance_points if pick == "best_for_balance" else settings.time_points
    if key == best.key:
        return f"the same setup: nothing within {points:g} points of it is faster"
    speedup = (best.times_ms.median or 0) / median if median else float("nan")
    return f"{primary} {value}, within {points:g} points of the most, {speedup:.1f}× faster ({fmt_ms(median)} ms)"


def neighbour_lines(report: Report) -> list[str]:
    """The setups one change away from each pick, in plain words, with what the change does to the measure
    that decided the picks (the primary)."""
    primary = report.picking.measure if report.picking else report.settings.primary
    by_key = report.by_key
    lines: list[str] = []
    for key in dict.fromkeys(k for _, k in report.picks.items() if k):
        setup = by_key[key]
        if not setup.neighbours:
            continue
        lines.append(f"\nOne change away from {escape(setup.label)}:")
        base = setup.summary.get(primary)
        for near in setup.neighbours:
            other = by_key[near.key]
            value = other.summary.get(primary)
            if value is None or base is None:
                lines.append(f"  {near.change} ({escape(near.key)}): failed")
                continue
            change = f"{(value - base) * 100:+.1f} points" if is_share(primary) else f"{value - base:+.3f}"
            mark = relation_mark(report, near.key)
            circular = f", {mark} {'related' if mark == RELATED_MARK else 'circular'}" if mark else ""
            lines.append(
                f"  {near.change} ({escape(near.key)}): {primary} {fmt(primary, value)} ({change}{circular}), "
                f"median {fmt_ms(other.times_ms.median)} ms"
            )
    return lines


def throughput_table(report: Report) -> Table | None:
    """Queries a second and median latency per setup at each number of callers, where the run measured it."""
    measured = [s for s in report.setups if s.throughput]
    if not measured:
        return None
    first = measured[0].throughput or []
    table = Table(title=f"throughput: {first[0].searches} questions, each searched end to end", title_justify="left")
    table.add_column("setup")
    for level in first:
        table.add_column(f"{level.concurrency} at once: q/s · median ms", justify="right")
    for setup in measured:
        cells = [
            f"{t.qps:,.1f} · {fmt_ms(t.median_ms)}" if t.qps is not None else "failed" for t in setup.throughput or []
        ]
        table.add_row(f"{escape(setup.label)} [dim]{escape(setup.key)}[/]", *cells)
    return table


def call_lines(report: Report) -> list[str]:
    """A line for each remote target whose calls to its service were tried again or failed: how many."""
    lines = []
    for name, target in report.targets.items():
        calls = target.calls
        if calls is None or not (calls.retried or calls.failed):
            continue
        failed = f", {calls.failed} failed after every try" if calls.failed else ""
        lines.append(f"{name}: {calls.calls:,} calls to its service, {calls.retried:,} tried again{failed}")
    return lines


def show_run(console: Console, report: Report, location: str | None, *, wide: bool = False) -> None:
    """The one screen a reader needs first (what ran, the picks and how sure they are), then the ranked table
    with its legend, then what else the run found."""
    print_summary(console, report)
    console.print()
    print_table(console, report, wide=wide)
    for line in legend(report):
        console.print(f"[dim]{escape(line)}[/]", highlight=False)
    measured = throughput_table(report)
    if measured is not None:
        console.print(measured)
    for setup in report.setups:
        if setup.error:
            console.print(f"[red]✗ {escape(setup.key)}:[/] {escape(setup.error)} (never picked)", highlight=False)
    for line in call_lines(report):
        console.print(f"[yellow]calls:[/] {escape(line)}", highlight=False)
    for note in report.missing_notes:
        console.print(f"[yellow]missing:[/] {escape(note)}", highlight=False)
    sources = sources_note(report)
    if sources:
        console.print(f"[yellow]drafted and judged:[/] {escape(sources)}", highlight=False)
    corpus = corpus_note(report)
    if corpus:
        console.print(f"[yellow]corpus:[/] {escape(corpus)}", highlight=False)
    for line in tie_lines(report):
        console.print(line, highlight=False)
    circular = circular_note(report)
    if circular:
        console.print(f"[yellow]circular:[/] {escape(circular)}", highlight=False)
    for line in neighbour_lines(report):
        console.print(line, highlight=False)
    for line in _detectable_lines(report):
        console.print(line, highlight=False)
    for line in graded_lines(report):
        console.print(line, highlight=False)
    for line in headroom_lines(report):
        console.print(line, highlight=False)
    suspects = suspect_lines(report)
    if suspects:
        console.print(f"\n[yellow]{escape(suspects[0])}[/]", highlight=False)
        for line in suspects[1:]:
            console.print(f"  {escape(line)}", highlight=False)
    for sentences in tuning_notes(report):
        console.print("\n" + escape(" ".join(sentences)), highlight=False)
    if report.derived_from is not None:
        derived = report.derived_from
        console.print(f"\n{derived.how.capitalize()} from run {escape(derived.run)}: {escape(derived.note)}.")
    if location:
        console.print(f"\nReport: {escape(location)}", highlight=False)


def print_summary(console: Console, report: Report) -> None:
    """What ran, the picks with their reasons, and what may overturn them (how sure, the times, the judge); first
    of all, where the label audit found it, that the golden file looks wrong."""
    wrong = audit_headline(report)
    if wrong:
        console.print(f"[bold red]{escape(wrong[0].upper() + wrong[1:])}.[/]", highlight=False)
    console.print(f"[bold]{escape(_title(report))}[/], ranked by {escape(report.settings.primary)}", highlight=False)
    for line in pick_lines(report):
        console.print(line, highlight=False)
    for label, doubt in pick_doubts(report):
        console.print(f"[yellow]{label}:[/] {escape(doubt)}", highlight=False)


def _detectable_lines(report: Report) -> list[str]:
    """The smallest difference these questions can tell from noise, or that they tell none apart."""
    detectable = report.detectable_difference
    if detectable.value is None and report.picks.finds_the_most:
        return [
            f"\nEvery setup scored every question alike on {detectable.metric}: these questions cannot tell the "
            "setups apart on it; add harder questions or choose another primary measure."
        ]
    if detectable.value is None:
        return []
    metric = detectable.metric
    size = f"{detectable.value * 100:.1f} points" if is_share(metric) else f"{detectable.value:.3f}"
    return [
        f"\nWith {scored_questions(report)} questions, differences in {metric} smaller than about {size} "
        "cannot be told from noise (paired test, 5%, 80% power)."
    ]


def headroom_lines(report: Report) -> list[str]:
    """The oracle over setups against the best one, and the questions no setup finds."""
    head = report.headroom
    if head is None or len(report.setups) < 2:
        return []
    m = head.measure
    ci = f" [{fmt(m, head.oracle_ci[0])}–{fmt(m, head.oracle_ci[1])}]" if head.oracle_ci else ""
    lines = [
        f"\nHeadroom on {m}: {escape(head.best)} reaches {fmt(m, head.best_value)}; the best any setup reached on "
        f"each question (the oracle) gives {fmt(m, head.oracle)}{ci}, {fmt(m, head.gain)} above it."
    ]
    if head.unfound_count:
        shown = ", ".join(escape(q) for q in head.unfound) + (" …" if head.unfound_count > len(head.unfound) else "")
        threshold = report.settings.relevance_threshold
        what = f"a result graded {threshold} or more" if threshold > 1 else "a relevant result"
        # nothing says whether the setups or the labels are wrong: a judge would
        hint = "" if report.judge else "; a judge, evaluation.judge: cross-encoder, says which are probably mislabelled"
        lines.append(
            f"{head.unfound_count} questions for which no setup has {what} in its top 10 (check them first{hint}): "
            f"{shown}"
        )
    return lines


def tie_lines(report: Report) -> list[str]:
    """A line per setup whose primary measure depends on the order of its tied results beyond the flag."""
    return [f"[yellow]ties:[/] {escape(key)}: {escape(text)}" for key, text in tie_notes(report)]


def graded_lines(report: Report) -> list[str]:
    """Databricks' dashboard in words: who grades and how much, the best DCG@10, the strongest, weakest and
    failed questions; or, when too few questions are graded for it, one line saying so."""
    dashboard, golden, judge = report.graded_questions, report.golden, report.judge
    if dashboard is None:
        if golden.max_grade > 1 and golden.graded:
            return [
                "",
                f"Graded: {golden.graded} of {golden.labelled} questions carry grades above 1, too few for the "
                "graded view (it needs 5 and a fifth of them); nDCG uses the grades there are.",
            ]
        return []
    by = f"{judge.judge} judge" if judge else "people"
    scale = 3 if judge else golden.max_grade
    lines = list(("", f"Graded relevance (0–{scale}), grades from {by}:"))
    if judge:
        came = judge.grades_from
        lines.append(
            f"  grades in the top {judge.depth}: {came.human:,} from people, {came.judge:,} from the "
            f"{judge.judge} judge ({escape(judge_line(judge))}); {judge.asked:,} pairs asked, "
            f"{judge.from_cache:,} from its cache, {judge.unparsable:,} answers unreadable (not taken as grades)"
        )
    else:
        lines.append(f"  graded: {golden.graded} of {golden.labelled} questions carry grades above 1")
    best = dashboard.best
    graded = report.setup(best.key).graded
    if graded is not None:
        lo, hi = graded.ci.get("dcg", (float("nan"), float("nan")))
        strict = graded.strict_grade
        over = f" over the {graded.strict_questions} questions with one" if graded.strict_questions is not None else ""
        lines.append(
            f"  best DCG@10 {best.dcg:.3f} [{lo:.3f}, {hi:.3f}] by {escape(best.label)} ({escape(best.key)}); "
            f"mean relevance {_maybe(graded.mean_rel, 2)} (over the top 10 results returned); "
            f"with grade ≥ {strict} as relevant{over}: "
            f"p@10 {_maybe(graded.p_strict, 3)}, mrr {_maybe(graded.mrr_strict, 3)}"
        )
    of = f"of {escape(best.key)}"  # the questions below are that setup's
    for name, shown in (("strongest", dashboard.strongest), ("weakest", dashboard.weakest)):
        if shown:
            lines.append(f"  {name} (DCG@10) {of}: " + ", ".join(f"{escape(q.id)} {q.dcg:.2f}" for q in shown))
    failed = dashboard.failed
    lines.append(
        f"  failed (first result graded 0 or ungraded) {of}: {len(failed)}"
        + (": " + ", ".join(escape(f) for f in failed[:10]) + (" …" if len(failed) > 10 else "") if failed else "")
    )
    return lines


def _maybe(value: float | None, places: int) -> str:
    return "none" if value is None else f"{value:.{places}f}"
