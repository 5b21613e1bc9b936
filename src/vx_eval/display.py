"""How a run looks in a terminal: progress bars while it works, then the ranked table and the picks."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from vx_eval.core.errors import brief
from vx_eval.format import fmt, fmt_ms, is_share, measures_shown

Justify = Literal[  # the columns' alignments
    "left", "right", "center"
]

if TYPE_CHECKING:
    from vx_eval.core.compare import Change, Comparison, LatencyChange
    from vx_eval.core.history import RunEntry
    from vx_eval.core.judgecheck import JudgeCheck
    from vx_eval.core.schema import JudgeInfo, Report, SetupResult

PICK_TEXT = {
    "finds_the_most": "Finds the most",
    "best_for_balance": "Best for balance",
    "best_for_time": "Best for time",
}
PICK_MARK = {"finds_the_most": "★", "best_for_balance": "◆", "best_for_time": "⚡"}


class RichProgress:
    """The `Progress` the CLI passes to the core: a bar per stage, notes printed above the bars."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bars = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )

    def __enter__(self) -> RichProgress:
        self.bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bars.stop()

    def start(self, description: str, total: int | None) -> Callable[[int], None]:
        task = self.bars.add_task(description, total=total, rate="")

        def advance(n: int) -> None:
            self.bars.advance(task, n)
            speed = self.bars.tasks[task].speed
            if speed:
                self.bars.update(task, rate=f"{speed:,.0f}/s")

        return advance

    def note(self, message: str) -> None:
        self.bars.console.print(f"[yellow]warning:[/] {escape(message)}", highlight=False)


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
    return marks


def _rank(report: Report, setup: SetupResult) -> str:
    best = setup.key == report.picks.finds_the_most
    return f"≈{setup.rank}" if setup.tied_with_best and not best else str(setup.rank)


def _title(report: Report) -> str:
    return f"{report.name}: {report.golden.labelled} questions, {len(report.setups)} setups"


def _caption(report: Report) -> str:
    return f"[lo–hi] 95% interval of {report.settings.primary}; ≈ a paired test cannot tell it from the leader"


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
    lines.append(f"[dim]{escape(_caption(report))}[/]")
    return lines


def _wrapped(cells: list[str], width: int, indent: int) -> list[str]:
    """Cells joined by ' · ', wrapped between cells at `width` (markup not counted)."""
    from rich.text import Text

    lines, current, used = [], "", indent
    for cell in cells:
        size = Text.from_markup(cell).cell_len
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
    """The setups one change away from each pick, in plain words, with what the change does to the primary."""
    primary = report.settings.primary
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
            lines.append(
                f"  {near.change} ({escape(near.key)}): {primary} {fmt(primary, value)} ({change}), "
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


def show_run(console: Console, report: Report, location: str | None, *, wide: bool = False) -> None:
    print_table(console, report, wide=wide)
    measured = throughput_table(report)
    if measured is not None:
        console.print(measured)
    for setup in report.setups:
        if setup.error:
            console.print(f"[red]✗ {escape(setup.key)}:[/] {escape(setup.error)} (never picked)", highlight=False)
    for note in report.missing_notes:
        console.print(f"[yellow]missing:[/] {escape(note)}", highlight=False)
    console.print()
    for line in pick_lines(report):
        console.print(line, highlight=False)
    for line in neighbour_lines(report):
        console.print(line, highlight=False)
    detectable = report.detectable_difference
    if detectable.value is None and report.picks.finds_the_most:
        console.print(
            f"\nEvery setup scored every question alike on {detectable.metric}: these questions cannot tell the "
            "setups apart on it; add harder questions or choose another primary measure.",
            highlight=False,
        )
    if detectable.value is not None:
        metric = detectable.metric
        size = f"{detectable.value * 100:.1f} points" if is_share(metric) else f"{detectable.value:.3f}"
        console.print(
            f"\nWith {report.golden.labelled} questions, differences in {metric} smaller than about {size} "
            "cannot be told from noise (paired test, 5%, 80% power).",
            highlight=False,
        )
    for line in graded_lines(report):
        console.print(line, highlight=False)
    if location:
        console.print(f"\nReport: {escape(location)}", highlight=False)


def judge_line(judge: JudgeInfo) -> str:
    """Who graded, in the words of the command line and the page."""
    return judge.meaning or judge.model or judge.judge


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
            f"mean relevance@10 {_maybe(graded.mean_rel, 2)}; with grade ≥ {strict} as relevant{over}: "
            f"p@10 {_maybe(graded.p_strict, 3)}, mrr {_maybe(graded.mrr_strict, 3)}"
        )
    if dashboard.strongest:
        lines.append("  strongest (DCG@10): " + ", ".join(f"{escape(q.id)} {q.dcg:.2f}" for q in dashboard.strongest))
    if dashboard.weakest:
        lines.append("  weakest (DCG@10): " + ", ".join(f"{escape(q.id)} {q.dcg:.2f}" for q in dashboard.weakest))
    failed = dashboard.failed
    lines.append(
        f"  failed (first result graded 0 or ungraded): {len(failed)}"
        + (": " + ", ".join(escape(f) for f in failed[:10]) + (" …" if len(failed) > 10 else "") if failed else "")
    )
    return lines


