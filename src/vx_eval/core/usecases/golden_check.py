"""Checking a golden file (`vx-eval golden check`): every defect of every line at once, what a BEIR or TREC
folder's import left out, and, against a config, every expected id its collection lacks with the id most
likely meant: looked up in the config's corpus file (nothing is built), else in the indexes that are there."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vx_eval.core.config.experiment import CorpusSource, load_config
from vx_eval.core.contracts.engine import Progress, SilentProgress
from vx_eval.core.contracts.golden import GoldenRow, LeftOut
from vx_eval.core.golden.files import Defect, lint
from vx_eval.core.golden.sources import folder_golden, read_corpus
from vx_eval.core.golden.units import document_of
from vx_eval.core.plugins import Plugins
from vx_eval.core.run.targets import close_targets, nearest_ids, open_targets
from vx_eval.core.stores import Stores


@dataclass(frozen=True)
class GoldenCheckRequest:
    """What to check: a golden file (or a BEIR or TREC folder, with its qrels split), and a config whose
    collection every expected id is looked up in (or None)."""

    location: str
    split: str = "test"
    config: Path | None = None


@dataclass(frozen=True)
class Absent:
    """An expected document the collection `where` lacks, and the id it holds that was most likely meant."""

    doc: str
    where: str
    meant: str | None = None


@dataclass
class GoldenCheck:
    """What the check found: the defects, what an import left out, the absent ids, the rows read, and how the
    ids were looked up (a corpus file, with its size; else None)."""

    defects: list[Defect]
    left_out: Sequence[LeftOut]
    rows: list[GoldenRow]
    absent: list[Absent] = field(default_factory=list)
    corpus: tuple[str, int] | None = None

    @property
    def problems(self) -> int:
        return len(self.defects) + len(self.absent)

    @property
    def filled(self) -> list[GoldenRow]:
        return [r for r in self.rows if r.question.strip()]


def check_golden(
    request: GoldenCheckRequest, plugins: Plugins, stores: Stores, progress: Progress | None = None
) -> GoldenCheck:
    """Lint the golden data at `request.location`; where it has no defect and a config is given, look every
    expected id up in the config's collection (`progress` shows targets opening where there is no corpus file)."""
    folder = folder_golden(request.location, request.split)
    raw, left_out = (folder[0], folder[1]) if folder is not None else (stores.read(request.location), ())
    defects, numbered = lint(raw)
    check = GoldenCheck(defects, left_out, [row for _, row in numbered])
    if request.config is not None and not defects:
        expected = {document_of(u) for r in check.filled for u in r.expected}
        _look_up(check, expected, request.config, plugins, stores, progress or SilentProgress())
    return check


def _look_up(
    check: GoldenCheck, wanted: set[str], config: Path, plugins: Plugins, stores: Stores, progress: Progress
) -> None:
    experiment = load_config(config, plugins)
    source = experiment.config.corpus_source
    lacks: list[tuple[str, list[str], Sequence[str]]] = []  # where, the ids it lacks, the ids it holds
    if source is not None:
        corpus = read_corpus(CorpusSource(path=source.path), stores)  # the whole file: a slice keeps what is expected
        ids = [doc.id for doc in corpus]
        lacks.append((f"the corpus {corpus.source}", sorted(wanted.difference(ids)), ids))
        check.corpus = (corpus.source, len(ids))
    else:
        targets = open_targets(experiment, plugins, stores, progress, build=False)
        try:
            for target in targets:
                absent = sorted(target.handle.missing(wanted))
                lacks.append((target.name, absent, target.handle.document_ids() if absent else ()))
        finally:
            close_targets(targets)
    for where, absent, held in lacks:
        nearest = nearest_ids(absent, held) if absent else {}
        check.absent += [Absent(doc, where, nearest.get(doc)) for doc in absent]
