"""Human-readable rendering of a pack result (``--human``, ``admit search``)."""

from __future__ import annotations

from collections import Counter

from admit.types import PackResult

__all__ = ["render_human"]


def render_human(res: PackResult, *, show_text: int = 240) -> str:
    """Admitted passages with ids and why, then what was dropped and why, in counts."""
    t = res.trace
    lines = [
        f"query class: {t.get('query_class')} (cue: {t.get('route', {}).get('cue')!r})",
        f"budget: {res.budget.evidence_budget} evidence tokens of {res.budget.input_limit} "
        f"(answer reserve {res.budget.answer_reserve}); used {t.get('evidence_tokens')}",
        f"admitted {len(res.admitted)} of {t.get('candidate_count')} candidates:",
    ]
    for p in res.admitted:
        snippet = " ".join(p.text.split())
        if len(snippet) > show_text:
            snippet = snippet[: show_text - 1] + "…"
        lines.append(f"  [{p.chunk.id}] {p.chunk.title or p.chunk.source_id}  ({p.why}; {p.tokens} tokens)")
        lines.append(f"      {snippet}")
    dropped = Counter(d.reason for d in res.decisions if d.state == "dropped")
    if dropped:
        lines.append("dropped: " + ", ".join(f"{k} {v}" for k, v in sorted(dropped.items())))
    for f in res.fallbacks:
        lines.append(f"fallback {f.kind}: {f.detail}" + (f" facets={list(f.facets)}" if f.facets else ""))
    return "\n".join(lines)
