"""A deterministic whitespace tokenizer for unit tests (shipped, never the default)."""

from __future__ import annotations

import zlib

from admit import _linear

__all__ = ["WhitespaceTokenizer"]

_TOKEN = _linear.simple(r"\w+|[^\w\s]")


class WhitespaceTokenizer:
    """Counts words and punctuation marks as tokens. For tests of logic around a tokenizer."""

    name = "fake:whitespace"

    def __init__(self, *, tokens_per_message: int = 3, reply_priming: int = 3) -> None:
        """Create the tokenizer with the given chat overheads."""
        self.tokens_per_message = tokens_per_message
        self.reply_priming = reply_priming

    def encode(self, text: str) -> list[int]:
        """Return a stable id per token."""
        return [zlib.crc32(t.encode("utf-8", "surrogatepass")) for t in _TOKEN.findall(text)]

    def count(self, text: str) -> int:
        """Return the number of tokens."""
        return len(_TOKEN.findall(text))
