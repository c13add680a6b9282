"""The pruner contract on every shipped strategy (LLM strategies with the shipped scripted model) and the fake."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from admit.backends.embedders.fake import FakeEmbedder
from admit.backends.llms.fake import FakeLLM
from admit.prune import Pruner, PrunerResources, resolve_pruner
from admit.prune.catalogue import BUILTIN_STRATEGIES
from admit.prune.fake import FakeGrader
from admit.testing.pruner_contract import PrunerContract
from admit.types import Message


def _grades(messages: Sequence[Message], schema: Mapping[str, Any] | None) -> str:
    """Grade 5, 4, 2, 1, ... by the order of the ids the prompt's schema names."""
    props = dict((schema or {}).get("properties", {}))
    if "keep" in props or "add" in props:
        key = "keep" if "keep" in props else "add"
        ids = props[key]["items"]["enum"]
        return json.dumps({key: ids[:1]})
    return json.dumps({sid: [5, 4, 2, 1][i % 4] for i, sid in enumerate(props)})


class TestTopN(PrunerContract):
    params = {"n": 2}  # noqa: RUF012

    @pytest.fixture
    def pruner(self) -> Pruner:
        return resolve_pruner("top_n")


class TestScoreThreshold(PrunerContract):
    params = {"min_score": 0.5, "relative": True}  # noqa: RUF012

    @pytest.fixture
    def pruner(self) -> Pruner:
        return resolve_pruner("score_threshold")


class TestSetwise(PrunerContract):
    @pytest.fixture
    def pruner(self) -> Pruner:
        return resolve_pruner("setwise", PrunerResources(embedder=FakeEmbedder()))


class TestGraded(PrunerContract):
    @pytest.fixture
    def pruner(self) -> Pruner:
        return resolve_pruner("graded", PrunerResources(llm=FakeLLM(_grades)))


class TestSelect(PrunerContract):
    @pytest.fixture
    def pruner(self) -> Pruner:
        return resolve_pruner("select", PrunerResources(llm=FakeLLM(_grades)))


class TestBudgetSelect(PrunerContract):
    params = {"m": 1, "n": 1}  # noqa: RUF012

    @pytest.fixture
    def pruner(self) -> Pruner:
        return resolve_pruner("budget_select", PrunerResources(llm=FakeLLM(_grades)))


class TestFakeGrader(PrunerContract):
    @pytest.fixture
    def pruner(self) -> Pruner:
        return FakeGrader(fn=lambda q, c: 5 if "audit" in c.text.lower() else 1)


def test_every_shipped_strategy_but_anchors_runs_the_contract() -> None:
    # anchors needs an LLM that writes anchor passages and a reranker scoring them: its own tests cover it
    covered = {"top_n", "score_threshold", "setwise", "graded", "select", "budget_select"}
    assert set(BUILTIN_STRATEGIES) - covered == {"anchors"}
