"""Where pruning is on by default, and the envelope's version label: what the README says is what ships."""

from __future__ import annotations

from datetime import UTC, datetime

from admit.policy import load_policy_set
from admit.render import EvidenceRenderer
from tests.conftest import REPO
from tests.helpers import chunk


def test_the_shipped_policy_prunes_nothing_unless_asked_as_the_docs_say() -> None:
    ps = load_policy_set(None)
    assert {name: p.prune.strategy for name, p in ps.classes.items()} == dict.fromkeys(ps.classes, "none")
    readme = " ".join((REPO / "docs" / "usage.md").read_text("utf-8").split())  # moved there from the README
    assert "Pruning is opt-in on the retrieval API and on by default for agents" in readme
    assert 'says `strategy = "none"` for every class' in readme
    assert "embedded CPU default" not in readme


def test_a_bare_prune_names_the_strategy_the_readme_names() -> None:
    from admit.cli._common import DEFAULT_STRATEGY

    assert DEFAULT_STRATEGY == "setwise"


def test_envelope_labels_a_timestamp_as_updated_not_as_a_version() -> None:
    r = EvidenceRenderer("b0")
    when = datetime(2026, 11, 30, 15, 16, 42, 123456, tzinfo=UTC)
    head = r.envelope(chunk("d#1", "t", updated_at=when), "t").splitlines()[0]
    assert 'version="' not in head and 'updated="2026-11-30T15:16:42+00:00"' in head
    head = r.envelope(chunk("d#1", "t", version="2.1", updated_at=when), "t").splitlines()[0]
    assert 'version="2.1"' in head and "updated=" not in head
    head = r.envelope(chunk("d#1", "t"), "t").splitlines()[0]
    assert 'version="unknown"' in head
