"""How numbers are worded, the same in the terminal and on the page: shares as percentages, times in ms."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from vx_eval.core.measures import metrics

if TYPE_CHECKING:
    from vx_eval.core.report.schema import Report
    from vx_eval.core.report.views import AgreementHere, Gullibility, JudgeInfo
    from vx_eval.core.usecases.plan import Plan

SHARES = ("found", "hit", "recall", "p", "judged")


def is_share(metric: str) -> bool:
    """Whether a measure is a share of questions or results, shown as a percentage."""
    return metric.split("@")[0] in SHARES


def fmt(metric: str, value: float | None) -> str:
    """A measure's value as the table and the page show it: 83.3% for shares, 0.729 otherwise."""
    if value is None or value != value:  # None or NaN
        return "–"
    return f"{value * 100:.1f}%" if is_share(metric) else f"{value:.3f}"


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``1 h 2 min``."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def plan_lines(plan: Plan) -> list[str]:
    """The run's plan as the terminal says it: a line per piece of long work, its estimate and how it was
    made, then the total; nothing where the run has no long work."""
    lines = []
    for work in plan.work:
        estimate = f"about {duration(work.seconds)}" if work.seconds is not None else "no time estimate"
        lines.append(f"{work.what}: {estimate}, {work.basis}")
    if len(plan.work) > 1 and plan.seconds:
        more = " and the work with no estimate" if plan.unmeasured else ""
        lines.append(f"in all: about {duration(plan.seconds)}{more}, before searching")
    return lines


def fmt_ms(value: float | None) -> str:
    """Milliseconds without the unit: 12.3 under 100, 1,026 above."""
    return "–" if value is None else (f"{value:.1f}" if value < 100 else f"{value:,.0f}")


def measures_shown(report: Report) -> list[str]:
    """Every measure the config asks for, the primary first (the table's and the page's columns)."""
    settings = report.settings
    return list(dict.fromkeys([settings.primary, *settings.metrics]))


def tie_notes(report: Report) -> list[tuple[str, str]]:
    """(setup key, what it says) for each setup whose primary measure depends on the order of its tied
    results beyond the run's flag."""
    primary, notes = report.settings.primary, []
    for s in report.setups:
        view = s.ties
        if view is None or not view.flagged or view.spread is None:
            continue
        span = view.measures[primary]
        notes.append(
            (
                s.key,
                f"{view.spread:.3f} of its {primary} depends on how ties are broken ({view.questions} questions "
                f"with tied scores; {fmt(primary, span.pessimistic)} to {fmt(primary, span.optimistic)}, "
                f"{fmt(primary, span.expected)} expected over every order, {fmt(primary, span.trec)} in "
                "trec_eval's)",
            )
        )
    return notes


def setting_text(fusion: str, alpha: float, rrf_k: int | None) -> str:
    """A fusion setting in words: ``convex, alpha 0.3`` or ``rrf, alpha 0.5, k 60``."""
    return f"{fusion}, alpha {alpha:g}" + (f", k {rrf_k}" if rrf_k else "")


def tuning_notes(report: Report) -> list[list[str]]:
    """For each tuned hybrid, its sentences: held-out against the run's setting, the optimistic in-sample best,
    what the folds chose, and the config lines to use."""
    if report.tuning is None:
        return []
    out = []
    for t in report.tuning.hybrids:
        m, d = t.measure, t.vs_default
        chose = "; ".join(setting_text(f.setting.fusion, f.setting.alpha, f.setting.rrf_k) for f in t.folds)
        out.append(
            [
                f"Fusion of {t.hybrid} tuned by {report.tuning.folds}-fold cross-validation over {t.questions} "
                f"questions ({t.tried} settings): held-out {m} {fmt(m, t.held_out)} "
                f"[{fmt(m, t.held_out_ci[0])}–{fmt(m, t.held_out_ci[1])}] against {fmt(m, t.default_value)} with "
                f"the run's setting ({setting_text(t.default.fusion, t.default.alpha, t.default.rrf_k)}): "
                f"{d.delta:+.3f} [{d.ci[0]:+.3f}, {d.ci[1]:+.3f}], p {d.p:.3g}.",
                f"The best on the questions it was chosen on scores {fmt(m, t.in_sample_value)}: optimistic, "
                f"{t.overstated:+.3f} over what held-out questions show.",
                f"The folds chose: {chose} ({t.stable:.0%} the same). To use the setting chosen on every "
                f"question: {t.config_lines}",
            ]
        )
    return out


