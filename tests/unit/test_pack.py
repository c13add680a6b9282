from __future__ import annotations

from dataclasses import replace

from admit.backends.tokenizers import resolve_tokenizer
from admit.budget import evidence_message_tokens
from admit.pack import ELISION, anchored_excerpt, pack, split_facets
from admit.policy import load_policy_set
from admit.render import EvidenceRenderer
from admit.types import Budget, Scored
from tests.helpers import chunk

TOK = resolve_tokenizer("gpt-4o")
PS = load_policy_set()


def budget(evidence: int) -> Budget:
    return Budget(input_limit=evidence, instruction_tokens=0, conversation_tokens=0, answer_reserve=0, safety_margin=0)


def scored(*chunks):
    return [Scored(chunk=c, score=1.0 - i / 10, rank=i) for i, c in enumerate(chunks)]


def run(question, items, evidence, policy=None):
    return pack(
        question,
        items,
        policy=policy or PS.policy("default"),
        budget=budget(evidence),
        tokenizer=TOK,
        renderer=EvidenceRenderer("b0b0"),
    )


def test_facets_split_a_multi_part_question():
    facets = split_facets("What is the default port of Qdrant and the default port of PostgreSQL?")
    assert len(facets) == 2
    assert any("qdrant" in f for f in facets) and any("postgresql" in f for f in facets)


def test_lower_scoring_chunk_covering_a_missing_facet_beats_a_redundant_high_scorer():
    q = "What is the default port of Qdrant and the default port of PostgreSQL?"
    a1 = chunk("q#1", "Qdrant listens on default port 6333 for its HTTP API.", source="q1")
    a2 = chunk("q#2", "The default port of Qdrant HTTP is 6333; gRPC uses 6334.", source="q2")
    b = chunk("pg#1", "PostgreSQL uses the default port 5432.", source="pg")
    items = scored(a1, a2, b)
    one = TOK.count(EvidenceRenderer("b0b0").envelope(a2, a2.text)) + 4
    base = evidence_message_tokens(TOK, EvidenceRenderer("b0b0").block(["x"]))
    res = run(q, items, base + 2 * one + 4, replace(PS.policy("comparison"), fallbacks=("second_retrieval",)))
    assert "pg#1" in [p.chunk.id for p in res.admitted]
    assert "q#1" in [p.chunk.id for p in res.admitted]
    assert res.evidence_tokens <= base + 2 * one + 4
    dropped = [d for d in res.decisions if d.state == "dropped"]
    assert [d.chunk_id for d in dropped] == ["q#2"] and dropped[0].reason == "budget"


def test_evidence_never_exceeds_budget_and_drops_are_recorded_with_a_scope_note():
    items = scored(*[chunk(f"c#{i}", f"Fact number {i} about the system. " * 20, source=f"s{i}") for i in range(10)])
    res = run("Tell me about the system", items, 600, replace(PS.policy("default"), fallbacks=("scope_note",)))
    assert res.evidence_tokens <= 600
    assert evidence_message_tokens(TOK, res.prompt) == res.evidence_tokens
    dropped = [d for d in res.decisions if d.state == "dropped"]
    assert dropped and all(d.reason == "budget" for d in dropped)
    assert len(res.admitted) + len(dropped) == 10
    assert [f.kind for f in res.fallbacks] == ["scope_note"]
    assert "did not fit" in res.prompt


def test_oversized_section_becomes_an_anchored_excerpt_cut_at_sentences():
    filler = " ".join(f"Paragraph {i} talks about unrelated topics like weather and lunch." for i in range(120))
    key = "To rotate the signing key, run harborctl keys rotate and restart the gateway."
    text = f"{filler} {key} {filler}"
    c = chunk("manual#keys", text, source="manual")
    res = run("How do I rotate the signing key?", scored(c), 400)
    assert len(res.admitted) == 1
    p = res.admitted[0]
    assert p.excerpt and p.chunk.id == "manual#keys"
    assert key in p.text and ELISION in p.text
    assert 'excerpt="anchored"' in res.prompt
    # cut at sentence boundaries: every kept piece is a whole sentence of the source
    for piece in p.text.split(ELISION):
        piece = piece.strip()
        if piece:
            assert piece in text and piece.endswith(".")
    assert [f.kind for f in res.fallbacks] == ["anchored_excerpt"]
    assert res.evidence_tokens <= 400


def test_anchored_excerpt_returns_none_when_nothing_fits():
    assert anchored_excerpt("q", "One long sentence " * 50 + ".", 3, TOK) is None


def test_list_all_asks_to_narrow_when_it_does_not_fit():
    items = scored(
        *[chunk(f"r#{i}", f"Region {i} is affected by the outage. " * 15, source=f"r{i}") for i in range(12)]
    )
    res = run("List all affected regions", items, 500, PS.policy("list_all"))
    kinds = [f.kind for f in res.fallbacks if f.kind != "anchored_excerpt"]
    assert kinds == ["ask_to_narrow", "scope_note"]
    assert res.evidence_tokens <= 500
    assert "narrow" in res.prompt


def test_uncovered_facet_asks_for_a_second_retrieval():
    q = "Compare the Qdrant filtering model and the pgvector filtering model"
    c = chunk("q#1", "Qdrant filtering model applies payload filters during HNSW search.", source="q")
    res = run(q, scored(c), 2000, PS.policy("comparison"))
    second = [f for f in res.fallbacks if f.kind == "second_retrieval"]
    assert second and any("pgvector" in f for f in second[0].facets)


def test_zero_budget_admits_nothing_and_says_so():
    res = run("What?", scored(chunk("a#1", "Some text here.")), 0)
    assert res.admitted == () and res.prompt == "" and res.evidence_tokens == 0
    assert [d.reason for d in res.decisions] == ["budget"]


def test_authority_breaks_a_relevance_tie():
    lo = chunk("blog#1", "The retention period is 30 days for audit logs.", source="blog", authority=0.1)
    hi = chunk("docs#1", "Audit logs are retained for 30 days by default.", source="docs", authority=1.0)
    items = [Scored(chunk=lo, score=0.5, rank=0), Scored(chunk=hi, score=0.5, rank=1)]
    env = TOK.count(EvidenceRenderer("b0b0").envelope(hi, hi.text)) + 2
    base = evidence_message_tokens(TOK, EvidenceRenderer("b0b0").block(["x"]))
    res = run("How long are audit logs retained?", items, base + env + 3, replace(PS.policy("default"), fallbacks=()))
    assert [p.chunk.id for p in res.admitted] == ["docs#1"]


def test_question_lead_ins_do_not_become_facets():
    assert len(split_facets("Audit export fails with error E4012 after the upgrade, how do I fix it?")) == 1
    older = split_facets("Which is older, the Eiffel Tower or Big Ben?")
    assert len(older) == 2 and any("eiffel" in f for f in older) and any("ben" in f for f in older)
