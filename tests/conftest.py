"""Shared fixtures. The network is off for tests: only loopback servers started by the tests are used."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def shared_data() -> Path:
    """The shared development data beside the clone; tests that need it skip without it."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"../shared/data not found at {SHARED_DATA}")
    return SHARED_DATA


def ts(year: int, month: int = 1, day: int = 1) -> datetime:
    """A UTC timestamp."""
    return datetime(year, month, day, tzinfo=UTC)