def timing_note(report: Report) -> str | None:
    """How the times were taken, where it is not "every question, one search at a time"."""
    timing = report.settings.timing
    parts = []
    if timing.sample and timing.sample != "all":
        parts.append(f"a {timing.sample} of {timing.questions_timed} of {timing.questions} questions")
    if timing.concurrent > 1:
        parts.append(f"{timing.concurrent} searches at once: each time is a caller's under that load")
    if timing.loaded and timing.others_cores is not None:
        parts.append(
            f"taken while other processes kept {timing.others_cores:.1f} of {timing.cores} cores busy: "
            "a quiet machine may give other times"
        )
    if timing.unsteady:
        shown = ", ".join(f"{key} {ratio:.1f}×" for key, ratio in list(timing.unsteady.items())[:3])
        more = f" and {len(timing.unsteady) - 3} more" if len(timing.unsteady) > 3 else ""
        parts.append(f"did not repeat (later half of the questions against the earlier half): {shown}{more}")
    return "; ".join(parts) or None


def pick_doubts(report: Report) -> list[tuple[str, str]]:
    """What may overturn the picks, each with its label: the paired test, the times, the judge's noise."""
    picking = report.picking
    doubts = [
        ("how sure", picking.sure if picking else None),
        ("times", timing_doubt(report)),
        ("under the judge", picking.judge_sure if picking else None),
        ("corrected by people", corrected_words(report)),
    ]
    return [(label, text) for label, text in doubts if text]


def corrected_words(report: Report) -> str | None:
    """The judge's measure corrected by people's grades, in words: the corrected best's mean, the nearest
    lead and whether people's grades settle it (else about how many graded questions would)."""
    fixed = report.picking.corrected if report.picking else None
    if fixed is None:
        return None
    top = fixed.setups[fixed.best]
    said = (
        f"on the {fixed.labelled} questions people graded, the judge's {fixed.measure} is corrected over all "
        f"{fixed.labelled + fixed.unlabelled} (prediction-powered): {fixed.best} leads, {top.mean:.3f} "
        f"({top.low:.3f}–{top.high:.3f})"
    )
    if fixed.best != fixed.leader:
        said += f"; the judge alone put {fixed.leader} first, and the picks follow people's correction"
    if fixed.leads:
        key, lead = min(fixed.leads.items(), key=lambda item: item[1].mean)
        span = f"{lead.mean:+.3f} ({lead.low:+.3f} to {lead.high:+.3f})"
        if lead.low > 0:
            said += f"; its smallest lead, over {key}, {span}, holds"
        elif lead.settle_with is not None:
            said += f"; its lead over {key}, {span}, is not settled: about {lead.settle_with} graded questions would"
        else:
            said += (
                f"; its lead over {key}, {span}, is not settled, and more graded questions alone would not settle it"
            )
    return said


def timing_doubt(report: Report) -> str | None:
    """Why the picks decided by time may not hold, where the times were taken under load or did not repeat."""
    timing = report.settings.timing
    if not (timing.loaded or timing.unsteady):
        return None
    why = "the machine was loaded while they were timed" if timing.loaded else "some setups' times did not repeat"
    return f"the balance and time picks are uncertain: {why}; run again on a quiet machine to confirm them"


def judge_line(judge: JudgeInfo) -> str:
    """Who graded, in the words of the command line and the page."""
    return judge.meaning or judge.model or judge.judge


