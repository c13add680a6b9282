"""OpenAI encodings (cl100k_base, o200k_base, ...) from the ``bpe-openai`` package, fully offline."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from admit.errors import ConfigError, InputError, MissingExtraError

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


_CHUNK_LIMIT = 200_000
"""``bpe-openai``'s token limit for one ``encode_ordinary`` call (its ``TokenLimitError`` past it)."""


def _bindings() -> Any:
    """``bpe_openai._bindings`` (the Rust tokenizer), loaded without running ``bpe_openai/__init__.py``.

    The package's ``__init__`` builds its model table at import by decoding all three encodings' rank files in
    Python (1.6 s of a cold ``admit search``, measured); the Rust tokenizer carries its own tables and loads in
    0.15 s. The extension is registered under its own name, so a later ``import bpe_openai`` reuses it.
    """
    import importlib.util
    import sys
    from importlib.machinery import EXTENSION_SUFFIXES, ExtensionFileLoader
    from pathlib import Path

    loaded = sys.modules.get("bpe_openai._bindings")
    if loaded is not None:
        return loaded
    if "bpe_openai" in sys.modules:  # already imported in full
        return importlib.import_module("bpe_openai._bindings")
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("bpe_openai is not installed")
    for folder in spec.submodule_search_locations:
        for suffix in EXTENSION_SUFFIXES:
            path = Path(folder) / f"_bindings{suffix}"
            if path.is_file():
                loader = ExtensionFileLoader("bpe_openai._bindings", str(path))
                ext_spec = importlib.util.spec_from_file_location("bpe_openai._bindings", path, loader=loader)
                if ext_spec is None:
                    continue
                module = importlib.util.module_from_spec(ext_spec)
                loader.exec_module(module)
                sys.modules["bpe_openai._bindings"] = module
                return module
    raise ImportError("bpe_openai._bindings not found")


class _RustEncoding:
    """The Rust tokenizer with the calls admit makes: ``encode_ordinary`` and ``_backend.count``.

    Same ids as ``bpe_openai.Encoding.encode_ordinary`` (lone surrogates replaced first, as there; a text over
    the token limit goes to the full encoding, which raises its own error).
    """

    def __init__(self, name: str, backend: Any) -> None:
        self.name = name
        self._backend = backend

    def encode_ordinary(self, text: str) -> list[int]:
        if not text:
            return []
        if len(text) >= 1_000_000:
            raise InputError("Input too long to encode safely")
        try:
            tokens = list(self._backend.encode(text))
        except UnicodeEncodeError:
            tokens = list(self._backend.encode(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")))
        if len(tokens) > _CHUNK_LIMIT:
            return list(_load_full(self.name).encode_ordinary(text))
        return tokens


@lru_cache(maxsize=8)
def _load_full(name: str) -> Any:
    try:
        import bpe_openai
    except ImportError as exc:  # pragma: no cover - core dependency
        raise MissingExtraError("bpe-openai", "all") from exc
    try:
        return bpe_openai.get_encoding(name)
    except Exception as exc:
        known = ", ".join(bpe_openai.list_encoding_names())
        raise ConfigError(f"Unknown OpenAI encoding {name!r}; known: {known}.") from exc


@lru_cache(maxsize=8)
def _load(name: str) -> Any:
    try:
        bindings = _bindings()
        if name in bindings.supported_encodings():
            return _RustEncoding(name, bindings.tokenizer_for_encoding(name))
    except Exception:  # an older or different bpe-openai: the package's own path
        pass
    return _load_full(name)


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
