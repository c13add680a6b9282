"""A deterministic, dependency-free embedder for tests."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from admit import _linear
from admit.backends.embedders.base import FloatMatrix
from admit.backends.embedders.spec import EmbedderSpec
from admit.errors import ConfigError, InvalidValue

_TOKEN = _linear.simple(r"\w+")


class FakeEmbedder:
    """Hashed bag-of-words vectors (signed feature hashing), L2-normalised.

    Texts sharing words get similar vectors, which is enough to exercise scoring logic in
    unit tests. Fully deterministic across runs and platforms.

    Args:
        dim: The vector dimension.
    """

    def __init__(self, dim: int = 64) -> None:
        if not 1 <= dim <= 4096:
            raise InvalidValue("dim must be between 1 and 4096")
        self.dim = dim
        self.name = f"fake-{dim}"
        self.calls = 0

    def _vector(self, text: str) -> FloatMatrix:
        vec = np.zeros(self.dim, dtype=np.float32)
        for tok in _TOKEN.findall(text.lower()):
            digest = hashlib.blake2b(tok.encode("utf-8", "surrogatepass"), digest_size=8).digest()
            h = int.from_bytes(digest, "little")
            vec[h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            # Empty text: a fixed unit vector so cosines stay defined.
            vec[0] = 1.0
            return vec
        return vec / norm

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embeds texts.

        Args:
            texts: The texts to embed.

        Returns:
            A float32 array of shape ``(len(texts), dim)`` with unit rows.
        """
        self.calls += 1
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vector(t) for t in texts]).astype(np.float32)


MAX_FAKE_DIM = 4096
"""The largest dimension ``fake:<dim>`` accepts (a bigger one only burns memory)."""


def _build(option: str | None) -> FakeEmbedder:
    raw = option if option is not None else "64"
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_FAKE_DIM:
        raise ConfigError(f"embedder 'fake:{raw}': the fake embedder's dimension must be 1..{MAX_FAKE_DIM}")
    return FakeEmbedder(dim=int(raw))


SPEC = EmbedderSpec(name="fake", build=_build, summary="hashed bag of words for tests; fake:DIM", takes_option=True)
"""The ``fake`` embedder's spec."""