def sources_note(report: Report) -> str | None:
    """Where the questions and the grades came from, when not (only) from people: drafted questions, a
    judge's grades, and how far that judge agreed with people where `vx-eval judge check` measured it."""
    golden, judge = report.golden, report.judge
    said = []
    if golden.drafts:
        said.append(
            f"{golden.drafts} of the questions are drafts a model wrote (draft: true; no person has reviewed them)"
        )
    if judge is not None and judge.grades_from.judge:
        who = f"{judge.grades_from.judge:,} grades came from the {judge.judge} judge ({judge_line(judge)})"
        agreed, here = judge.agreement, here_line(judge.here)
        if here is not None:
            said.append(f"{who}, which {here}")
        if agreed is None or agreed.kappa_quadratic is None:
            if here is None:
                said.append(
                    f"{who}, whose agreement with people has not been measured here: `vx-eval judge check` on a "
                    "config whose golden file people graded measures it"
                )
        else:
            kappa = (
                f"weighted kappa {agreed.kappa_quadratic:.2f} (quadratic; the same grade on {agreed.exact or 0:.0%} "
                f"of {agreed.pairs:,} pairs)"
            )
            when = "vx-eval's own check" if agreed.shipped else f"`vx-eval judge check` ({agreed.checked_at[:10]})"
            if here is not None:  # this run's own measure said first; the check's is from elsewhere
                said.append(f"measured elsewhere, not on this run: on {agreed.golden} {when} measured {kappa}")
            elif agreed.shipped:
                said.append(
                    f"{who}, whose agreement with people has not been measured on this data; on {agreed.golden} "
                    f"vx-eval's own check measured {kappa} (measured elsewhere): `vx-eval judge check` on a config "
                    "whose golden file your people graded, or people grading some of this run's questions, "
                    "measures it here"
                )
            else:
                said.append(
                    f"{who}, which agreed with people at {kappa} on {agreed.golden} when `vx-eval judge check` "
                    f"measured it ({agreed.checked_at[:10]})"
                )
            fooled = gullibility_line(agreed.gullibility)
            if fooled:
                said.append(fooled)
    return "; ".join(said) + "." if said else None


AUDIT_SHOWN = 10
"""Probably mislabelled questions listed on the command line and the page (the report keeps them all)."""


def audit_headline(report: Report) -> str | None:
    """The run's first line where the label audit found most labelled questions suspect (`core.judging.audit`)."""
    audit = report.judge.audit if report.judge else None
    if audit is None or not audit.looks_wrong:  # the judge's golden_looks_wrong, with the audit to word
        return None
    return (
        f"the golden file looks wrong: for {audit.unfound} of its {audit.checked} labelled questions no setup returns "
        f"what the labels name in its first 10, and for {audit.disputed} of those the judge grades the labelled "
        f"documents below a result the setups returned (above them all for {audit.confirmed}); no picks are named. "
        "Check the labels (and that they name this corpus's ids) first: the clearest cases are listed as probably "
        "mislabelled"
    )


def suspect_lines(report: Report) -> list[str]:
    """A heading, then each probably mislabelled question: its labels, and the result the judge graded highest
    instead; nothing where none is."""
    audit = report.judge.audit if report.judge else None
    if audit is None or not audit.suspects:
        return []
    lines = [
        f"Probably mislabelled ({len(audit.suspects)} of {audit.checked} labelled questions: no setup returns what "
        "their labels name, the judge grades another result 2 or more):"
    ]
    for s in audit.suspects[:AUDIT_SHOWN]:
        passage = f': "{s.passage}…"' if s.passage else ""
        lines.append(
            f'{s.id} "{s.question}": its labels name {", ".join(s.labels)}, which no setup returns in its first 10; '
            f"the judge graded {s.unit} {s.grade} (returned by {s.found_by} setup{'s' * (s.found_by != 1)}){passage}"
        )
    if len(audit.suspects) > AUDIT_SHOWN:
        lines.append(f"… and {len(audit.suspects) - AUDIT_SHOWN} more in the report (judge.audit.suspects)")
    return lines


