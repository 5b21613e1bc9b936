"""Grading (question, result) pairs 0–3 with a judge plugin where no human label exists, and checking a judge
against human grades (weighted kappa, confusion matrix, Kendall's tau of the setups' order).

A judge has a ``name``, a nested pydantic ``Options`` model, ``__init__(options, models)``,
``fingerprint()`` (what makes its grades differ: model, cut points, prompt), ``describe()`` (written into the
report) and ``grade(pairs) -> list[Verdict]``. A verdict without a grade (an answer that could not be read)
is counted and reported, never taken as a grade. Grades are cached by (fingerprint, question, passage), so a
rerun, or a second run over the same results, asks the judge nothing again.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from vx_eval.core.errors import ConfigError
from vx_eval.core.golden import Question

GRADES = (0, 1, 2, 3)


@dataclass(frozen=True)
class Verdict:
    """A judge's grade of one pair (None: its answer could not be read) and what it said (logit or text)."""

    grade: int | None
    raw: str


class Judge(Protocol):
    name: str

    def fingerprint(self) -> str: ...

    def describe(self) -> dict[str, Any]: ...

    def grade(self, pairs: Sequence[tuple[str, str]]) -> list[Verdict]: ...


def judge_maker(plugins: Any, name: str, settings: Any) -> Callable[[Any], Judge]:
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


