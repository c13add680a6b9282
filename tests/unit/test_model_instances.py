"""No process globals for models: the MiniLM encoder, model folder and threads are held by the embedder instance
(``minilm:ENCODER``, :class:`~admit.backends.embedders.defaults.EncoderConfig`), two pipelines in one process each
keep theirs, and an evaluation's worker gets the parent's configuration with the work
(:class:`~admit.eval.engine.RunSpec`), not from the process it starts in, and sets nothing process-wide."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from admit import Pipeline
from admit.backends.embedders import resolve_embedder
from admit.backends.embedders.defaults import EncoderConfig, configure_minilm, minilm_defaults
from admit.backends.embedders.minilm import MissingModelError
from admit.backends.embedders.shared import shared_embedder
from admit.errors import ConfigError
from admit.eval.engine import RunSpec, Task, run_tasks, worker_spec


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
    assert spec.minilm == EncoderConfig(encoder="numpy", path=tmp_path)
    # named on the options (what `admit eval` hands on from its root options), the process's fallback is not read
    mine = EncoderConfig(encoder="onnx-int8", threads=1)
    with pytest.raises(KeyError):
        run_eval([record], [Config(strategy="top_n")], EvalOptions(reranker="bm25", minilm=mine), engine=engine)
    assert engine.specs[-1].minilm == mine


def test_the_model_folder_and_threads_are_the_instances(tmp_path: Any) -> None:
    from admit.backends.embedders.minilm import MiniLMEmbedder

    mine = EncoderConfig(path=tmp_path, threads=3, encoder="numpy")
    emb = MiniLMEmbedder(config=mine)
    assert (emb.config, emb.threads, emb.encoder) == (mine, 3, "numpy")
    assert MiniLMEmbedder(config=mine, threads=1, encoder="onnx").threads == 1  # an argument wins
    with pytest.raises(MissingModelError, match=f"{tmp_path} has no model"):
        emb.warm_up()  # the instance's folder, not the package's
    assert minilm_defaults() == EncoderConfig()  # nothing process-wide was set
    other: Any = resolve_embedder("minilm:numpy")
    assert other.config == EncoderConfig()
    assert other.embed(["the signing key"]).shape == (1, 384)  # the package's folder, beside the broken one
    # one shared embedder per name and configuration
    assert shared_embedder("minilm:numpy", mine) is shared_embedder("minilm:numpy", mine)
    assert shared_embedder("minilm:numpy", mine) is not shared_embedder("minilm:numpy")
    shared: Any = shared_embedder("minilm:numpy", mine)
    assert shared.inner.config == mine
    assert getattr(resolve_embedder("fake:8", config=mine), "dim", 0) == 8  # an embedder that takes none


def test_a_bad_configuration_is_refused_when_made() -> None:
    with pytest.raises(ValueError, match="threads must be a whole number >= 1, got 0"):
        EncoderConfig(threads=0)
    with pytest.raises(ValueError, match="unknown MiniLM encoder 'gpu'"):
        EncoderConfig(encoder="gpu")
    assert EncoderConfig.from_json({"path": "/m", "threads": 2, "encoder": "ONNX"}) == EncoderConfig(
        path=Path("/m"), threads=2, encoder="onnx"
    )


def test_an_evaluation_worker_builds_its_embedder_from_the_work_and_sets_no_global(tmp_path: Any) -> None:
    from admit.eval.dataset import PruneInput
    from admit.types import Chunk

    spec = worker_spec(RunSpec(reranker="dense", minilm=EncoderConfig(path=tmp_path, encoder="numpy")), threads=2)
    assert spec.minilm == EncoderConfig(path=tmp_path, threads=2, encoder="numpy")
    assert RunSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec  # what a worker process receives
    chunk = Chunk(id="c1", source_id="s", text="the signing key rotates daily")
    task = Task(input=PruneInput(id="r1", question="How do I rotate the key?", candidates=(chunk,)))
    with pytest.raises(MissingModelError, match=f"{tmp_path} has no model"):  # the work's folder is read
        run_tasks([task], spec)
    assert minilm_defaults() == EncoderConfig()


def test_the_root_options_are_one_configuration_on_the_commands_context(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from admit.cli import main
    from admit.cli._common import minilm_config

    seen: list[EncoderConfig | None] = []

    @main.command("_probe_config", hidden=True)
    def probe() -> None:
        seen.append(minilm_config())

    try:
        args = ["--minilm-dir", str(tmp_path), "--embed-threads", "2", "--encoder", "NumPy", "_probe_config"]
        assert CliRunner().invoke(main, args, standalone_mode=False).exit_code == 0
        assert seen[-1] == EncoderConfig(path=tmp_path, threads=2, encoder="numpy")
        assert CliRunner().invoke(main, ["_probe_config"], standalone_mode=False).exit_code == 0
        assert seen[-1] is None
    finally:
        main.commands.pop("_probe_config")


def test_two_pipelines_with_different_model_folders_keep_theirs(tmp_path: Path) -> None:
    from admit.kb import KnowledgeBase

    broken = EncoderConfig(path=tmp_path, encoder="numpy")
    mine = Pipeline(reranker="dense", minilm=broken)
    plain = Pipeline(reranker="dense")
    emb: Any = mine.term_encoder("setwise")
    assert emb.inner.config == broken and getattr(mine.reranker, "embedder", None) is shared_embedder("minilm", broken)
    other: Any = plain.term_encoder("setwise")
    assert other.inner.config == EncoderConfig() and other is not emb
    with pytest.raises(MissingModelError, match=f"{tmp_path} has no model"):
        emb.embed(["which folder?"])  # this pipeline's folder
    assert other.embed(["which folder?"]).shape == (1, 384)  # the other's: the package's, in the same process
    assert minilm_defaults() == EncoderConfig()
    # a strategy that reads no embedder gets none, and a reranker that reads none makes none
    lean = Pipeline(minilm=broken)
    assert lean.term_encoder("top_n") is None and lean.pruner_for("top_n") is not None
    assert not hasattr(lean.reranker, "embedder")
    setwise: Any = mine.pruner_for("setwise")
    assert setwise.scorer.embedder is shared_embedder("minilm", broken)
    # an embedder instance given stays the pipeline's; the knowledge base makes its own by name with its config
    given = resolve_embedder("fake:8")
    assert Pipeline(minilm=broken, pruner_options={"embedder": given}).term_encoder("setwise") is given
    kb: Any = KnowledgeBase(minilm=EncoderConfig(encoder="numpy", threads=1))
    assert (kb.embedder.encoder, kb.embedder.threads) == ("numpy", 1)


def test_a_ray_ingest_worker_gets_the_knowledge_bases_minilm_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    import admit.kb
    import admit.kb.ray_ingest as ray_ingest
    from admit.kb import KnowledgeBase

    mine = EncoderConfig(encoder="numpy", threads=1)
    kb = KnowledgeBase(embedder="minilm", minilm=mine)
    handed: dict[str, Any] = {}

    class _Writer:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            handed.update(kwargs)
            raise RuntimeError("captured")

    monkeypatch.setattr(ray_ingest, "RayWriter", _Writer)
    with pytest.raises(RuntimeError, match="captured"):
        ray_ingest.ingest_with_ray(kb, [])
    assert handed["minilm"] == mine
    # the actor, in its own bare process, builds its embedder from what it is handed
    monkeypatch.setattr(admit.kb, "open_store", lambda url, dim: object())
    worker: Any = ray_ingest._SourceWorker("postgresql://x", 384, "minilm", {}, mine.to_json())
    assert worker.embedder.config == mine and minilm_defaults() == EncoderConfig()


@pytest.mark.parametrize("command", ["pack", "prune", "prune-dense", "ingest"])
def test_the_root_options_reach_each_commands_models_and_set_no_global(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from admit.cli import main

    root = Path(__file__).resolve().parents[2]
    empty = tmp_path / "empty-model"
    empty.mkdir()
    records = tmp_path / "in.jsonl"
    chunk = {"id": "c1", "source_id": "s", "text": "The signing key rotates every 90 days."}
    records.write_text(json.dumps({"id": "q1", "question": "How often?", "candidates": [chunk]}) + "\n")
    args = {
        "pack": ["pack", str(root / "examples" / "request.json"), "--prune", "setwise"],
        "prune": ["prune", "--input", str(records), "--output", str(tmp_path / "out.jsonl"), "--reranker", "bm25"],
        "prune-dense": [
            *("prune", "--input", str(records), "--output", str(tmp_path / "o.jsonl")),
            *("--prune", "top_n", "--reranker", "dense"),
        ],
        "ingest": ["ingest", str(root / "examples" / "docs"), "--kb", str(tmp_path / "kb.db"), "--access", "tenant:t"],
    }[command]
    monkeypatch.delenv("ADMIT_MINILM_DIR", raising=False)
    res = CliRunner().invoke(main, ["--minilm-dir", str(empty), *args])
    # a failed pruner is a recorded fallback (pack answers, naming the error); the others stop on it
    assert (res.exit_code == 0) == (command == "pack") and f"{empty} has no model.safetensors" in res.output
    assert minilm_defaults() == EncoderConfig()  # the command's models took it; the process holds nothing


def _in_a_worker(state: Any) -> tuple[int, Any, Any, Any, Any, str]:
    """Run in a service worker process: what its pipeline builds by name, and what the process holds."""
    import os

    emb: Any = state.pipeline.term_encoder("setwise")
    reranker_emb: Any = state.pipeline.reranker.embedder
    try:
        emb.embed(["which folder?"])
        error = ""
    except MissingModelError as exc:
        error = str(exc)
    return os.getpid(), state.settings.minilm, emb.inner.config, reranker_emb is emb, minilm_defaults(), error


def test_a_service_worker_process_builds_its_embedders_from_the_settings(tmp_path: Path) -> None:
    import asyncio
    import functools
    import os

    from admit.service.config import ServiceSettings
    from admit.service.procs import ProcessPool
    from admit.service.state import build_state

    empty = EncoderConfig(path=tmp_path, encoder="numpy", threads=1)
    state = build_state(ServiceSettings(minilm=empty, reranker="dense"))
    assert state.pipeline.minilm == empty  # the settings' configuration, held by the service's pipeline
    pool = ProcessPool(state, 1, reserve=1)

    async def main() -> Any:
        return await pool.run("t", functools.partial(_in_a_worker, state))

    try:
        pid, settings_minilm, built, shared, fallback, error = asyncio.run(main())
    finally:
        pool.close()
    assert pid != os.getpid()  # it ran in a forked worker
    assert settings_minilm == empty and built == empty and shared  # the reranker and the pruner share one
    assert f"{tmp_path} has no model.safetensors" in error  # the worker read the settings' (empty) folder
    assert fallback == EncoderConfig() and minilm_defaults() == EncoderConfig()  # no process global, anywhere


def test_the_service_settings_hold_an_encoder_config_only(tmp_path: Path) -> None:
    from admit.service.config import ServiceSettings, settings_from_dict

    with pytest.raises(ConfigError, match="--minilm-dir"):
        settings_from_dict({"service": {"minilm": {"path": str(tmp_path)}}})
    with pytest.raises(ValueError, match="EncoderConfig"):
        ServiceSettings(minilm={"path": str(tmp_path)})
    assert ServiceSettings().minilm is None and "minilm" not in ServiceSettings().model_dump()
    # the one cross model the service's pipelines share reads its bottom layers from the settings' folder too
    cross = ServiceSettings(minilm=EncoderConfig(path=tmp_path), setwise_cross=True).pruner_switches()["cross"]
    assert cross.minilm_path == tmp_path


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_the_service_commands_put_the_root_options_in_the_settings_and_set_no_global(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    import admit.cli.serve as serve_cli
    import admit.service.mcp as service_mcp
    import admit.service.work as service_work
    from admit.cli import main

    seen: dict[str, Any] = {}
    if command == "serve":
        import uvicorn

        def run(server: Any) -> None:
            seen["state"] = server.config.app.state.admit

        monkeypatch.setattr(uvicorn.Server, "run", run)
        monkeypatch.setattr(service_work, "responsive_interpreter", lambda: None)
    else:

        def run_mcp(settings: Any, **kwargs: Any) -> None:
            seen["state"] = service_mcp.build_state(settings, kb=kwargs.get("kb"))

        monkeypatch.setattr(service_mcp, "run_mcp", run_mcp)
    monkeypatch.setattr(serve_cli, "terminal_logging", lambda *a: None)
    for var in ("ADMIT_MINILM_DIR", "ADMIT_EMBED_THREADS", "ADMIT_TORCH_THREADS", "ADMIT_ENCODER"):
        monkeypatch.delenv(var, raising=False)
    args = ["--minilm-dir", str(tmp_path), "--embed-threads", "2", command, "--port", "0"]
    res = CliRunner().invoke(main, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    mine = EncoderConfig(path=tmp_path, threads=2)
    state = seen["state"]
    assert state.settings.minilm == mine and state.pipeline.minilm == mine
    assert state.pipeline.term_encoder("setwise").inner.config == mine
    assert minilm_defaults() == EncoderConfig()  # the service's startup set nothing process-wide


def test_the_torch_embedder_takes_its_configuration_like_minilm(tmp_path: Path) -> None:
    from admit.backends.embedders.minilm_torch import MiniLMTorchEmbedder

    mine = EncoderConfig(path=tmp_path, threads=3)
    emb: Any = resolve_embedder("minilm-torch", config=mine)
    assert isinstance(emb, MiniLMTorchEmbedder) and (emb.config, emb.threads) == (mine, 3)
    assert MiniLMTorchEmbedder(1, config=mine).threads == 1  # an argument wins
    configure_minilm(threads=2)  # the fallback, read only by one made without a configuration
    assert MiniLMTorchEmbedder().threads == 2 and MiniLMTorchEmbedder(config=mine).threads == 3


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"threads": -2}, "threads must be >= 1, got -2"),
        ({"threads": 0}, "threads must be >= 1, got 0"),
        ({"batch_size": 0}, "batch_size must be >= 1, got 0"),
        ({"max_seq_length": 0}, r"max_seq_length must be 3\.\.512"),
    ],
)
def test_the_torch_embedder_refuses_the_sizes_the_numpy_one_refuses(given: dict[str, int], message: str) -> None:
    """The torch MiniLM took ``threads=-2`` or ``batch_size=0`` and failed in torch on the first call (a builtin
    error); it now makes the numpy one's checks (one helper): admit's InvalidValue, a ValueError too."""
    from admit.backends.embedders.minilm import MiniLMEmbedder
    from admit.backends.embedders.minilm_torch import MiniLMTorchEmbedder
    from admit.errors import InvalidValue

    for cls in (MiniLMEmbedder, MiniLMTorchEmbedder):
        with pytest.raises(InvalidValue, match=message):
            cls(**given)  # type: ignore[arg-type]