def here_line(here: AgreementHere | None) -> str | None:
    """How far the judge agreed with people on this run's own person-graded questions, in words."""
    if here is None or here.kappa_quadratic is None:
        return None
    tau = ""
    if here.tau is not None:
        interval = f" [{here.tau_low:+.2f}, {here.tau_high:+.2f}]" if here.tau_low is not None else ""
        tau = f"; Kendall's tau {here.tau:+.2f}{interval} between the {here.setups} setups' order by DCG@10 on "
        tau += "people's grades and on the judge's"
    return (
        f"agreed with people on this run's {here.questions} person-graded questions at weighted kappa "
        f"{here.kappa_quadratic:.2f} (quadratic; the same grade on {here.exact or 0:.0%} of {here.pairs:,} pairs"
        + (f", {here.assumed_zero:,} of them unjudged by people and counted 0" if here.assumed_zero else "")
        + f"){tau} (measured here)"
    )


def gullibility_line(found: Gullibility | None) -> str | None:
    """How easily the judge was fooled by stuffed passages, in the words of the terminal and the page."""
    if found is None or found.share is None:
        return None
    return (
        f"stuffed with the question's words and an instruction to rate it relevant, {found.raised} of "
        f"{found.pairs} unrelated passages it had graded below 2 were graded 2 or more ({found.share:.0%}: "
        + ("it can be fooled; prefer grades from people where a setup could profit" if found.raised else "not fooled")
        + ")"
    )


def corpus_note(report: Report) -> str | None:
    """What part of the corpus the setups searched, where the config cut it: the scores hold for that part."""
    cut = report.corpus
    if cut is None:
        return None
    part = (
        f"a sample of the corpus: {cut.drawn:,} of its {cut.of:,} documents drawn (seed {cut.seed})"
        if cut.how == "sample"
        else f"a slice of the corpus: its first {cut.drawn:,} of {cut.of:,} documents"
    )
    added = f", plus the {cut.expected_added:,} the questions expect" if cut.expected_added else ""
    lost = (
        f"; {cut.expected_left_out:,} documents the questions expect are not in it, so those answers cannot be found"
        if cut.expected_left_out
        else ""
    )
    return (
        f"scores are on {part}{added} ({cut.documents:,} in all, the same for every setup){lost}. Each question "
        "has fewer documents to compete with than in the whole corpus, so scores run higher than they would "
        "there: compare these setups with each other, not with a run on the whole corpus"
    )


def circular_note(report: Report) -> str | None:
    """Said above the picks when the judge's own model, or one of its family, ranks or embeds some setups:
    their grades are circular."""
    judge = report.judge
    if judge is None or not judge.circular:
        return None
    n = len(judge.circular)
    shown = ", ".join(judge.circular[:4]) + (" …" if n > 4 else "")
    kin = f" or another {judge.family} model" if judge.family else ""
    wrote = [f for f in judge.writer_families if f != judge.family]
    by_writer = f", or a {' or '.join(wrote)} model like the one that drafted the questions," if wrote else ""
    own = sum(1 for k in judge.circular if judge.relation(k) == "circular")
    which = (
        f" ({own} circular, the judge's own model in them; {n - own} related, by family or training lineage)"
        if judge.relations and 0 < own < n
        else (" (all related, by family or training lineage)" if judge.relations and own == 0 else "")
    )
    said = (
        f"the judge's model ({judge.model}){kin}{by_writer} also ranks or embeds {n} setup{'s' if n > 1 else ''} "
        f"({shown}){which}: a judge grading its own family's ranking favours it (Clarke & Dietz 2024), as do "
        "questions a model of the family wrote, so their scores by the judge alone are circular"
    )
    fixed = report.picking.corrected if report.picking else None
    if fixed is not None and fixed.readmitted:
        return (
            f"{said}; people graded {fixed.labelled} of the questions, and their grades correct the judge's bias on "
            f"every setup (prediction-powered), so {len(fixed.readmitted)} of them, marked ○ or ◌, are ranked and "
            f"pickable with the rest on the corrected {fixed.measure}."
        )
    return (
        f"{said}; they are ranked last, marked ○ (circular) or ◌ (related), and left out of the picks. A judge and "
        "a writer of another family compare them fairly, as do people grading some of the questions."
    )


