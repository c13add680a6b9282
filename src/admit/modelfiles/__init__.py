"""The model files admit ships, all in this one package and all found one way: :func:`path`.

| file | read by |
|---|---|
| ``setwise.json`` | the ``setwise`` pruner's trees and cuts, for float32 MiniLM vectors (``...setwise_model.model``) |
| ``setwise_int8.json`` | the same fit on the int8 encoder's vectors (``all-MiniLM-L6-v2-int8-sq``), read for them |
| ``answerability.json`` | the "is it answered" models (``admit.answerability``) |
| ``cross.npz``, ``cross_fit_log.json`` | the ``cross`` reranker's joint layers and the log of their fit |
| ``injection_model.npz`` | the learned injection detector (``admit.security.learned``) |
| ``minilm_int8_calibration.json`` | the int8 MiniLM graph's smoothing (``admit.backends.embedders._onnx_bert``) |

The fit scripts under ``scripts/`` write them here; nothing else does.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["path"]


def path(name: str) -> Path:
    """The file ``name`` shipped in this package, as a path on disk (a wheel is installed unzipped)."""
    ref = resources.files(__name__).joinpath(name)
    with resources.as_file(ref) as on_disk:
        return Path(on_disk)
