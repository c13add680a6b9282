"""all-MiniLM-L6-v2 as an ONNX graph built from the packaged weights, run by ``onnxruntime``.

The graph is written here with the ``onnx`` package's helper API from the ``model.safetensors`` tensors (no torch,
no export, no download): the BERT encoder of :mod:`admit.backends.embedders._bert` with ``onnxruntime``'s fused
CPU kernels (``com.microsoft`` ``Attention``, ``SkipLayerNormalization``, ``BiasGelu``), then mean pooling over
the real tokens and L2 normalisation, so one ``run`` returns the sentence vectors. Inputs ``input_ids`` and
``attention_mask`` (int64, ``(batch, length)``, right-padded); output ``embeddings`` (float32, ``(batch, 384)``).

``variant="int8"`` stores the weights of the matrix products in 8 bits (:func:`_quantise`): the attention
projections, the attention output and the feed-forward up-projection through ``onnxruntime.quantization
.quantize_dynamic`` (signed weights, one scale per output column; activations quantised per batch at run time),
and the feed-forward down-projection, whose input (the GELU's output) has the widest range, as ``MatMulNBits``
(8-bit weights in blocks of 128 rows, activations quantised per block and token). Before that, the inputs of the
first three are smoothed (:func:`_smooth`, SmoothQuant): a few channels of a LayerNorm's output are 10-30 times the
rest, and one 8-bit scale per batch spends its range on them; each channel is divided by a factor that the
weights' row takes on (``s = absmax ** 0.6 / weight_absmax ** 0.4``), from each channel's largest input measured
on training texts (``modelfiles/minilm_int8_calibration.json``, written by ``scripts/fit_int8_calibration.py``,
for the weights whose SHA-256 it names; other weights are quantised unsmoothed). The built model is
kept in a user cache folder (:func:`cache_dir`) under the weights' SHA-256, the variant and the builder's
version, written atomically; where the folder cannot be written the model is built in memory each load.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from admit.errors import ModelFileError

__all__ = [
    "BUILDER_VERSION",
    "CALIBRATION_FILE",
    "SMOOTHED",
    "Variant",
    "build_model",
    "cache_dir",
    "calibrate",
    "load_model",
    "make_session",
    "weights_digest",
]

Variant = Literal["fp32", "int8"]

BUILDER_VERSION = 5
"""Part of the cache key: bump it when the graph changes (5: the attention's mask as each text's length; issue 48)."""

_OPSET = 17
_MS = "com.microsoft"


def cache_dir() -> Path:
    """The folder for built models: ``$XDG_CACHE_HOME/admit/onnx``, else ``~/.cache/admit/onnx``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "admit" / "onnx"


