"""A cold async call loads the model without full garbage collections (issue 48, item 5).

In a process that imported torch, each full (generation-2) collection a model load triggers walks torch's
whole heap holding the GIL: the event loop stalls. The adapters' async calls load the model first through
``AdmitFilter.warm_up_quietly``; these tests count full collections with ``gc.callbacks`` (no clock).
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from admit.adapters._core import AdmitFilter
from admit.prune.top_n import TopNPruner


class HeavyPruner(TopNPruner):
    """top_n whose model load allocates as a real one does: many long-lived container objects."""

    def __init__(self) -> None:
        super().__init__()
        self.model: list[Any] | None = None

    def warm_up(self) -> None:
        if self.model is None:
            self.model = [[i] for i in range(600_000)]

    def prune(self, *args: Any, **kwargs: Any) -> Any:
        self.warm_up()  # loaded on first use when nobody warmed it
        return super().prune(*args, **kwargs)


def _full_collections(call: Any) -> int:
    full = [0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            full[0] += 1

    gc.collect()
    gc.callbacks.append(on_gc)
    try:
        call()
    finally:
        gc.callbacks.remove(on_gc)
    return full[0]


@pytest.fixture
def python_gc_thresholds() -> Any:
    """Python's own collection thresholds for the test (a service started in this process earlier in the run
    may have spaced its full collections: ``admit.service.state._freeze_heap``), the process's back after."""
    kept = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*kept)


def test_a_load_triggers_full_collections_unless_loaded_quietly(python_gc_thresholds: Any) -> None:
    thresholds = gc.get_threshold()
    loud = AdmitFilter(pruner=HeavyPruner())
    assert _full_collections(loud.warm_up) > 0  # what the stall comes from (this is no fake effect)
    quiet = AdmitFilter(pruner=HeavyPruner())
    assert not quiet.is_warm
    assert _full_collections(quiet.warm_up_quietly) == 0
    assert quiet.is_warm and gc.get_threshold() == thresholds
    before = gc.get_freeze_count()
    quiet.warm_up_quietly()  # warm: nothing frozen, nothing loaded again
    assert gc.get_freeze_count() == before


def _haystack(f: AdmitFilter) -> Any:
    pytest.importorskip("haystack")
    from haystack import Document

    from admit.adapters.haystack import AdmitPruner

    comp = AdmitPruner(admit_filter=f)
    return lambda: asyncio.run(comp.run_async("which port?", [Document(content="the server listens on port 80")]))


def _langchain(f: AdmitFilter) -> Any:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document

    from admit.adapters.langchain import AdmitCompressor

    comp = AdmitCompressor(filter=f)
    return lambda: asyncio.run(comp.acompress_documents([Document(page_content="port 80")], "which port?"))


def _llamaindex(f: AdmitFilter) -> Any:
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from admit.adapters.llamaindex import AdmitNodePostprocessor

    comp = AdmitNodePostprocessor(filter=f)
    nodes = [NodeWithScore(node=TextNode(text="the server listens on port 80"))]
    return lambda: asyncio.run(comp._apostprocess_nodes(nodes, QueryBundle(query_str="which port?")))


@pytest.mark.parametrize("make", [_haystack, _langchain, _llamaindex])
def test_a_cold_async_call_in_each_adapter_loads_without_full_collections(make: Any) -> None:
    call = make(AdmitFilter(pruner=HeavyPruner()))
    assert _full_collections(call) == 0


def test_building_a_filter_that_reads_minilm_imports_its_compiled_libraries() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from admit.adapters._core import AdmitFilter; before = 'tokenizers' in sys.modules; "
        "AdmitFilter(strategy='top_n'); top_n = 'tokenizers' in sys.modules; AdmitFilter(); "
        "print(before, top_n, 'tokenizers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "True"]  # loaded when the filter is built, not in the first async call
