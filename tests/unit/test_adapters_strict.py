"""Issue 49's adapters paragraph, bullet by bullet, on the three adapters (a framework user's re-test): the verdict
typed as its three words (a ``TypedDict`` for Haystack's ``run()``), a missing or wrong query and a bad setting one
:class:`~admit.errors.ConfigError` line naming the fix (also a field pydantic itself refuses, and LlamaIndex's
query handed over as a string), an unknown name refused on copy. The docs' note ("the chunks above it together
hold the answer with p=...") is ``tests/unit/test_agreement_notes.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, get_args, get_origin, get_type_hints, is_typeddict

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("haystack")
pytest.importorskip("llama_index.core")

from haystack import Document as HaystackDocument
from langchain_core.documents import Document
from llama_index.core.schema import NodeWithScore, TextNode

from admit.adapters._core import Decision, FilterRun
from admit.adapters.haystack import AdmitPruner, PrunerOutput
from admit.adapters.langchain import AdmitCompressor
from admit.adapters.llamaindex import AdmitNodePostprocessor
from admit.errors import ConfigError

STATES = ("answered", "unsure", "not_answered")
LC = [Document(page_content="The port is 7420.")]
HS = [HaystackDocument(content="The port is 7420.")]
LI = [NodeWithScore(node=TextNode(text="The port is 7420."))]


def _one_line(call: Callable[[], Any], *named: str) -> str:
    with pytest.raises(ConfigError) as info:
        call()
    text = str(info.value)
    assert "\n" not in text and all(n in text for n in named), text
    return text


def test_the_verdict_is_typed_as_its_three_words_on_every_adapter() -> None:
    assert is_typeddict(PrunerOutput) and get_type_hints(AdmitPruner.run)["return"] is PrunerOutput
    for owner in (Decision, FilterRun, PrunerOutput):
        hint = get_type_hints(owner)["answer_state"]
        state = next(a for a in (hint, *get_args(hint)) if get_origin(a) is Literal)
        assert get_args(state) == STATES and set(get_args(hint)) <= {state, *get_args(state), type(None)}, hint
    assert get_type_hints(Decision)["answerable"] == get_type_hints(PrunerOutput)["answerable"] == bool | None
    assert get_type_hints(FilterRun.answerable.fget)["return"] == bool | None


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda: AdmitCompressor().compress_documents(LC, None), "query"),
        (lambda: AdmitCompressor().decide(LC, 3), "query"),
        (lambda: AdmitPruner().run(query=None, documents=HS), "query"),
        (lambda: AdmitNodePostprocessor().postprocess_nodes(LI), "query_str"),
        (lambda: AdmitNodePostprocessor().postprocess_nodes(LI, "port?"), "query_str="),
    ],
    ids=["langchain-none", "langchain-int", "haystack-none", "llamaindex-none", "llamaindex-string-bundle"],
)
def test_a_missing_or_wrong_query_is_one_config_error_line(call: Callable[[], Any], named: str) -> None:
    _one_line(call, named)


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda: AdmitCompressor(threshold="high"), "threshold"),
        (lambda: AdmitNodePostprocessor(threshold="high"), "threshold"),
        (lambda: AdmitPruner(threshold="high"), "threshold"),
        (lambda: setattr(AdmitCompressor(), "threshold", "high"), "threshold"),
        (lambda: AdmitCompressor(title_key=None), "title_key"),
        (lambda: AdmitNodePostprocessor(title_key=None), "title_key"),
        (lambda: AdmitPruner(title_key=None), "title_key"),
        (lambda: AdmitCompressor(score_key=3), "score_key"),
        (lambda: setattr(AdmitCompressor(), "title_key", None), "title_key"),
        (lambda: AdmitNodePostprocessor.model_validate({"title_key": ["t"]}), "title_key"),
    ],
    ids=[
        "langchain-threshold",
        "llamaindex-threshold",
        "haystack-threshold",
        "langchain-assigned-threshold",
        "langchain-title-key",
        "llamaindex-title-key",
        "haystack-title-key",
        "langchain-score-key",
        "langchain-assigned-title-key",
        "llamaindex-loaded-title-key",
    ],
)
def test_a_bad_setting_is_one_config_error_line_naming_it(call: Callable[[], Any], named: str) -> None:
    _one_line(call, named)


def test_an_unknown_name_is_refused_on_copy_and_on_load() -> None:
    for made in (AdmitCompressor(), AdmitNodePostprocessor()):
        _one_line(lambda m=made: m.model_copy(update={"topk": 3}), "topk", "top_k")
        assert made.model_copy(update={"top_k": 3}).top_k == 3
    _one_line(lambda: AdmitPruner(topk=3), "topk", "top_k")
    saved = AdmitPruner().to_dict()
    saved["init_parameters"]["topk"] = 3
    _one_line(lambda: AdmitPruner.from_dict(saved), "topk", "top_k")
