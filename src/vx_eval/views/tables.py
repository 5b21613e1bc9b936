"""How `compare`, `runs list` and `judge check` look in a terminal: the tables beside the run's own
(`vx_eval.views.display`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vx_eval.core.errors import brief
from vx_eval.views.display import Justify
from vx_eval.views.format import fmt_ms, gullibility_line, judge_line

if TYPE_CHECKING:
    from vx_eval.core.judging.check import JudgeCheck
    from vx_eval.core.report.compare import Change, Comparison, LatencyChange
    from vx_eval.core.report.history import RunEntry


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
    fitted = result.calibration
    if fitted is not None:
        better = (fitted.kappa_fitted or 0) > (fitted.kappa_current or 0)
        console.print(
            f"Cut points fitted from this check (halfway between the median scores of neighbouring human grades, "
            f"on {fitted.fitted_on} questions): {fitted.cut_points}; quadratic kappa on the {fitted.held_out:,} "
            f"pairs of the other questions {fitted.kappa_fitted:.3f}, against {fitted.kappa_current:.3f} with the "
            f"judge's own {judge.cut_points}."
            + (
                f" To grade with them: judges: {{{judge.judge}: {{cut_points: {fitted.cut_points}}}}} in the config."
                if better
                else " The judge's own cut points do as well: keep them."
            ),
            highlight=False,
        )
    fooled = gullibility_line(result.gullibility)
    if fooled:
        console.print(f"Gullibility: {fooled[0].upper()}{fooled[1:]}.", highlight=False)
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
