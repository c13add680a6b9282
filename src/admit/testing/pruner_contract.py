"""The contract every pruner passes (built-in strategies, plug-ins, the shipped fake).

Subclass :class:`PrunerContract` in a test module and give it a ``pruner`` fixture; every test here then runs
against that pruner::

    class TestTopN(PrunerContract):
        @pytest.fixture
        def pruner(self):
            return resolve_pruner("top_n")

The contract: one grade per candidate, in input order, every grade on the rubric (1..5); ``threshold`` and
``keep_top_k`` decide what stays (:func:`~admit.prune.base.apply_threshold`); the outcome names the strategy.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from admit.prune.base import PruneOutcome, Pruner
from admit.prune.settings import PruneSettings
from admit.types import Chunk, Scored

__all__ = ["PrunerContract", "contract_candidates"]

_TEXTS = (
    "The audit log keeps every admin action for 90 days; set AUDIT_RETENTION to change it.",
    "Audit retention is configured in the settings file under [audit].",
    "The cafeteria opens at eight and serves breakfast until ten.",
    "Error E4012 means the upstream certificate expired; renew it with certctl.",
    "Our logo was redesigned in 2019 by the brand team.",
    "Admin actions include creating users, rotating keys and changing roles.",
)


def contract_candidates(n: int = 6) -> list[Scored]:
    """``n`` candidates (best first, falling scores) about audit retention and unrelated things."""
    return [
        Scored(
            chunk=Chunk(id=f"c{i}", source_id=f"s{i}", title=f"doc {i}", text=_TEXTS[i % len(_TEXTS)]),
            score=1.0 - i / (2 * n),
            rank=i,
        )
        for i in range(n)
    ]


class PrunerContract:
    """Behaviour every :class:`~admit.prune.base.Pruner` must have. Subclasses provide the ``pruner`` fixture."""

    question = "How long does the audit log keep admin actions?"
    """The question every test asks."""
    params: dict[str, object] = {}  # noqa: RUF012 - a subclass overrides it whole
    """Strategy parameters a subclass needs (``{"n": 2}``)."""

    @pytest.fixture  # type: ignore[untyped-decorator, unused-ignore]  # untyped without the extra installed
    def pruner(self) -> Pruner:  # pragma: no cover - overridden
        raise NotImplementedError

    def run(self, pruner: Pruner, candidates: Sequence[Scored], **settings: object) -> PruneOutcome:
        """Prune ``candidates`` with this suite's question and ``settings`` (over the suite's params)."""
        strategy = getattr(pruner, "name", "custom")
        base = PruneSettings(strategy=strategy, params=dict(self.params))
        return pruner.prune(self.question, candidates, base.with_overrides(dict(settings)))

    def test_has_a_name(self, pruner: Pruner) -> None:
        assert isinstance(pruner.name, str) and pruner.name
        assert isinstance(pruner, Pruner)

    def test_one_grade_per_candidate_in_input_order(self, pruner: Pruner) -> None:
        cands = contract_candidates()
        out = self.run(pruner, cands)
        assert [g.chunk_id for g in out.graded] == [c.chunk.id for c in cands]
        assert out.strategy == pruner.name

    def test_grades_are_on_the_rubric(self, pruner: Pruner) -> None:
        out = self.run(pruner, contract_candidates())
        assert all(isinstance(g.grade, int) and 1 <= g.grade <= 5 for g in out.graded)
        assert all(isinstance(g.reason, str) for g in out.graded)

    def test_threshold_decides_what_stays(self, pruner: Pruner) -> None:
        out = self.run(pruner, contract_candidates(), threshold=3, keep_top_k=0)
        for g in out.graded:
            assert g.kept == (g.grade >= 3), g

    def test_keep_top_k_is_honoured(self, pruner: Pruner) -> None:
        cands = contract_candidates()
        out = self.run(pruner, cands, threshold=5, keep_top_k=2)
        kept = set(out.kept_ids)
        assert {"c0", "c1"} <= kept
        by_id = {g.chunk_id: g for g in out.graded}
        for c in cands[2:]:
            assert by_id[c.chunk.id].kept == (by_id[c.chunk.id].grade >= 5)

    def test_one_candidate(self, pruner: Pruner) -> None:
        out = self.run(pruner, contract_candidates(1), keep_top_k=1)
        assert out.kept_ids == ["c0"]
