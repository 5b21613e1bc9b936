"""The run's report as one typed, frozen model: what a run produces and what every consumer reads.

The terminal table, the page, the server, history, `compare` and `judge check` read these models, never a
dict: a field's default lives here once. On disk the report is this model's JSON, versioned by `format`;
reports of earlier formats are upgraded in one place (`core.report.upgrade`) before they are validated, and one
that still does not validate is unreadable with the reason (`ReportError`), never a crash of its reader.
"""

from __future__ import annotations

import functools
import os
from typing import Any, Literal, Protocol, cast

from pydantic import Field, ValidationError

from vx_eval.core.config.jsonio import JsonInputError, read_json
from vx_eval.core.contracts.endpoints import ServedUsage
from vx_eval.core.contracts.engine import TargetDescription
from vx_eval.core.errors import StoreError, VxEvalError
from vx_eval.core.plugins import load_plugins
from vx_eval.core.report.mapping import ReadsAsMapping
from vx_eval.core.report.upgrade import upgrade
from vx_eval.core.report.views import (
    AllPairs,
    CorpusCut,
    Corrected,
    Frozen,
    GoldenInfo,
    GradedDashboard,
    Headroom,
    Interval,
    JudgeInfo,
    JudgeNoise,
    TieView,
    Tuning,
)

FORMAT = 4
"""1: reports before the typed model (read through `core.report.upgrade`); 2: the typed model; 3: runs derived from
another (`derived_from`), tie-aware measures (`SetupResult.ties`), `headroom`, all-pairs tests (`pairs`),
fusion `tuning`, and rankings kept beside the report (`rankings`)."""

Status = Literal["completed", "failed"]
QuestionStatus = Literal["evaluated", "skipped", "failed"]


class ReportError(StoreError):
    """A saved report that cannot be read: not JSON, not a report, or written by a newer vx-eval."""


class ConfigInfo(Frozen):
    path: str | None = None
    sha256: str | None = None


class CallCounts(Frozen):
    """What the run's calls to a remote target's service did (`core.run.remote`)."""

    calls: int = 0
    """Calls made, every try counted."""
    retried: int = 0
    """Tries after a failure (a timeout, a dropped connection, a 429, 500 or 503)."""
    failed: int = 0
    """Calls that still failed after every try."""


class TargetInfo(TargetDescription):
    """One target in the report: what its engine said of it (the `TargetDescription` fields: collection,
    documents, models, version, location, settings, details, …), which engine, and its capabilities."""

    engine: str = ""
    capabilities: list[str] = Field(default_factory=list)
    describe_error: str | None = None
    """Why the engine could not describe the target, when it could not (the run went on without it)."""
    calls: CallCounts | None = None
    """A remote target's calls to its service during the run (None: an embedded engine). On a cluster, the
    calls this process made only: the workers' searches are counted where they run."""

    @classmethod
    def described(cls, engine: str, capabilities: list[str], description: TargetDescription) -> TargetInfo:
        return cls(engine=engine, capabilities=capabilities, **dict(description))


class Missing(Frozen):
    """Expected documents a target does not hold, the questions none of whose answers it holds, and those
    some of whose answers it lacks."""

    documents: list[str] = Field(default_factory=list)
    questions: list[str] = Field(default_factory=list)
    partly: list[str] = Field(default_factory=list)
    nearest: dict[str, str] = Field(default_factory=dict)
    """For a missing id (of the first ten), the held id most likely meant."""


class Timing(Frozen):
    questions_timed: int = 0
    questions: int = 0
    sample: str = "all"
    concurrent: int = 1
    """Searches that ran at once while times were taken (1: one at a time, as a caller alone sees it)."""
    others_cores: float | None = None
    """Cores other processes kept busy on average while the searches were timed (Linux's counters; None
    where they cannot be read or the searches ran on a cluster's workers)."""
    cores: int = 0
    """Cores this run could use."""
    loaded: bool = False
    """Other processes kept a quarter of the cores or more busy (at least half a core): a search waited
    for a core, so the times, and the picks they decide, may differ on a quiet machine."""
    unsteady: dict[str, float] = Field(default_factory=dict)
    """Setups whose timings did not repeat: the median over the later half of their questions against
    the earlier half's, where it is beyond 1.5x either way."""


