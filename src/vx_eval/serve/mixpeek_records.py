"""The shapes of Mixpeek's evaluation API (`serve.mixpeek`): its requests, its defaults, and what the routes
keep beside a dataset or a run."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from vx_eval.serve.datasets import NAME

ACCEPTED_INPUTS = ("query",)
"""What a vx-eval retriever takes as ``query_input``: the question's text."""
MEASURES = {"precision": "p", "recall": "recall", "f1": "f1", "f2": "f2", "ndcg": "ndcg"}
"""Mixpeek's cut-off measures and vx-eval's names for them; ``map`` and ``mrr`` are scored uncut."""
UNCUT = ("map", "mrr")
DEFAULT_K = (1, 5, 10, 20)
DEFAULT_METRICS = ("precision", "recall", "f1", "f2", "map", "ndcg", "mrr")
STATUS = {"pending": "pending", "in_progress": "in_progress", "completed": "completed"}
"""A vx-eval job's status in Mixpeek's words; ``failed`` and ``cancelled`` are both Mixpeek's ``failed``."""


class EvaluationConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    k_values: list[Annotated[int, Field(ge=1, le=100_000)]] = Field(
        default_factory=lambda: list(DEFAULT_K), min_length=1, max_length=20
    )
    metrics: list[str] = Field(default_factory=lambda: list(DEFAULT_METRICS), min_length=1, max_length=7)
    k_multiples_of_relevant: list[Annotated[int, Field(ge=1, le=100)]] = Field(default_factory=list, max_length=10)

    def measure_names(self) -> list[str]:
        """vx-eval's measure names for what is asked: each cut-off measure at each k and each multiple of R,
        ``map`` and ``mrr`` uncut."""
        names: list[str] = []
        for metric in self.metrics:
            if metric in UNCUT:
                names.append(metric)
                continue
            ours = MEASURES[metric]
            names += [f"{ours}@{k}" for k in self.k_values]
            names += [f"{ours}@{m}r" for m in self.k_multiples_of_relevant]
        return list(dict.fromkeys(names))


class StartEvaluation(BaseModel):
    """``POST /v1/retrievers/{retriever_id}/evaluations``: the dataset by name (or id), what to compute."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "dataset_name": "product-search-golden",
                    "evaluation_config": {"k_values": [1, 5, 10, 20], "metrics": ["precision", "recall", "ndcg"]},
                }
            ]
        },
    )
    dataset_name: str | None = Field(None, min_length=1, max_length=64)
    dataset_id: str | None = Field(None, min_length=1, max_length=64)
    evaluation_config: EvaluationConfig = Field(default_factory=EvaluationConfig)


class CreateDataset(BaseModel):
    """``POST /v1/retrievers/evaluations/datasets``: Mixpeek's ground-truth dataset."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "dataset_name": "product-search-golden",
                    "queries": [
                        {
                            "query_id": "q1",
                            "query_input": {"query": "wireless earbuds"},
                            "relevant_documents": ["doc_a1", "doc_a2"],
                            "relevance_scores": {"doc_a1": 5, "doc_a2": 3},
                        }
                    ],
                }
            ]
        },
    )
    dataset_name: str = Field(min_length=1, max_length=64, pattern=NAME.pattern)
    queries: list[dict[str, Any]] = Field(min_length=1)
    relevance_field: str | None = Field(None, min_length=1, max_length=200)
    description: str | None = Field(None, max_length=2000)
    metadata: dict[str, Any] | None = None


class Kept(BaseModel):
    """What the Mixpeek routes keep beside a dataset version or a run (``mixpeek/`` in the store)."""

    model_config = ConfigDict(extra="ignore")
    kind: str
    name: str
    created_at: str
    description: str | None = None
    metadata: dict[str, Any] | None = None
    relevance_field: str | None = None
    skipped: list[dict[str, Any]] = Field(default_factory=list)
    relevant: dict[str, int] = Field(default_factory=dict)
    """Each evaluated query's number of relevant documents (Mixpeek's ``relevant_count``)."""
    retriever_id: str | None = None
    config: dict[str, Any] | None = None
