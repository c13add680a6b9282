"""Write the JSON Schemas in ``schemas/``: the pack request (``admit schema``) and the trace record.

Run after changing :class:`admit.schema.PackRequestModel` or :class:`admit.trace.TraceRecord`::

    python scripts/gen_schemas.py

``tests/unit/test_cli_pack.py`` and ``tests/unit/test_trace_schema.py`` fail while a file is stale.
"""

from __future__ import annotations

import json
from pathlib import Path

from admit.schema import PackRequestModel
from admit.trace import trace_json_schema

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"


def main() -> None:
    """Write both files."""
    for name, schema in (
        ("pack_request.schema.json", PackRequestModel.model_json_schema()),
        ("trace.schema.json", trace_json_schema()),
    ):
        (SCHEMAS / name).write_text(json.dumps(schema, indent=2, ensure_ascii=False) + "\n", "utf-8")
        print(f"wrote schemas/{name}")


if __name__ == "__main__":
    main()
