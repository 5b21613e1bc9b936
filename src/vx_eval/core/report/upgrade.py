"""Reports of earlier formats, brought to the current one in one place, before the typed model reads them.

Every step reads the old report defensively (it comes from disk: anything may be missing or of another
type) and only renames or fills in; what still does not fit is left for the model to refuse with a reason.

Format 1 (before the typed model): status ``done``; presentation strings as keys of the graded view
(``dcg@10``, ``p@10 (grade ≥ 2)``, ``dcg@10 per question``); whatever `describe()` returned, flat in a
target; no ``collections`` or ``missing_notes`` in the oldest reports. Format 2 lacks only what format 3
added with defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vx_eval.core.report.missing import missing_notes

_GRADED_KEYS = {
    "dcg@10": "dcg",
    "mean_rel@10": "mean_rel",
    "p@10 (grade ≥ 2)": "p_strict",
    "mrr (grade ≥ 2)": "mrr_strict",
    "dcg@10 per question": "dcg_per_question",
}
_TARGET_FIELDS = {
    "engine",
    "collection",
    "documents",
    "chunks",
    "models",
    "version",
    "location",
    "capabilities",
    "mode",
    "indexed_at",
    "corpus_sha256",
    "fingerprint",
    "settings",
    "details",
    "describe_error",
}
_JUDGE_FIELDS = {
    "judge",
    "model",
    "meaning",
    "rubric",
    "cut_points",
    "details",
    "depth",
    "pairs",
    "asked",
    "from_cache",
    "unparsable",
    "grades_from",
    "not_found",
    "verdicts",
}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _graded(old: dict[str, Any]) -> dict[str, Any]:
    new = {_GRADED_KEYS.get(k, k): v for k, v in old.items()}
    new["ci"] = {_GRADED_KEYS.get(k, k): v for k, v in _dict(old.get("ci")).items()}
    return new


def _setup(old: dict[str, Any], targets: dict[str, Any]) -> dict[str, Any]:
    """A setup entry with its identity filled in from its key where an old report left it out
    (``local.keyword``: target ``local``, method ``keyword``), and its graded view renamed."""
    new = dict(old)
    key = str(new.get("key", ""))
    parts = key.split(".")
    new.setdefault("target", parts[0])
    new.setdefault("method", parts[1] if len(parts) > 1 else key)
    new.setdefault("label", key)
    engine = _dict(targets.get(new["target"])).get("engine", "")
    new.setdefault("engine", engine)
    if isinstance(new.get("graded"), dict):
        new["graded"] = _graded(new["graded"])
    return new


def _target(old: dict[str, Any]) -> dict[str, Any]:
    new = {k: v for k, v in old.items() if k in _TARGET_FIELDS}
    extra = {k: v for k, v in old.items() if k not in _TARGET_FIELDS}
    if extra:
        new["details"] = {**_dict(new.get("details")), **extra}
    if not isinstance(new.get("settings", {}), dict):
        new["settings"] = {}
    return new


def _judge(old: dict[str, Any]) -> dict[str, Any]:
    new = {k: v for k, v in old.items() if k in _JUDGE_FIELDS}
    extra = {k: v for k, v in old.items() if k not in _JUDGE_FIELDS}
    if extra:
        new["details"] = {**_dict(new.get("details")), **extra}
    return new


@dataclass(frozen=True)
class _Absent:
    documents: list[str]
    questions: list[str]
    nearest: dict[str, str]


def _missing_notes(missing: dict[str, Any]) -> list[str]:
    notes = {
        name: _Absent(
            documents=[str(d) for d in info.get("documents") or []],
            questions=[str(q) for q in info.get("questions") or []],
            nearest={},
        )
        for name, info in missing.items()
        if isinstance(info, dict)
    }
    return missing_notes(notes)


def _graded_questions(dashboard: Any) -> Any:
    """The graded block with its keys renamed (None where there is none; what is not a dict, as it was)."""
    if not isinstance(dashboard, dict):
        return dashboard or None
    dashboard = dict(dashboard)
    if isinstance(dashboard.get("best"), dict):
        dashboard["best"] = {_GRADED_KEYS.get(k, k): v for k, v in dashboard["best"].items()}
    for side in ("strongest", "weakest"):
        if isinstance(dashboard.get(side), list):
            dashboard[side] = [
                {_GRADED_KEYS.get(k, k): v for k, v in q.items()} if isinstance(q, dict) else q for q in dashboard[side]
            ]
    return dashboard


def from_format_1(report: dict[str, Any]) -> dict[str, Any]:
    out = dict(report)
    out["format"] = 2
    if out.get("status") == "done":
        out["status"] = "completed"
    targets = _dict(out.get("targets"))
    out["targets"] = {name: _target(t) for name, t in targets.items() if isinstance(t, dict)}
    if not out.get("collections"):
        out["collections"] = sorted({str(t.get("collection") or name) for name, t in out["targets"].items()})
    if "missing_notes" not in out:
        out["missing_notes"] = _missing_notes(_dict(out.get("missing")))
    setups = out.get("setups")
    if isinstance(setups, list):  # what is not a dict is left for the model to refuse
        out["setups"] = [_setup(setup, out["targets"]) if isinstance(setup, dict) else setup for setup in setups]
    out["graded_questions"] = _graded_questions(out.get("graded_questions"))
    if isinstance(out.get("judge"), dict):
        out["judge"] = _judge(out["judge"])
    for key in ("picks", "frontier"):
        if out.get(key) is None:
            out.pop(key, None)
    return out


def from_format_2(report: dict[str, Any]) -> dict[str, Any]:
    """Format 3 only adds fields (`derived_from`) with defaults: nothing to change."""
    return {**report, "format": 3}


def from_format_3(report: dict[str, Any]) -> dict[str, Any]:
    """Format 4 only adds fields (the golden file's `human_grades` from the grading page) with defaults."""
    return {**report, "format": 4}


STEPS = {1: from_format_1, 2: from_format_2, 3: from_format_3}
"""Each older format, and the step that makes it the next one."""


def upgrade(report: dict[str, Any]) -> dict[str, Any]:
    """`report` (a JSON object of any format up to the current) in the current format's shape."""
    version = report.get("format", 1)
    while version in STEPS:
        report = STEPS[version](report)
        version = report["format"]
    return report
