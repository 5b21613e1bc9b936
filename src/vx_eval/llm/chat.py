"""Talking to a chat model: any OpenAI-compatible endpoint (OpenAI, Azure OpenAI's v1 route, Ollama, vLLM,
llama.cpp's server, `transformers serve`) through the `openai` client, or a small model in this process
(`vx_eval.llm.local`); answers cached by request, and passages wrapped so that what they say is read as data,
not as orders.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from vx_eval.plugin import ConfigError, EngineError, KeyedCache, SecretRef, ServiceUrl

Message = dict[str, str]


class ChatModel(Protocol):
    def fingerprint(self) -> str: ...

    def complete(self, messages: Sequence[Message], max_tokens: int) -> str: ...


@runtime_checkable
class ManyAtOnce(Protocol):
    """A chat model that answers several requests at once: a local model in one batch, a served one
    concurrently. `width` is how many it takes at a time to best effect."""

    width: int

    def complete_many(self, requests: Sequence[Sequence[Message]], max_tokens: int) -> list[str]: ...


def complete_all(model: ChatModel, requests: Sequence[Sequence[Message]], max_tokens: int) -> list[str]:
    """Every request answered, in order: at once where the model can (`ManyAtOnce`), else one by one."""
    if not requests:
        return []
    if isinstance(model, ManyAtOnce):
        return list(model.complete_many(requests, max_tokens))
    return [model.complete(r, max_tokens) for r in requests]


def width_of(model: ChatModel) -> int:
    """How many requests `model` takes at a time to best effect (1 for one that answers one by one)."""
    return max(1, int(model.width)) if isinstance(model, ManyAtOnce) else 1


OPENAI_URL = "https://api.openai.com/v1"


class ChatOptions(BaseModel):
    """Where the chat model answers: ``url`` is the API's base (``http://127.0.0.1:8080/v1``,
    ``https://<resource>.openai.azure.com/openai/v1``), ``model`` its model or deployment name.

    Or the name of a chat endpoint the config declares (``models: {endpoints: {gpt: {provider: openai, kind:
    chat, model: gpt-4o-mini, api_key: {env: OPENAI_API_KEY}}}}``), alone (``gpt``) or as ``endpoint: gpt``
    beside settings of its own (``temperature``): its URL, model, key, timeout, retries and concurrency are
    the endpoint's."""

    model_config = ConfigDict(extra="forbid")
    endpoint: str | None = None
    """The chat endpoint of ``models.endpoints`` this model is (None: `url` and `model` say where)."""
    url: ServiceUrl
    model: str = Field(min_length=1)
    api_key: SecretRef | None = None
    timeout: float = Field(60.0, gt=0)
    retries: int = Field(2, ge=0, le=10)
    temperature: float = Field(0.0, ge=0, le=2)
    seed: int | None = 0
    concurrency: int = Field(8, ge=1, le=64)
    """Requests in flight at once (drafts and grades are asked for concurrently, within this)."""

    @model_validator(mode="before")
    @classmethod
    def _from_endpoint(cls, data: Any, info: ValidationInfo) -> Any:
        """A chat endpoint's name (or ``endpoint: NAME`` among other settings) read as that endpoint's
        settings, those given beside it kept."""
        if isinstance(data, str):
            data = {"endpoint": data}
        if not isinstance(data, dict) or data.get("endpoint") is None:
            return data
        name = data["endpoint"]
        declared = getattr((info.context or {}).get("models"), "endpoints", {})
        endpoint = declared.get(name) if isinstance(name, str) else None
        chats = sorted(n for n, e in declared.items() if e.kind == "chat")
        if endpoint is None or endpoint.kind != "chat":
            what = f"'{name}' is a {endpoint.kind} endpoint" if endpoint is not None else f"no endpoint named {name!r}"
            raise ValueError(
                f"{what}; name a chat endpoint of models.endpoints (declared: {', '.join(chats) or 'none'}), "
                "e.g. gpt: {provider: openai, kind: chat, model: gpt-4o-mini, api_key: {env: OPENAI_API_KEY}}"
            )
        if endpoint.provider != "openai":
            raise ValueError(f"chat endpoint '{name}': chat models are asked in OpenAI's wire format: provider openai")
        settings: dict[str, Any] = {
            "url": str(endpoint.base_url or OPENAI_URL),
            "model": endpoint.model,
            "timeout": endpoint.timeout,
            "retries": endpoint.retries,
            "concurrency": endpoint.concurrency,
        }
        if endpoint.api_key is not None:
            settings["api_key"] = endpoint.api_key
        return settings | data


