"""``ADMIT_SETWISE_CROSS``, ``ADMIT_SETWISE_MULTILINGUAL``, ``ADMIT_TRACE_CONTENT`` and ``ADMIT_EVAL_CACHE`` are
read by the faces (CLI options, the service's settings) and reach the library as arguments; the library itself
never reads them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from admit.backends.embedders.fake import FakeEmbedder
from admit.cli import main
from admit.errors import ConfigError
from admit.eval.cache import default_cache_dir
from admit.pipeline import Pipeline
from admit.prune import PrunerResources, get_strategy
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "request.json"
SWITCHES = {"ADMIT_SETWISE_CROSS": "1", "ADMIT_SETWISE_MULTILINGUAL": "0", "ADMIT_TRACE_CONTENT": "true"}


def test_the_library_ignores_the_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for k, v in {**SWITCHES, "ADMIT_EVAL_CACHE": str(tmp_path)}.items():
        monkeypatch.setenv(k, v)
    pipe = Pipeline()
    assert pipe.trace_content is False
    assert pipe.resources.cross is None and pipe.resources.multilingual is None
    spec = get_strategy("setwise")
    assert spec.identity is not None
    assert spec.identity(PrunerResources(embedder="fake"))[2] == "no-cross"  # CROSS_DEFAULT: off
    assert default_cache_dir() != tmp_path


def test_setwise_takes_the_cross_model_and_the_multilingual_embedder_from_its_resources() -> None:
    spec = get_strategy("setwise")
    e5 = FakeEmbedder()
    pruner: Any = spec.build(PrunerResources(embedder=FakeEmbedder(), cross=False, multilingual=e5))
    assert pruner.scorer.cross is None and pruner.scorer.multilingual is e5
    off: Any = spec.build(PrunerResources(embedder=FakeEmbedder(), multilingual=False))
    assert off.scorer.multilingual is None
    # the strategy's own option wins over the shared resources
    own: Any = spec.build(
        PrunerResources(embedder=FakeEmbedder(), multilingual=e5, options={"setwise": {"multilingual": False}})
    )
    assert own.scorer.multilingual is None
    assert spec.identity is not None
    assert spec.identity(PrunerResources(embedder="fake", multilingual=False))[3] == "no-e5"
    assert spec.identity(PrunerResources(embedder="fake", cross=True))[2] != "no-cross"


def _spy_pipelines(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    import admit.cli.pack as pack

    made: list[Any] = []
    real = pack.logging_pipeline

    def spy(**kw: Any) -> Any:
        made.append(real(**kw))
        return made[-1]

    monkeypatch.setattr(pack, "logging_pipeline", spy)
    return made


def test_pack_reads_the_switches_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    made = _spy_pipelines(monkeypatch)
    trace = tmp_path / "trace.jsonl"
    res = CliRunner().invoke(main, ["pack", str(EXAMPLE), "--trace-file", str(trace)], env=SWITCHES)
    assert res.exit_code == 0, res.output
    assert made[0].resources.cross is True and made[0].resources.multilingual is False
    assert "prompt" in json.loads(trace.read_text().splitlines()[0])
    # the option wins over the variable; without either, nothing is set and the trace holds no text
    res = CliRunner().invoke(main, ["pack", str(EXAMPLE), "--no-setwise-cross", "--no-trace-content"], env=SWITCHES)
    assert res.exit_code == 0, res.output
    assert made[1].resources.cross is False and "prompt" not in json.loads(res.output)["trace"]
    res = CliRunner().invoke(main, ["pack", str(EXAMPLE)], env=dict.fromkeys(SWITCHES, ""))
    assert res.exit_code == 0, res.output
    assert made[2].resources.cross is None and made[2].resources.multilingual is None
    assert made[2].trace_content is False


def test_a_bad_switch_value_is_a_usage_error_naming_the_option() -> None:
    res = CliRunner().invoke(main, ["pack", str(EXAMPLE)], env={"ADMIT_SETWISE_CROSS": "maybe"})
    assert res.exit_code == 2 and "--setwise-cross" in res.output and "maybe" in res.output


def test_eval_reads_its_cache_folder_from_the_environment(tmp_path: Any) -> None:
    cmd: Any = main.commands["eval"]
    cache = next(p for p in cmd.params if p.name == "cache_dir")
    assert cache.envvar == "ADMIT_EVAL_CACHE"


def test_service_settings_read_the_switches_where_the_file_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    from admit.service.config import settings_from_dict
    from admit.service.state import build_state

    for k, v in SWITCHES.items():
        monkeypatch.setenv(k, v)
    st = settings_from_dict({})
    assert (st.trace_content, st.setwise_cross, st.setwise_multilingual) == (True, True, False)
    from admit.backends.rerankers.cross import CrossEncoder

    switches = st.pruner_switches()
    assert isinstance(switches["cross"], CrossEncoder) and switches["multilingual"] is False
    state = build_state(st.model_copy(update={"shadow_policy": str(REPO / "src/admit/policies/default.toml")}))
    assert state.pipeline.trace_content is True and isinstance(state.pipeline.resources.cross, CrossEncoder)
    assert state.shadow is not None and state.shadow.resources.cross is state.pipeline.resources.cross  # one model
    assert state.pipeline.resources.multilingual is False
    kept = settings_from_dict({"service": {"setwise_cross": False, "trace_content": False}})
    assert kept.setwise_cross is False and kept.trace_content is False  # the file wins
    monkeypatch.setenv("ADMIT_SETWISE_CROSS", "maybe")
    with pytest.raises(ConfigError, match="ADMIT_SETWISE_CROSS"):
        settings_from_dict({})
    for k in SWITCHES:
        monkeypatch.delenv(k)
    plain = build_state(settings_from_dict({}))
    assert plain.pipeline.trace_content is False and plain.pipeline.resources.cross is None
