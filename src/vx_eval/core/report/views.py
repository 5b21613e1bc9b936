"""The report's analysis views, beside the measures: how far ties move a score (`TieView`), where each setup
wins and how far routing could go (`Headroom`), every pair compared (`AllPairs`), and fusion tuned on
held-out questions (`Tuning`), and what a judge did (`JudgeInfo`, `GradedDashboard`). `core.report.schema.Report`
holds them; `Frozen` is every report model's base."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Interval = tuple[float, float]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CorpusCut(Frozen):
    """The part of the corpus a run indexed, where it indexed only part: the first documents (``corpus:
    {limit: N}``) or a seeded sample (``{sample: N}``), with or without the documents the questions expect."""

    source: str
    how: Literal["first", "sample"]
    documents: int
    """Documents indexed."""
    of: int
    """Documents in the corpus."""
    drawn: int
    """The first N, or the N drawn."""
    expected_added: int = 0
    """Expected documents kept beyond those drawn."""
    expected_left_out: int = 0
    """Documents the questions expect that the part left out (``keep_expected: false``)."""
    seed: int | None = None


class TieRange(Frozen):
    """One measure's mean over a setup's evaluated questions, under each order of its tied results."""

    trec: float | None = None
    expected: float | None = None
    optimistic: float | None = None
    pessimistic: float | None = None
    sampled: bool = False
    """The expected value was averaged over seeded orders (ERR, bpref, condensed lists), not computed exactly."""


class TieView(Frozen):
    """How far a setup's scores depend on the order of results with equal scores (`core.measures.ties`)."""

    questions: int
    """Evaluated questions whose ranked list holds a tie of two or more results."""
    measures: dict[str, TieRange] = Field(default_factory=dict)
    spread: float | None = None
    """The primary measure's optimistic minus pessimistic mean: what the tie order alone can move it by."""
    flagged: bool = False


class Overlap(Frozen):
    a: str
    b: str
    overlap: float
    """Mean Jaccard overlap of the two top 10s (shared units over units in either), over the questions both
    evaluated."""
    questions: int


class KindView(Frozen):
    """One kind of question (``metadata.kind``): how many, each setup's mean, the best, and the oracle."""

    questions: int
    means: dict[str, float] = Field(default_factory=dict)
    best: str | None = None
    oracle: float | None = None


class Headroom(Frozen):
    """Where each setup wins and how far routing could go (`core.report.headroom`), on the primary measure."""

    measure: str
    best: str
    best_value: float
    oracle: float
    """The mean over questions of the best score any setup reached on each: the ceiling of routing."""
    oracle_ci: Interval | None = None
    gain: float
    questions: int
    found_by: list[int] = Field(default_factory=list)
    """Per question (in `Report.question_ids` order): how many setups hold a right answer in their top 10."""
    unfound: list[str] = Field(default_factory=list)
    """Questions no setup finds in its top 10 (the first few; `unfound_count` says how many)."""
    unfound_count: int = 0
    only: dict[str, list[str]] = Field(default_factory=dict)
    """Per setup, questions only it finds in its top 10 (the first few)."""
    only_count: dict[str, int] = Field(default_factory=dict)
    wins: dict[str, int] = Field(default_factory=dict)
    """Per setup, questions on which it alone scores best."""
    overlaps: list[Overlap] = Field(default_factory=list)
    kinds: dict[str, KindView] = Field(default_factory=dict)


class FusionSetting(Frozen):
    fusion: str
    alpha: float
    rrf_k: int | None = None


class FoldChoice(Frozen):
    """What one fold chose on the other folds' questions, and how that did there and on its own."""

    fold: int
    setting: FusionSetting
    train: float
    held_out: float
    questions: int


class VsDefault(Frozen):
    delta: float
    ci: Interval
    p: float


class TunedHybrid(Frozen):
    """One hybrid's fusion tuned by cross-validation (`core.run.tuning`): held-out, default and in-sample."""

    key: str
    """The tuned setup's key in the ranking (its numbers there are the held-out ones)."""
    hybrid: str
    components: list[str]
    measure: str
    questions: int
    tried: int
    default: FusionSetting
    default_value: float
    held_out: float
    """The mean over questions of each question scored with the setting its fold chose elsewhere."""
    held_out_ci: Interval
    in_sample: FusionSetting
    """The setting best on every question: the one to deploy (`config_lines`)."""
    in_sample_value: float
    """Optimistic: the best of many means on the questions it was chosen on."""
    overstated: float
    """In-sample minus held-out: how much tuning on the scored questions overstates the gain."""
    folds: list[FoldChoice] = Field(default_factory=list)
    stable: float
    """Share of folds that chose the most chosen setting."""
    vs_default: VsDefault
    config_lines: str
    timed: int = 0


class Tuning(Frozen):
    folds: int
    hybrids: list[TunedHybrid] = Field(default_factory=list)


class PairTest(Frozen):
    a: str
    b: str
    delta: float
    """Mean of a minus mean of b."""
    p: float


