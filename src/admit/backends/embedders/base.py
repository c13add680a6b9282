"""Embedder protocol and an LRU caching wrapper.

An embedder turns texts into L2-normalised float32 row vectors. The :class:`CachedEmbedder`
wrapper memoises vectors by the SHA-1 of the text, so repeated chunks (or chunks whose vectors
a knowledge base stored at ingest) are not encoded twice.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from admit import _scope
from admit._lru import LRU
from admit.errors import InvalidValue

FloatMatrix = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Something that embeds texts into L2-normalised vectors.

    Attributes:
        name: A stable identifier of the model (used in cache keys and traces).
        dim: The dimension of the vectors.
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embeds texts.

        Args:
            texts: The texts to embed.

        Returns:
            A float32 array of shape ``(len(texts), dim)`` with L2-normalised rows.
        """
        ...


def text_key(text: str) -> str:
    """Returns the cache key of a text (hex SHA-1 of its UTF-8 bytes).

    Args:
        text: The text.

    Returns:
        The hex digest.
    """
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def l2_normalise(matrix: npt.ArrayLike) -> FloatMatrix:
    """L2-normalises the rows of a matrix (zero rows stay zero).

    Args:
        matrix: A 2-D array-like.

    Returns:
        A float32 copy with unit-norm rows.
    """
    arr = np.asarray(matrix, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    out: FloatMatrix = (arr / norms).astype(np.float32, copy=False)
    return out


class CachedEmbedder:
    """An LRU cache in front of another embedder; thread-safe (one lock), so threads may share it.

    Vectors are keyed by the SHA-1 of the text. The cache can be pre-seeded, e.g. with vectors a
    knowledge base computed at ingest, so that scoring a retrieved list encodes only the question.

    Args:
        inner: The embedder that computes missing vectors.
        max_items: The maximum number of cached vectors (least recently used are evicted).
        seed: Optional initial vectors, mapping either texts or their SHA-1 keys to vectors.
    """

    def __init__(
        self,
        inner: Embedder,
        max_items: int = 50_000,
        seed: Mapping[str, npt.ArrayLike] | None = None,
    ) -> None:
        if max_items < 1:
            raise InvalidValue("max_items must be >= 1")
        self.inner = inner
        self._name: str | None = None
        self.dim = inner.dim
        self.max_items = max_items
        self._cache: LRU[str, FloatMatrix] = LRU(max_items)
        self._lock = threading.RLock()  # shared by the service's worker threads
        self._pending: dict[str, threading.Event] = {}  # keys being computed, outside the lock
        self.hits = 0
        self.misses = 0
        if seed:
            self.seed(seed.items())

    @property
    def name(self) -> str:
        """The inner embedder's name, read each time: MiniLM's ``auto`` encoder says whose vectors it gives for
        certain only once loaded (int8 ones, or float32 ones when it fell back to numpy); a name set on the cache
        is its own from then on."""
        return self._name if self._name is not None else str(self.inner.name)

    @name.setter
    def name(self, value: str) -> None:
        self._name = value

    def __len__(self) -> int:
        with self._lock:
            return len(self._cache)

    def seed(self, items: Iterable[tuple[str, npt.ArrayLike]], *, keys_are_hashes: bool | None = None) -> None:
        """Adds known vectors to the cache.

        Args:
            items: Pairs of (text or SHA-1 key, vector).
            keys_are_hashes: Whether the first elements are already SHA-1 keys. ``None`` guesses:
                a 40-character lowercase hex string is taken as a key.
        """
        with self._lock:
            for key, vec in items:
                self._seed_one(key, vec, keys_are_hashes)

    def _seed_one(self, key: str, vec: npt.ArrayLike, keys_are_hashes: bool | None) -> None:
        is_hash = keys_are_hashes
        if is_hash is None:
            is_hash = len(key) == 40 and all(ch in "0123456789abcdef" for ch in key)
        v = l2_normalise(vec)[0]
        if v.shape[0] != self.dim:
            raise InvalidValue(f"seed vector has dim {v.shape[0]}, expected {self.dim}")
        self._put(self._key(key if is_hash else text_key(key)), v)

    def _put(self, key: str, vec: FloatMatrix) -> None:
        self._cache.put(key, vec)

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embeds texts, computing only those not cached (each distinct text once).

        The lock is held only to look up and store: the model runs outside it, so one caller's large batch
        never makes another wait for its own (cached or small) texts; a text already being computed by another
        thread is waited for, not computed twice. Keys are in the running work's cache scope
        (:mod:`admit._scope`: per tenant in the service), so a hit never tells one tenant what another embedded.

        Args:
            texts: The texts to embed.

        Returns:
            A float32 array of shape ``(len(texts), dim)``.
        """
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        keys = [self._key(text_key(t)) for t in texts]
        mine: dict[str, str] = {}
        theirs: dict[str, threading.Event] = {}
        with self._lock:
            for i, k in enumerate(keys):
                vec = self._cache.get(k)
                if vec is not None:
                    out[i] = vec
                    self.hits += 1
                elif k in self._pending and k not in mine:
                    theirs[k] = self._pending[k]
                elif k not in mine:
                    mine[k] = texts[i]
                    self._pending[k] = threading.Event()
            self.misses += len(mine)
        fresh: dict[str, FloatMatrix] = {}
        try:
            if mine:
                fresh = dict(zip(mine, l2_normalise(self.inner.embed(list(mine.values()))), strict=True))
        finally:
            with self._lock:
                for k in mine:
                    if k in fresh:
                        self._put(k, fresh[k])
                    self._pending.pop(k).set()
        for k, event in theirs.items():
            event.wait()
            with self._lock:
                vec = self._cache.get(k)
            if vec is None:  # the other computation failed (or was evicted at once): compute it here
                text = texts[keys.index(k)]
                vec = l2_normalise(self.inner.embed([text]))[0]
                with self._lock:
                    self._put(k, vec)
            fresh[k] = vec
        for i, k in enumerate(keys):
            if k in fresh:
                out[i] = fresh[k]
        return out

    @staticmethod
    def _key(key: str) -> str:
        scope = _scope.current()
        return key if not scope else hashlib.sha1(f"{scope}\x00{key}".encode(), usedforsecurity=False).hexdigest()

    def export(self) -> dict[str, FloatMatrix]:
        """Returns a copy of the cache (SHA-1 key -> vector).

        Returns:
            The cached vectors.
        """
        with self._lock:
            return dict(self._cache.items())