class GradeCache:
    """Grades kept in SQLite by (judge fingerprint, question, passage) hashes; safe across threads."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS grades (judge TEXT, pair TEXT, grade INTEGER, raw TEXT, "
            "PRIMARY KEY (judge, pair))"
        )
        self._lock = threading.Lock()

    @staticmethod
    def key(question: str, passage: str) -> str:
        return hashlib.sha256(f"{question}\x00{passage}".encode()).hexdigest()

    def get(self, judge: str, keys: Sequence[str]) -> dict[str, Verdict]:
        found: dict[str, Verdict] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT pair, grade, raw FROM grades WHERE judge = ? AND pair IN ({marks})", [judge, *chunk]
                )
                found.update({pair: Verdict(grade, raw) for pair, grade, raw in rows})
        return found

    def put(self, judge: str, verdicts: dict[str, Verdict]) -> None:
        with self._lock, self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO grades VALUES (?, ?, ?, ?)",
                [(judge, k, v.grade, v.raw) for k, v in verdicts.items() if v.grade is not None],
            )

    def close(self) -> None:
        self._db.close()


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
) -> Graded:
    """Grade every distinct (question, passage) pair once: from the cache, else by the judge in batches."""
    distinct = list(dict.fromkeys(pairs))
    fingerprint = judge.fingerprint()
    keys = {p: GradeCache.key(*p) for p in distinct}
    known = cache.get(fingerprint, list(keys.values())) if cache else {}
    verdicts = {p: known[keys[p]] for p in distinct if keys[p] in known}
    advance(len(verdicts))
    todo = [p for p in distinct if p not in verdicts]
    for start in range(0, len(todo), batch):
        chunk = todo[start : start + batch]
        got = judge.grade(chunk)
        if len(got) != len(chunk):
            raise ConfigError(f"judge '{judge.name}' gave {len(got)} grades for {len(chunk)} pairs")
        verdicts.update(zip(chunk, got, strict=True))
        if cache:
            cache.put(fingerprint, {keys[p]: v for p, v in zip(chunk, got, strict=True)})
        advance(len(chunk))
    return Graded(verdicts, asked=len(todo), cached=len(distinct) - len(todo))


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


def agreement(human: Sequence[int], judged: Sequence[int]) -> dict[str, Any]:
    """Weighted Cohen's kappa (linear and quadratic), plain agreement and the confusion matrix
    (rows: human grade 0–3, columns: the judge's)."""
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    if not human:
        return {"pairs": 0}
    return {
        "pairs": len(human),
        "kappa_linear": float(cohen_kappa_score(human, judged, weights="linear", labels=list(GRADES))),
        "kappa_quadratic": float(cohen_kappa_score(human, judged, weights="quadratic", labels=list(GRADES))),
        "exact": sum(a == b for a, b in zip(human, judged, strict=True)) / len(human),
        "confusion": confusion_matrix(human, judged, labels=list(GRADES)).tolist(),
    }


def same_order(human: Sequence[float], judged: Sequence[float]) -> dict[str, Any]:
    """Kendall's tau-b between two scorings of the same setups (1: the same order)."""
    from scipy.stats import kendalltau

    if len(human) < 2:
        return {"setups": len(human), "tau": None, "p": None}
    result = kendalltau(human, judged)
    return {"setups": len(human), "tau": float(result.statistic), "p": float(result.pvalue)}


PASSAGE_CHARS = 4000


def passage_text(doc: Any, unit: str) -> str:
    """What a judge reads for a unit: the document's title, then the page the unit names, or its text."""
    from vx_eval.core.units import PAGE

    text = doc.text
    if PAGE in unit and doc.pages:
        page = int(unit.rsplit(PAGE, 1)[1])
        text = doc.pages[page - 1] if 0 < page <= len(doc.pages) else doc.text
    return f"{doc.title}\n{text}".strip()[:PASSAGE_CHARS] if doc.title else text[:PASSAGE_CHARS]


def top_units(runs: Sequence[Any], questions: Sequence[Question], depth: int) -> dict[tuple[str, int], list[str]]:
    """For each (target, question index): the units in the first `depth` places of any setup on that target,
    in trec_eval order per setup, each once."""
    from vx_eval.core.units import judge

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


def judge_run(
    runs: Sequence[Any],
    questions: Sequence[Question],
    targets: Sequence[Any],
    judge: Judge,
    depth: int,
    cache: GradeCache | None,
    progress: Any,
    everything: bool = False,
) -> tuple[list[Question], dict[str, Any]]:
    """Grade every unlabelled (question, result) pair in the first `depth` places of every setup; returns the
    questions with those grades added (human labels win) and what the report says about the grading.
    `everything`: grade the human-labelled pairs too and list every verdict (to check the judge)."""
    from vx_eval.core.units import document_of

    by_name = {t.name: t for t in targets}
    wanted = top_units(runs, questions, depth)
    pairs: dict[tuple[str, int], list[str]] = {}
    human_kept = 0
    for (target, i), units in wanted.items():
        labelled = questions[i].relevance()
        human_kept += sum(1 for u in units if u in labelled)
        pairs[(target, i)] = [u for u in units if everything or u not in labelled]
    texts: dict[tuple[str, str], str] = {}
    for target in {t for t, _ in pairs}:
        ids = sorted({document_of(u) for (t, _), units in pairs.items() if t == target for u in units})
        docs = {d.id: d for d in by_name[target].handle.documents(ids)}
        for (t, _), units in pairs.items():
            if t == target:
                for u in units:
                    if document_of(u) in docs:
                        texts[(target, u)] = passage_text(docs[document_of(u)], u)
    asked = [
        (questions[i].question, texts[(t, u)]) for (t, i), units in pairs.items() for u in units if (t, u) in texts
    ]
    advance = progress.start(f"Judging ({judge.name})", len(set(asked)))
    graded = grade_pairs(judge, asked, cache, advance)
    judged: dict[int, dict[str, int]] = {}
    for (t, i), units in pairs.items():
        for u in units:
            verdict = graded.verdicts.get((questions[i].question, texts.get((t, u), "")))
            if verdict is not None and verdict.grade is not None:
                judged.setdefault(i, {})[u] = verdict.grade
    out = [with_judged_grades(q, judged.get(i, {})) for i, q in enumerate(questions)]
    raw = {
        (i, u): graded.verdicts[(questions[i].question, texts[(t, u)])].raw
        for (t, i), units in pairs.items()
        for u in units
        if (t, u) in texts
    }
    verdicts = (
        {
            "verdicts": [
                [questions[i].id, u, g, raw.get((i, u))]
                for i, graded_units in sorted(judged.items())
                for u, g in graded_units.items()
            ]
        }
        if everything
        else {}
    )
    info = {
        **judge.describe(),
        "depth": depth,
        "pairs": len(set(asked)),
        "asked": graded.asked,
        "from_cache": graded.cached,
        "unparsable": graded.unparsable,
        "grades_from": {
            "human": human_kept,
            "judge": sum(1 for i, g in judged.items() for u in g if u not in questions[i].relevance()),
        },
        "not_found": sum(len(units) for units in pairs.values()) - len(asked),
        **verdicts,
    }
    return out, info


def check_judge(experiment: Any, plugins: Any, name: str, depth: int = 10, progress: Any = None) -> dict[str, Any]:
    """`vx-eval judge check`: search every setup of the experiment (nothing saved), let the judge grade every
    result in the first `depth` places, and compare it with the human grades of the golden file: weighted
    kappa and the confusion matrix over those pairs (an unjudged result counts as grade 0, as in DCG), and
    Kendall's tau between the setups ordered by DCG@10 on human grades and on the judge's."""
    import dataclasses

    import numpy as np

    from vx_eval.core import metrics
    from vx_eval.core.engine import SilentProgress
    from vx_eval.core.run import RunOptions, run_experiment
    from vx_eval.core.sources import read_golden
    from vx_eval.core.stores import Stores
    from vx_eval.core.units import judge as read_results

    config = experiment.config
    evaluation = config.evaluation.model_copy(update={"judge": name, "judge_depth": depth})
    checked = dataclasses.replace(experiment, config=config.model_copy(update={"evaluation": evaluation}))
    options = RunOptions(save=False, progress=progress or SilentProgress(), judge_everything=True)
    report = run_experiment(checked, plugins, options).report
    golden = read_golden(config.golden_source, Stores(plugins, options=experiment.stores))
    people = {q.id: q for q in golden.questions}
    by_judge: dict[str, dict[str, int]] = {}
    for qid, unit, grade, _ in report["judge"]["verdicts"]:
        by_judge.setdefault(qid, {})[unit] = grade
    human, judged, assumed, listed = [], [], 0, []
    raw = {(qid, unit): r for qid, unit, _, r in report["judge"]["verdicts"]}
    for qid, units in by_judge.items():
        if qid not in people:
            continue  # a question nobody labelled has no human grades to compare with
        labels = people[qid].relevance()
        for unit, grade in units.items():
            assumed += unit not in labels
            human.append(min(labels.get(unit, 0), 3))
            judged.append(grade)
            listed.append({"id": qid, "unit": unit, "human": human[-1], "judge": grade, "raw": raw[(qid, unit)]})
    dcg = metrics.parse("dcg@10")
    setups, dcg_human, dcg_judge = [], [], []
    ids = report["question_ids"]
    for setup in report["setups"]:
        if setup["error"] or not setup["per_question"].get("results"):
            continue
        rows_h, rows_j = [], []
        for qid, results in zip(ids, setup["per_question"]["results"], strict=True):
            if qid not in people:
                continue
            q = people[qid]
            as_judged = dataclasses.replace(q, expected=(), grades=by_judge.get(qid, {}))
            rows_h.append(read_results([tuple(r) for r in results], q))
            rows_j.append(read_results([tuple(r) for r in results], as_judged))
        setups.append(setup["key"])
        dcg_human.append(float(np.mean(dcg.compute(metrics.Batch.of(rows_h)))))
        dcg_judge.append(float(np.mean(dcg.compute(metrics.Batch.of(rows_j)))))
    return {
        "judge": {k: v for k, v in report["judge"].items() if k != "verdicts"},
        "golden": report["golden"],
        "agreement": {**agreement(human, judged), "assumed_zero": assumed},
        "pairs": listed,
        "order": {
            **same_order(dcg_human, dcg_judge),
            "setups": [
                {"key": k, "dcg@10 human": h, "dcg@10 judge": j}
                for k, h, j in sorted(zip(setups, dcg_human, dcg_judge, strict=True), key=lambda t: -t[1])
            ],
        },
    }
