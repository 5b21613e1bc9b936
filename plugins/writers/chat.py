"""The `chat` question writer: drafts from any OpenAI-compatible chat model, judged by a critic model (the
same one unless `critic` names another)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from vx_eval import hookimpl
from vx_eval.plugins.llm.chat import AnswerCache, CachedChat, ChatOptions, EndpointChat
from vx_eval.plugins.writers.drafting import model_critic, reranker_critic


class ChatQuestionWriter:
    name: ClassVar[str] = "chat"

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid")
        model: ChatOptions
        critic: ChatOptions | Literal["cross-encoder"] | None = None
        """Another chat model as the critic, ``cross-encoder`` (the offline reranker scores answered), or
        none: the writing model judges its own drafts."""
        critic_model: str = "ms-marco-minilm"

    def __init__(self, options: Options) -> None:
        self.options = options

    def models(self, cache: AnswerCache | None, models: Any = None) -> tuple[Any, Any]:
        writer = CachedChat(EndpointChat(self.options.model), cache)
        if self.options.critic == "cross-encoder" and models is not None:
            return writer, reranker_critic(models, self.options.critic_model)
        critic = (
            CachedChat(EndpointChat(self.options.critic), cache)
            if isinstance(self.options.critic, ChatOptions)
            else writer
        )
        return writer, model_critic(critic)

    def describe(self) -> dict[str, Any]:
        critic = self.options.critic or self.options.model
        named = critic if isinstance(critic, str) else critic.model
        return {"writer": self.name, "model": self.options.model.model, "critic": named}


@hookimpl
def vx_eval_register_writers(register):
    register.add(ChatQuestionWriter)