class Settings(Frozen):
    """The settings that decided the run's numbers."""

    metrics: list[str] = Field(default_factory=list)
    primary: str = "found@10"
    depth: int = 20
    balance_points: float = 4.0
    time_points: float = 8.0
    seed: int = 0
    bootstrap: int = 1000
    permutations: int = 10_000
    alpha: float = 0.05
    relevance_threshold: int = 1
    relevance_field: str | None = None
    by_document: dict[str, str] | None = None
    """How a chunked corpus was scored by document (``{"separator": "::"}``, ``{"field": "metadata.report"}``),
    if it was: a rescore reads the labels the same way."""
    timing: Timing = Field(default_factory=Timing)
    search: dict[str, Any] = Field(default_factory=dict)
    models: dict[str, Any] = Field(default_factory=dict)
    confidence: float = 0.95
    graded: bool = False
    ties: Literal["trec", "expected", "optimistic", "pessimistic"] = "trec"
    tie_flag: float = 0.01


class Times(Frozen):
    median: float | None = None
    p95: float | None = None


class ThroughputLevel(Frozen):
    concurrency: int
    searches: int
    failed: int
    qps: float | None = None
    median_ms: float | None = None
    p95_ms: float | None = None


class WorkerStat(Frozen):
    searches: int
    median_ms: float | None = None


class Counts(Frozen):
    total: int = 0
    evaluated: int = 0
    skipped: int = 0
    failed: int = 0


Result = tuple[str | None, float]
"""One result as the run kept it: its unit (None where it has no relevance-field value) and its score."""


class PerQuestion(Frozen):
    """Each question of one setup, in the order of `Report.question_ids`."""

    status: list[QuestionStatus] = Field(default_factory=list)
    errors: list[str | None] = Field(default_factory=list)
    notes: list[str | None] = Field(default_factory=list)
    positions: list[int | None] = Field(default_factory=list)
    """1-based place of the first relevant result as results came back."""
    times_ms: list[float | None] = Field(default_factory=list)
    server_ms: list[float | None] = Field(default_factory=list)
    metrics: dict[str, list[float | None]] = Field(default_factory=dict)
    results: list[list[Result]] = Field(default_factory=list)
    """The ranking each search gave back: the report keeps it, so new measures need no search."""
    grades: list[list[int | None] | None] | None = None
    """Graded runs: the grade of each of the first ten results (None: unjudged)."""


class Graded(Frozen):
    """A setup's graded view (Databricks' dashboard): DCG@10, mean relevance (Databricks' mean grade over
    every question and result pair of the top 10: a place no result filled left out), and
    precision@10 and MRR counting grade `strict_grade` or more as relevant, each with its interval."""

    depth: int = 10
    strict_grade: int = 2
    dcg: float | None = None
    mean_rel: float | None = None
    p_strict: float | None = None
    mrr_strict: float | None = None
    strict_questions: int | None = None
    """Questions with a unit graded `strict_grade` or more: the strict measures are means over these only."""
    ci: dict[str, Interval] = Field(default_factory=dict)
    """Keyed by the field names: ``dcg``, ``mean_rel``, ``p_strict``, ``mrr_strict``."""
    mean_grade_by_place: list[float | None] = Field(default_factory=list)
    dcg_per_question: list[float | None] = Field(default_factory=list)
    by_kind: dict[str, GradedKind] = Field(default_factory=dict)
    """The same view per type of question (the golden file's ``type``, or the kind a writer drafted), where the
    questions have types: Databricks' dashboard per query type."""


class GradedKind(Frozen):
    """A setup's graded view over the questions of one type."""

    questions: int
    dcg: float | None = None
    mean_rel: float | None = None
    mean_grade_by_place: list[float | None] = Field(default_factory=list)


class Neighbour(Frozen):
    key: str
    change: str


class VsBest(Frozen):
    """The paired comparison of a setup with `finds_the_most` on the primary measure."""

    metric: str
    delta: float
    ci: Interval
    p: float | None = None
    p_holm: float | None = None


class SetupResult(Frozen):
    """One setup's part of the report: what it is, its scores and intervals, its times, each question."""

    key: str
    target: str
    engine: str
    method: str
    models: list[str] = Field(default_factory=list)
    ranker: str | None = None
    label: str
    error: str | None = None
    rank: int = 0
    summary: dict[str, float | None] = Field(default_factory=dict)
    ci: dict[str, Interval] = Field(default_factory=dict)
    times_ms: Times = Field(default_factory=Times)
    server_ms: Times | None = None
    throughput: list[ThroughputLevel] | None = None
    workers: dict[str, WorkerStat] = Field(default_factory=dict)
    per_question: PerQuestion = Field(default_factory=PerQuestion)
    counts: Counts = Field(default_factory=Counts)
    relevance_distribution: dict[str, float] = Field(default_factory=dict)
    graded: Graded | None = None
    neighbours: list[Neighbour] = Field(default_factory=list)
    vs_best: VsBest | None = None
    tied_with_best: bool = False
    ties: TieView | None = None
    """Present where some ranked list holds tied scores."""

    @property
    def scored(self) -> bool:
        """Whether the setup has measures at all (some question evaluated)."""
        return bool(self.summary)

    @property
    def pickable(self) -> bool:
        """Only a setup whose every search succeeded may be picked."""
        return self.scored and self.error is None and not self.counts.failed

    def value(self, metric: str) -> float | None:
        return self.summary.get(metric)


