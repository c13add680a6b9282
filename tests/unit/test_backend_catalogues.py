"""The reranker, embedder and LLM catalogues: built-ins by name, plug-ins through their entry-point groups, and
the facts the faces read from the specs (help, eval identity, fallbacks)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from admit.adapters._core import AdmitFilter
from admit.backends.embedders import EMBEDDERS, resolve_embedder
from admit.backends.llms import FakeLLM, resolve_llm
from admit.backends.rerankers import RERANKERS, RerankerSpec, resolve_reranker
from admit.backends.rerankers.catalogue import BUILTIN_RERANKERS
from admit.errors import ConfigError
from admit.eval.sweep import effective_reranker, reranker_identity
from admit.types import Chunk
from tests.unit._plugin_site import plugin_site

PLUGIN = """
from admit.backends.rerankers import RerankerSpec


class Longest:
    name = "longest"

    def score(self, question, chunks):
        return [float(len(c.text)) for c in chunks]


SPEC = RerankerSpec(name="longest", build=Longest, summary="longer is better", version="2")
SHADOW = RerankerSpec(name="bm25", build=Longest)
MISNAMED = RerankerSpec(name="other", build=Longest)
"""

CHUNKS = [Chunk(id="a", source_id="a", text="port 80"), Chunk(id="b", source_id="b", text="the port is 8080 here")]


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    entry_points = (
        "[admit.rerankers]\nlongest = reranker_plugin:SPEC\nbm25 = reranker_plugin:SHADOW\n"
        "minilm = reranker_plugin:SPEC\nmisnamed = reranker_plugin:MISNAMED\ngone = no_such_module_here:SPEC\n"
    )
    plugin_site(tmp_path, monkeypatch, "reranker_plugin", PLUGIN, entry_points)
    log = logging.getLogger("admit._plugins")
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    h = Keep(logging.WARNING)
    saved = (log.disabled, log.level)
    log.disabled, log.level = False, logging.WARNING
    log.addHandler(h)
    RERANKERS.reset()
    try:
        yield lines
    finally:
        log.removeHandler(h)
        log.disabled, log.level = saved
        RERANKERS.reset()


def test_the_builtins_load_in_order_and_minilm_is_dense() -> None:
    # the built-ins come first, in order; an outside plug-in installed in this environment may follow them
    assert tuple(BUILTIN_RERANKERS) == ("retriever", "bm25", "dense", "hybrid", "cross")
    assert RERANKERS.names()[: len(BUILTIN_RERANKERS)] == tuple(BUILTIN_RERANKERS)
    assert all(RERANKERS.get(n).name == n and RERANKERS.get(n).summary for n in BUILTIN_RERANKERS)
    assert RERANKERS.get("minilm") is RERANKERS.get("dense")
    assert [n for n in BUILTIN_RERANKERS if RERANKERS.get(n).needs_embedder] == ["dense", "hybrid"]
    assert resolve_reranker(None).name == "retriever"
    assert resolve_reranker("hybrid", embedder="fake:8").name == "hybrid:fake-8"


def test_an_unknown_name_is_one_config_error_listing_the_known_ones() -> None:
    known = f"known: {', '.join(RERANKERS.names())}."  # the built-ins and any plug-in installed here
    with pytest.raises(ConfigError, match=re.escape(f"Unknown reranker 'bm52'; {known}")):
        resolve_reranker("bm52")
    with pytest.raises(ConfigError, match=re.escape(f"Unknown reranker 'bm52'; {known}")):
        AdmitFilter(strategy="top_n", reranker="bm52")
    with pytest.raises(ConfigError, match=re.escape(f"Unknown reranker 'bm52'; {known}")):
        effective_reranker("bm52")
    with pytest.raises(ConfigError, match="Unknown embedder 'nope'; known: minilm, e5, minilm-torch, fake"):
        resolve_embedder("nope")
    with pytest.raises(
        ConfigError, match=r"Unknown LLM spec 'gpt-4o'; use openai:MODEL, .*llama:/path/model\.gguf, fake"
    ):
        resolve_llm("gpt-4o")


def test_a_plugin_reranker_is_found_and_ranks(plugins: list[str]) -> None:
    assert RERANKERS.names()[:5] == tuple(BUILTIN_RERANKERS)
    assert {"gone", "longest", "misnamed"} <= set(RERANKERS.names()[5:])  # besides any plug-in installed here
    assert resolve_reranker("longest").score("port", CHUNKS) == [7.0, 21.0]
    assert "longest (longer is better)" in RERANKERS.help()
    assert AdmitFilter(strategy="top_n", reranker="longest").reranker == "longest"
    # its identity: name, version and its module's source (no embedder: it reads none)
    name, version, digest = reranker_identity("longest", "minilm").split(":")
    assert (name, version, len(digest)) == ("longest", "2", 16)
    assert effective_reranker("longest") == ("longest", None)


def test_a_plugin_cannot_take_a_builtin_or_an_alias_and_a_broken_one_is_left_out(plugins: list[str]) -> None:
    assert RERANKERS.get("bm25").build.__name__ == "BM25Reranker"  # the built-in stays
    assert RERANKERS.get("minilm").name == "dense"
    taken = [w for w in plugins if "the name is taken" in w]
    assert len(taken) == 2 and any("'bm25'" in w for w in taken) and any("'minilm'" in w for w in taken)
    assert RERANKERS.find("misnamed") is None and RERANKERS.find("gone") is None
    text = "\n".join(plugins)
    assert "the spec is named 'other'" in text and "no_such_module_here" in text
    with pytest.raises(ConfigError, match="Reranker 'gone' is not available here"):
        resolve_reranker("gone")


def test_identity_changes_with_the_embedder_only_for_rerankers_that_read_one() -> None:
    assert re.fullmatch(r"dense:minilm:[0-9a-f]{16}", reranker_identity("dense", "minilm"))
    assert reranker_identity("dense", "minilm") != reranker_identity("dense", "fake")
    assert reranker_identity("bm25", "minilm") == reranker_identity("bm25", "fake")
    assert re.fullmatch(r"cross:[0-9a-f]{16}", reranker_identity("cross", "minilm"))
    # the cross model file is part of it: another file, another identity
    spec = RERANKERS.get("cross")
    other = replace(spec, model_files=lambda: (Path(__file__),))
    assert other.identity("minilm", lambda m, f: str(f)) != spec.identity("minilm", lambda m, f: str(f))


def test_a_reranker_that_cannot_run_here_gives_way_to_its_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    dense = RERANKERS.get("dense")
    monkeypatch.setitem(RERANKERS._specs, "dense", replace(dense, missing=lambda: "no MiniLM here"))
    assert effective_reranker("minilm") == ("bm25", "reranker 'minilm' unavailable (no MiniLM here); using bm25")
    assert effective_reranker("bm25") == ("bm25", None)


def test_a_spec_refuses_a_bad_name_or_builder() -> None:
    with pytest.raises(ConfigError, match="a reranker name must be a non-empty word without ':'"):
        RerankerSpec(name="a:b", build=FakeLLM)
    with pytest.raises(ConfigError, match="build must be callable"):
        RerankerSpec(name="x", build="nope")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="give source_modules"):
        RerankerSpec(name="x", build=eval("lambda: None", {"__name__": "__main__"}))


def test_embedder_names_options_and_aliases() -> None:
    assert resolve_embedder("FAKE:8").dim == 8 and resolve_embedder("fake").dim == 64
    assert EMBEDDERS.get("minilm:torch").name == "minilm-torch"
    assert EMBEDDERS.get("Multilingual-E5-Small".lower()).name == "e5"
    with pytest.raises(ConfigError, match=r"dimension must be 1\.\.4096"):
        resolve_embedder("fake:0")
    with pytest.raises(ConfigError, match="embedder 'e5' takes no option"):
        resolve_embedder("e5:big")
    with pytest.raises(ConfigError, match="unknown MiniLM encoder 'big'"):  # minilm's option is its encoder
        resolve_embedder("minilm:big")


def test_llm_schemes() -> None:
    assert isinstance(resolve_llm("fake"), FakeLLM)
    with pytest.raises(ConfigError, match="takes no target"):
        resolve_llm("fake:x")
    with pytest.raises(ConfigError, match="names no target; write openai:MODEL"):
        resolve_llm("openai")


def test_the_adapters_hand_an_embedder_only_to_a_strategy_that_reads_one() -> None:
    from admit.backends.embedders.fake import FakeEmbedder

    emb = FakeEmbedder()
    top = AdmitFilter(strategy="top_n", params={"n": 1}, pruner_options={"embedder": emb})
    top._get_pruner()
    assert top._embedder is None  # top_n's spec does not read one: no vector is checked or seeded for it
    setwise = AdmitFilter(pruner_options={"embedder": emb})
    setwise._get_pruner()
    assert setwise._embedder is emb
