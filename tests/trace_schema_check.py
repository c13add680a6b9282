"""Check trace records against the shipped ``schemas/trace.schema.json`` (shared by the trace schema tests)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema

REPO = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((REPO / "schemas" / "trace.schema.json").read_text("utf-8"))


def check_record(record: Mapping[str, Any]) -> None:
    """Raise when ``record`` (as JSON) does not match the schema: a key not named, a value of another type."""
    data = json.loads(json.dumps(record, default=str))
    jsonschema.Draft202012Validator(SCHEMA).validate(data)