class TimeVersus(Frozen):
    """A pick's median time over the better setup it was preferred to, with a paired bootstrap interval."""

    other: str
    ratio: float
    ci: tuple[float, float]
    questions: int
    surely_faster: bool


class PickReason(Frozen):
    text: str
    """Why, in words: the measure, the points, how much and how surely faster."""
    measure: str
    versus: TimeVersus | None = None
    tied_on_time: list[str] = Field(default_factory=list)
    """Setups as fast within the noise (the pick is better than each)."""


class Picks(Frozen):
    finds_the_most: str | None = None
    best_for_balance: str | None = None
    best_for_time: str | None = None

    def items(self) -> list[tuple[str, str | None]]:
        return [(name, getattr(self, name)) for name in PICK_NAMES]


class Picking(Frozen):
    """How the picks were made: the measure that decided and each pick's reason."""

    measure: str
    """The measure the picks were made by: the primary (a report saved before the picks followed the seed's
    rule may name the tie-breaker that decided for the whole run when the primary saturated)."""
    note: str | None = None
    """Said when setups share the best primary: what decided among them (found@1, then time)."""
    reasons: dict[str, PickReason] = Field(default_factory=dict)
    sure: str | None = None
    """Said when a paired test cannot tell the leader from the setup ranked next: the pick is one of those
    level within the noise, not a winner, and about how many questions would tell them apart."""
    questions_needed: int | None = None
    """Where not sure and the two differ at all: about how many questions would tell the leader from the
    setup ranked next at the difference seen."""
    corrected: Corrected | None = None
    """Where a judge graded most questions and people some: each setup's measure corrected by the judge's error
    on people's questions, and the leader's leads (`core.judging.corrected`)."""
    judge_noise: JudgeNoise | None = None
    """Where a judge gave grades and its agreement with people was measured: how often each leader leads
    with the judge's grades redrawn as people would likely have given them."""
    judge_sure: str | None = None
    """That, in words: the pick holds under the judge, or the judge cannot tell the leaders apart."""


PICK_NAMES = ("finds_the_most", "best_for_balance", "best_for_time")


class Detectable(Frozen):
    metric: str = "found@10"
    value: float | None = None
    meaning: str | None = None


class PluginRow(Frozen):
    name: str
    module: str
    package: str | None = None
    version: str | None = None


class Provenance(Frozen):
    vx_eval: str = ""
    python: str = ""
    platform: str = ""
    packages: dict[str, str | None] = Field(default_factory=dict)
    plugins: list[PluginRow] = Field(default_factory=list)
    models: dict[str, list[str]] = Field(default_factory=dict)
    served: list[ServedUsage] = Field(default_factory=list)
    """What the run sent to each served model (`models.endpoints`): requests, texts, tokens, estimated cost."""


class RankingsFile(Frozen):
    """Where a saved report's rankings are: a file beside it (`core.report.kept_rankings`), with its rows and sha256."""

    file: str
    rows: int
    sha256: str


class DerivedFrom(Frozen):
    """A report made from another run's kept rankings (`vx-eval runs rescore`), not from searches of its own."""

    run: str
    how: Literal["rescored"] = "rescored"
    note: str = ""


