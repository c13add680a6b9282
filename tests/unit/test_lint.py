"""The code style gate runs with the tests: ruff (lint and format) over the whole tree."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conftest import REPO


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed (pip install admit[test])")
def test_ruff_lint_and_format_are_clean():
    paths = ["src", "tests", "bench", "scripts"]
    lint = subprocess.run(["ruff", "check", *paths], cwd=REPO, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout[-3000:]
    fmt = subprocess.run(["ruff", "format", "--check", *paths], cwd=REPO, capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout[-3000:]
