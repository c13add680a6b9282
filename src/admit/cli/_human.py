"""The human view of a pack result (``admit search``, ``admit pack --human``): every candidate's fate in a table."""

from __future__ import annotations

from typing import Any

from admit._clean import clean_terminal
from admit.types import PackResult

__all__ = ["print_result"]

_STAGE_ORDER = {"authorize": 0, "validate": 1, "scan": 2, "rerank": 3, "dedupe": 4, "prune": 5, "pack": 6}
_STATE_STYLE = {"admitted": "green", "dropped": "red"}


def _short(text: str, n: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[: n - 1] + "…"


def print_result(res: PackResult, console: Any, *, show_text: int = 200) -> None:
    """Print the route and budget, the admitted passages, and one table row per candidate (id, fate, stage, why).

    Everything a document or a caller controls (ids, titles, text, cues, details) goes through
    :func:`~admit._clean.clean_terminal` first: an escape sequence in a title cannot set the window title,
    clear the screen or colour the terminal.
    """
    from rich.markup import escape as _markup
    from rich.table import Table

    def escape(value: str) -> str:
        return str(_markup(clean_terminal(value)))

    t = res.trace
    b = res.budget
    cue = repr(t.get("route", {}).get("cue"))
    strategy = str((t.get("pruner") or {}).get("strategy", "none"))
    console.print(
        f"query class [bold]{escape(str(t.get('query_class')))}[/] (cue: {escape(cue)}); "
        f"budget {b.evidence_budget} evidence tokens of {b.input_limit} (answer reserve {b.answer_reserve}), "
        f"used {t.get('evidence_tokens')}; pruning: {escape(strategy)}"
    )
    console.print(f"[bold]admitted {len(res.admitted)} of {t.get('candidate_count')} candidates[/]")
    if res.answer_state == "not_answered":
        prob = "" if res.answerability is None else f" (answerability {res.answerability:.2f})"
        console.print(f"[bold yellow]not answered: the admitted evidence does not answer the question{prob}[/]")
    elif res.answer_state == "unsure":
        prob = "" if res.answerability is None else f" (answerability {res.answerability:.2f})"
        console.print(f"[yellow]unsure: the check cannot tell whether the evidence answers the question{prob}[/]")
    for p in res.admitted:
        excerpt = " (excerpt)" if p.excerpt else ""
        console.print(
            f"  [green]{escape(f'[{p.chunk.id}]')}[/] {escape(p.chunk.title or p.chunk.source_id)}{excerpt}  "
            f"[dim]{escape(p.why)}; {p.tokens} tokens[/]"
        )
        if show_text:
            console.print(f"      [dim]{escape(_short(p.text, min(show_text, console.width - 7)))}[/]")
    order = {d.chunk_id: i for i, d in enumerate(res.decisions)}
    rows = sorted(
        res.decisions,
        key=lambda d: (d.state != "admitted", _STAGE_ORDER.get(d.stage, 9), order[d.chunk_id]),
    )
    cells = [
        (
            d.chunk_id,
            d.state,
            d.stage,
            d.reason,
            "" if d.grade is None else str(d.grade),
            "" if d.score is None or d.score != d.score else f"{d.score:.3f}",
            d.detail or (f"-> {d.related_id}" if d.related_id else ""),
        )
        for d in rows
    ]
    heads = ("id", "fate", "stage", "reason", "grade", "score", "detail")
    widths = [max([len(h), *(len(c[i]) for c in cells)]) for i, h in enumerate(heads)]
    # an id takes what the line has (the detail keeps 20 columns); a longer one folds onto a second line
    widths[0] = min(widths[0], max(24, console.width - sum(widths[1:6]) - 2 * 6 - 20))
    # fixed widths: the id, fate, stage and reason never shrink; the detail takes what is left of the line
    widths[6] = max(10, min(widths[6], console.width - sum(widths[:6]) - 2 * 6))
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for i, h in enumerate(heads):
        table.add_column(
            h,
            width=widths[i],
            justify="right" if h in {"grade", "score"} else "left",
            no_wrap=i != 0,
            overflow="fold" if i == 0 else "ellipsis",
        )
    for c in cells:
        style = _STATE_STYLE.get(c[1], "")
        table.add_row(
            escape(c[0]),
            f"[{style}]{c[1]}[/]" if style else c[1],
            c[2],
            escape(c[3]),
            c[4],
            c[5],
            escape(c[6]),
        )
    console.print(table)
    for f in res.fallbacks:
        facets = f" facets={list(f.facets)}" if f.facets else ""
        console.print(f"[yellow]fallback {escape(f.kind)}[/]: {escape(f.detail)}{escape(facets)}")
