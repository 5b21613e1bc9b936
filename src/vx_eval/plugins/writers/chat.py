"""The `chat` question writer: drafts from any OpenAI-compatible chat model, judged by a critic model (the
same one unless `critic` names another)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from vx_eval import hookimpl
from vx_eval.llm.chat import CachedChat, ChatOptions, EndpointChat, answer_cache
from vx_eval.llm.drafting import model_critic, reranker_critic, write_with
from vx_eval.plugin import RerankerModel, Unit, WriteOutcome, WriterDescription, WriteRequest


class ChatQuestionWriter:
    """Drafts from any OpenAI-compatible chat model; its critic is another model, itself, or the offline
    cross-encoder."""

    name: ClassVar[str] = "chat"
    writes_questions: ClassVar[bool] = True

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid")
        model: ChatOptions
        critic: ChatOptions | Literal["cross-encoder"] | None = None
        """Another chat model as the critic, ``cross-encoder`` (the offline reranker scores answered), or
        none: the writing model judges its own drafts."""
        critic_model: RerankerModel = "ms-marco-minilm"

    def __init__(self, options: Options) -> None:
        self.options = options

    def write(self, units: Sequence[Unit], request: WriteRequest) -> WriteOutcome:
        with answer_cache(request) as cache:
            writer = CachedChat(EndpointChat(self.options.model), cache)
            if self.options.critic == "cross-encoder" and request.models is not None:
                return write_with(writer, reranker_critic(request.models, self.options.critic_model), units, request)
            critic = (
                CachedChat(EndpointChat(self.options.critic), cache)
                if isinstance(self.options.critic, ChatOptions)
                else writer
            )
            return write_with(writer, model_critic(critic), units, request)

    def describe(self) -> WriterDescription:
        critic = self.options.critic or self.options.model
        named = critic if isinstance(critic, str) else critic.model
        model = self.options.model.model
        return WriterDescription(writer=self.name, model=model, critic=named, drafted_by=model)


@hookimpl
def vx_eval_register_writers(register):
    register.add(ChatQuestionWriter)