def weights_digest(path: Path) -> str:
    """SHA-256 of the weights file, hex (the cache key: other weights get another model)."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def build_model(tensors: Mapping[str, npt.NDArray[Any]], config: Mapping[str, Any]) -> Any:
    """Builds the float32 graph (an ``onnx.ModelProto``) from the model's tensors and ``config.json``.

    Args:
        tensors: The ``transformers`` tensor names (``embeddings.*``, ``encoder.layer.N.*``), optionally under
            ``bert.``.
        config: ``hidden_size``, ``num_attention_heads``, ``num_hidden_layers``, ``layer_norm_eps``.

    Returns:
        The model, checked by ``onnx.checker``.

    Raises:
        ValueError: If the configuration is not a post-LayerNorm absolute-position BERT with GELU, or a tensor
            is missing.
    """
    from onnx import TensorProto, checker, helper, numpy_helper

    if config.get("hidden_act", "gelu") != "gelu":
        raise ModelFileError(f"the ONNX builder supports hidden_act 'gelu', the model has {config.get('hidden_act')!r}")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ModelFileError("the ONNX builder supports absolute position embeddings only")
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in tensors else ""
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    inits: list[Any] = []
    nodes: list[Any] = []

    def t(name: str) -> npt.NDArray[np.float32]:
        try:
            return np.asarray(tensors[prefix + name], dtype=np.float32)
        except KeyError as exc:
            raise ModelFileError(f"the model has no tensor {prefix + name!r}") from exc

    def init(name: str, arr: npt.NDArray[Any]) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def node(op: str, ins: list[str], out: str, domain: str = "", **attrs: Any) -> str:
        nodes.append(helper.make_node(op, ins, [out], name=out, domain=domain, **attrs))
        return out

    def skip_ln(y: str, x: str, out: str, block: str, bias: str) -> str:
        """``LayerNorm(x + y + bias)`` with ``block``'s ``LayerNorm`` and ``dense.bias`` (a post-LayerNorm residual)."""
        gamma = init(out + "_g", t(block + ".LayerNorm.weight"))
        beta = init(out + "_b", t(block + ".LayerNorm.bias"))
        return node(
            "SkipLayerNormalization",
            [y, x, gamma, beta, init(bias, t(block + ".dense.bias"))],
            out,
            domain=_MS,
            epsilon=eps,
        )

    # embeddings: word + position (0..n-1) + token type 0, LayerNorm
    word = init("word_embeddings", t("embeddings.word_embeddings.weight"))
    pos_table = init("position_embeddings", t("embeddings.position_embeddings.weight"))
    type0 = init("token_type0", t("embeddings.token_type_embeddings.weight")[0])
    init("zero_i64", np.array([0], dtype=np.int64))
    init("one_i64", np.array([1], dtype=np.int64))
    init("axis1", np.array([1], dtype=np.int64))
    init("two_i64", np.array([2], dtype=np.int64))
    node("Shape", ["input_ids"], "ids_shape")
    node("Slice", ["ids_shape", "one_i64", "two_i64"], "seq_len")  # shape[1:2]
    node("Slice", [pos_table, "zero_i64", "seq_len"], "positions")  # rows 0..n-1
    node("Gather", [word, "input_ids"], "word_emb")
    node("Add", ["word_emb", "positions"], "emb_wp")
    node("Add", ["emb_wp", type0], "emb")
    x = node(
        "LayerNormalization",
        ["emb", init("emb_ln_g", t("embeddings.LayerNorm.weight")), init("emb_ln_b", t("embeddings.LayerNorm.bias"))],
        "emb_ln",
        axis=-1,
        epsilon=eps,
    )
    # the attention's mask as each text's length (the inputs are right-padded): the same vectors, bit for bit, as a
    # (batch, length) mask, for 2% less CPU in the int8 forward pass (docs/results.md, issue 48 item 2)
    node("ReduceSum", ["attention_mask", "axis1"], "lengths", keepdims=0)
    node("Cast", ["lengths"], "mask_i32", to=TensorProto.INT32)

    for i in range(int(config["num_hidden_layers"])):
        pre = f"encoder.layer.{i}."
        p = f"l{i}_"
        qkv_w = np.concatenate(
            [t(pre + f"attention.self.{w}.weight").T for w in ("query", "key", "value")], axis=1
        )  # (hidden, 3*hidden): Attention's layout
        qkv_b = np.concatenate([t(pre + f"attention.self.{w}.bias") for w in ("query", "key", "value")])
        ctx = node(
            "Attention",
            [x, init(p + "qkv_w", qkv_w), init(p + "qkv_b", qkv_b), "mask_i32"],
            p + "ctx",
            domain=_MS,
            num_heads=heads,
        )
        proj = node("MatMul", [ctx, init(p + "out_w", t(pre + "attention.output.dense.weight").T)], p + "proj")
        x = skip_ln(proj, x, p + "ln1", pre + "attention.output", p + "out_b")
        up = node("MatMul", [x, init(p + "up_w", t(pre + "intermediate.dense.weight").T)], p + "up")
        act = node("BiasGelu", [up, init(p + "up_b", t(pre + "intermediate.dense.bias"))], p + "gelu", domain=_MS)
        down = node("MatMul", [act, init(p + "down_w", t(pre + "output.dense.weight").T)], p + "down")
        x = skip_ln(down, x, p + "ln2", pre + "output", p + "down_b")

    # mean over the real tokens, then L2-normalise (sentence-transformers' Pooling and Normalize modules)
    node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    node("Unsqueeze", ["mask_f", init("axis_last", np.array([-1], dtype=np.int64))], "mask_f3")
    node("Mul", [x, "mask_f3"], "masked")
    node("ReduceSum", ["masked", "axis1"], "summed", keepdims=0)
    node("ReduceSum", ["mask_f", "axis1"], "counts", keepdims=1)
    node("Max", ["counts", init("tiny", np.array(1e-9, dtype=np.float32))], "counts_c")
    node("Div", ["summed", "counts_c"], "pooled")
    node("ReduceL2", ["pooled"], "norm", axes=[1], keepdims=1)  # axes an attribute until opset 18
    node("Max", ["norm", init("tiny_norm", np.array(1e-12, dtype=np.float32))], "norm_c")
    node("Div", ["pooled", "norm_c"], "embeddings")

    graph = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "length"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "length"]),
        ],
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", hidden])],
        initializer=inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", _OPSET), helper.make_opsetid(_MS, 1)],
        producer_name="admit",
        producer_version=str(BUILDER_VERSION),
    )
    model.ir_version = 8  # what onnxruntime 1.16+ reads
    checker.check_model(model)
    return model