class EndpointChat:
    """An OpenAI-compatible chat endpoint, through the official client (its retries and timeouts)."""

    def __init__(self, options: ChatOptions) -> None:
        try:
            # lazy: an optional dependency (vx-eval[chat]), loaded only where it is used
            import openai
        except ImportError:
            raise ConfigError('the chat plugins need their extra: pip install "vx-eval[chat]"') from None
        self.options = options
        key = options.api_key.value() if options.api_key else "not-needed"
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=options.url, api_key=key, timeout=options.timeout, max_retries=options.retries
        )
        # `concurrency` requests in flight in all, however many callers ask at once (the tasks a Dask worker
        # runs at once share the judge it made for the run)
        self._in_flight = threading.BoundedSemaphore(options.concurrency)

    def fingerprint(self) -> str:
        o = self.options
        return f"chat:{o.url}:{o.model}:{o.temperature}:{o.seed}"

    def complete(self, messages: Sequence[Message], max_tokens: int) -> str:
        """The model's answer to `messages`. The client retries what fails in transit (a timeout, a dropped
        connection, 408, 409, 429, 5xx: `retries` times, with its own backoff); an answer that is not a chat
        completion (a gateway's HTML page, broken JSON, no choices) is asked again as often, then refused.
        Every failure is an `EngineError` naming the endpoint and what it did."""
        o = self.options
        tries = o.retries + 1
        for attempt in range(tries):
            try:
                return _content(self._create(messages, max_tokens))
            except _NotACompletion as exc:
                if attempt + 1 == tries:
                    raise EngineError(
                        f"the chat endpoint {o.url} answered {tries} time{'s' if tries > 1 else ''} with something "
                        f"that is not a chat completion ({exc}): check that url is its OpenAI-compatible base "
                        "(ending in /v1) and that a proxy in between passes the answers through"
                    ) from None
                time.sleep(min(2.0, 0.25 * 2**attempt))
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _create(self, messages: Sequence[Message], max_tokens: int) -> Any:
        o, openai = self.options, self._openai
        tries = f"asked {o.retries + 1} time{'s' if o.retries else ''}"  # the client retries all but a refusal
        try:
            completions: Any = self._client.chat.completions  # the client's overloads do not cover **extra
            with self._in_flight:
                return completions.create(
                    model=o.model,
                    messages=list(messages),
                    max_tokens=max_tokens,
                    temperature=o.temperature,
                    **({"seed": o.seed} if o.seed is not None else {}),
                )
        except openai.AuthenticationError:
            raise EngineError(f"{o.url} refused the key (401): check the api_key reference") from None
        except openai.APITimeoutError:
            raise EngineError(
                f"the chat endpoint {o.url} did not answer within {o.timeout:g} s ({tries}): raise its timeout, "
                "or lower its concurrency if it is overloaded"
            ) from None
        except openai.APIConnectionError as exc:
            raise EngineError(f"cannot reach the chat endpoint {o.url} ({tries}): {_said(exc)}") from None
        except openai.APIStatusError as exc:
            said = _said(exc)
            if exc.status_code < 500 and exc.status_code not in (408, 409, 429):
                tries = "asked once: a refusal is not retried"
            raise EngineError(f"the chat endpoint {o.url} answered {exc.status_code} ({tries}): {said}") from None
        except (json.JSONDecodeError, openai.APIResponseValidationError) as exc:
            raise _NotACompletion(f"unreadable JSON: {str(exc)[:80]}") from None

    @property
    def width(self) -> int:
        return self.options.concurrency

    def complete_many(self, requests: Sequence[Sequence[Message]], max_tokens: int) -> list[str]:
        """The requests asked concurrently (`concurrency` at a time: the client is thread-safe), answers in
        order; the first failure is raised once every request in flight has ended."""

        if len(requests) <= 1:
            return [self.complete(r, max_tokens) for r in requests]
        with ThreadPoolExecutor(max_workers=min(self.width, len(requests))) as pool:
            return list(pool.map(lambda r: self.complete(r, max_tokens), requests))


