"""What a served model costs: the endpoint's own `price`, else the packaged price table (``prices.json``, dated),
for the plan and the report's cost lines."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from vx_eval.core.contracts.endpoints import ModelEndpoint

PRICES = "prices.json"


@dataclass(frozen=True)
class Price:
    usd: float
    per: Literal["million tokens", "thousand searches"]
    source: str


def price_of(endpoint: ModelEndpoint, table: Path | None = None) -> Price | None:
    """The endpoint's price: its own `price`, else the table's row for (provider, model) (the packaged table,
    or `table`), else None."""
    per: Literal["million tokens", "thousand searches"] = (
        "thousand searches" if endpoint.kind == "reranker" and endpoint.provider == "cohere" else "million tokens"
    )
    if endpoint.price is not None:
        return Price(endpoint.price, per, "the endpoint's price")
    if table is not None:
        text = table.read_text(encoding="utf-8")
    else:
        text = (resources.files("vx_eval.core.models") / PRICES).read_text(encoding="utf-8")
    data = json.loads(text)
    row = data.get("prices", {}).get(endpoint.provider, {}).get(endpoint.model)
    if row is None:
        return None
    return Price(float(row), per, f"price table of {data.get('as_of', 'unknown date')}")