class AllPairs(Frozen):
    """Every pair of the leading setups, family-wise controlled (`core.report.headroom.all_pairs`)."""

    measure: str
    method: str
    trials: int
    questions: int
    alpha: float
    pairs: list[PairTest] = Field(default_factory=list)


class GradesFrom(Frozen):
    human: int = 0
    judge: int = 0


Relation = Literal["circular", "related"]
"""How a setup stands to the run's judge (`core.judging.grading.setup_relations`)."""


class Gullibility(Frozen):
    """How easily the judge is fooled (`core.judging.gullible`): unrelated passages it graded below 2, graded
    again with the question's words and an instruction to rate it relevant pasted in."""

    pairs: int = 0
    """Unrelated passages the judge graded below 2 as they were."""
    raised: int = 0
    """Of those, how many it graded 2 or more once stuffed."""
    share: float | None = None
    example: str | None = None
    """One question whose unrelated passage it was fooled on (where one was)."""


class MeasuredAgreement(Frozen):
    """How far this judge (the same plugin, model, rubric and cut points) agreed with people when
    `vx-eval judge check` last measured it, on a golden file with human grades."""

    kappa_linear: float | None = None
    kappa_quadratic: float | None = None
    exact: float | None = None
    pairs: int = 0
    tau: float | None = None
    """Kendall's tau between the setups ordered by DCG@10 on people's grades and on the judge's."""
    golden: str = ""
    """The golden file it was measured on (its name) and that file's sha256."""
    golden_sha256: str = ""
    checked_at: str = ""
    confusion: list[list[int]] = Field(default_factory=list)
    """The pairs by people's grade (rows 0-3) and the judge's (columns): how sure a pick is under the judge
    (`core.judging.noise`) is read from it."""
    shipped: bool = False
    """True where no check was run in this store and this is vx-eval's own check of the same judge, shipped
    with the package (measured on TREC DL 2019, not on the user's data)."""
    gullibility: Gullibility | None = None
    """How easily the same check fooled it with stuffed passages (None: not probed)."""


class AgreementHere(Frozen):
    """How far the judge agreed with people on this run's own person-graded questions (`core.judging.here`):
    the pairs both graded and the order both give the setups. Measured here, unlike `MeasuredAgreement`."""

    questions: int
    """People's questions whose results the judge graded too."""
    pairs: int
    assumed_zero: int = 0
    """Pairs whose unit people did not grade, counted as their 0 (as DCG counts it)."""
    kappa_linear: float | None = None
    kappa_quadratic: float | None = None
    exact: float | None = None
    setups: int = 0
    tau: float | None = None
    """Kendall's tau between the setups ordered by DCG@10 on people's grades and on the judge's (people's
    questions only)."""
    tau_low: float | None = None
    tau_high: float | None = None
    """Tau's 95% bootstrap interval over people's questions."""


class Suspect(Frozen):
    """A question whose labels probably name the wrong documents (`core.judging.audit`)."""

    id: str
    question: str
    labels: list[str]
    """The units its labels name as relevant (the first five)."""
    label_grade: int | None = None
    """The judge's highest grade of the labelled documents."""
    unit: str
    """The result the judge graded highest, none of its labels."""
    grade: int
    passage: str | None = None
    """The start of that result's text, as the judge read it."""
    found_by: int = 0
    """Setups that returned it in their first 10."""


class LabelAudit(Frozen):
    """People's labels against every setup's results and the judge's grades: the questions no setup finds while
    the judge grades another result 2 or more (`core.judging.audit`)."""

    checked: int
    """Person-labelled questions with a relevant label."""
    unfound: int = 0
    """Of those, the ones no setup returns a relevant label for in its first 10."""
    disputed: int = 0
    """Of those, the ones whose labelled documents the judge grades below a result some setup returned."""
    confirmed: int = 0
    """Of those, the ones whose labelled documents the judge grades above every result the setups returned."""
    suspects: list[Suspect] = Field(default_factory=list)
    """Disputed questions whose returned result the judge grades 2 or more: probably mislabelled."""
    looks_wrong: bool = False
    """Most checked questions unfound, and the judge's grades dispute their labels far more often than they
    confirm them (`core.judging.audit`): the golden file looks wrong, and the run names no picks."""


class JudgeNoise(Frozen):
    """How often each leader leads when the judge's grades are redrawn as people would likely have given
    them (from the judge's measured confusion with people): see `core.judging.noise`."""

    measure: str
    draws: int
    leads: dict[str, float]
    """Setup key: the share of draws it led in (the pick first)."""
    sure: bool
    """The pick led in 95% of the draws or more."""
    kappa: float | None = None
    pairs: int = 0
    golden: str = ""
    """Where the confusion was measured (the checked golden file's name)."""
    shipped: bool = False
    """Measured by vx-eval's own check shipped with the package, not by a check in this store."""