def _maybe(value: float | None, places: int) -> str:
    return "none" if value is None else f"{value:.{places}f}"


def show_comparison(console: Console, comparison: Comparison, only: set[str], *, changed: bool = False) -> None:
    """The settings that differ (loudly when they change the searches), every change of every measure (or
    only those whose interval excludes 0), and the search times' changes."""
    _settings_lines(console, comparison)
    rows = [r for r in comparison.rows if not only or r.measure in only]
    if changed:
        rows = [r for r in rows if r.ci[0] > 0 or r.ci[1] < 0]
    if changed and not rows:
        console.print(
            f"No measure changed beyond its 95% interval ({len(comparison.rows)} setup × measure pairs compared).",
            highlight=False,
        )
    else:
        console.print(_changes_table(comparison, rows))
    latency = [c for c in comparison.latency if c.significant or not changed]
    if latency:
        console.print(_latency_table(latency))
    for side, keys in (
        ("only in the first run", comparison.only_before),
        ("only in the second", comparison.only_after),
    ):
        if keys:
            console.print(f"Setups {side}: {escape(', '.join(keys))}", highlight=False)


def _settings_lines(console: Console, comparison: Comparison) -> None:
    if not comparison.settings:
        return
    searches = comparison.searches_differ
    if searches:
        names = ", ".join(c.name for c in searches[:4]) + (" …" if len(searches) > 4 else "")
        console.print(
            f"[bold red]warning:[/] the two runs searched differently ({escape(names)}): a change below may "
            "come from these settings, not from the system",
            highlight=False,
        )
    console.print("Settings that differ:", highlight=False)
    for c in comparison.settings:
        change = f"{escape(brief(c.before))} → {escape(brief(c.after))}"
        console.print(f"  {escape(c.name)}: {change} [dim](changes the {c.affects})[/]", highlight=False)


def _changes_table(comparison: Comparison, rows: list[Change]) -> Table:
    table = Table(
        title=f"{comparison.before} → {comparison.after}: {comparison.questions} shared questions"
        + ("" if comparison.golden_same else " (different golden files)"),
        title_justify="left",
        caption=f"▲▼ significant after Holm's correction at {comparison.alpha:g};  · no detectable change",
        caption_justify="left",
    )
    columns: tuple[tuple[str, Justify], ...] = (
        ("setup", "left"),
        ("measure", "left"),
        ("before", "right"),
        ("after", "right"),
        ("change", "right"),
        ("95% interval", "right"),
        ("p (Holm)", "right"),
        ("", "center"),
    )
    for column, justify in columns:
        table.add_column(column, justify=justify)
    for r in rows:
        mark = ("▲" if r.delta > 0 else "▼") if r.significant else "·"
        style = ("green" if r.delta > 0 else "red") if r.significant else None
        lo, hi = r.ci
        table.add_row(
            escape(r.setup),
            r.measure,
            f"{r.before:.4f}",
            f"{r.after:.4f}",
            f"{r.delta:+.4f}",
            f"{lo:+.4f} … {hi:+.4f}",
            f"{r.p_holm:.4f}",
            mark,
            style=style,
        )
    return table


