"""The complexity bar (docs/architecture.md): no function in ``src/admit`` over cyclomatic complexity 30, radon's
count. ``scripts/complexity.py`` holds the walk and the pending list (functions in files another branch was
editing when the bar came in); the list may only shrink."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script() -> object:
    pytest.importorskip("radon", reason="radon is in the `test` extra")
    spec = importlib.util.spec_from_file_location("admit_complexity", ROOT / "scripts" / "complexity.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_function_over_the_bar_outside_the_pending_list() -> None:
    script = _script()
    found = script.over()  # type: ignore[attr-defined]
    assert script.problems(found) == []  # type: ignore[attr-defined]


def test_the_pending_list_is_short_and_says_why() -> None:
    script = _script()
    pending = script.PENDING  # type: ignore[attr-defined]
    assert len(pending) <= 5
    assert all(reason.strip() for reason in pending.values())


def test_the_walk_counts_a_branchy_function(tmp_path: Path) -> None:
    script = _script()
    body = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(31))
    method = body.replace("    ", "        ")
    (tmp_path / "m.py").write_text(
        f"def f(x):\n{body}    return -1\n\n\nclass C:\n    def g(self, x):\n{method}        return -1\n"
    )
    found = script.over(root=tmp_path)  # type: ignore[attr-defined]
    assert found == {("m.py", "f"): 32, ("m.py", "C.g"): 32}
