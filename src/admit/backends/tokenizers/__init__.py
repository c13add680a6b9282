"""Tokenizers: resolve a model name, an encoding name or a ``tokenizer.json`` path to a :class:`Tokenizer`."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from admit.backends.tokenizers.base import Tokenizer, count_chat
from admit.errors import ConfigError

__all__ = ["Tokenizer", "count_chat", "resolve_tokenizer"]

_ENCODINGS = {"cl100k_base", "o200k_base", "p50k_base", "r50k_base", "gpt2"}


@lru_cache(maxsize=16)
def _resolve_name(spec: str) -> Tokenizer:
    from admit.backends.tokenizers.openai import OpenAITokenizer, encoding_for_model

    s = spec.strip()
    if not s:
        raise ConfigError("`model` is empty; give a model name (e.g. gpt-4o), an encoding or a tokenizer.json path.")
    if s.startswith("fake:"):
        from admit.backends.tokenizers.fake import WhitespaceTokenizer

        return WhitespaceTokenizer()
    if s.startswith("openai:"):
        return OpenAITokenizer(s.split(":", 1)[1])
    if s in _ENCODINGS:
        return OpenAITokenizer(s)
    hf_path = s[3:] if s.startswith("hf:") else s
    try:
        is_dir = Path(hf_path).is_dir()
    except (OSError, ValueError):  # a name too long or malformed to be a path
        is_dir = False
    if hf_path.endswith(".json") or is_dir or s.startswith("hf:"):
        from admit.backends.tokenizers.hf import HFTokenizer

        return HFTokenizer(hf_path)
    enc = encoding_for_model(s)
    if enc is not None:
        return OpenAITokenizer(enc)
    raise ConfigError(
        f"Unknown model {spec!r}: give an OpenAI model (gpt-4o, gpt-4, ...), an encoding "
        "(cl100k_base, o200k_base), or a path to a Hugging Face tokenizer.json."
    )


def resolve_tokenizer(spec: str | Tokenizer) -> Tokenizer:
    """Return a tokenizer for a model name, encoding, ``hf:PATH``/``tokenizer.json`` path, or an instance.

    Example:
        >>> resolve_tokenizer("gpt-4o").name
        'o200k_base'
    """
    if isinstance(spec, str):
        return _resolve_name(spec)
    return spec
