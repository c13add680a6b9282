"""Prices of LLM calls: USD per 1M prompt / completion tokens, per model.

The defaults are public list prices of a few small models (and common generators, for the savings
accounting) at the time of writing; they change, so pass your own table when the figures matter. A model
the table does not know costs 0 and the lookup says so.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from admit.errors import ConfigError

__all__ = ["DEFAULT_PRICES", "Price", "PriceTable"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Price:
    """USD per one million tokens."""

    prompt: float
    """Prompt (input) tokens."""
    completion: float
    """Completion (output) tokens."""


def _as_price(model: str, p: Price | Mapping[str, float] | tuple[float, float]) -> Price:
    if isinstance(p, Price):
        return p
    try:
        if isinstance(p, Mapping):
            return Price(prompt=float(p["prompt"]), completion=float(p["completion"]))
        a, b = p
        return Price(prompt=float(a), completion=float(b))
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(
            f"price for model {model!r} must be {{'prompt': USD_per_1M, 'completion': USD_per_1M}}, got {p!r}."
        ) from exc


# (prompt, completion), USD per 1M tokens: a caller's table's short form, read by the same code (_as_price)
_LIST_PRICES: dict[str, tuple[float, float]] = {
    # small, fast graders
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-5-nano": (0.05, 0.40),
    "gpt-5-mini": (0.25, 2.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "gemini-2.5-flash-lite": (0.10, 0.40),
    # generators (for the net-saving accounting)
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-5": (1.25, 10.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    # local models cost nothing per token
    "fake": (0.0, 0.0),
}
DEFAULT_PRICES: dict[str, Price] = {model: _as_price(model, p) for model, p in _LIST_PRICES.items()}
"""The public list prices a :class:`PriceTable` starts from (``include_defaults``)."""


class PriceTable:
    """Looks up a model's price: exact name, else the longest known prefix (``gpt-4o-mini-2024-07-18``)."""

    def __init__(
        self,
        prices: Mapping[str, Price | Mapping[str, float] | tuple[float, float]] | None = None,
        *,
        include_defaults: bool = True,
    ) -> None:
        """Create the table; ``prices`` entries override the defaults.

        Args:
            prices: ``{model: Price | {"prompt": x, "completion": y} | (prompt, completion)}``.
            include_defaults: Start from :data:`DEFAULT_PRICES`.
        """
        self._prices: dict[str, Price] = dict(DEFAULT_PRICES) if include_defaults else {}
        for model, p in (prices or {}).items():
            self._prices[model] = _as_price(model, p)

    def lookup(self, model: str) -> Price | None:
        """Return the price of ``model`` or ``None`` when unknown."""
        name = model.rsplit("/", 1)[-1] if model not in self._prices else model
        if name in self._prices:
            return self._prices[name]
        best = max((k for k in self._prices if name.startswith(k)), key=len, default=None)
        return self._prices[best] if best else None

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> tuple[float, str | None]:
        """Return ``(usd, note)``; an unknown model costs 0 with a note saying so."""
        price = self.lookup(model)
        if price is None:
            return 0.0, f"no price for model {model!r}: cost counted as 0 (pass price_table= to set one)"
        return (prompt_tokens * price.prompt + completion_tokens * price.completion) / 1e6, None
