"""The reports the server answers with: finished reports never change, so the last few read (and their JSON
as each kind of caller sees it) are kept in memory."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable

from vx_eval.core.report.history import has_golden, newest_report, read_report
from vx_eval.core.report.saving import check_run_id
from vx_eval.core.report.schema import Report
from vx_eval.core.stores import Stores

CACHED_REPORTS = 8


class Reports:
    """Finished reports never change, so the last few read are kept in memory."""

    def __init__(self, stores: Stores, save_to: str) -> None:
        self.stores, self.save_to = stores, save_to
        self._cache: OrderedDict[str, Report] = OrderedDict()
        self._json: OrderedDict[tuple[str, bool, str, bool], bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, run_id: str) -> Report:
        """A run's report by id, or the newest that can be read for ``latest``."""
        if run_id == "latest":
            return newest_report(self.stores, self.save_to, read=self.get)
        run_id = check_run_id(run_id)
        with self._lock:
            if run_id in self._cache:
                self._cache.move_to_end(run_id)
                return self._cache[run_id]
        report = read_report(self.stores, self.save_to, run_id)
        with self._lock:
            self._cache[run_id] = report
            while len(self._cache) > CACHED_REPORTS:
                self._cache.popitem(last=False)
        return report

    def has_golden(self, report: Report) -> bool:
        return has_golden(self.stores, self.save_to, report)

    def json(self, report: Report, admin: bool, fields: str, golden: bool, shown: Callable[..., Report]) -> bytes:
        """The report as the API sends it, serialised once per (run, who may see what, fields): a finished
        report never changes, and serialising a large one is most of a request's time."""
        key = (report.id, admin, fields, golden)
        with self._lock:
            if key in self._json:
                self._json.move_to_end(key)
                return self._json[key]
        exclude = {"setups": {"__all__": {"per_question"}}} if fields == "summary" else None
        body = shown(report).model_dump(mode="json", exclude=exclude)
        data = json.dumps({**body, "golden_download": golden}, separators=(",", ":")).encode()
        with self._lock:
            self._json[key] = data
            while len(self._json) > CACHED_REPORTS * 4:
                self._json.popitem(last=False)
        return data
