"""What a session has cost: per-model prices, and the status line's cost and token strings.

Prices are USD per million tokens. The defaults cover the models this app names by default and
the current public Claude models; ``prices`` in ``config.toml`` overrides or adds models::

    [prices."my-proxy-model"]
    input = 3.0
    output = 15.0
    cache_read = 0.3     # optional: 0.1 × input
    cache_write = 3.75   # optional: 1.25 × input

A model with no price (unknown, a local server) shows tokens only: guessing a price would show a
wrong number with the authority of a right one. Memory-model calls are counted like main-model
calls (the memory model's ``on_usage``), and so are ``web_search``'s side requests, under the web
model, with each search the server tool made at the API's price per search (``WEB_SEARCH_USD``;
counted only for a priced model: an endpoint without a price is not Anthropic's to bill), so the
total is what the session really cost.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.agent.model.provider import Usage

__all__ = [
    "PRICES",
    "WEB_SEARCH_USD",
    "CostMeter",
    "ModelPrice",
    "cost",
    "format_cost",
    "format_tokens",
    "format_usage",
    "price_for",
]


class ModelPrice(BaseModel):
    """USD per million tokens. Cache prices default to Anthropic's ratios of the input price."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float = Field(ge=0, allow_inf_nan=False)
    output: float = Field(ge=0, allow_inf_nan=False)
    cache_read: float = Field(ge=0, allow_inf_nan=False)
    cache_write: float = Field(ge=0, allow_inf_nan=False)

    @field_validator("input", "output", "cache_read", "cache_write", mode="before")
    @classmethod
    def _no_booleans(cls, v: Any) -> Any:
        if isinstance(v, bool):  # TOML `input = true` must not quietly become 1.0
            raise ValueError("expected a number, not a boolean")
        return v

    @model_validator(mode="before")
    @classmethod
    def _cache_defaults(cls, data: Any) -> Any:
        if (
            isinstance(data, Mapping)
            and isinstance(data.get("input"), int | float)
            and not isinstance(data["input"], bool)
        ):
            data = dict(data)
            data.setdefault("cache_read", data["input"] * 0.1)
            data.setdefault("cache_write", data["input"] * 1.25)
        return data


def _p(inp: float, out: float, read: float, write: float) -> ModelPrice:
    return ModelPrice(input=inp, output=out, cache_read=read, cache_write=write)


# Keys match a model name exactly or with a snapshot suffix ("claude-sonnet-4-5-20250929").
PRICES: dict[str, ModelPrice] = {
    # The settings' default models (app/agent/config/settings.py): priced like their tiers.
    "claude-sonnet-5-5": _p(3.0, 15.0, 0.30, 3.75),
    "claude-haiku-5-5": _p(1.0, 5.0, 0.10, 1.25),
    "claude-opus-4-5": _p(5.0, 25.0, 0.50, 6.25),
    "claude-opus-4-1": _p(15.0, 75.0, 1.50, 18.75),
    "claude-opus-4": _p(15.0, 75.0, 1.50, 18.75),
    "claude-sonnet-4-5": _p(3.0, 15.0, 0.30, 3.75),
    "claude-sonnet-4": _p(3.0, 15.0, 0.30, 3.75),
    "claude-3-7-sonnet": _p(3.0, 15.0, 0.30, 3.75),
    "claude-haiku-4-5": _p(1.0, 5.0, 0.10, 1.25),
    "claude-3-5-haiku": _p(0.80, 4.0, 0.08, 1.0),
    "claude-3-haiku": _p(0.25, 1.25, 0.03, 0.30),
}


# The web search server tool: USD per search ($10 per 1,000), on top of the request's tokens.
WEB_SEARCH_USD = 0.01

# What may follow a priced name: a snapshot date or "latest" ("-20250929", "@20250805", "-latest").
# Anything else is another model ("claude-opus-4-10" is not "claude-opus-4").
_SNAPSHOT_RE = re.compile(r"[-@](?:\d{8}|latest)")


def _lookup(model: str, table: Mapping[str, ModelPrice]) -> ModelPrice | None:
    if model in table:
        return table[model]
    for key, price in table.items():
        if model.startswith(key) and _SNAPSHOT_RE.fullmatch(model, len(key)):
            return price
    return None


def price_for(model: str, prices: Mapping[str, ModelPrice] | None = None) -> ModelPrice | None:
    """The price of ``model``: the settings' table first, then the defaults; None if unknown."""
    if prices:
        found = _lookup(model, prices)
        if found is not None:
            return found
    return _lookup(model, PRICES)


def cost(model: str, usage: Usage, prices: Mapping[str, ModelPrice] | None = None) -> float | None:
    """USD for ``usage`` on ``model`` (None for a model without a price)."""
    p = price_for(model, prices)
    if p is None:
        return None
    total = (
        usage.input_tokens * p.input
        + usage.output_tokens * p.output
        + usage.cache_read_input_tokens * p.cache_read
        + usage.cache_creation_input_tokens * p.cache_write
    )
    return total / 1_000_000 + usage.web_search_requests * WEB_SEARCH_USD


def format_tokens(n: int) -> str:
    """1234 -> "1.2k", 2_500_000 -> "2.5M": short enough for one status row."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k".replace(".0k", "k")
    return f"{n / 1_000_000:.1f}M".replace(".0M", "M")


def format_usage(usage: Usage) -> str:
    """A turn's tokens for the status line: "12k in · 800 out · 10k cached"."""
    # Cache reads and writes are input too: "in" is everything the model read.
    read_in = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
    text = f"{format_tokens(read_in)} in · {format_tokens(usage.output_tokens)} out"
    if usage.cache_read_input_tokens:
        text += f" · {format_tokens(usage.cache_read_input_tokens)} cached"
    return text


def format_cost(usd: float) -> str:
    if usd == 0:
        return "$0.00"
    if usd < 0.01:
        return f"${usd:.4f}"
    if usd < 10:
        return f"${usd:.2f}"
    return f"${usd:,.2f}"


class CostMeter:
    """A session's cost so far, main and memory model alike. Not thread-safe: the App owns it
    and feeds it from its own message handlers."""

    def __init__(self, prices: Mapping[str, ModelPrice] | None = None) -> None:
        self.prices = dict(prices or {})
        self.usd = 0.0
        self.priced = False
        # Tokens of models without a price: shown instead of a made-up amount.
        self.unpriced_tokens = 0
        self.by_model: dict[str, Usage] = {}

    def add(self, model: str, usage: Usage) -> None:
        self.by_model.setdefault(model, Usage()).add(usage)
        c = cost(model, usage, self.prices)
        if c is None:
            self.unpriced_tokens += (
                usage.input_tokens
                + usage.output_tokens
                + usage.cache_read_input_tokens
                + usage.cache_creation_input_tokens
            )
        else:
            self.usd += c
            self.priced = True

    def describe(self) -> str:
        """ "$0.12", "$0.12 + 3.4k tok unpriced", "3.4k tok" (nothing priced) or "$0.00"."""
        if self.unpriced_tokens and not self.priced:
            return f"{format_tokens(self.unpriced_tokens)} tok"
        text = format_cost(self.usd)
        if self.unpriced_tokens:
            text += f" + {format_tokens(self.unpriced_tokens)} tok unpriced"
        return text

    def report(self) -> list[str]:
        """Lines for ``/cost``: one per model, then the total."""
        lines = []
        for model, usage in sorted(self.by_model.items()):
            c = cost(model, usage, self.prices)
            amount = format_cost(c) if c is not None else "no price"
            lines.append(f"{model}: {usage.describe()} — {amount}")
        lines.append(f"total: {self.describe()}")
        return lines
