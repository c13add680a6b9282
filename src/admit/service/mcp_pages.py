"""The pages of ``search_knowledge_base``: a search result held to ``[service.mcp] max_result_bytes`` as sent.

:func:`paged_result` turns a pack result into an :class:`EvidenceResult` page that fits, measured as the SDK
sends it (:func:`sent_bytes`: both copies of the result and the JSON-RPC envelope); the passages past it come
with ``next_page_token``, which :func:`page_offset` reads back (refusing a token of another question).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from admit.errors import ConfigError
from admit.service.core import trace_summary
from admit.types import AnswerState

__all__ = ["CitedPassage", "EvidenceResult", "page_offset", "paged_result", "sent_bytes"]


class CitedPassage(BaseModel):
    """An admitted passage and its citation id."""

    id: str
    source_id: str
    title: str
    score: float | None
    grade: int | None
    excerpt: bool
    text: str


class EvidenceResult(BaseModel):
    """What ``search_knowledge_base`` returns."""

    evidence: str = Field(description="The evidence block: untrusted-evidence envelopes, cite their ids.")
    citations: list[str] = Field(description="Ids of the admitted passages on this page, in prompt order.")
    answerable: bool | None = Field(
        default=None,
        description="Whether the evidence answers the question: true; null (unsure: answer from it with care); "
        "false: say the knowledge base does not answer it.",
    )
    answerability: float | None = Field(default=None, description="The calibrated probability behind `answerable`.")
    answer_state: AnswerState | None = Field(
        default=None,
        description="`answered`, `unsure` or `not_answered` (`answerable` true, null, false; null: not assessed).",
    )
    passages: list[CitedPassage]
    tools: str = Field(default="", description="The tool-results block (untrusted tool data), if tools were given.")
    note: str = Field(default="", description="Fallbacks applied (scope notes, excerpts, ask to narrow).")
    total_passages: int = Field(default=0, description="Admitted passages in all pages.")
    decisions: list[dict[str, Any]] = Field(
        default_factory=list, description="One decision per retrieved candidate (admitted or why dropped)."
    )
    next_page_token: str | None = Field(
        default=None, description="More passages exist: call again with this page_token and the same question."
    )
    trace: dict[str, Any]


def _token(offset: int, question: str) -> str:
    digest = hashlib.sha256(question.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return base64.urlsafe_b64encode(json.dumps({"o": offset, "q": digest}).encode()).decode()


def page_offset(token: str | None, question: str) -> int:
    """The offset a ``page_token`` names (0 without one).

    Raises:
        ConfigError: The token is not one this tool returned, or belongs to another question.
    """
    if not token:
        return 0
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()).decode())
        offset = int(data["o"])
    except Exception as exc:
        raise ConfigError(f"page_token {token[:40]!r} is not one this tool returned.") from exc
    if offset < 0 or _token(offset, question) != token:
        raise ConfigError("page_token belongs to another question; pass the question it was returned with.")
    return offset


_ID_ROOM = 32
"""Bytes left for the JSON-RPC request id a client chose (a number or a string of up to 32 characters)."""


def sent_bytes(result: BaseModel) -> int:
    """What a tool result costs on the wire: the JSON-RPC response line the server writes, as the SDK builds it
    (the result twice, as ``structuredContent`` and as a text block of indented JSON inside a JSON string, the
    envelope around them, room for the request id)."""
    import pydantic_core

    text = pydantic_core.to_json(result, fallback=str, indent=2).decode()
    try:
        import mcp.types as mt
    except ImportError:  # pragma: no cover - the server needs the SDK; an estimate without it
        compact = len(result.model_dump_json().encode())
        return compact + len(json.dumps(text, ensure_ascii=False).encode()) + 160 + _ID_ROOM
    call = mt.CallToolResult(
        content=[mt.TextContent(type="text", text=text)],
        structured_content=result.model_dump(mode="json", by_alias=True),
    )
    body = call.model_dump(by_alias=True, mode="json", exclude_none=True)
    line = mt.JSONRPCResponse(jsonrpc="2.0", id=0, result=body).model_dump_json(by_alias=True, exclude_unset=True)
    return len(line.encode()) + 1 + _ID_ROOM  # the newline a stdio line ends with


def paged_result(res: Any, question: str, *, page_token: str | None, max_bytes: int) -> EvidenceResult:
    """The search result held to ``max_bytes`` as sent (:func:`sent_bytes`: the response line, both copies, the
    tools block, the trace), from the page ``page_token`` names (at least one passage).

    A result that fits whole is returned as packed; a page is re-rendered with only its passages, in
    envelopes of a fresh boundary. Linear: every passage is rendered and measured once, the page is built from
    the running sum and measured once as sent (trimmed, a bounded number of times, if the sum under-counted).
    When one passage alone does not fit, what can go goes first, each said in ``note``: the candidates'
    decisions, the trace summary (the trace sink keeps both), the passage's second copy in ``passages``, and
    last the passage's text is cut to what fits (marked as an excerpt).
    """
    from admit.render import EvidenceRenderer

    admitted = list(res.admitted)
    start = page_offset(page_token, question)
    note = " ".join(f.detail for f in res.fallbacks)
    full_trace = trace_summary(res.trace)
    # every candidate's decision, on the first page only (later pages would repeat it)
    all_decisions = [d.as_dict() for d in res.decisions] if start == 0 else []
    rest = admitted[start:]
    renderer = EvidenceRenderer.for_chunks([p.chunk for p in rest])  # valid for every subset of them
    envelopes = [renderer.envelope(p.chunk, p.text, excerpt=p.excerpt) for p in rest]
    cited = [_cited(p) for p in rest]
    omitted: list[str] = []
    state: dict[str, Any] = {"decisions": all_decisions, "trace": full_trace}

    def build(k: int) -> EvidenceResult:
        whole = start == 0 and k >= len(admitted) and envelopes == original
        evidence = res.prompt if whole else renderer.block(envelopes[:k])
        nxt = _token(start + k, question) if start + k < len(admitted) else None
        return EvidenceResult(
            evidence=evidence,
            citations=[p.chunk.id for p in rest[:k]],
            answerable=res.answerable,
            answerability=res.answerability,
            answer_state=res.answer_state,
            passages=cited[:k],
            tools=res.tools,
            note=" ".join([note, _left_out(omitted, max_bytes)]).strip(),
            total_passages=len(admitted),
            decisions=state["decisions"],
            next_page_token=nxt,
            trace=state["trace"],
        )

    def cost(i: int) -> int:
        one = len(json.dumps(envelopes[i], ensure_ascii=False)) + len(cited[i].model_dump_json())
        return 3 * (one + len(rest[i].chunk.id) + 8)  # twice sent, the text copy indented and escaped

    def select() -> EvidenceResult:
        total = sent_bytes(build(0))
        k = 0
        while k < len(rest):
            total += cost(k)
            if total > max_bytes and k >= 1:
                break
            k += 1
        best = build(k)
        tries = 0
        while k > 1 and sent_bytes(best) > max_bytes:
            tries += 1
            k = k - 1 if tries < 8 else max(1, k // 2)
            best = build(k)
        return best

    original = list(envelopes)
    best = select()
    if sent_bytes(best) <= max_bytes:
        return best
    # over with one passage (or the decisions): leave out, said, what a caller can do without, cheapest loss first
    if state["decisions"]:
        omitted.append(f"the {len(all_decisions)} candidates' decisions")
        state["decisions"] = []
        best = select()
    if sent_bytes(best) > max_bytes and len(best.citations) == 1:
        state["trace"] = {"request_id": full_trace.get("request_id")}
        omitted.append("the trace summary but its request_id")
        best = build(1)
    if sent_bytes(best) > max_bytes and len(best.citations) == 1:
        cited[0] = cited[0].model_copy(update={"text": ""})
        omitted.append("passages[0].text (the text is in evidence)")
        best = build(1)
    if sent_bytes(best) > max_bytes and len(best.citations) == 1:
        best = _cut_to_fit(rest[0], renderer, envelopes, cited, build, max_bytes, omitted)
    return best


def _left_out(omitted: list[str], max_bytes: int) -> str:
    """The note saying what a page leaves out to fit (empty when nothing)."""
    return f"Left out to fit max_result_bytes={max_bytes}: {'; '.join(omitted)}." if omitted else ""


def _cut_to_fit(
    passage: Any,
    renderer: Any,
    envelopes: list[str],
    cited: list[CitedPassage],
    build: Callable[[int], EvidenceResult],
    max_bytes: int,
    omitted: list[str],
) -> EvidenceResult:
    """The one passage of a page cut to the longest prefix (whole words) whose page fits ``max_bytes`` as sent."""
    text: str = passage.text
    lo, hi = 0, len(text)
    omitted.append("")  # the cut's note, filled in below (its length counts)

    def page(n: int) -> EvidenceResult:
        shown = text[:n].rsplit(" ", 1)[0] if 0 < n < len(text) else text[:n]
        envelopes[0] = renderer.envelope(passage.chunk, f"{shown} [...]", excerpt=True)
        cited[0] = cited[0].model_copy(update={"excerpt": True})
        omitted[-1] = f"all but the first {len(shown)} of the passage's {len(text)} characters"
        return build(1)

    while lo < hi:  # the longest prefix that fits: about log2(len) measurements
        mid = (lo + hi + 1) // 2
        if sent_bytes(page(mid)) <= max_bytes:
            lo = mid
        else:
            hi = mid - 1
    best = page(lo)
    if sent_bytes(best) > max_bytes:  # the page's fixed parts alone are larger: said, not hidden
        omitted[-1] = "the passage's text, and the page is still larger: raise max_result_bytes"
        best = build(1)
    return best


def _cited(p: Any) -> CitedPassage:
    return CitedPassage(
        id=p.chunk.id,
        source_id=p.chunk.source_id,
        title=p.chunk.title,
        score=p.score if p.score == p.score and abs(p.score) != float("inf") else None,
        grade=p.grade,
        excerpt=p.excerpt,
        text=p.text,
    )
