"""``mypy --strict`` accepts every documented adapter call (issue 34, item 8): ``AdmitFilter`` has no phantom
required arguments (its caches are no constructor arguments), Haystack's settings are typed, not ``Any``, and a
misspelled setting or a wrong type is caught (``tests/typed/adapter_calls.py``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


@pytest.mark.skipif(shutil.which("mypy") is None, reason="mypy is not installed (pip install admit[test])")
def test_mypy_strict_accepts_the_documented_adapter_calls() -> None:
    for extra in ("langchain_core", "llama_index.core", "haystack"):
        pytest.importorskip(extra)
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "tests/typed/adapter_calls.py"],
        cwd=REPO,
        env={**os.environ, "MYPYPATH": str(REPO / "src")},  # this tree's admit, not an installed one
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