class Report(ReadsAsMapping, Frozen):  # type: ignore[misc]  # iterates its keys, as the seed's dict does
    """One evaluation: every setup's scores, times and per-question results, the picks, and provenance.
    Scores and ids only, never the text of a question or a document."""

    format: int = FORMAT
    id: str
    name: str = ""
    status: Status = "completed"
    created_at: str | None = None
    duration_s: float | None = None
    config: ConfigInfo = Field(default_factory=ConfigInfo)
    golden: GoldenInfo = Field(default_factory=GoldenInfo)
    question_ids: list[str] = Field(default_factory=list)
    collections: list[str] = Field(default_factory=list)
    targets: dict[str, TargetInfo] = Field(default_factory=dict)
    missing: dict[str, Missing] = Field(default_factory=dict)
    missing_notes: list[str] = Field(default_factory=list)
    corpus: CorpusCut | None = None
    """The part of the corpus indexed, where the config cut it (a slice or a seeded sample)."""
    settings: Settings = Field(default_factory=Settings)
    setups: list[SetupResult] = Field(default_factory=list)
    picks: Picks = Field(default_factory=Picks)
    picking: Picking | None = None
    frontier: list[str] = Field(default_factory=list)
    detectable_difference: Detectable = Field(default_factory=Detectable)
    judge: JudgeInfo | None = None
    graded_questions: GradedDashboard | None = None
    provenance: Provenance = Field(default_factory=Provenance)
    derived_from: DerivedFrom | None = None
    headroom: Headroom | None = None
    pairs: AllPairs | None = None
    tuning: Tuning | None = None
    rankings: RankingsFile | None = None
    """Set on a saved report whose rankings were written beside it (its `per_question.results` are empty
    until read back)."""

    def setup(self, key: str) -> SetupResult:
        for s in self.setups:
            if s.key == key:
                return s
        raise KeyError(key)

    @property
    def by_key(self) -> dict[str, SetupResult]:
        return {s.key: s for s in self.setups}

    @property
    def best(self) -> SetupResult | None:
        return self.by_key.get(self.picks.finds_the_most or "")

    def to_json(self) -> str:
        return self.model_dump_json(indent=1)

    # ---------------------- for people (the code lives above the core, `vx_eval.python.notebook`: see `_views`)

    def table(self, width: int = 120, *, wide: bool = False) -> str:
        """The ranked table and the picks as `vx-eval run` prints them (plain text, `width` columns)."""
        return _views().table_text(self, width, wide)

    def to_pandas(self) -> Any:
        """One row per setup, in rank order, indexed by key: what it is, every measure (intervals as
        ``<measure>_lo`` and ``<measure>_hi``), the search times, the counts, and which picks it is."""
        return _views().setups_frame(self)

    def per_question(self) -> Any:
        """Long format: one row per (setup, question, measure), with the question's status, search time and
        the place of its first right answer."""
        return _views().questions_frame(self)

    def _repr_html_(self) -> str:
        """In a notebook: the run's page, in a frame of its own."""
        return _views().page_frame(self)

    def save(self, location: str | os.PathLike[str]) -> str:
        """Write the report (redacted, atomically) to a ``.json`` location, or into the runs kept at
        `location` (a folder, ``s3://…``, a Blob address); where it went."""
        return _views().save(self, str(location))


class ReportViews(Protocol):
    """What the `vx_eval_report_views` hook gives the `Report` (`vx_eval.python.notebook` is one)."""

    def table_text(self, report: Report, width: int, wide: bool) -> str: ...

    def setups_frame(self, report: Report) -> Any: ...

    def questions_frame(self, report: Report) -> Any: ...

    def page_frame(self, report: Report) -> str: ...

    def save(self, report: Report, location: str) -> str: ...


@functools.cache
def _views() -> ReportViews:
    """What gives the Report its conveniences for people: the first plugin answering `vx_eval_report_views`
    (vx-eval's own gives `vx_eval.python.notebook`); pandas, rich and the page load only when one is asked for."""
    views = load_plugins().manager.hook.vx_eval_report_views()
    if views is None:
        raise VxEvalError("no installed plugin gives a report its table and page (is vx-eval installed?)")
    return cast("ReportViews", views)


def load_report(raw: bytes | str, where: str) -> Report:
    """A report from its JSON (any format up to `FORMAT`, upgraded first); `ReportError` saying why not."""

    try:
        data = read_json(raw)
    except JsonInputError as exc:
        raise ReportError(f"{where} is not a readable report ({exc.message})") from None
    if not isinstance(data, dict):
        raise ReportError(f"{where} is not a report (it holds a JSON {type(data).__name__}, not an object)")
    version = data.get("format", 1)
    if not isinstance(version, int) or isinstance(version, bool):
        raise ReportError(f"{where} is not a report (its format is {version!r}, not a number)")
    if version > FORMAT:
        raise ReportError(
            f"{where} was written by a newer vx-eval (report format {version}, this one reads up to {FORMAT}); "
            "upgrade vx-eval to read it"
        )
    try:
        return Report.model_validate(upgrade(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        at = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ReportError(f"{where} is not a readable report ({at}: {first['msg']})") from None
    except (TypeError, ValueError, AttributeError) as exc:  # an old report too broken to upgrade
        raise ReportError(f"{where} is not a readable report ({type(exc).__name__})") from None
