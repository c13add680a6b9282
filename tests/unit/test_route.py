from __future__ import annotations

import pytest

from admit.errors import ConfigError
from admit.policy import load_policy_set


@pytest.fixture(scope="module")
def ps():
    return load_policy_set()


@pytest.mark.parametrize(
    ("question", "cls"),
    [
        ("What is the default port of the API server?", "point_lookup"),
        ("Who wrote the operator?", "point_lookup"),
        ("The pod fails with error E4012 after upgrade", "troubleshooting"),
        ("My plugin doesn't load, how do I fix it?", "troubleshooting"),
        ("Compare Qdrant and pgvector for filtering", "comparison"),
        ("Which is older, the Eiffel Tower or Big Ben?", "comparison"),
        ("List all supported authentication providers", "list_all"),
        ("How many regions are affected?", "list_all"),
        ("What changed in the 2.4 release notes?", "history"),
        ("Explain the caching design", "default"),
    ],
)
def test_cues_pick_the_class(ps, question, cls):
    route = ps.classify(question)
    assert route.query_class == cls
    assert route.cue != "" and not route.overridden


def test_class_is_logged_with_its_cue(ps):
    route = ps.classify("Audit export fails with E4012")
    assert route.cue.lower() == "fails"
    assert route.pattern


def test_override_wins_and_is_marked(ps):
    route = ps.classify("What is the port?", override="list_all")
    assert route.query_class == "list_all" and route.overridden and route.cue == "override"


def test_unknown_override_is_a_config_error(ps):
    with pytest.raises(ConfigError, match="Unknown query_class 'nope'"):
        ps.classify("x", override="nope")


def test_classes_have_distinct_answer_contracts(ps):
    assert ps.policy("point_lookup").answer_reserve < ps.policy("troubleshooting").answer_reserve
    assert ps.policy("list_all").candidate_count > ps.policy("point_lookup").candidate_count
    assert ps.policy("history").keep_superseded is True
    assert ps.policy("list_all").fallbacks[0] == "ask_to_narrow"


def test_routing_is_deterministic(ps):
    assert [ps.classify("Compare A and B").as_dict() for _ in range(3)] == [
        ps.classify("Compare A and B").as_dict()
    ] * 3


def test_bad_policy_files_fail_with_the_setting_named(tmp_path):
    p = tmp_path / "p.toml"
    p.write_text("[classes.default]\ncues = []\nanswer_reserve = -5\n")
    with pytest.raises(ConfigError, match="answer_reserve"):
        load_policy_set(p)
    p.write_text('[classes.default]\ncues = ["(unclosed"]\n')
    with pytest.raises(ConfigError, match="Bad cue"):
        load_policy_set(p)
    p.write_text("[classes.default]\nbogus = 1\n")
    with pytest.raises(ConfigError, match="bogus"):
        load_policy_set(p)
    p.write_text("[classes.default]\n[classes.default.prune]\nthreshold = 9\n")
    with pytest.raises(ConfigError, match="threshold"):
        load_policy_set(p)
    p.write_text("not toml = = =")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_policy_set(p)


def test_rollout_share_is_a_stable_hash(tmp_path):
    p = tmp_path / "p.toml"
    p.write_text("rollout = 0.3\n[classes.default]\ncues = []\n")
    ps = load_policy_set(p)
    picks = [ps.in_rollout(f"req-{i}") for i in range(2000)]
    assert picks == [ps.in_rollout(f"req-{i}") for i in range(2000)]
    assert 0.25 < sum(picks) / len(picks) < 0.35