def _said(exc: BaseException, limit: int = 300) -> str:
    """What a failed call says, cut (a server's error body may echo the whole request); the command line and
    the server mask any credential in it when they show it."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _NotACompletion(Exception):
    """An endpoint's answer that is not an OpenAI chat completion (what it was, in words)."""


def _content(response: object) -> str:
    """The first choice's text of a chat completion ('' where the model said nothing), or `_NotACompletion`
    for anything else a server may send with a 200 (the client hands a non-JSON body back as a string)."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        shown = "an empty list of choices" if isinstance(choices, list) else "no choices"
        if not hasattr(response, "choices"):
            shown = f"a {type(response).__name__}, not a completion: {str(response)[:60]!r}"
        raise _NotACompletion(shown)
    content = getattr(getattr(choices[0], "message", None), "content", None)
    if content is not None and not isinstance(content, str):
        raise _NotACompletion(f"its message's content is a {type(content).__name__}")
    return content or ""


class AnswerCache(KeyedCache):
    """Model answers by (model fingerprint, request): a rerun asks nothing again, an interrupted one resumes."""

    SPACE = "answers"

    @staticmethod
    def key(model: str, messages: Sequence[Message], max_tokens: int) -> str:
        return hashlib.sha256(json.dumps([model, list(messages), max_tokens], sort_keys=True).encode()).hexdigest()


@contextlib.contextmanager
def answer_cache(request: Any) -> Iterator[AnswerCache | None]:
    """The answer cache a write request names (none: nothing kept), closed when the writing is done."""
    if request.answers is None:
        yield None
        return
    with AnswerCache(request.answers) as cache:
        yield cache


class CachedChat:
    """A chat model whose answers are kept in an `AnswerCache`."""

    def __init__(self, model: ChatModel, cache: AnswerCache | None) -> None:
        self.model, self.cache = model, cache
        self.asked = 0

    def fingerprint(self) -> str:
        return self.model.fingerprint()

    @property
    def width(self) -> int:
        return width_of(self.model)

    def complete(self, messages: Sequence[Message], max_tokens: int) -> str:
        return self.complete_many([messages], max_tokens)[0]

    def complete_many(self, requests: Sequence[Sequence[Message]], max_tokens: int) -> list[str]:
        """Answers from the cache where it has them; the rest asked of the model at once, then kept."""
        keys = [AnswerCache.key(self.model.fingerprint(), r, max_tokens) for r in requests]
        known = self.cache.values(AnswerCache.SPACE, keys) if self.cache is not None else {}
        todo = [i for i, k in enumerate(keys) if k not in known]
        fresh = complete_all(self.model, [requests[i] for i in todo], max_tokens)
        self.asked += len(todo)
        if self.cache is not None and todo:
            self.cache.put(AnswerCache.SPACE, {keys[i]: a for i, a in zip(todo, fresh, strict=True)})
        answers = {i: str(known[k]) for i, k in enumerate(keys) if k in known}
        answers.update(zip(todo, fresh, strict=True))
        return [answers[i] for i in range(len(requests))]


_MARKERS = re.compile(r"</?\s*(passage|question|system|assistant|user|instructions?)\s*>", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def defang(text: str, limit: int = 3000) -> str:
    """A passage made safe to quote: control characters and anything shaped like our tags or a chat role's
    tag removed, chat-template tokens broken, cut to `limit` characters."""
    text = _CONTROL.sub(" ", text)
    text = _MARKERS.sub(" ", text)
    text = text.replace("<|", "< |").replace("|>", "| >").replace("[INST]", "[ INST ]")
    return text[:limit].strip()


def wrapped(tag: str, text: str) -> str:
    """Text inside <tag>…</tag>, defanged: the prompts say what is inside is data, never instructions."""
    return f"<{tag}>\n{defang(text)}\n</{tag}>"
