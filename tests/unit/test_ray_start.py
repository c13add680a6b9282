"""``admit._ray``: the one start of Ray for ``admit eval --engine ray`` and ``admit ingest --engine ray``."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from admit._ray import import_ray, start_ray
from admit.errors import MissingExtraError


class _FakeRay:
    def __init__(self, *, running: bool) -> None:
        self.running = running
        self.inits: list[dict[str, Any]] = []
        self.context = SimpleNamespace(enable_progress_bars=True)
        self.data = SimpleNamespace(DataContext=SimpleNamespace(get_current=lambda: self.context))

    def is_initialized(self) -> bool:
        return self.running

    def init(self, **kwargs: Any) -> None:
        self.inits.append(kwargs)
        self.running = True


def test_a_local_instance_of_num_cpus_without_a_dashboard_when_no_address() -> None:
    ray = _FakeRay(running=False)
    start_ray(ray, address=None, num_cpus=3)
    assert ray.inits == [{"num_cpus": 3, "include_dashboard": False, "log_to_driver": False}]
    assert ray.context.enable_progress_bars is False


def test_the_cluster_at_the_address_when_one_is_named() -> None:
    ray = _FakeRay(running=False)
    start_ray(ray, address="ray://head:10001", num_cpus=3)
    assert ray.inits == [{"address": "ray://head:10001", "include_dashboard": False, "log_to_driver": False}]
    assert ray.context.enable_progress_bars is False


def test_a_running_ray_is_not_started_again_but_its_progress_bars_go_off() -> None:
    ray = _FakeRay(running=True)
    start_ray(ray, address=None, num_cpus=2)
    assert ray.inits == [] and ray.context.enable_progress_bars is False


def test_eval_and_ingest_without_ray_name_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from admit.eval.engine import RayEngine
    from admit.kb.ingest import IngestOptions
    from admit.kb.ray_ingest import RayWriter

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError, installed or not
    with pytest.raises(MissingExtraError, match=r"admit\[ray\]"):
        import_ray()
    with pytest.raises(MissingExtraError, match=r"admit\[ray\]"):
        RayEngine()
    with pytest.raises(MissingExtraError, match=r"admit\[ray\]"):
        RayWriter("postgresql://x@127.0.0.1:1/db", dim=64, embedder="hash", options=IngestOptions())
