"""Grading (question, result) pairs 0–3 with a judge plugin where no human label exists, and checking a judge
against human grades (weighted kappa, confusion matrix, Kendall's tau of the setups' order).

A judge has a ``name``, a nested pydantic ``Options`` model, ``__init__(options, models)``,
``fingerprint()`` (what makes its grades differ: model, cut points, prompt), ``describe()`` (written into the
report) and ``grade(pairs) -> list[Verdict]``. A verdict without a grade (an answer that could not be read)
is counted and reported, never taken as a grade. Grades are cached by (fingerprint, question, passage), so a
rerun, or a second run over the same results, asks the judge nothing again.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from vx_eval.core.contracts.engine import SetupResults
from vx_eval.core.contracts.golden import Question
from vx_eval.core.contracts.judge import GradeOn, Judge, Verdict
from vx_eval.core.errors import ConfigError
from vx_eval.core.golden.units import PAGE, document_of, judge
from vx_eval.core.models.cache import KeyedCache, pair_key
from vx_eval.core.models.families import families_of, family_of
from vx_eval.core.models.loading import own_models
from vx_eval.core.report.views import GradesFrom, JudgeInfo, Relation

if TYPE_CHECKING:
    from vx_eval.core.contracts.engine import Document, Progress, Target
    from vx_eval.core.models.loading import Models
    from vx_eval.core.plugins import Plugins


def judge_maker(
    plugins: Plugins, name: str, settings: BaseModel | dict[str, object] | None
) -> Callable[[Models], Judge]:
    """Check the judge plugin `name` and its options (``judges: {name: {…}}`` in the config: validated by the
    config already, or a dict from Python) at once; the judge itself is made later, from the run's models:
    ``judge_maker(…)(models)``."""
    cls = plugins.judges.get(name, where="evaluation.judge")
    if isinstance(settings, cls.Options):
        return lambda models: cls(settings, models)
    try:
        options = cls.Options.model_validate(settings or {})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"judges.{name}: {problems}") from None
    return lambda models: cls(options, models)


class GradeCache(KeyedCache):
    """Grades by (judge fingerprint, question, passage): the grade, with the judge's raw answer beside it."""

    key = staticmethod(pair_key)

    def verdicts(self, judge: str, keys: Sequence[str]) -> dict[str, Verdict]:
        return {k: Verdict(int(grade), raw or "") for k, (grade, raw) in self.get(judge, keys).items()}

    def keep(self, judge: str, verdicts: dict[str, Verdict]) -> None:
        """Readable grades only: an unreadable answer is asked again next time."""
        self.put(judge, {k: (v.grade, v.raw) for k, v in verdicts.items() if v.grade is not None})


@dataclass
class Graded:
    """What grading a set of pairs gave: a verdict per pair, and how many came from the cache."""

    verdicts: dict[tuple[str, str], Verdict]
    asked: int
    cached: int

    @property
    def unparsable(self) -> int:
        return sum(1 for v in self.verdicts.values() if v.grade is None)


def grade_pairs(
    judge: Judge,
    pairs: Sequence[tuple[str, str]],
    cache: GradeCache | None,
    advance: Callable[[int], None] = lambda n: None,
    batch: int = 32,
    on: GradeOn | None = None,
) -> Graded:
    """Grade every distinct (question, passage) pair once: from the cache, else by the judge in batches (in
    this process, or `on` the run's cluster: `core.run.work`), each batch's grades kept as it comes back."""
    distinct = list(dict.fromkeys(pairs))
    fingerprint = judge.fingerprint()
    keys = {p: GradeCache.key(*p) for p in distinct}
    known = cache.verdicts(fingerprint, list(keys.values())) if cache else {}
    verdicts = {p: known[keys[p]] for p in distinct if keys[p] in known}
    advance(len(verdicts))
    todo = [p for p in distinct if p not in verdicts]
    chunks = [todo[start : start + batch] for start in range(0, len(todo), batch)]
    graded = on(chunks) if on is not None else ((i, judge.grade(chunk)) for i, chunk in enumerate(chunks))
    for i, got in graded:
        chunk = chunks[i]
        if len(got) != len(chunk):
            raise ConfigError(f"judge '{judge.name}' gave {len(got)} grades for {len(chunk)} pairs")
        verdicts.update(zip(chunk, got, strict=True))
        if cache:
            cache.keep(fingerprint, {keys[p]: v for p, v in zip(chunk, got, strict=True)})
        advance(len(chunk))
    return Graded(verdicts, asked=len(todo), cached=len(distinct) - len(todo))