def _latency_table(changes: list[LatencyChange]) -> Table:
    table = Table(
        title="search times (ms), over the questions both runs timed",
        title_justify="left",
        caption="ratio: after / before, with its paired 95% interval;  ▲ slower  ▼ faster  · within the noise",
        caption_justify="left",
    )
    for column, justify in (("setup", "left"), ("", "left"), ("before", "right"), ("after", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    table.add_column("ratio", justify="right")
    table.add_column("95% interval", justify="right")
    table.add_column("", justify="center")
    for c in changes:
        mark = ("▲" if c.ratio > 1 else "▼") if c.significant else "·"
        style = ("red" if c.ratio > 1 else "green") if c.significant else None
        table.add_row(
            escape(c.setup),
            c.stat,
            fmt_ms(c.before_ms),
            fmt_ms(c.after_ms),
            f"{c.ratio:.2f}×",
            f"{c.ci[0]:.2f} … {c.ci[1]:.2f}",
            mark,
            style=style,
        )
    return table


def runs_table(entries: list[RunEntry], total: int, offset: int, save_to: str) -> Table:
    """`vx-eval runs list`: one row a run, newest first."""
    shown = f"{offset + 1}–{offset + len(entries)} of {total}" if entries else f"none of {total}"
    table = Table(title=f"runs at {escape(save_to)} ({shown})", title_justify="left")
    for name in ("run", "name", "collections", "golden"):
        table.add_column(name)
    table.add_column("questions", justify="right")
    table.add_column("setups", justify="right")
    table.add_column("picks (most · balance · time)")
    for e in entries:
        picks = " · ".join(str(e.picks.get(k) or "–") for k in ("finds_the_most", "best_for_balance", "best_for_time"))
        status = "" if e.status in (None, "completed") else f" [red]{escape(str(e.status))}[/]"
        if e.reason:
            status += f" [dim]({escape(e.reason)})[/]"
        table.add_row(
            escape(e.id) + status,
            escape(e.name),
            escape(", ".join(e.collections)),
            (e.golden_sha256 or "–")[:12],
            str(e.questions) if e.questions is not None else "–",
            str(e.setups),
            escape(picks),
        )
    return table


def show_judge_check(console: Console, result: JudgeCheck) -> None:
    """`vx-eval judge check`: agreement with people, the confusion matrix, the setups' order both ways."""
    judge, agree, order = result.judge, result.agreement, result.order
    console.print(
        f"Judge {judge.judge} ({escape(judge_line(judge))}) on {agree.pairs:,} (question, result) pairs in the top "
        f"{judge.depth} of every setup; {agree.assumed_zero:,} of them carry no human grade and count as 0.",
        highlight=False,
    )
    if not agree.pairs:
        console.print("No pair has a human grade to compare with: label some questions first.", highlight=False)
        return
    console.print(
        f"Weighted Cohen's kappa: {agree.kappa_linear:.3f} linear, {agree.kappa_quadratic:.3f} quadratic; "
        f"the same grade on {agree.exact:.1%} of pairs.",
        highlight=False,
    )
    table = Table(title="people's grade (rows) against the judge's (columns)")
    table.add_column("")
    for g in range(4):
        table.add_column(f"judge {g}", justify="right")
    for g, row in enumerate(agree.confusion):
        table.add_row(f"people {g}", *(f"{n:,}" for n in row))
    console.print(table)
    if order.tau is None:
        console.print("One setup only: no order to compare.", highlight=False)
        return
    console.print(
        f"Kendall's tau between the setups ordered by DCG@10 on people's grades and on the judge's: "
        f"{order.tau:.3f} (p = {order.p:.3g}, {len(order.setups)} setups).",
        highlight=False,
    )
    ranks = Table()
    ranks.add_column("setup")
    ranks.add_column("DCG@10, people", justify="right")
    ranks.add_column("DCG@10, judge", justify="right")
    for ordered in order.setups:
        ranks.add_row(escape(ordered.key), f"{ordered.dcg_human:.3f}", f"{ordered.dcg_judge:.3f}")
    console.print(ranks)
