"""Issue 34 item 6 (and the policy parts of item 7): one strictness everywhere. An unknown field is refused with
did-you-mean on candidates, policy files and the service config, naming the table it stands in; ``admit
policy`` exits 2 on a bad policy, prints TOML that loads back, and ``--show-default`` prints the shipped file."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from admit.cli import main
from admit.errors import ConfigError, RequestError
from admit.policy import load_policy_set, policy_set_from_dict, shipped_policy_text
from admit.schema import parse_pack_request

BASE = {"question": "Which port?", "principal": {"tenant": "acme"}}


def _candidate(**fields: object) -> dict[str, object]:
    return {**BASE, "candidates": [{"id": "a", "source_id": "s", **fields}]}


def test_a_misspelled_candidate_field_is_refused_with_did_you_mean() -> None:
    with pytest.raises(RequestError) as exc:
        parse_pack_request(_candidate(text="The port is 7420.", scroe=0.9))
    assert exc.value.field == "candidates[0].scroe"
    assert "did you mean 'score'?" in str(exc.value) and "metadata" in str(exc.value)


def test_txet_is_named_before_the_missing_text() -> None:
    with pytest.raises(RequestError) as exc:
        parse_pack_request(_candidate(txet="The port is 7420."))
    assert exc.value.field == "candidates[0].txet"
    assert str(exc.value).startswith("candidates[0].txet: unknown field (did you mean 'text'?)")


def test_a_nested_typo_names_its_object() -> None:
    with pytest.raises(RequestError) as exc:
        parse_pack_request(_candidate(text="t", access={"tenant": "acme", "lable": "x"}))
    assert "did you mean 'label'?" in str(exc.value) and "the candidates[0].access takes" in str(exc.value)


def test_a_defaults_typo_is_blamed_on_defaults_not_on_a_class() -> None:
    with pytest.raises(ConfigError) as exc:
        policy_set_from_dict({"defaults": {"per_source_limt": 2}, "classes": {"default": {}, "history": {}}})
    msg = str(exc.value)
    assert msg.startswith("[defaults]:") and "did you mean 'per_source_limit'?" in msg and "history" not in msg


def test_a_class_typo_and_a_top_level_typo_name_their_place() -> None:
    with pytest.raises(ConfigError, match=r"^\[classes\.history\]: .*did you mean 'cues'"):
        policy_set_from_dict({"classes": {"default": {}, "history": {"cuse": []}}})
    with pytest.raises(ConfigError, match="did you mean 'kill_switch'"):
        policy_set_from_dict({"kill_swtich": True, "classes": {"default": {}}})
    with pytest.raises(ConfigError, match=r"^\[defaults\.prune\]: .*did you mean `threshold`"):
        policy_set_from_dict({"defaults": {"prune": {"treshold": 3}}, "classes": {"default": {}}})


def test_a_policy_of_only_defaults_prune_is_the_shipped_one_pruning(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('[defaults.prune]\nstrategy = "setwise"\n', "utf-8")
    ps = load_policy_set(path)
    assert set(ps.classes) == set(load_policy_set().classes)
    assert {p.prune.strategy for p in ps.classes.values()} == {"setwise"}
    assert ps.policy("history").per_source_limit == 4  # the shipped class settings stay


def test_admit_policy_exits_2_on_a_bad_strategy(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('[defaults.prune]\nstrategy = "setwsie"\n', "utf-8")
    res = CliRunner().invoke(main, ["policy", "Compare A vs B", "--policy", str(path)])
    assert res.exit_code == 2
    assert "[defaults.prune]: unknown strategy 'setwsie'; did you mean 'setwise'?" in res.stderr


def test_admit_policy_prints_toml_that_loads_back() -> None:
    res = CliRunner().invoke(main, ["policy", "Compare A vs B"])
    assert res.exit_code == 0, res.output
    data = tomllib.loads(res.stdout)
    cls = data["classes"]["comparison"]
    assert cls["cues"] == list(load_policy_set().policy("comparison").cues)  # single backslashes, no reprs
    assert "\\\\b" not in res.stdout and "('" not in res.stdout
    assert cls["prune"]["strategy"] == "none"


def test_admit_policy_show_default_prints_the_shipped_file() -> None:
    res = CliRunner().invoke(main, ["policy", "--show-default"])
    assert res.exit_code == 0
    assert res.stdout == shipped_policy_text()
    assert "classes" in tomllib.loads(res.stdout)


def test_a_registry_typo_gets_did_you_mean(tmp_path: Path) -> None:
    from admit.kb.registry import load_registry

    path = tmp_path / "sources.toml"
    path.write_text('[[sources]]\nmatch = "*.md"\nauthorty = 0.5\n', "utf-8")
    with pytest.raises(ConfigError, match=r"\[\[sources\]\] #1: unknown key 'authorty'; did you mean 'authority'\?"):
        load_registry(path)
