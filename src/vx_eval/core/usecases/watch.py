"""Run the evaluation again whenever the golden file changes: once per new content, after it settles.

`check_once` is the whole logic, and what cloud triggers call (`vx_eval.triggers`): read the golden file's
sha256; if a saved run of this experiment already read that content, do nothing; else wait the settle time
and read it again, and again while it keeps changing, so a burst of saves costs one run; then run. Saved
runs are the memory (the history at ``save_to``), so two watchers, a restarted one or a cloud function
never run twice for the same (experiment, sha256).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from vx_eval.core.config.experiment import Experiment, load_config
from vx_eval.core.errors import GoldenError, StoreError
from vx_eval.core.golden.sources import read_golden
from vx_eval.core.report.history import read_report, run_ids
from vx_eval.core.stores import Stores
from vx_eval.core.usecases.pipeline import RunOptions, RunResult, run_experiment

if TYPE_CHECKING:
    from vx_eval.core.plugins import Plugins


@dataclass
class Outcome:
    """What one check did: ``ran`` (with the run), ``seen`` (this content was run before), ``unsettled``."""

    action: str
    sha256: str
    result: RunResult | None = None

    @property
    def run_id(self) -> str | None:
        return self.result.report.id if self.result else None


@dataclass
class Watcher:
    config: Path
    plugins: Plugins
    settle: float = 60.0
    max_settles: int = 10
    """How many settle periods a golden file that keeps changing is waited for before it is run anyway."""
    options: RunOptions = field(default_factory=RunOptions)
    sleep: Callable[[float], None] = time.sleep
    _runs: dict[tuple[str, str], tuple[str | None, str | None]] = field(default_factory=dict, init=False, repr=False)

    def _experiment(self) -> Experiment:
        return load_config(self.config, self.plugins)  # read afresh: the config may change too

    def _sha(self, experiment: Experiment, stores: Stores) -> str:
        return read_golden(experiment.config.golden_source, stores).sha256

    def already_run(self, experiment: Experiment, stores: Stores, sha256: str) -> bool:
        """Whether a saved run of this experiment read exactly this golden content. Each finished run's
        report is read once and its (name, golden sha256) kept: a report never changes once written."""
        save_to = self.options.save_to or experiment.config.save_to
        wanted = (experiment.config.name, sha256)
        for run_id in run_ids(stores, save_to):
            if (save_to, run_id) not in self._runs:
                try:
                    report = read_report(stores, save_to, run_id)
                except StoreError:  # unfinished or unreadable: looked at again next time
                    continue
                self._runs[(save_to, run_id)] = (report.name, report.golden.sha256)
            if self._runs[(save_to, run_id)] == wanted:
                return True
        return False

    def _readable_sha(self, experiment: Experiment, stores: Stores) -> str | None:
        """The golden file's sha256; None where it cannot be read as golden data just now (an editor half way
        through saving it leaves it empty or cut): that counts as still changing."""
        try:
            return self._sha(experiment, stores)
        except GoldenError:
            return None

    def check_once(self) -> Outcome:
        experiment = self._experiment()
        stores = Stores(self.plugins, options=experiment.stores)
        sha = self._readable_sha(experiment, stores)
        if sha is not None and self.already_run(experiment, stores, sha):
            return Outcome("seen", sha)
        for _ in range(self.max_settles):
            self.sleep(self.settle)
            again = self._readable_sha(experiment, stores)
            if again is not None and again == sha:
                break
            sha = again
        else:
            if sha is None:  # unreadable through every settle period: say why, as a run would
                sha = self._sha(experiment, stores)
            self.options.progress.note(f"the golden file kept changing for {self.max_settles} settle periods; running")
        if self.already_run(experiment, stores, sha):
            return Outcome("seen", sha)
        return Outcome("ran", sha, run_experiment(experiment, self.plugins, self.options))

    def watch(self, poll: float = 10.0, until: Callable[[Outcome], bool] = lambda outcome: False) -> None:
        """Check every `poll` seconds until `until(outcome)` says stop (never, from the command line)."""
        while True:
            outcome = self.check_once()
            if until(outcome):
                return
            self.sleep(poll)
