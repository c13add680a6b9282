"""The generated parts of the docs site are current: ``python scripts/gen_docs.py`` would change nothing.

``docs/configuration.md`` (every setting and ``ADMIT_*`` variable), ``docs/reference.md`` and the two schema files
it is rendered from (``schemas/http.openapi.json``, ``schemas/mcp_tools.json``) are generated from the code.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("mcp")

ROOT = Path(__file__).resolve().parents[2]


def _gen() -> object:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gen_docs"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_generated_docs_and_schemas_are_current() -> None:
    gen = _gen()
    stale = [
        str(path.relative_to(ROOT))
        for path, text in gen.outputs().items()  # type: ignore[attr-defined]
        if not path.exists() or path.read_text("utf-8") != text
    ]
    assert not stale, f"stale: {stale}; run python scripts/gen_docs.py"


def test_every_admit_variable_the_code_names_is_in_the_configuration_table() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text("utf-8")
    names = set()
    for path in (ROOT / "src" / "admit").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            value = node.value if isinstance(node, ast.Constant) else None
            # an f-string's prefix (``f"ADMIT_{name}"``: a family of variables, each in the table) is no name
            named = isinstance(value, str) and value.startswith("ADMIT_") and value.isupper() and value[-1] != "_"
            if named and str(value).replace("_", "").isalnum():
                names.add(str(value))
    assert names, "no ADMIT_ variable found: the scan is broken"
    missing = sorted(n for n in names if f"| `{n}` |" not in page)
    assert not missing, missing


def test_every_service_setting_is_in_the_configuration_table() -> None:
    from admit.service.config import ServiceSettings

    page = (ROOT / "docs" / "configuration.md").read_text("utf-8")
    for name, field in ServiceSettings.model_fields.items():
        if field.exclude or name in {"limits", "mcp", "tools"}:
            continue
        assert f"| `service.{name}` |" in page, name
    assert "| `service.limits.request_timeout_s` |" in page
