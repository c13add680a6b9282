"""admit.kb: the embedded knowledge base, and the stores a bigger deployment plugs in.

``KnowledgeBase`` ingests Markdown, HTML and text into a store, retrieves broadly with hybrid search (BM25 + vector,
reciprocal-rank fusion) under the principal's tenant and ACL filters, and runs the whole admission pipeline.

Example:
    >>> from admit.kb import KnowledgeBase  # doctest: +SKIP
    >>> kb = KnowledgeBase("/tmp/admit-demo.kb")  # doctest: +SKIP
    >>> kb.ingest(["examples/docs"], registry="examples/sources.toml")  # doctest: +SKIP
    >>> kb.search("What does E4012 mean?", parse_principal("tenant:acme")).admitted_ids  # doctest: +SKIP
"""

from admit.kb.ingest import IngestOptions, IngestReport
from admit.kb.knowledge_base import KnowledgeBase, parse_principal
from admit.kb.store import ChunkRecord, Hit, SearchFilters, SourceInfo, Store
from admit.kb.stores import open_store

__all__ = [
    "ChunkRecord",
    "Hit",
    "IngestOptions",
    "IngestReport",
    "KnowledgeBase",
    "SearchFilters",
    "SourceInfo",
    "Store",
    "open_store",
    "parse_principal",
]
