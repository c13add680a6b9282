"""The framework's stored vectors: reused for the text admit encodes, from admit's own model only."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from admit._text import nfc
from admit.adapters._verdicts import Doc
from admit.passages import passages
from admit.types import Chunk

__all__ = ["seed_vectors"]

logger = logging.getLogger(__name__)

#: Cosine the framework's vector of one document must reach against admit's own vector of the same text before
#: ``embeddings="auto"`` takes the store for one of admit's model (the other vectors of the same text are reused).
_SAME_MODEL_COSINE = 0.98


def seed_vectors(emb: Any, embeddings: str, docs: Sequence[Doc], chunks: Sequence[Chunk]) -> list[str | None]:
    """Put the framework's stored vectors in the pruner's embedder ``emb`` (a cache; ``None``: the strategy reads
    none), so those documents are not encoded;
    what happened to each document's vector, for its reason (``None``: it gave none).

    A vector is reused only for the text admit would encode itself (one passage, no title prefix: a store
    embeds the text, admit the title with it; line breaks and runs of spaces do not count, the encoder's
    tokenizer splits on any whitespace) and only from admit's model: ``auto`` encodes the first such
    document and compares (the other vectors of the same text are then reused), ``reuse`` takes the caller's
    word for the model. A vector of another text or model never enters the cache, so no later call's decision
    depends on what an earlier one was given.
    """
    said: list[str | None] = [None] * len(docs)
    if embeddings == "ignore" or emb is None or not hasattr(emb, "seed"):
        for j, d in enumerate(docs):
            if d.embedding is not None:
                said[j] = f"store vector not used (embeddings={embeddings!r})" if emb is not None else None
        return said
    pairs: list[tuple[int, str, np.ndarray]] = []
    for j, (d, c) in enumerate(zip(docs, chunks, strict=True)):
        if d.embedding is None:
            continue
        vec = np.asarray(d.embedding, dtype=np.float32).ravel()
        ps = passages(c.title, c.text)
        if vec.shape[0] != emb.dim or not np.isfinite(vec).all() or not vec.any():
            said[j] = f"store vector not reused: {vec.shape[0]} dimensions, not {emb.name}'s {emb.dim}"
        elif len(ps) != 1 or ps[0] != " ".join(nfc(c.text).split()):
            # the encoder splits on any whitespace, so line breaks and double spaces give the same vector
            why = "the title is encoded with the text" if c.title else "the text is encoded in passages"
            said[j] = f"store vector not reused: another text ({why})"
        else:
            pairs.append((j, ps[0], vec))
    if not pairs:
        return said
    if embeddings == "auto":
        # the first document of the same text is encoded to check the vectors come from admit's model
        j0, text, vec = pairs[0]
        own = emb.embed([text])[0]
        cos = float(own @ vec) / max(float(np.linalg.norm(vec)), 1e-12)
        if cos < _SAME_MODEL_COSINE:
            logger.info("stored vectors not reused: cosine %.3f against %s's own (another model?)", cos, emb.name)
            for j, _, _ in pairs:
                said[j] = f"store vector not reused: another model (cosine {cos:.2f} against {emb.name}'s own)"
            return said
        said[j0] = f"store vector checked against {emb.name}'s own (cosine {cos:.3f}), which this document uses"
        pairs = pairs[1:]
    emb.seed([(text, vec) for _, text, vec in pairs], keys_are_hashes=False)
    for j, _, _ in pairs:
        said[j] = "store vector reused (same text and model)"
    return said
