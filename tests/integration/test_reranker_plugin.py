"""A reranker from a third-party package, installed with pip into a virtual environment and found through the
``admit.rerankers`` entry point only.

The package is ``tests/data/plugin_reranker`` (``reverse``: the input order, reversed, so its ordering cannot be
mistaken for BM25's). It is built and installed offline (``pip install --no-index --no-build-isolation
--target``) into a folder that only the test's own processes put on ``PYTHONPATH``; admit itself comes from this
checkout. Real
processes: ``admit prune``, ``admit eval`` and ``admit serve`` on a loopback port (``POST /v1/prune``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration._live import free_port, serve

pytestmark = pytest.mark.integration

PACKAGE = Path(__file__).resolve().parents[1] / "data" / "plugin_reranker"
SRC = Path(__file__).resolve().parents[2] / "src"


def _record(rid: str, question: str, texts: list[str]) -> dict[str, object]:
    """A labelled record whose first candidate (``a``) is the needed one: BM25 ranks it first, ``reverse`` last."""
    return {
        "id": rid,
        "question": question,
        "candidates": [{"id": "abc"[i], "text": t} for i, t in enumerate(texts)],
        "required": ["a"],
    }


RECORDS = [
    _record("q1", "How long is the retention of audit records?", ["Audit records are kept 90 days.", "Lunch at noon."]),
    _record(
        "q2",
        "Which certificate expired?",
        ["The upstream certificate expired yesterday.", "The cafeteria opens at eight.", "A new logo."],
    ),
]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment that sees the ``admit-reverse`` package; the interpreter to run under ``ADMIT_PYTHON``.

    pip installs the package into a folder of its own (``--target``) with this interpreter's own build tools
    (``--no-build-isolation``: the ``setuptools`` of the ``test`` extra, in whatever environment runs the tests,
    a new user's venv included); only a process given that folder on ``PYTHONPATH`` sees the plug-in.
    """
    tmp = tmp_path_factory.mktemp("plugin_reranker")
    target = tmp / "site"
    src = tmp / "package"  # built from a copy: the build leaves build/ and *.egg-info beside the sources
    shutil.copytree(PACKAGE, src)
    pip = [sys.executable, "-m", "pip", "install", "--no-index", "--no-build-isolation", "--no-deps", "-q"]
    installed = subprocess.run(
        [*pip, "--target", str(target), str(src)], capture_output=True, text=True, check=False, timeout=300
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert (target / "admit_reverse").is_dir()
    path = os.pathsep.join(p for p in (str(target), str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1", "ADMIT_PYTHON": sys.executable}


def _admit(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [env["ADMIT_PYTHON"], "-c", "from admit.cli import main; main()", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _records(path: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), "utf-8")
    return path


def test_the_plugin_is_installed_outside_this_interpreter(venv: dict[str, str]) -> None:
    from admit.backends.rerankers import RERANKERS

    assert "reverse" not in RERANKERS.names()  # only the venv has it
    code = "from admit.backends.rerankers import RERANKERS; print(RERANKERS.names())"
    out = subprocess.run([venv["ADMIT_PYTHON"], "-c", code], env=venv, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "('retriever', 'bm25', 'dense', 'hybrid', 'cross', 'reverse')"


def test_admit_prune_ranks_with_the_plugin(venv: dict[str, str], tmp_path: Path) -> None:
    src = _records(tmp_path / "in.jsonl")
    args = ["prune", "--input", str(src), "--output", "-", "--prune", "top_n", "--set", "n=1"]
    ours = _admit(venv, *args, "--reranker", "reverse")
    assert ours.returncode == 0, ours.stderr
    rows = [json.loads(line) for line in ours.stdout.splitlines()]
    assert [r["kept_ids"] for r in rows] == [["b"], ["c"]]  # the last candidate ranks first
    assert [d["rank"] for d in rows[1]["decisions"]] == [2, 1, 0]
    bm25 = _admit(venv, *args, "--reranker", "bm25")
    assert [json.loads(line)["kept_ids"] for line in bm25.stdout.splitlines()] == [["a"], ["a"]]
    # the help lists it with its summary, and a misspelt name lists it among the known ones
    assert "reverse (the input order, reversed)" in " ".join(_admit(venv, "prune", "--help").stdout.split())
    bad = _admit(venv, *args, "--reranker", "revrse")
    assert bad.returncode == 2 and "known: retriever, bm25, dense, hybrid, cross, reverse" in bad.stderr


def test_admit_eval_scores_with_the_plugin_and_keys_its_cache_by_it(venv: dict[str, str], tmp_path: Path) -> None:
    data = _records(tmp_path / "dev.jsonl")
    args = ["eval", "--data", str(data), "--prune", "top_n", "--sweep", "n=1", "--out", str(tmp_path / "eval")]
    args += ["--cache", str(tmp_path / "cache"), "--no-progress", "--json"]
    ours = _admit(venv, *args, "--reranker", "reverse")
    assert ours.returncode == 0, ours.stderr
    got = json.loads(ours.stdout)
    assert got["reranker"] == "reverse"
    assert got["configs"]["top_n n=1"]["retained_recall"] == 0.0  # the needed chunk ranks last
    bm25 = json.loads(_admit(venv, *args, "--reranker", "bm25").stdout)
    assert bm25["configs"]["top_n n=1"]["retained_recall"] == 1.0  # another identity: nothing served from cache
    code = "from admit.eval.sweep import reranker_identity; print(reranker_identity('reverse', 'minilm'))"
    ident = subprocess.run([venv["ADMIT_PYTHON"], "-c", code], env=venv, capture_output=True, text=True, check=True)
    name, version, digest = ident.stdout.strip().split(":")
    assert (name, version, len(digest)) == ("reverse", "7", 16)  # its spec's version and its module's source


@pytest.fixture(scope="module")
def served(venv: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cfg = tmp_path_factory.mktemp("serve") / "admit.toml"
    cfg.write_text(
        '[service]\nreranker = "reverse"\nprune_strategy = "top_n"\n\n'
        '[service.keys.acme]\nkey_env = "ADMIT_PLUGIN_KEY"\ntenant = "acme"\n',
        "utf-8",
    )
    env = {**venv, "ADMIT_PLUGIN_KEY": "plugin-key"}
    with serve(["--config", str(cfg)], port=free_port(), extra_env=env, python=venv["ADMIT_PYTHON"]) as url:
        yield url


def test_v1_prune_ranks_with_the_plugin(served: str) -> None:
    rec = RECORDS[1]
    asked = {"question": rec["question"], "candidates": rec["candidates"], "params": {"n": 1}}
    got = httpx.post(f"{served}/v1/prune", json=asked, headers={"X-API-Key": "plugin-key"}, timeout=120)
    assert got.status_code == 200, got.text
    ranks = {d["id"]: d["rank"] for d in got.json()["decisions"]}
    assert (got.json()["kept_ids"], ranks) == (["c"], {"a": 2, "b": 1, "c": 0})  # the service's reranker: reverse


def test_the_catalogue_unit_tests_pass_with_an_outside_reranker_installed(venv: dict[str, str]) -> None:
    """The catalogue tests compare against the built-ins, not a literal list of every installed name."""
    here = Path(__file__).resolve().parents[1] / "unit" / "test_backend_catalogues.py"
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(here)],
        env=venv, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