QUANTISED_OPS = ("MatMul", "Attention")
"""The operators whose weights ``int8`` stores in 8 bits; embeddings and LayerNorms stay float32."""

BLOCK = 128
"""Rows of a weight block of the ``MatMulNBits`` down-projections (one scale and zero point per block and column)."""


SMOOTHED = ("ctx", "proj", "up")
"""The products whose inputs :func:`_smooth` rescales, by node name ``l{layer}_{kind}``: the attention's
query/key/value projection (``Attention``), the attention output and the feed-forward up-projection."""

CALIBRATION_FILE = "minilm_int8_calibration.json"
"""The shipped largest input per channel of each smoothed product (``admit.modelfiles``)."""

ALPHA = 0.6
"""SmoothQuant's migration strength: the share of a channel's range moved from the activations to the weights."""


def calibrate(
    tensors: Mapping[str, npt.NDArray[Any]], config: Mapping[str, Any], tokenizer: Path, texts: Sequence[str]
) -> dict[str, npt.NDArray[np.float32]]:
    """The largest absolute input per channel of each smoothed product of the float32 graph over ``texts`` (each
    run alone, unpadded), by node name (``l0_ctx``, ``l0_proj``, ``l0_up``, ...)."""
    from onnx import TensorProto, helper
    from tokenizers import Tokenizer

    model = build_model(tensors, config)
    inputs = {n.name: n.input[0] for n in model.graph.node if _kind(n.name) in SMOOTHED}
    for name in sorted(set(inputs.values())):
        model.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    session = make_session(model.SerializeToString(), 1)
    names = [o.name for o in session.get_outputs()]
    tok = Tokenizer.from_file(str(tokenizer))
    tok.no_padding()
    tok.enable_truncation(max_length=256)
    seen: dict[str, npt.NDArray[np.float32]] = {}
    for text in texts:
        ids = np.array([tok.encode(text).ids], dtype=np.int64)
        outs = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        for name, arr in zip(names, outs, strict=True):
            top = np.abs(np.asarray(arr, dtype=np.float32).reshape(-1, arr.shape[-1])).max(axis=0)
            seen[name] = np.maximum(seen[name], top) if name in seen else top
    return {node: seen[inp] for node, inp in sorted(inputs.items())}


def _kind(name: str) -> str:
    """``ctx`` of ``l3_ctx``; ``""`` for a node outside the layers."""
    head, _, kind = name.partition("_")
    return kind if head[:1] == "l" and head[1:].isdigit() else ""


def _smooth(model: Any, absmax: Mapping[str, Sequence[float]]) -> None:
    """Divides each smoothed product's input channels by ``s`` and multiplies its weights' rows by ``s`` (in place).

    The query/key/value and up-projections read a LayerNorm's output that the residual also reads, so a ``Mul`` by
    ``1/s`` goes before them alone; the attention output reads the attention's context, linear in the values per
    channel, so ``1/s`` goes into the value projection's columns and bias instead."""
    from onnx import helper, numpy_helper

    graph = model.graph
    inits = {i.name: i for i in graph.initializer}

    def get(name: str) -> npt.NDArray[np.float32]:
        return np.array(numpy_helper.to_array(inits[name]), dtype=np.float32)  # a writable copy

    def put(name: str, arr: npt.NDArray[Any]) -> None:
        graph.initializer.remove(inits[name])
        inits[name] = numpy_helper.from_array(np.ascontiguousarray(arr, dtype=np.float32), name)
        graph.initializer.append(inits[name])

    nodes = []
    for n in graph.node:
        kind = _kind(n.name)
        if kind not in SMOOTHED or n.name not in absmax:
            nodes.append(n)
            continue
        w = get(n.input[1])  # (K, N): a row per input channel
        act = np.asarray(absmax[n.name], dtype=np.float32)
        if act.shape != (w.shape[0],):
            raise ModelFileError(f"the int8 calibration of {n.name} has {act.shape} channels, the model {w.shape[0]}")
        s = np.clip(np.maximum(act, 1e-5) ** ALPHA / np.maximum(np.abs(w).max(axis=1), 1e-5) ** (1 - ALPHA), 1e-3, 1e3)
        put(n.input[1], w * s[:, None])
        if kind == "proj":
            layer = n.name.split("_")[0]
            qkv_w, qkv_b = get(layer + "_qkv_w"), get(layer + "_qkv_b")
            v = slice(2 * w.shape[0], 3 * w.shape[0])
            qkv_w[:, v] /= s
            qkv_b[v] /= s
            put(layer + "_qkv_w", qkv_w)
            put(layer + "_qkv_b", qkv_b)
        else:
            inv = n.name + "_inv_s"
            graph.initializer.append(numpy_helper.from_array((1.0 / s).astype(np.float32), inv))
            nodes.append(helper.make_node("Mul", [n.input[0], inv], [n.name + "_xs"], name=n.name + "_xs"))
            n.input[0] = n.name + "_xs"
        nodes.append(n)
    del graph.node[:]
    graph.node.extend(nodes)


