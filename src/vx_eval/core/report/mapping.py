"""The report as plain mappings, for code written against the seed's dictionaries: ``report["picks"]``,
``report["setups"][0]["summary"]["found"]["10"]``, ``["median_ms"]``, ``["method_label"]``. The typed
`core.report.schema.Report` stays the one model; this is a view of it, made when asked."""

from __future__ import annotations

import re
from collections.abc import Iterator, KeysView
from typing import TYPE_CHECKING, Any, ClassVar, cast

if TYPE_CHECKING:
    from vx_eval.core.report.schema import Report, SetupResult

_AT = re.compile(r"^(?P<name>[a-z_]+)@(?P<k>\d+)$")


def summary_mapping(setup: SetupResult) -> dict[str, Any]:
    """A setup's summary: every measure as the report names it (``found@10``), the cut-off measures also by
    name then depth (``["found"]["10"]``), and the search times (``median_ms``, ``p95_ms``)."""
    out: dict[str, Any] = dict(setup.summary)
    for measure, value in setup.summary.items():
        if match := _AT.match(measure):
            out.setdefault(match["name"], {})[match["k"]] = value
    out["median_ms"] = setup.times_ms.median
    out["p95_ms"] = setup.times_ms.p95
    return out


def setup_mapping(setup: SetupResult) -> dict[str, Any]:
    data = setup.model_dump(mode="json")
    data["summary"] = summary_mapping(setup)
    data["method_label"] = setup.label
    return data


def report_value(report: Report, key: str) -> Any:
    """One field of the report as `report_mapping` shapes it, made alone (reading ``report["picks"]`` does
    not turn every setup's per-question results into JSON)."""
    if key == "setups":
        return [setup_mapping(s) for s in sorted(report.setups, key=lambda s: (s.rank or 10**9, s.key))]
    if key == "picks":
        return dict(report.picks.items())
    return report.model_dump(mode="json", include={key})[key]


class ReadsAsMapping:
    """A report read as the seed's read-only dict: ``"missing" in report``, ``report["picks"]``, ``keys()``,
    iteration over its keys, ``len``, ``dict(report)``. Each value is made when asked, one field at a time, so
    changing it never changes the report."""

    model_fields: ClassVar[dict[str, Any]]

    def __getitem__(self, key: str) -> Any:
        if key not in type(self).model_fields:
            raise KeyError(key)
        return report_value(cast("Report", self), key)

    def __contains__(self, key: object) -> bool:
        return key in type(self).model_fields

    def __iter__(self) -> Iterator[str]:  # a mapping's keys, not pydantic's (field, value) pairs
        return iter(list(type(self).model_fields))

    def __len__(self) -> int:
        return len(type(self).model_fields)

    def keys(self) -> KeysView[str]:
        return type(self).model_fields.keys()

    def items(self) -> Iterator[tuple[str, Any]]:
        return ((k, self[k]) for k in type(self).model_fields)

    def values(self) -> Iterator[Any]:
        return (self[k] for k in type(self).model_fields)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in type(self).model_fields else default