# What each measure means in plain words, and the names it goes by in papers and RAG tools.
MEANINGS = {
    "found": (
        "Found in the top {k}",
        "share of questions with a right answer among the first {k} results",
        "hit rate@k, success@k",
    ),
    "recall": (
        "Recall in the top {k}",
        "share of all the right answers a question has that came back in the first {k}",
        "recall@k",
    ),
    "p": ("Precision in the top {k}", "share of the first {k} results that are right answers", "precision@k"),
    "mrr": (
        "How far down the answer was",
        "the average of 1 over the first right answer's place: 1 when it is first every time",
        "MRR, mean reciprocal rank",
    ),
    "ndcg": (
        "Order quality in the top {k}",
        "how close the first {k} come to the best possible order, grades weighed by place (1 = ideal)",
        "nDCG@k",
    ),
    "dcg": (
        "Graded gain in the top {k}",
        "the sum of each result's grade divided by log2(place + 1), over the first {k}",
        "DCG@k",
    ),
    "map": ("Average precision", "precision at each right answer's place, averaged, then over questions", "MAP"),
    "mean_rel": (
        "Mean relevance",
        "the average grade of the first {k} results (ungraded counts 0)",
        "mean relevance@k",
    ),
    "f1": ("F1 in the top {k}", "harmonic mean of precision and recall in the first {k}", "F1@k"),
    "f2": (
        "F2 in the top {k}",
        "precision and recall in the first {k}, a missed answer weighed four times a wrong one",
        "F2@k",
    ),
    "rprec": ("R-precision", "precision at R, R being how many right answers the question has", "R-Prec"),
    "judged": ("Judged in the top {k}", "share of the first {k} results that carry a grade", "judged@k"),
}


@dataclass(frozen=True)
class Meaning:
    """A measure in words: its name on the page, what it is, and the names it goes by elsewhere."""

    metric: str
    plain: str
    sentence: str
    elsewhere: str


def meaning(metric: str) -> Meaning:
    """The plain name, the sentence and the names elsewhere of a measure written as in the report."""
    parsed = metrics.parse(metric)
    base = parsed.definition.name
    k = "" if parsed.k is None else str(parsed.k)
    plain, sentence, elsewhere = MEANINGS.get(base, (metric, metric, metric))
    if not k:
        plain, sentence = (
            plain.replace(" in the top {k}", "").replace(" {k}", ""),
            sentence.replace("first {k}", "results"),
        )
    return Meaning(
        metric=metric,
        plain=plain.format(k=k),
        sentence=sentence.format(k=k),
        elsewhere=elsewhere.replace("@k", f"@{k}" if k else ""),
    )


def legend(report: Report) -> list[str]:
    """What the table's marks, columns and measures mean, a line each (the terminal's legend)."""
    lines = [
        "★ finds the most · ◆ best for balance · ⚡ best for time (the picks, said above the table)",
        "median ms, p95 ms: each search as the caller waits for it (half take less than the median, 1 in 20 more "
        "than p95); points: hundredths of the measure (4 points = 0.04)",
    ]
    by_base: dict[str, list[str]] = {}
    for name in measures_shown(report):
        by_base.setdefault(metrics.parse(name).definition.name, []).append(name)
    for base, names in by_base.items():
        if base not in MEANINGS:
            continue
        if len(names) == 1:
            said = meaning(names[0])
            lines.append(f"{said.metric}: {said.sentence}")
        else:
            sentence = MEANINGS[base][1].format(k="k")
            lines.append(f"{base}@k ({', '.join(names)}): {sentence}")
    return lines
