"""What the adapters' core tells a framework user (issue 34, item 8), with fakes: whether the kept documents answer
the question on every document, titles bounded with the reason said, and stored vectors reused only for the
text admit encodes, each document's reason saying what happened to its vector, so that no decision depends on
what an earlier call left in the cache."""

from __future__ import annotations

import pickle
import time

import numpy as np

from admit.adapters._core import MAX_TITLE_CHARS, AdmitFilter, Decision, Doc, FilterRun
from admit.backends.embedders.base import CachedEmbedder
from admit.backends.embedders.fake import FakeEmbedder

QUESTION = "Which port does the registry listen on?"
TITLED = [
    Doc(id="ports", title="Ports", text="The registry listens on port 7420 by default."),
    Doc(id="config", title="Configuration", text="Change the registry port with listen_port in config.yaml."),
    Doc(id="fruit", title="Fruit", text="Bananas are yellow and sweet."),
    Doc(id="birds", title="Birds", text="Penguins cannot fly but they swim well."),
]


def _verdicts(run: FilterRun) -> list[tuple[bool, int | None, str]]:
    """Each verdict without the vector's note (kept, grade, the pruner's reason)."""
    return [(v.kept, v.grade, v.reason.split("; store vector")[0]) for v in run.verdicts]


def test_every_document_and_the_result_say_whether_the_question_is_answered() -> None:
    f = AdmitFilter(pruner_options={"embedder": CachedEmbedder(FakeEmbedder())})
    run = f.run(QUESTION, TITLED)
    # True only for "answered", None for "unsure" (the fake embedder's case today), False for "not_answered"
    assert run.answerable is {"answered": True, "unsure": None, "not_answered": False}[run.answer_state]
    for v in run.verdicts:
        meta = run.metadata(v)
        assert meta["answerable"] is run.answerable and meta["answerability"] == run.answerability
        assert meta["answer_state"] == run.answer_state
        assert {"kept", "stage", "strategy", "grade", "reason", "score", "rank", "excerpt"} <= set(meta)


def test_a_decision_unpacks_as_the_pair_and_keeps_its_attributes_through_pickle() -> None:
    d = Decision(["a"], ["b"], answerable=False, answerability=0.2)
    kept, dropped = d
    assert (kept, dropped, d.kept, d.dropped) == (["a"], ["b"], ["a"], ["b"])
    assert d.answer_state == "not_answered"
    again = pickle.loads(pickle.dumps(d))
    assert tuple(again) == (["a"], ["b"]) and again.answerable is False and again.answerability == 0.2
    unsure = pickle.loads(pickle.dumps(Decision(["a"], [], answerable=None, answerability=0.3)))
    assert (unsure.answerable, unsure.answer_state) == (None, "unsure")


def test_a_huge_title_is_cut_and_the_reason_says_so() -> None:
    docs = [Doc(id="big", title="T" * 10_000_000, text="The registry listens on port 7420."), TITLED[2]]
    f = AdmitFilter(pruner_options={"embedder": CachedEmbedder(FakeEmbedder())}, max_tokens=500)
    t0 = time.perf_counter()
    run = f.run(QUESTION, docs)
    assert time.perf_counter() - t0 < 30  # bounded by the cut title, not by 10 MB per passage
    big = run.verdicts[0]
    assert f"title cut to {MAX_TITLE_CHARS} of its 10000000 characters" in big.reason, big.reason
    assert "title cut" not in run.verdicts[1].reason


def test_store_vectors_of_another_text_are_not_reused_and_the_reason_says_so() -> None:
    cached = CachedEmbedder(FakeEmbedder())
    # a store embeds the text; admit encodes the title with it: these vectors are of another text
    store = cached.embed([d.text for d in TITLED])
    cached._cache.clear()
    docs = [Doc(id=d.id, title=d.title, text=d.text, embedding=v.tolist()) for d, v in zip(TITLED, store, strict=True)]
    for mode in ("auto", "reuse"):
        run = AdmitFilter(embeddings=mode, pruner_options={"embedder": cached}).run(QUESTION, docs)
        for v in run.verdicts:
            assert "store vector not reused: another text (the title is encoded with the text)" in v.reason, v.reason
        cached._cache.clear()


def test_store_vectors_of_the_same_text_and_model_are_reused_and_said() -> None:
    cached = CachedEmbedder(FakeEmbedder())
    untitled = [Doc(id=d.id, text=d.text) for d in TITLED]
    own = cached.embed([d.text for d in untitled])
    cached._cache.clear()
    docs = [Doc(id=d.id, text=d.text, embedding=v.tolist()) for d, v in zip(untitled, own, strict=True)]
    run = AdmitFilter(pruner_options={"embedder": cached}).run(QUESTION, docs)
    notes = [v.reason.split("; ")[-1] for v in run.verdicts]
    assert notes[0].startswith("store vector checked against")  # the first one: encoded and compared
    assert notes[1:] == ["store vector reused (same text and model)"] * 3
    other = [Doc(id=d.id, text=d.text, embedding=(-v).tolist()) for d, v in zip(untitled, own, strict=True)]
    cached._cache.clear()
    run = AdmitFilter(pruner_options={"embedder": cached}).run(QUESTION, other)
    assert all("store vector not reused: another model (cosine" in v.reason for v in run.verdicts)


def test_no_decision_depends_on_what_an_earlier_call_left_in_the_cache() -> None:
    shared = CachedEmbedder(FakeEmbedder())
    rng = np.random.default_rng(7)
    # vectors a store computed of the text alone (here: of no text admit would encode), handed over with "reuse"
    foreign = [Doc(id=d.id, title=d.title, text=d.text, embedding=rng.normal(size=shared.dim).tolist()) for d in TITLED]
    AdmitFilter(embeddings="reuse", pruner_options={"embedder": shared}).run(QUESTION, foreign)
    after = AdmitFilter(embeddings="ignore", pruner_options={"embedder": shared}).run(QUESTION, TITLED)
    fresh = AdmitFilter(embeddings="ignore", pruner_options={"embedder": CachedEmbedder(FakeEmbedder())})
    assert _verdicts(after) == _verdicts(fresh.run(QUESTION, TITLED))
    assert [v.score for v in after.verdicts] == [v.score for v in fresh.run(QUESTION, TITLED).verdicts]
