"""The pruner's bill: generator input tokens saved, and the net saving once the pruner's own cost is paid.

The accounting of the Kapa write-up: net saving per query = (generator input tokens removed x the
generator's prompt price) - the pruner's cost. A pruner that costs more than it saves is a loss.

:func:`net_saving_usd` is the one accounting of that money, with one sign: **positive is money saved**. Every
figure of a saving derives from it: :attr:`Saving.net_saving_usd` here, and the evaluation's
``net_cost_change_per_query_usd`` (:func:`admit.eval.metrics.summarize`), which reports the same amount as a
change of cost (its opposite: negative is a saving).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from admit.backends.llms.pricing import PriceTable
from admit.backends.tokenizers import Tokenizer, resolve_tokenizer
from admit.types import Chunk, Scored, Usage

__all__ = ["Saving", "net_saving", "net_saving_usd"]


def net_saving_usd(generator_cost_saved_usd: float, pruner_cost_usd: float) -> float:
    """Money saved: the generator input cost the pruning removed minus what the pruner cost.

    Positive is a saving, negative a loss (the pruner costs more than it saves). Both arguments are USD for
    the same unit (one query, or a mean per query).

    Example:
        >>> net_saving_usd(0.5, 0.125)
        0.375
    """
    return generator_cost_saved_usd - pruner_cost_usd


@dataclass(frozen=True, slots=True, kw_only=True)
class Saving:
    """One query's saving."""

    tokens_before: int
    """Generator input tokens of every candidate."""
    tokens_after: int
    """Generator input tokens of the kept candidates."""
    generator_model: str
    """The generator whose prompt price is saved."""
    generator_cost_saved_usd: float
    """Tokens saved x the generator's prompt price."""
    pruner_cost_usd: float
    """What the pruner's calls cost."""
    notes: tuple[str, ...] = ()
    """Unknown prices and the like."""

    @property
    def tokens_saved(self) -> int:
        """Generator input tokens removed."""
        return self.tokens_before - self.tokens_after

    @property
    def compression(self) -> float:
        """Share of candidate tokens removed (0..1)."""
        return self.tokens_saved / self.tokens_before if self.tokens_before else 0.0

    @property
    def net_saving_usd(self) -> float:
        """Generator cost saved minus pruner cost (negative: the pruner costs more than it saves)."""
        return net_saving_usd(self.generator_cost_saved_usd, self.pruner_cost_usd)

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "tokens_saved": self.tokens_saved,
            "compression": round(self.compression, 4),
            "generator_model": self.generator_model,
            "generator_cost_saved_usd": round(self.generator_cost_saved_usd, 8),
            "pruner_cost_usd": round(self.pruner_cost_usd, 8),
            "net_saving_usd": round(self.net_saving_usd, 8),
            "notes": list(self.notes),
        }


def net_saving(
    candidates: Sequence[Chunk | Scored],
    kept_ids: Collection[str],
    usage: Usage,
    *,
    generator_model: str,
    tokenizer: str | Tokenizer = "cl100k_base",
    price_table: PriceTable | None = None,
    per_chunk_overhead: int = 0,
) -> Saving:
    """Compute one query's saving.

    Args:
        candidates: The chunks the generator would have seen without pruning.
        kept_ids: Ids the pruner kept.
        usage: The pruner's usage (its ``cost_usd`` is the pruner cost).
        generator_model: The generator's model name, for its prompt price.
        tokenizer: The generator's tokenizer (name or instance).
        price_table: Prices (default: the shipped table).
        per_chunk_overhead: Envelope tokens added around each chunk when rendered.
    """
    tok = resolve_tokenizer(tokenizer)
    prices = price_table or PriceTable()
    kept = set(kept_ids)
    before = after = 0
    for c in candidates:
        chunk = c.chunk if isinstance(c, Scored) else c
        n = tok.count(f"{chunk.title}\n{chunk.text}" if chunk.title else chunk.text) + per_chunk_overhead
        before += n
        if chunk.id in kept:
            after += n
    saved_usd, note = prices.cost(generator_model, before - after, 0)
    return Saving(
        tokens_before=before,
        tokens_after=after,
        generator_model=generator_model,
        generator_cost_saved_usd=saved_usd,
        pruner_cost_usd=usage.cost_usd,
        notes=(note,) if note else (),
    )
