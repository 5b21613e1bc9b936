"""What the runs queue keeps and answers with: the request a caller sends (`RunRequest`), the job kept for it
(`Job`, one JSON file), its progress, and the queue's health for `/healthz`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Status = Literal["pending", "in_progress", "completed", "failed", "cancelled"]
ACTIVE = ("pending", "in_progress")


class RunRequest(BaseModel):
    """What a caller asks: an experiment by name, or a target by name (an index the server was told of,
    ``vx-eval serve --target NAME=ENGINE:WHERE``, run with no configuration: questions drafted, grades a
    judge's), and what to change for this run."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"experiment": "quickstart"},
                {
                    "experiment": "quickstart",
                    "dataset": "help-centre",
                    "metrics": ["recall", "ndcg"],
                    "k_values": [5, 10],
                },
                {"target": "help-index", "questions": 24},
            ]
        },
    )
    experiment: str | None = Field(None, min_length=1, max_length=100)
    target: str | None = Field(None, min_length=1, max_length=100)
    questions: int | None = Field(None, ge=1, le=1000)
    """With a target: how many questions to draft (24 when not given; drafted once per index, then kept)."""
    dataset: str | None = Field(None, max_length=64)
    dataset_version: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    metrics: list[str] = Field(default_factory=list, max_length=50)
    k_values: list[Annotated[int, Field(ge=1, le=100_000)]] = Field(default_factory=list, max_length=20)
    k_multiples_of_relevant: list[Annotated[int, Field(ge=1, le=100)]] = Field(default_factory=list, max_length=10)
    only: list[str] = Field(default_factory=list, max_length=200)
    skip: list[str] = Field(default_factory=list, max_length=20)

    @model_validator(mode="after")
    def _one_thing_to_run(self) -> RunRequest:
        if (self.experiment is None) == (self.target is None):
            raise ValueError("name one experiment or one target to run")
        if self.target is not None and (self.dataset or self.dataset_version):
            raise ValueError("a target drafts its own questions; a dataset goes with an experiment")
        if self.experiment is not None and self.questions is not None:
            raise ValueError("questions goes with a target (an experiment's questions are its golden file)")
        return self

    @property
    def what(self) -> str:
        """What is run, as people read it: ``experiment quickstart`` or ``target help-index``."""
        return f"experiment {self.experiment}" if self.experiment is not None else f"target {self.target}"

    def measure_names(self) -> list[str]:
        """The measures asked for, with Mixpeek's cut-offs spelled out (``recall`` x [1r, 2r] is recall@1r…)."""
        names = list(self.metrics)
        if self.k_multiples_of_relevant:
            names += [f"{m}@{k}r" for m in self.metrics if "@" not in m for k in self.k_multiples_of_relevant]
        return names


class Progress(BaseModel):
    stage: str | None = None
    setups: int | None = None
    questions: int | None = None
    searches_done: int = 0
    searches_total: int | None = None
    """Searches left to do when the run (or its resumption) began, and how many of them are done."""


class Job(BaseModel):
    """One run the server started (or will): kept as ``<jobs>/<run id>.json``."""

    model_config = ConfigDict(extra="ignore")
    id: str
    experiment: str | None = None
    target: str | None = None
    request: RunRequest
    golden: str | None = None
    """The golden location the run reads (a dataset's version), or None for the config's own."""
    golden_sha256: str | None = None
    key: str
    owner: str | None = None
    """Who started it (a person's name; an API key counts as the person it was made for)."""
    key_id: str | None = None
    """The API key it was started with, if any."""
    status: Status = "pending"
    reason: str | None = None
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None
    cancel: bool = False
    resume: bool = False
    progress: Progress = Field(default_factory=Progress)


class QueueFull(Exception):
    """A run not queued: too many are waiting, from everyone or from this caller (429 with Retry-After)."""

    retry_after = 60


class Health(BaseModel):
    """The queue as `/healthz` tells it: whether it can run jobs now, and why not."""

    ok: bool
    loop_age_s: float
    """Seconds since the queue's loop last went round (it goes every 0.3 s)."""
    loop_alive: bool
    workers: int
    running: int
    pending: int
    disk_writable: bool
    problem: str | None = None
    damaged: dict[str, str] = Field(default_factory=dict)
    """Job files that cannot be read, by run id, with why (at most 20)."""
