"""No process globals for models: the MiniLM encoder is held by the embedder instance (``minilm:ENCODER``), two
pipelines in one process each keep theirs, and an evaluation's worker gets the parent's choice with the work
(:class:`~admit.eval.engine.RunSpec`), not from the process it starts in."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from admit import Pipeline
from admit.backends.embedders import resolve_embedder
from admit.backends.embedders.defaults import configure_minilm, minilm_defaults
from admit.backends.embedders.shared import shared_embedder
from admit.errors import ConfigError
from admit.eval.engine import RunSpec, Task


@pytest.fixture(autouse=True)
def _built_in_defaults() -> Iterator[None]:
    configure_minilm()
    yield
    configure_minilm()


def _encoder(emb: Any) -> str:
    return str(getattr(emb, "inner", emb).encoder)


def test_the_encoder_is_the_instances() -> None:
    assert _encoder(resolve_embedder("minilm:numpy")) == "numpy"
    assert _encoder(resolve_embedder("minilm:onnx-int8")) == "onnx-int8"
    assert _encoder(resolve_embedder("minilm")) == "auto"
    with pytest.raises(ConfigError, match="encoder"):
        resolve_embedder("minilm:fast")


def test_two_pipelines_with_different_encoders_do_not_affect_each_other() -> None:
    a = Pipeline(pruner_options={"embedder": "minilm:numpy"})
    b = Pipeline(pruner_options={"embedder": "minilm:onnx-int8"})
    ea, eb = a.term_encoder("setwise"), b.term_encoder("setwise")
    assert ea is not None and eb is not None and ea is not eb
    assert (_encoder(ea), _encoder(eb)) == ("numpy", "onnx-int8")
    # a process-wide change made after both exist changes neither, and a pipeline made after it gets its own
    configure_minilm(encoder="onnx-fp32")
    c = Pipeline(pruner_options={"embedder": "minilm"})
    ec = c.term_encoder("setwise")
    assert ec is not None and ec is not shared_embedder("minilm:numpy")
    assert (_encoder(a.term_encoder("setwise")), _encoder(b.term_encoder("setwise"))) == ("numpy", "onnx-int8")
    assert _encoder(ec) == "onnx-fp32"
    configure_minilm()
    assert _encoder(Pipeline(pruner_options={"embedder": "minilm"}).term_encoder("setwise")) == "auto"
    assert _encoder(ec) == "onnx-fp32"
    # the numpy pipeline really encodes (the real model), untouched by the others
    vec = ea.embed(["How do I rotate the signing key?"])
    assert vec.shape == (1, 384) and np.isfinite(vec).all()
    assert getattr(ea, "inner", ea).backend == "numpy"


class _Capture:
    name = "capture"

    def __init__(self) -> None:
        self.specs: list[RunSpec] = []

    def run(self, tasks: Sequence[Task], spec: RunSpec) -> Iterator[list[dict[str, Any]]]:
        self.specs.append(RunSpec.from_json(spec.to_json()))  # what a worker process receives
        return iter(())


def test_an_evaluation_hands_its_workers_the_encoder_with_the_work(tmp_path: Any) -> None:
    from admit.eval.dataset import EvalRecord
    from admit.eval.sweep import Config, EvalOptions, run_eval
    from admit.types import Chunk

    configure_minilm(encoder="numpy", path=tmp_path)
    assert minilm_defaults().encoder == "numpy"
    chunk = Chunk(id="c1", source_id="s", text="t")
    record = EvalRecord(
        id="r1", question="q?", candidates=(chunk,), required=("c1",), source="x", hop_type="", question_type=""
    )
    engine = _Capture()
    with pytest.raises(KeyError):  # the capturing engine computes nothing: the join finds no scores
        run_eval([record], [Config(strategy="top_n")], EvalOptions(reranker="bm25"), engine=engine)
    (spec,) = engine.specs
    assert spec.encoder == "numpy" and spec.minilm_dir == str(tmp_path)
