"""The section that writes only a name's acronym is found by the question that writes the name out (issue 46,
answers lost before the pruner; :mod:`admit.kb.acronyms`), on a small real knowledge base in each store that searches
by words: SQLite FTS5 and the in-memory BM25 (MiniLM vectors beside them).

On cfa7dc1 the sections holding the written-out words ("network", "time", "security") ranked above it in the lexical
list: ntpsec's "NTS Client Configuration" was 148th for its held-out question."""

from __future__ import annotations

from pathlib import Path

import pytest

from admit.kb import KnowledgeBase
from admit.types import Access, Chunk, Principal

QUESTION = "How do I make my client use Network Time Security with a server that supports it?"

A = Access(tenant="docs")
ANSWER = Chunk(
    id="nts-client",
    source_id="NTS-QuickStart",
    title="NTS Quick Start Guide › NTS Client Configuration",
    text="Append the keyword nts to the end of your server lines. Do this only for servers that speak NTS.",
    access=A,
)
#: Sections that hold the question's written-out words, as most of a time server's manual does.
OTHERS = [
    Chunk(
        id=f"other-{i}",
        source_id=f"page-{i}",
        title=title,
        text=text,
        access=A,
    )
    for i, (title, text) in enumerate(
        [
            ("Security", "Network security of the time service: a client trusts its server over the network."),
            ("Client modes", "A client polls a server for the time; the server supports many clients on a network."),
            ("Time sources", "Time from the network or a local clock; each server reports its time and security."),
            ("Network time", "The network time protocol carries time between a client and a server."),
            ("Supported servers", "The server supports broadcast; a client on the network hears the time."),
            ("Security notes", "Time security on a network: the client checks the server."),
            ("Access", "Restrict which client may query the server over the network for the time."),
        ]
    )
]


@pytest.mark.parametrize("where", ["sqlite", "memory"])
def test_the_section_named_by_the_acronym_leads_the_lexical_list(tmp_path: Path, where: str) -> None:
    """The section that writes only "NTS" is the lexical list's first for the question that writes "Network Time
    Security" out."""
    kb = KnowledgeBase(tmp_path / "kb.sqlite" if where == "sqlite" else "memory://")
    try:
        kb.add_chunks([*OTHERS, ANSWER])
        hits = kb.hits(QUESTION, Principal(tenant="docs"), k=10)
        lexical = sorted((h for h in hits if h.bm25_rank is not None), key=lambda h: h.bm25_rank or 0)
        assert lexical[0].record.id == "nts-client"
    finally:
        kb.close()
