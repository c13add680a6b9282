"""Hugging Face ``tokenizer.json`` files for open models, loaded offline with ``tokenizers``."""

from __future__ import annotations

from pathlib import Path

from admit.errors import ConfigError, MissingExtraError

__all__ = ["HFTokenizer"]


class HFTokenizer:
    """A tokenizer from a local ``tokenizer.json`` (or a folder holding one).

    Chat overhead defaults to the ChatML layout (``<|im_start|>role\\n ... <|im_end|>\\n``): 4 tokens a
    message and 3 to prime the reply; pass other values for other templates.
    """

    def __init__(self, path: str | Path, *, tokens_per_message: int = 4, reply_priming: int = 3) -> None:
        """Load the tokenizer file at ``path``."""
        try:
            from tokenizers import Tokenizer as _HFTok
        except ImportError as exc:  # pragma: no cover - core dependency
            raise MissingExtraError("tokenizers", "all") from exc
        p = Path(path)
        if p.is_dir():
            p = p / "tokenizer.json"
        if not p.is_file():
            raise ConfigError(f"No tokenizer.json at {str(path)!r}; pass a tokenizer.json path or its folder.")
        try:
            self._tok = _HFTok.from_file(str(p))
        except Exception as exc:
            raise ConfigError(f"Cannot load tokenizer file {str(p)!r}: {exc}") from exc
        self._tok.no_truncation()
        self._tok.no_padding()
        self.name = f"hf:{p}"
        self.tokens_per_message = tokens_per_message
        self.reply_priming = reply_priming

    def encode(self, text: str) -> list[int]:
        """Return token ids without the model's added special tokens."""
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def count(self, text: str) -> int:
        """Return the token count of ``text``."""
        if not text:
            return 0
        return len(self._tok.encode(text, add_special_tokens=False).ids)
