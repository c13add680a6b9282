"""MkDocs hook: ``--8<-- FILE`` on a line of its own includes that file of the repository (``docs/security.md``
includes ``SECURITY.md``, which lives at the root where GitHub shows it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Replace each include line with the file's text (its top heading dropped: the page has its own)."""
    out = []
    for line in markdown.split("\n"):
        if line.startswith("--8<-- "):
            text = (ROOT / line.removeprefix("--8<-- ").strip()).read_text("utf-8")
            lines = text.split("\n")
            if lines and lines[0].startswith("# "):
                lines = lines[1:]
            out.append("\n".join(lines))
        else:
            out.append(line)
    return "\n".join(out)
