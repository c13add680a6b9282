"""The tokenizer Protocol: the one thing that decides whether evidence fits."""

from __future__ import annotations

import weakref
from collections.abc import Hashable, Iterable, Sequence
from typing import Protocol, runtime_checkable

from admit import _linear
from admit._lru import LRU
from admit.types import Message

__all__ = [
    "Tokenizer",
    "cached_count",
    "count_by_lines",
    "count_chat",
    "count_key",
    "count_lines",
    "line_additive",
    "seed_counts",
]


@runtime_checkable
class Tokenizer(Protocol):
    """Counts tokens exactly as the target model does.

    Implementations: :class:`~admit.backends.tokenizers.openai.OpenAITokenizer` (cl100k_base, o200k_base),
    :class:`~admit.backends.tokenizers.hf.HFTokenizer` (a ``tokenizer.json``), and the shipped
    :class:`~admit.backends.tokenizers.fake.WhitespaceTokenizer` for unit tests.
    """

    name: str
    """The encoding or tokenizer name, recorded in the budget."""
    tokens_per_message: int
    """Chat formatting overhead per message (role markers, separators)."""
    reply_priming: int
    """Tokens the chat format adds to prime the assistant's reply."""

    def encode(self, text: str) -> list[int]:
        """Return the token ids of ``text`` (no special tokens parsed from the text)."""
        ...

    def count(self, text: str) -> int:
        """Return the number of tokens of ``text``."""
        ...


def count_chat(tokenizer: Tokenizer, messages: Sequence[Message], *, priming: bool = False) -> int:
    """Count ``messages`` as the chat API bills them: content, role and per-message overhead.

    Args:
        tokenizer: The target model's tokenizer.
        messages: The messages.
        priming: Add the reply-priming tokens (once per request).
    """
    total = sum(tokenizer.tokens_per_message + tokenizer.count(m.role) + tokenizer.count(m.content) for m in messages)
    return total + (tokenizer.reply_priming if priming else 0)


_COUNT_CACHE: LRU[tuple[Hashable, str], int] = LRU(16_384)


def count_key(tokenizer: Tokenizer) -> Hashable:
    """Whose counts a tokenizer shares: its ``count_key`` when it has one (the shipped BPE encodings, by
    encoding), else the instance itself (two tokenizers that merely share a name never share counts)."""
    key = getattr(tokenizer, "count_key", None)
    if key is not None:
        return key  # type: ignore[no-any-return]
    try:
        return ("instance", weakref.ref(tokenizer))  # a dead reference never equals a new instance's
    except TypeError:  # not weak-referenceable: the class and the name are the best left
        return ("named", type(tokenizer).__qualname__, tokenizer.name)


def cached_count(tokenizer: Tokenizer, text: str) -> int:
    """``tokenizer.count(text)``, remembered per (tokenizer identity, text): chunks recur across requests.

    Used to rank and estimate; the final fit is always decided by counting the rendered block.
    """
    key = (count_key(tokenizer), text)
    hit = _COUNT_CACHE.get(key)
    if hit is not None:
        return hit
    n = tokenizer.count(text)
    _COUNT_CACHE.put(key, n)
    return n


def clear_count_cache() -> None:
    """Forget remembered counts."""
    _COUNT_CACHE.clear()


# a newline whose next character is not whitespace or "/" (the look-ahead is a checked character: RE2 has none)
_LINE_START = _linear.compile(r"\n[^\s/]", name="tokenizers.line_start")


def line_additive(tokenizer: Tokenizer) -> bool:
    """Whether ``tokenizer`` never merges tokens across a newline followed by a character that is not
    whitespace or ``/`` (so such a text's count is the sum of its lines'): the case of cl100k_base and
    o200k_base, whose pre-tokenizer ends every piece there. Tokenizers say so with ``line_additive = True``."""
    return bool(getattr(tokenizer, "line_additive", False))


def count_by_lines(tokenizer: Tokenizer, text: str) -> int:
    """``tokenizer.count(text)``, summed over remembered lines when the tokenizer is :func:`line_additive`.

    A rendered evidence block repeats the same passage lines request after request (and its own envelope
    lines within one request), so each line is counted once and the block's exact count is a sum of
    lookups. Other tokenizers count the whole text.
    """
    if not line_additive(tokenizer):
        return tokenizer.count(text)
    return sum(cached_count(tokenizer, line) for line in count_lines(text))


def count_lines(text: str) -> list[str]:
    """``text`` cut after each newline that a character other than whitespace or ``/`` follows (the pieces
    :func:`count_by_lines` counts and remembers): the cuts of :data:`_LINE_START`, found by ``str.find`` (a
    regex pass over a non-ASCII text maps every match's byte offset back to characters)."""
    out, start = [], 0
    at = text.find("\n")
    while at != -1:
        after = text[at + 1 : at + 2]
        if after and after != "/" and not after.isspace():  # [^\s/]: \s as str.isspace (the patterns' Unicode \s)
            out.append(text[start : at + 1])
            start = at + 1
        at = text.find("\n", at + 1)
    if start < len(text):
        out.append(text[start:])
    return out


def seed_counts(encoding: str, counts: Iterable[tuple[str, int]]) -> None:
    """Remember known counts (e.g. stored with a chunk at ingest) as if the BPE ``encoding`` had counted them."""
    who = ("bpe", encoding)
    _COUNT_CACHE.put_many(((who, text), int(n)) for text, n in counts)
