"""The served models a config declares (``models.endpoints``), read before the config is validated: target
options naming them are checked against them, and a chat endpoint named as the run's judge is the `chat`
judge asking it."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from vx_eval.core.contracts.endpoints import ModelEndpoint


def declared_endpoints(data: dict[str, Any]) -> dict[str, ModelEndpoint]:
    """The served models a raw config declares that are well formed (the rest are named as problems when
    the whole config is validated), so that target options naming them can be checked."""
    raw = data.get("models")
    block = raw.get("endpoints") if isinstance(raw, dict) else None
    found: dict[str, ModelEndpoint] = {}
    for name, value in (block if isinstance(block, dict) else {}).items():
        try:
            found[str(name)] = ModelEndpoint.model_validate(value)
        except ValidationError:
            continue
    return found


def chat_judge_named(data: dict[str, Any], endpoints: dict[str, ModelEndpoint]) -> str | None:
    """Where ``evaluation.judge`` names a chat endpoint, the raw config made to say the `chat` judge asking it
    (its own settings, such as the rubric, kept from ``judges: {chat: …}``). The problem, in words, where the
    judges block names a model as well (None: none)."""
    evaluation = data.get("evaluation")
    if not isinstance(evaluation, dict):
        return None
    judge = evaluation.get("judge")
    if not isinstance(judge, str) or judge not in endpoints or endpoints[judge].kind != "chat":
        return None
    judges = data.setdefault("judges", {})
    if not isinstance(judges, dict):
        return None  # a type error pydantic names
    own = judges.get("chat") or {}
    if not isinstance(own, dict):
        return None  # a type error pydantic, or the judges block's own check, names
    if {"endpoint", "url", "model"} & set(own):
        return f"evaluation.judge names the chat endpoint '{judge}' and this block names a model too: keep one"
    judges["chat"] = {"endpoint": judge} | own
    evaluation["judge"] = "chat"
    return None
