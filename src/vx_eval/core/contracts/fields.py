"""The field types configs and plugins' options share: paths resolved against the config's folder, service
addresses that never carry credentials, and secrets named by reference (``{env: VARIABLE}``)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, model_validator
from pydantic_core import PydanticCustomError

from vx_eval.core.errors import ConfigError, remember_secret

URI = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


def is_uri(location: str) -> bool:
    """True for ``s3://…``, ``https://…`` and other scheme-qualified locations."""
    return bool(URI.match(location))


def _resolve_location(value: str, info: ValidationInfo) -> str:
    base = (info.context or {}).get("base_dir")
    if is_uri(value) or base is None:
        return value
    return str((Path(base) / Path(value).expanduser()).resolve())


def _resolve_path(value: Path, info: ValidationInfo) -> Path:
    base = (info.context or {}).get("base_dir")
    value = value.expanduser()
    return value if base is None or value.is_absolute() else (Path(base) / value).resolve()


def _no_credentials(value: str) -> str:
    """A service's address, refused when it carries a user or a password (``http://admin:pw@host``): the
    address goes into reports and onto pages; credentials are named by reference in options of their own."""
    parts = urlsplit(value)
    if parts.username or parts.password:
        raise PydanticCustomError(
            CREDENTIALS_IN_URL,
            "the address carries credentials; write it without them and name them by reference "
            "(user: NAME, password: {env: VARIABLE}, or api_key: {env: VARIABLE})",
        )
    return value


CREDENTIALS_IN_URL = "credentials_in_url"

ServiceUrl = Annotated[str, Field(min_length=1), AfterValidator(_no_credentials)]
"""The address of a service (a search engine, a chat endpoint): never with credentials in it."""

Location = Annotated[str, Field(min_length=1), AfterValidator(_resolve_location)]
"""A path (resolved against the config's folder) or a URI such as ``s3://bucket/key``."""

ConfigPath = Annotated[Path, AfterValidator(_resolve_path)]


def _known_device(value: str) -> str:
    if not re.fullmatch(r"auto|cpu|cuda(:\d{1,2})?", value):
        raise ValueError(f"{value!r} is no device vx-eval runs models on; use auto, cpu, cuda or cuda:N")
    return value


Device = Annotated[str, AfterValidator(_known_device)]
"""Where in-process models run: auto (a CUDA GPU where one is seen, else the CPU), cpu, cuda or cuda:N."""
"""A local path in a plugin's options, resolved against the config's folder."""


class SecretRef(BaseModel):
    """A secret named by reference: ``api_key: {env: AZURE_SEARCH_KEY}``. Its value never enters a report."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    env: str = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _by_reference(cls, data: Any) -> Any:
        if isinstance(data, str | int | float) and not isinstance(data, bool):
            raise ValueError(
                "a secret is never written into a config: write {env: VARIABLE} and export VARIABLE with it"
            )
        return data

    def value(self) -> str:
        try:
            return remember_secret(os.environ[self.env])
        except KeyError:
            raise ConfigError(f"environment variable {self.env} is not set; export it before the run") from None

    def __repr__(self) -> str:
        return f"SecretRef(env={self.env!r})"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchConfig(Strict):
    """How composed setups search: each component's candidates, how many a reranker reads, RRF's constant."""

    candidates: int = Field(100, ge=1, le=10_000)
    rerank_depth: int = Field(20, ge=1, le=1_000)
    fusion: Literal["convex", "rrf"] = "convex"
    """convex: min-max normalised scores, weighted; rrf: reciprocal-rank fusion."""
    alpha: float = Field(0.5, ge=0, le=1)
    """The dense share of a hybrid (keyword gets 1 - alpha); the dense models split it equally."""
    rrf_k: int = Field(60, ge=1, le=10_000)
