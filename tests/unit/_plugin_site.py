"""A plug-in package as ``pip install`` leaves it, without pip: a module and a ``dist-info`` folder whose
``entry_points.txt`` registers it, on ``sys.path``."""

from __future__ import annotations

from pathlib import Path

import pytest


def plugin_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, source: str, entry_points: str) -> None:
    """Write ``module.py`` (``source``) and its distribution's ``entry_points`` under ``tmp_path``, on the path."""
    (tmp_path / f"{module}.py").write_text(source, "utf-8")
    info = tmp_path / f"{module}-0.1.dist-info"
    info.mkdir()
    name = module.replace("_", "-")
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", "utf-8")
    (info / "entry_points.txt").write_text(entry_points, "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