def unreadable_note(judge: str, graded: Graded) -> str:
    """What a run says when some of the judge's answers were not a grade: how many, what they looked like,
    and what follows (those pairs are ungraded, counted as not relevant; a rerun asks them again)."""
    bad = [v.raw for v in graded.verdicts.values() if v.grade is None]
    shown = ", ".join(repr(" ".join(raw.split())[:40]) for raw in list(dict.fromkeys(bad))[:3]) or "''"
    share = f"{len(bad):,} of {len(graded.verdicts):,}"
    return (
        f"the {judge} judge answered {share} pairs with something that is not a grade 0-3 (such as {shown}): "
        "they are left ungraded, so they count as not relevant in every graded measure, and a rerun asks them "
        "again; check that the judge's model follows its rubric"
    )


def with_judged_grades(question: Question, judged: dict[str, int]) -> Question:
    """The question with the judge's grades added for units no human graded (human labels always win)."""
    human = question.relevance()
    extra = {u: g for u, g in judged.items() if u not in human}
    return Question(
        id=question.id,
        question=question.question,
        expected=question.expected,
        grades={**extra, **question.grades},
        reference=question.reference,
        draft=question.draft,
    )


PASSAGE_CHARS = 4000


def passage_text(doc: Document, unit: str) -> str:
    """What a judge reads for a unit: the document's title, then the page the unit names, or its text."""

    text = doc.text
    if PAGE in unit and doc.pages:
        page = int(unit.rsplit(PAGE, 1)[1])
        text = doc.pages[page - 1] if 0 < page <= len(doc.pages) else doc.text
    return f"{doc.title}\n{text}".strip()[:PASSAGE_CHARS] if doc.title else text[:PASSAGE_CHARS]


def top_units(
    runs: Sequence[SetupResults], questions: Sequence[Question], depth: int
) -> dict[tuple[str, int], list[str]]:
    """For each (target, question index): the units in the first `depth` places of any setup on that target,
    in trec_eval order per setup, each once."""

    wanted: dict[tuple[str, int], list[str]] = {}
    for run in runs:
        if run.error is not None or not run.results:
            continue
        for i, (question, results) in enumerate(zip(questions, run.results, strict=True)):
            if run.errors[i]:
                continue
            units = [u for u in judge(results, question).ranked[:depth] if not u.startswith("\x00")]
            bucket = wanted.setdefault((run.setup.target, i), [])
            bucket.extend(u for u in units if u not in bucket)
    return wanted


def _passages(pairs: dict[tuple[str, int], list[str]], targets: Sequence[Target]) -> dict[tuple[str, str], str]:
    """What the judge reads for each (target, unit): its document's title and text (or page)."""

    by_name = {t.name: t for t in targets}
    texts: dict[tuple[str, str], str] = {}
    for target in {t for t, _ in pairs}:
        ids = sorted({document_of(u) for (t, _), units in pairs.items() if t == target for u in units})
        docs = {d.id: d for d in by_name[target].handle.documents(ids)}
        for (t, _), units in pairs.items():
            if t == target:
                for u in units:
                    if document_of(u) in docs:
                        texts[(target, u)] = passage_text(docs[document_of(u)], u)
    return texts


def judge_info(judge: Judge, **counts: Any) -> JudgeInfo:
    """The report's words on the grading: the judge's own description (what it does not name in
    `JudgeInfo`'s fields goes to `details`) and the counts."""
    said = dict(judge.describe())
    known = {k: v for k, v in said.items() if k in JudgeInfo.model_fields and k != "details"}
    return JudgeInfo(**known, details={k: v for k, v in said.items() if k not in JudgeInfo.model_fields}, **counts)


def judge_family(judge: Judge, models: Models | None) -> str | None:
    """The family of the judge's model (`Models.family`), or None where it has none or its name tells none."""
    model = judge.describe().get("model")
    if not isinstance(model, str) or not model:
        return None
    return models.family(model) if models is not None else family_of(model)