class JudgeInfo(Frozen):
    """How a judge graded the run: which judge, and how many pairs it graded, from where."""

    judge: str
    model: str | None = None
    meaning: str | None = None
    rubric: str | None = None
    cut_points: list[float] | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    depth: int = 10
    pairs: int = 0
    asked: int = 0
    from_cache: int = 0
    unparsable: int = 0
    grades_from: GradesFrom = Field(default_factory=GradesFrom)
    not_found: int = 0
    verdicts: list[tuple[str, str, int, str | None]] | None = None
    """`vx-eval judge check` only: every (question id, unit, grade, raw answer)."""
    agreement: MeasuredAgreement | None = None
    """This judge's agreement with people where `vx-eval judge check` has measured it (None: never)."""
    here: AgreementHere | None = None
    """Its agreement with people on this run's own person-graded questions (None: people graded none, or all)."""
    audit: LabelAudit | None = None
    """People's labels audited against the setups' results and this judge's grades (None: people labelled none)."""

    def relation(self, key: str) -> Relation | None:
        """How setup `key` stands to the judge (None: not at all); a report from before relations were told
        apart says circular for every setup it left out."""
        return self.relations.get(key, "circular") if key in self.circular else None

    def golden_looks_wrong(self) -> bool:
        """The label audit found most labelled questions disputed: the run names no picks."""
        return self.audit is not None and self.audit.looks_wrong

    circular: list[str] = Field(default_factory=list)
    """The setups the judge's own model, or a model of its family, ranks or embeds: grading them is circular
    (Clarke & Dietz 2024: a judge favours the ranker it is), so they are left out of the picks (unless people's
    grades correct the judge: `Corrected.readmitted`). `relations` says which is which."""
    relations: dict[str, Relation] = Field(default_factory=dict)
    """Each of `circular`: `circular` where the judge's own model ranks or embeds it, `related` where a model
    sharing a family or training lineage with the judge's (or the questions' writer's) does."""
    family: str | None = None
    """The judge's model family (`core.models.families`), where its name tells it."""
    writer_families: list[str] = Field(default_factory=list)
    """The families of the models that drafted the questions (``metadata.drafted_by``): a setup of one is
    circular too, and a judge of one grades its own family's questions."""


class GradedQuestion(Frozen):
    id: str
    dcg: float


class BestGraded(Frozen):
    key: str
    label: str
    dcg: float


class GradedDashboard(Frozen):
    """Over the run: the best DCG@10 and its setup, the strongest, weakest and failed questions."""

    best: BestGraded
    strongest: list[GradedQuestion] = Field(default_factory=list)
    weakest: list[GradedQuestion] = Field(default_factory=list)
    failed: list[str] = Field(default_factory=list)


class CorrectedMean(Frozen):
    """A setup's measure, prediction-powered: the judge's mean corrected by its error where people graded."""

    mean: float
    low: float
    high: float
    weight: float
    """The weight the judge's grades carry (0: people's grades alone; 1: the judge's as much as people's)."""


class CorrectedLead(Frozen):
    """The leader's lead over a setup, prediction-powered, paired question by question."""

    mean: float
    low: float
    high: float
    settle_with: int | None = None
    """About how many questions people grade would make the interval exclude 0 (None: no number would, with
    this judge; the present number where it excludes 0 already)."""


class Corrected(Frozen):
    """Each setup's measure where a judge graded most questions and people some (`core.judging.corrected`):
    the judge's mean corrected by its error on the questions people graded too (PPI++, Angelopoulos et al.
    2023), with intervals that cover whatever the judge's bias; and the leader's lead over each setup."""

    measure: str
    labelled: int
    """Questions people graded (the judge graded their results too)."""
    unlabelled: int
    """Questions only the judge graded."""
    leader: str
    setups: dict[str, CorrectedMean]
    leads: dict[str, CorrectedLead]
    """The corrected best minus each other setup."""
    best: str
    """The setup first in the order the judge gives unless people's grades overturn it (`core.measures.ppi.
    guarded_order`): the run's `finds_the_most`."""
    order: list[str] = Field(default_factory=list)
    """Every corrected setup in that order, the best first: the table's order."""
    readmitted: list[str] = Field(default_factory=list)
    """Setups the judge is related to (`JudgeInfo.circular`), ranked and pickable all the same: people's
    grades correct the judge's bias on them as on the rest."""

    def level_with_best(self) -> list[str]:
        """The corrected best and the setups whose lead interval holds 0: those people's grades cannot tell
        from it."""
        return [self.best, *(k for k, lead in self.leads.items() if lead.low <= 0 <= lead.high)]


class GoldenInfo(Frozen):
    """The golden file the run read: where, its sha256, and its counts."""

    source: str = ""
    sha256: str | None = None
    questions: int = 0
    labelled: int = 0
    unfilled: int = 0
    unlabelled: int = 0
    drafts: int = 0
    max_grade: int = 1
    graded: int = 0
    """Questions that give some unit a grade above 1 (the graded view's coverage)."""
    human_grades: int = 0
    """Grades people gave on the grading page (kept beside the golden file) that this run used: for units the
    golden file does not grade, each pair's median grade over its raters."""
    human_grades_sha256: str | None = None
    """The sha256 of the grades file as the run read it (None: there was none)."""
