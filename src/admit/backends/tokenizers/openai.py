"""OpenAI encodings (cl100k_base, o200k_base, ...) from the ``bpe-openai`` package, fully offline."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from admit.errors import ConfigError, MissingExtraError

__all__ = ["OpenAITokenizer", "encoding_for_model"]

_MODEL_PREFIXES: tuple[tuple[str, str], ...] = (
    ("gpt-4o", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
    ("chatgpt-4o", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
    ("text-embedding-3", "cl100k_base"),
    ("text-embedding-ada", "cl100k_base"),
)


def encoding_for_model(model: str) -> str | None:
    """Return the encoding name for an OpenAI model name, or ``None`` if unknown."""
    m = model.lower().split("/")[-1]
    for prefix, enc in _MODEL_PREFIXES:
        if m.startswith(prefix):
            return enc
    return None


@lru_cache(maxsize=8)
def _load(name: str) -> Any:
    try:
        import bpe_openai
    except ImportError as exc:  # pragma: no cover - core dependency
        raise MissingExtraError("bpe-openai", "all") from exc
    try:
        return bpe_openai.get_encoding(name)
    except Exception as exc:
        known = ", ".join(bpe_openai.list_encoding_names())
        raise ConfigError(f"Unknown OpenAI encoding {name!r}; known: {known}.") from exc


class OpenAITokenizer:
    """An OpenAI BPE encoding with the chat format's overhead (3 tokens a message, 3 to prime the reply).

    Example:
        >>> tok = OpenAITokenizer("o200k_base")
        >>> tok.count("hello world")
        2
    """

    tokens_per_message = 3
    reply_priming = 3

    def __init__(self, encoding: str = "o200k_base") -> None:
        """Load ``encoding`` (shipped inside ``bpe-openai``; nothing is downloaded)."""
        self.name = encoding
        self.count_key = ("bpe", encoding)  # instances of one encoding count alike: they share remembered counts
        self._enc = _load(encoding)
        # cl100k/o200k pre-tokenizers end a piece at a newline before a non-space, non-"/" character, so
        # counts of such lines add up (see admit.backends.tokenizers.base.count_by_lines)
        self.line_additive = encoding in {"cl100k_base", "o200k_base"}
        # the Rust backend counts without building the id list (a quarter faster on 300-token passages)
        backend = getattr(self._enc, "_backend", None)
        self._count = getattr(backend, "count", None)

    def encode(self, text: str) -> list[int]:
        """Return token ids; special-token text in documents is encoded as plain text."""
        return list(self._enc.encode_ordinary(text))

    def count(self, text: str) -> int:
        """Return the token count of ``text``."""
        if not text:
            return 0
        if self._count is not None:
            try:
                return int(self._count(text))
            except UnicodeEncodeError:  # lone surrogates: encode_ordinary sanitises them first
                pass
        return len(self._enc.encode_ordinary(text))