def writer_families(questions: Sequence[Question], models: Models | None) -> list[str]:
    """The families of the models that drafted the questions (``metadata.drafted_by``), where names tell them."""
    drafted = {q.drafted_by for q in questions if q.drafted_by}
    found = {models.family(m) if models is not None else family_of(m) for m in drafted}
    return sorted(f for f in found if f)


def setup_relations(
    runs: Sequence[SetupResults], judge: Judge, models: Models | None, writers: Collection[str] = ()
) -> dict[str, Relation]:
    """How each setup stands to the judge, where it does: `circular` where the judge's own model ranks or embeds
    it under whatever name (`Models.cache_space` tells two names of one model apart from two models); `related`
    where a model of a family the judge's model belongs to by base model or training lineage (`Models.families`:
    a bi-encoder distilled from the cross-encoder judge's base, another size of the chat judge's model) ranks or
    embeds it, or a model of a family in `writers` (the families that drafted the questions,
    `writer_families`): a model finds what its own family wrote."""
    model = judge.describe().get("model")
    if not isinstance(model, str) or not model:
        model = ""

    def space(name: str) -> str:
        return str(models.cache_space(name)) if models is not None else name

    def kin(name: str) -> frozenset[str]:
        return models.families(name) if models is not None else families_of(name)

    mine = space(model) if model else None
    families = set(writers) | (set(kin(model)) if model else set())
    out: dict[str, Relation] = {}
    for run in runs:
        used = [m for m in (run.setup.ranker, *run.setup.models) if m]
        if any(space(m) == mine for m in used):
            out[run.setup.key] = "circular"
        elif any(kin(m) & families for m in used):
            out[run.setup.key] = "related"
    return dict(sorted(out.items()))


def circular_setups(
    runs: Sequence[SetupResults], judge: Judge, models: Models | None, writers: Collection[str] = ()
) -> list[str]:
    """The setups the judge grades unfairly alone, circular or related (`setup_relations`): left out of the
    picks unless people's grades correct the judge."""
    return list(setup_relations(runs, judge, models, writers))


def _to_grade(
    runs: Sequence[SetupResults],
    questions: Sequence[Question],
    depth: int,
    everything: bool,
    also: Collection[int] = (),
) -> tuple[dict[tuple[str, int], list[str]], int]:
    """The units to grade per (target, question) in every setup's first `depth` places: those no person
    labelled (every one with `everything`); and how many a person's label kept."""
    pairs: dict[tuple[str, int], list[str]] = {}
    human_kept = 0
    for (target, i), units in top_units(runs, questions, depth).items():
        labelled = questions[i].relevance()
        human_kept += sum(1 for u in units if u in labelled)
        pairs[(target, i)] = [u for u in units if everything or i in also or u not in labelled]
    return pairs, human_kept


@dataclass(frozen=True)
class Grading:
    """What the judge gave a run: its grades by question index and unit (the pairs people graded too, where
    asked), and what the report says about the grading."""

    judged: dict[int, dict[str, int]]
    info: JudgeInfo
    highest: dict[int, tuple[str, str]] = field(default_factory=dict)
    """Per question index, the unit the judge graded highest (the first such in search order) and its text:
    what a label audit shows (`core.judging.audit`)."""
    labels: dict[int, dict[str, int]] = field(default_factory=dict)
    """The judge's grades of the relevant units people's labels name, for the questions a label audit asked
    (`labels_of`); never measures' grades (people's labels win)."""


Placed = list[tuple[int, str, str]]
"""(question index, unit, the text the judge reads) for each pair to grade."""


def _placed(
    runs: Sequence[SetupResults],
    questions: Sequence[Question],
    pairs: dict[tuple[str, int], list[str]],
    targets: Sequence[Target],
    labels_of: Collection[int],
) -> tuple[Placed, Placed]:
    """The pairs to grade with their texts, and the labelled units of the questions `labels_of` names (read from
    the first target a setup searched), each where its text was found."""
    searched = next((r.setup.target for r in runs if r.error is None and r.results), None)
    audited = {(searched, i): [u for u, g in questions[i].relevance().items() if g > 0] for i in labels_of if searched}
    wanted = {k: list(dict.fromkeys([*pairs.get(k, []), *audited.get(k, [])])) for k in pairs.keys() | audited.keys()}
    texts = _passages(wanted, targets)
    placed = [(i, u, texts[(t, u)]) for (t, i), units in pairs.items() for u in units if (t, u) in texts]
    on_labels = [(i, u, texts[(t, u)]) for (t, i), units in audited.items() for u in units if (t, u) in texts]
    return placed, on_labels