def calibration(digest: str) -> dict[str, list[float]] | None:
    """The shipped calibration's largest inputs when it was measured on the weights with SHA-256 ``digest``."""
    from admit.modelfiles import path

    try:
        data = json.loads(path(CALIBRATION_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("weights_sha256") != digest or not isinstance(data.get("absmax"), dict):
        return None
    return data["absmax"]  # type: ignore[no-any-return]


class _DropAdvice(logging.Filter):
    """Drops the quantiser's advice to pre-process (meant for image models), which it logs on the root logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def _quantise(model: Any, out: Path, absmax: Mapping[str, Sequence[float]] | None = None) -> None:
    """The int8 model of the float32 ``model``, written to ``out``; with ``absmax`` (:func:`calibration`), the
    smoothed products' inputs smoothed first (:func:`_smooth`).

    Measured on 150 texts of ``../shared/data`` (``bench/bench_encoder.py``, one thread): dynamic quantisation of
    every product with signed weights is 2.4x the numpy encoder's texts per CPU-second but moves a vector to mean
    cosine 0.9945 (the same as unsigned weights, at 1.5x); the down-projections in blocks halve the distance (mean
    cosine 0.9973) at 2.1x, where every product in blocks (0.9997) is 1.5x; smoothing the other products' inputs
    (SmoothQuant, :func:`_smooth`) halves it again (mean 0.9989 on 120 texts) at 2.0-2.1x (issue 48)."""
    import onnx
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    if absmax is not None:
        model = copy.deepcopy(model)
        _smooth(model, absmax)
    layers = [n.name for n in model.graph.node if n.op_type == "MatMul" and n.name.endswith("_down")]
    root = logging.getLogger()
    hush = _DropAdvice()
    root.addFilter(hush)
    try:
        with tempfile.TemporaryDirectory(prefix="admit-q-") as tmp:
            part = Path(tmp) / "dynamic.onnx"
            quantize_dynamic(
                model,
                part,
                op_types_to_quantize=list(QUANTISED_OPS),
                nodes_to_exclude=layers,
                per_channel=True,
                # signed weights: the VNNI int8 kernels take unsigned activations times signed weights, twice as
                # fast as unsigned weights; where the CPU lacks VNNI, 7-bit weights keep its 16-bit sums from
                # saturating
                weight_type=QuantType.QInt8,
                reduce_range=not _has_vnni(),
                # the fused com.microsoft nodes carry no inferred types: their outputs are float32
                extra_options={"DefaultTensorType": TensorProto.FLOAT},
            )
            quantised = onnx.load(str(part))
    finally:
        root.removeFilter(hush)
    _blockwise(quantised, set(layers))
    out.write_bytes(quantised.SerializeToString())


def _has_vnni() -> bool:
    """Whether the CPU has the int8 dot-product instructions (AVX-512 VNNI or AVX-VNNI; read on Linux, else assumed)."""
    try:
        flags = Path("/proc/cpuinfo").read_text("utf-8", errors="replace")
    except OSError:
        return True
    return "flags" not in flags or any(f in flags for f in ("avx512_vnni", "avx_vnni", "amx_int8"))


def _blockwise(model: Any, names: set[str]) -> None:
    """The ``MatMul`` nodes named in ``names`` (float32 weights, ``(K, N)``) replaced by ``com.microsoft``
    ``MatMulNBits`` (8 bits, :data:`BLOCK` rows a block, asymmetric, int8 arithmetic: ``accuracy_level`` 4)."""
    from onnx import helper, numpy_helper

    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    nodes = []
    for n in graph.node:
        if n.op_type != "MatMul" or n.name not in names or n.input[1] not in inits:
            nodes.append(n)
            continue
        w = numpy_helper.to_array(inits[n.input[1]]).astype(np.float32)
        k, cols = w.shape
        blocks = -(-k // BLOCK)
        wb = np.pad(w.T, ((0, 0), (0, blocks * BLOCK - k))).reshape(cols, blocks, BLOCK)
        lo = np.minimum(wb.min(axis=2, keepdims=True), 0.0)
        hi = np.maximum(wb.max(axis=2, keepdims=True), 0.0)
        scale = (hi - lo) / 255.0
        scale[scale == 0] = 1.0
        zero = np.clip(np.round(-lo / scale), 0, 255)
        q = np.clip(np.round(wb / scale) + zero, 0, 255).astype(np.uint8)
        base = n.input[1]
        graph.initializer.remove(inits[base])
        graph.initializer.extend(
            [
                numpy_helper.from_array(q, base + "_q8"),
                numpy_helper.from_array(scale.reshape(-1).astype(np.float32), base + "_scale"),
                numpy_helper.from_array(zero.reshape(-1).astype(np.uint8), base + "_zero"),
            ]
        )
        nodes.append(
            helper.make_node(
                "MatMulNBits",
                [n.input[0], base + "_q8", base + "_scale", base + "_zero"],
                list(n.output),
                name=n.name,
                domain=_MS,
                K=k,
                N=cols,
                bits=8,
                block_size=BLOCK,
                accuracy_level=4,
            )
        )
    del graph.node[:]
    graph.node.extend(nodes)


def _atomic_write(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(prefix=".partial-", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(partial, target)
    except OSError:
        Path(partial).unlink(missing_ok=True)
        raise


def _known_digest(weights: Path, where: Path) -> str:
    """The weights' SHA-256, remembered in ``where/digests.json`` by path, size and modification time (hashing 90 MB
    at every load costs 0.1-0.5 s; a changed file has another size or time and is hashed again)."""
    st = weights.stat()
    index = where / "digests.json"
    stamp = [st.st_size, st.st_mtime_ns]
    name = str(weights.resolve())
    try:
        known = json.loads(index.read_text("utf-8"))
        if not isinstance(known, dict):
            known = {}
    except (OSError, ValueError):
        known = {}
    entry = known.get(name)
    if isinstance(entry, list) and len(entry) == 3 and entry[:2] == stamp and isinstance(entry[2], str):
        return entry[2]
    digest = weights_digest(weights)
    known[name] = [*stamp, digest]
    with contextlib.suppress(OSError):  # a read-only cache: hashed again next load
        _atomic_write(index, json.dumps(known).encode())
    return digest


def load_model(
    folder: Path,
    tensors: Mapping[str, npt.NDArray[Any]],
    config: Mapping[str, Any],
    variant: Variant,
    cache: Path | None = None,
) -> str | bytes:
    """The model for ``variant``: the cached file when built before, else built (and cached).

    Args:
        folder: The MiniLM folder (its ``model.safetensors`` is hashed for the cache key).
        tensors: The model's tensors.
        config: The model's ``config.json``.
        variant: ``"fp32"`` or ``"int8"``.
        cache: The cache folder (default :func:`cache_dir`).

    Returns:
        For ``onnxruntime.InferenceSession``: the cached file's path, or the model's bytes where the cache folder
        cannot be written.
    """
    where = cache if cache is not None else cache_dir()
    digest = _known_digest(folder / "model.safetensors", where)
    absmax = calibration(digest) if variant == "int8" else None
    flavour = variant if variant == "fp32" or _has_vnni() else f"{variant}r"  # 7-bit weights without VNNI
    flavour += "" if variant == "fp32" or absmax is not None else "u"  # other weights: unsmoothed
    target = where / f"minilm-{digest[:32]}-v{BUILDER_VERSION}-{flavour}.onnx"
    if target.is_file():
        return str(target)
    model = build_model(tensors, config)
    with tempfile.TemporaryDirectory(prefix="admit-onnx-") as tmp:
        built = Path(tmp) / target.name
        if variant == "int8":
            _quantise(model, built, absmax)
        else:
            built.write_bytes(model.SerializeToString())
        data = built.read_bytes()
    try:
        _atomic_write(target, data)
    except OSError:  # a read-only home: the model is rebuilt next load, nothing else changes
        return data
    return str(target)


def make_session(model: str | bytes, threads: int) -> Any:
    """An ``onnxruntime.InferenceSession`` on the CPU with ``threads`` intra-op threads.

    One operator at a time (``inter_op_num_threads=1``); idle pool threads sleep instead of spinning, so a
    shared machine's other processes keep their cores between batches.
    """
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.log_severity_level = 3  # errors only
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
