"""Issue 34 item 6 on MCP: the question limit of every surface (``admit.types.MAX_QUESTION_CHARS``) holds on
both tools, with the message the CLI and HTTP give, even where ``max_text_chars`` would let the text through."""

from __future__ import annotations

from typing import Any

import pytest

from admit.types import MAX_QUESTION_CHARS

pytest.importorskip("mcp")
pytestmark = pytest.mark.integration

from tests.integration.test_mcp_http import ACME_KEY, _call, _serve, _settings  # noqa: E402

LONG = "why " * (MAX_QUESTION_CHARS // 4 + 10)


def test_both_tools_refuse_a_question_over_the_one_limit() -> None:
    async def script(s: Any) -> Any:
        search = await s.call_tool("search_knowledge_base", {"question": LONG, "prune": False})
        prune = await s.call_tool("prune_context", {"question": LONG, "chunks": ["a"]})
        return search, prune

    with _serve(_settings(max_text_chars=100_000, max_body_bytes=1_000_000)) as srv:
        search, prune = _call(f"{srv.url}/mcp", ACME_KEY, script)
    for result in (search, prune):
        assert result.is_error
        assert f"over the {MAX_QUESTION_CHARS:,}-character limit of a question" in result.content[0].text
