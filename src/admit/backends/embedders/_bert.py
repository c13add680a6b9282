"""A BERT encoder forward pass in numpy (float32), read straight from a ``model.safetensors`` file.

This is the inference half of ``transformers.BertModel`` for the post-LayerNorm, absolute-position BERT that
all-MiniLM-L6-v2 is: embeddings (word + position + token type, LayerNorm), then per layer self-attention
(fused QKV, masked softmax), output projection + residual + LayerNorm, a GELU (erf) feed-forward + residual +
LayerNorm. Dropout is off (inference). No torch: the weights are memory-mapped from the safetensors file
(a JSON header, then raw little-endian tensors), so loading costs a page-in of the rows actually used.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from admit.errors import InputError, ModelFileError

F32 = npt.NDArray[np.float32]

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32, "BF16": None}
_MAX_HEADER = 100 * 1024 * 1024  # what safetensors itself accepts


def read_safetensors(path: str | Path) -> dict[str, npt.NDArray[Any]]:
    """Memory-maps the tensors of a ``.safetensors`` file as read-only numpy arrays.

    Args:
        path: The file.

    Returns:
        Tensor name -> array (a view into the mapped file; nothing is copied).

    Raises:
        ValueError: If the file is not a safetensors file or holds a dtype numpy cannot read.
    """
    p = Path(path)
    with p.open("rb") as fh:
        head = fh.read(8)
        if len(head) != 8:
            raise ModelFileError(f"{p}: not a safetensors file (shorter than its 8-byte header length)")
        (n,) = struct.unpack("<Q", head)
        if not 0 < n <= _MAX_HEADER:
            raise ModelFileError(f"{p}: not a safetensors file (header length {n})")
        header = json.loads(fh.read(n))
    base = 8 + n
    mm = np.memmap(p, dtype=np.uint8, mode="r")
    out: dict[str, npt.NDArray[Any]] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(info["dtype"])
        if dtype is None:
            raise ModelFileError(f"{p}: tensor {name!r} has dtype {info['dtype']}, which this reader does not support")
        start, end = info["data_offsets"]
        shape = tuple(info["shape"])
        raw = mm[base + start : base + end]
        if raw.size != math.prod(shape) * np.dtype(dtype).itemsize:
            raise ModelFileError(f"{p}: tensor {name!r} has {raw.size} bytes, its shape {shape} needs more or less")
        out[name] = raw.view(dtype).reshape(shape)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class _Layer:
    qkv_w: F32
    """Fused query/key/value weight, (3*hidden, hidden); the query rows pre-scaled by 1/sqrt(head_dim)."""
    qkv_b: F32
    """Fused bias, (3*hidden,), query part pre-scaled."""
    out_w: F32
    out_b: F32
    ln1_g: F32
    ln1_b: F32
    up_w: F32
    up_b: F32
    down_w: F32
    down_b: F32
    ln2_g: F32
    ln2_b: F32


# erf as a rational function of x (accurate to ~4e-7 on float32; the coefficients of XLA's and Eigen's
# float erf): numpy has no erf, and the tanh approximation of GELU is off by 1e-3, too far from torch's exact GELU
_ERF_ALPHA = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
_ERF_BETA = (
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)
_INV_SQRT2 = np.float32(1.0 / math.sqrt(2.0))


_GELU_BLOCK = 65536
"""Elements per GELU step: the polynomial's dozen passes then run over a block that stays in the CPU cache
(on a 4096x1536 array, 19 ms against 364 ms for whole-array passes; same values)."""


def _gelu_(x: F32) -> F32:
    """Exact (erf) GELU, in place on ``x``: ``0.5 * x * (1 + erf(x / sqrt 2))``, block by block."""
    flat = x.reshape(-1)
    size = min(flat.size, _GELU_BLOCK)
    z, z2, p, q = (np.empty(size, dtype=np.float32) for _ in range(4))
    for s in range(0, flat.size, _GELU_BLOCK):
        xs = flat[s : s + _GELU_BLOCK]
        m = xs.size
        zz, zz2, pp, qq = z[:m], z2[:m], p[:m], q[:m]
        np.multiply(xs, _INV_SQRT2, out=zz)
        np.clip(zz, -4.0, 4.0, out=zz)
        np.multiply(zz, zz, out=zz2)
        np.multiply(zz2, np.float32(_ERF_ALPHA[0]), out=pp)
        pp += np.float32(_ERF_ALPHA[1])
        for c in _ERF_ALPHA[2:]:
            pp *= zz2
            pp += np.float32(c)
        np.multiply(zz2, np.float32(_ERF_BETA[0]), out=qq)
        qq += np.float32(_ERF_BETA[1])
        for c in _ERF_BETA[2:]:
            qq *= zz2
            qq += np.float32(c)
        pp *= zz
        pp /= qq  # erf(z)
        pp += 1.0
        pp *= 0.5
        xs *= pp
    return x


def _layer_norm_(x: F32, g: F32, b: F32, eps: float) -> F32:
    """LayerNorm over the last axis, in place on ``x`` (biased variance, as torch)."""
    x -= x.mean(axis=-1, keepdims=True)
    var = np.einsum("...i,...i->...", x, x)[..., None]
    var /= np.float32(x.shape[-1])
    var += np.float32(eps)
    np.sqrt(var, out=var)
    x /= var
    x *= g
    x += b
    return x


class BertEncoder:
    """A BERT encoder over numpy weights.

    Args:
        tensors: The model's tensors by their ``transformers`` names (``embeddings.*``, ``encoder.layer.N.*``),
            optionally under a ``bert.`` prefix.
        config: The model's ``config.json`` (``num_attention_heads``, ``layer_norm_eps``, ...).

    Raises:
        ValueError: If the configuration is not a post-LayerNorm absolute-position BERT with GELU, or a tensor
            is missing.
    """

    def __init__(self, tensors: Mapping[str, npt.NDArray[Any]], config: Mapping[str, Any]) -> None:
        act = config.get("hidden_act", "gelu")
        if act != "gelu":
            raise ModelFileError(f"BertEncoder supports hidden_act 'gelu', the model has {act!r}")
        pos_type = config.get("position_embedding_type", "absolute")
        if pos_type != "absolute":
            raise ModelFileError(f"BertEncoder supports absolute position embeddings, the model has {pos_type!r}")
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in tensors else ""

        def t(name: str) -> F32:
            try:
                arr = tensors[prefix + name]
            except KeyError as exc:
                raise ModelFileError(f"the model has no tensor {prefix + name!r}") from exc
            return np.asarray(arr, dtype=np.float32)

        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.head_dim = self.hidden // self.heads
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.max_positions = int(config.get("max_position_embeddings", 512))
        self.word = t("embeddings.word_embeddings.weight")
        self.position = t("embeddings.position_embeddings.weight")
        self.token_type0 = np.array(t("embeddings.token_type_embeddings.weight")[0])
        self.emb_ln_g = t("embeddings.LayerNorm.weight")
        self.emb_ln_b = t("embeddings.LayerNorm.bias")
        scale = np.float32(1.0 / math.sqrt(self.head_dim))
        layers = []
        for i in range(int(config["num_hidden_layers"])):
            pre = f"encoder.layer.{i}."
            qw = t(pre + "attention.self.query.weight") * scale
            qb = t(pre + "attention.self.query.bias") * scale
            layers.append(
                _Layer(
                    qkv_w=np.ascontiguousarray(
                        np.concatenate(
                            [qw, t(pre + "attention.self.key.weight"), t(pre + "attention.self.value.weight")]
                        )
                    ),
                    qkv_b=np.concatenate(
                        [qb, t(pre + "attention.self.key.bias"), t(pre + "attention.self.value.bias")]
                    ),
                    out_w=t(pre + "attention.output.dense.weight"),
                    out_b=t(pre + "attention.output.dense.bias"),
                    ln1_g=t(pre + "attention.output.LayerNorm.weight"),
                    ln1_b=t(pre + "attention.output.LayerNorm.bias"),
                    up_w=t(pre + "intermediate.dense.weight"),
                    up_b=t(pre + "intermediate.dense.bias"),
                    down_w=t(pre + "output.dense.weight"),
                    down_b=t(pre + "output.dense.bias"),
                    ln2_g=t(pre + "output.LayerNorm.weight"),
                    ln2_b=t(pre + "output.LayerNorm.bias"),
                )
            )
        self.layers = tuple(layers)

    def forward(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64], layers: int | None = None) -> F32:
        """Runs the encoder over a padded batch.

        Args:
            ids: Token ids, (batch, length), padded on the right.
            mask: 1 for a real token, 0 for padding, (batch, length).
            layers: Run only the bottom ``layers`` layers (default all): the split cross-encoder's bottom states.

        Returns:
            The last hidden states, (batch, length, hidden), float32 (padded positions hold values that a
            caller must mask out, as in ``transformers``).
        """
        b, n = ids.shape
        if n > self.max_positions:
            raise InputError(f"sequence length {n} exceeds the model's {self.max_positions} positions")
        h = self.hidden
        emb: F32 = self.word[ids.reshape(-1)].reshape(b, n, h)
        emb += self.position[:n]
        emb += self.token_type0
        x: F32 = _layer_norm_(emb, self.emb_ln_g, self.emb_ln_b, self.eps)
        return self.run_layers(x, mask, self.layers if layers is None else self.layers[:layers])

    def run_layers(self, x: F32, mask: npt.NDArray[Any], layers: Sequence[_Layer]) -> F32:
        """Runs encoder layers over hidden states ``x`` (batch, length, hidden) with a 0/1 key ``mask``.

        The bottom of :meth:`forward`, and the joint top layers of the split cross-encoder
        (:mod:`admit.backends.rerankers.cross`), which run the same layer over other weights.
        """
        b, n, h = x.shape
        hd, nh = self.head_dim, self.heads
        x = x.reshape(b * n, h)
        # additive key mask: padded keys get a large negative score, so softmax gives them zero weight
        bias = np.where(mask[:, None, None, :] > 0, np.float32(0.0), np.float32(-1e30)).astype(np.float32)
        for ly in layers:
            qkv = x @ ly.qkv_w.T
            qkv += ly.qkv_b
            qkv4 = qkv.reshape(b, n, 3, nh, hd)
            q = qkv4[:, :, 0].transpose(0, 2, 1, 3)  # (b, heads, n, hd)
            k = qkv4[:, :, 1].transpose(0, 2, 3, 1)  # (b, heads, hd, n)
            v = qkv4[:, :, 2].transpose(0, 2, 1, 3)
            scores = q @ k  # (b, heads, n, n); the 1/sqrt(hd) is in the query weights
            scores += bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            ctx: F32 = (scores @ v).transpose(0, 2, 1, 3).reshape(b * n, h)
            attn: F32 = ctx @ ly.out_w.T
            attn += ly.out_b
            attn += x
            x = _layer_norm_(attn, ly.ln1_g, ly.ln1_b, self.eps)
            up: F32 = x @ ly.up_w.T
            up += ly.up_b
            _gelu_(up)
            down: F32 = up @ ly.down_w.T
            down += ly.down_b
            down += x
            x = _layer_norm_(down, ly.ln2_g, ly.ln2_b, self.eps)
        out: F32 = x.reshape(b, n, h)
        return out
