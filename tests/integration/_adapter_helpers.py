"""Shared parts of the adapter tests: a pruner that saves itself, a counting embedder, a gated pruner."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from admit.backends.embedders import resolve_embedder
from admit.backends.embedders.base import CachedEmbedder
from admit.prune.base import PruneOutcome, apply_threshold
from admit.prune.settings import PruneSettings
from admit.types import Scored


class KeepIds:
    """A custom pruner that keeps the chunks whose id it names; saves itself (``to_dict``/``from_dict``)."""

    name = "keep_ids"

    def __init__(self, ids: Sequence[str]) -> None:
        self.ids = list(ids)

    def prune(self, question: str, candidates: Sequence[Scored], settings: PruneSettings) -> PruneOutcome:
        grades = [5 if c.chunk.id in self.ids else 1 for c in candidates]
        return apply_threshold(self.name, candidates, grades, settings)

    def to_dict(self) -> dict[str, Any]:
        return {"ids": self.ids}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KeepIds:
        return cls(**data)


class Unsaveable:
    """A custom pruner without ``to_dict``: saving it must fail loudly, never silently drop it."""

    name = "unsaveable"

    def prune(self, question: str, candidates: Sequence[Scored], settings: PruneSettings) -> PruneOutcome:
        return apply_threshold(self.name, candidates, [5] * len(candidates), settings)


class Counting:
    """Wraps the real MiniLM embedder and counts the texts it encodes."""

    def __init__(self) -> None:
        self.inner = resolve_embedder("minilm")
        self.name = self.inner.name
        self.dim = self.inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        out: np.ndarray = self.inner.embed(texts)
        return out


def counting_embedder() -> tuple[CachedEmbedder, Counting]:
    """A cache over a counting real MiniLM (what the setwise pruner is given), and the counter."""
    counter = Counting()
    return CachedEmbedder(counter), counter


class Gate:
    """A pruner that waits until the test's event loop opens the gate: the call deadlocks (and fails after a
    generous wait) if it ran on the event loop's thread; it passes however slow the machine is."""

    name = "gate"

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.thread: str | None = None

    def prune(self, question: str, candidates: Sequence[Scored], settings: PruneSettings) -> PruneOutcome:
        self.thread = threading.current_thread().name
        if not self.opened.wait(120):
            raise AssertionError("the event loop never ran while the pruner worked: it was blocked")
        return apply_threshold(self.name, candidates, [5] * len(candidates), settings)