def _read_verdicts(
    placed: Placed, questions: Sequence[Question], graded: Graded
) -> tuple[dict[int, dict[str, int]], dict[tuple[int, str], str], dict[int, tuple[str, str]]]:
    """The judge's grades by question index and unit, its raw answers, and the unit it graded highest per
    question (the first such) with its text."""
    judged: dict[int, dict[str, int]] = {}
    raw: dict[tuple[int, str], str] = {}
    highest: dict[int, tuple[str, str]] = {}
    for i, u, text in placed:
        verdict = graded.verdicts[(questions[i].question, text)]
        raw[(i, u)] = verdict.raw
        if verdict.grade is not None:
            judged.setdefault(i, {})[u] = verdict.grade
            if i not in highest or verdict.grade > judged[i][highest[i][0]]:
                highest[i] = (u, text)
    return judged, raw, highest


def grade_run(
    runs: Sequence[SetupResults],
    questions: Sequence[Question],
    targets: Sequence[Target],
    judge: Judge,
    depth: int,
    cache: GradeCache | None,
    progress: Progress,
    everything: bool = False,
    on: GradeOn | None = None,
    also: Collection[int] = (),
    labels_of: Collection[int] = (),
) -> Grading:
    """Grade every unlabelled (question, result) pair in the first `depth` places of every setup, and the
    labelled pairs of the questions `also` names (to measure the judge against people, `core.judging.corrected`).
    `everything`: grade every labelled pair too and list every verdict (to check the judge); `on`: where the
    batches are graded, when not in this process (the run's cluster). `labels_of`: questions whose labelled
    relevant units the judge grades too, wherever they ranked (`Grading.labels`, for `core.judging.audit`)."""
    pairs, human_kept = _to_grade(runs, questions, depth, everything, also)
    placed, on_labels = _placed(runs, questions, pairs, targets, labels_of)
    asked = [(questions[i].question, text) for i, _, text in placed + on_labels]
    graded = grade_pairs(judge, asked, cache, progress.start(f"Judging ({judge.name})", len(set(asked))), on=on)
    if graded.unparsable:
        progress.note(unreadable_note(judge.name, graded))
    judged, raw, highest = _read_verdicts(placed, questions, graded)
    labels: dict[int, dict[str, int]] = {}
    for i, u, text in on_labels:
        if (grade := graded.verdicts[(questions[i].question, text)].grade) is not None:
            labels.setdefault(i, {})[u] = grade
    verdicts = [
        (questions[i].id, u, g, raw.get((i, u))) for i, units in sorted(judged.items()) for u, g in units.items()
    ]
    models = own_models(targets[0].models) if targets else None
    writers = writer_families(questions, models)
    relations = setup_relations(runs, judge, models, writers)
    info = judge_info(
        judge,
        depth=depth,
        pairs=len({(questions[i].question, text) for i, _, text in placed}),  # the audit's pairs aside
        asked=graded.asked,
        from_cache=graded.cached,
        unparsable=graded.unparsable,
        grades_from=GradesFrom(
            human=human_kept,
            judge=sum(1 for i, g in judged.items() for u in g if u not in questions[i].relevance()),
        ),
        not_found=sum(len(units) for units in pairs.values()) - len(placed),
        verdicts=verdicts if everything else None,
        circular=list(relations),
        relations=relations,
        family=judge_family(judge, models),
        writer_families=writers,
    )
    return Grading(judged, info, highest, labels)


def judge_run(
    runs: Sequence[SetupResults],
    questions: Sequence[Question],
    targets: Sequence[Target],
    judge: Judge,
    depth: int,
    cache: GradeCache | None,
    progress: Progress,
    everything: bool = False,
    on: GradeOn | None = None,
) -> tuple[list[Question], JudgeInfo]:
    """`grade_run`, and the questions with the judge's grades added (human labels win)."""
    grading = grade_run(runs, questions, targets, judge, depth, cache, progress, everything, on)
    return [with_judged_grades(q, grading.judged.get(i, {})) for i, q in enumerate(questions)], grading.info
