"""The answerability stage as a room of its own: one record per run, read (never recomputed) by the faces, and
the one text toolkit its features read."""

from __future__ import annotations

from dataclasses import replace

import pytest

from admit import _text
from admit.answerability import SETWISE, Answerability, assess, assess_kept, no_answer_fallback, on_no_answer
from admit.errors import ConfigError
from admit.pipeline import prune_candidates
from admit.prune import PruneSettings
from admit.prune.setwise import SetwisePruner
from admit.prune.top_n import TopNPruner
from admit.types import Chunk, Scored

QUESTION = "What port does the server listen on?"


def _chunks() -> list[Chunk]:
    return [
        Chunk(id="port", source_id="s", text="The server listens on port 8080."),
        Chunk(id="cake", source_id="s", text="Whisk the eggs and fold in the flour."),
    ]


def test_prune_candidates_assesses_the_kept_chunks_once_and_as_dict_serialises_that_record() -> None:
    run = prune_candidates(
        QUESTION,
        _chunks(),
        settings=PruneSettings(strategy="top_n", keep_top_k=0, params={"n": 1}),
        reranker=None,
        pruner=TopNPruner(),
        scores=[0.9, 0.1],
    )
    assert run.kept_ids == ["port"]
    assert run.answer == assess_kept(QUESTION, [_chunks()[0]], run.outcome)
    assert run.answer is not None and run.answer.state == "answered"
    # the serialiser reads the record: a record put on the run is what every face returns
    said = Answerability(state="not_answered", probability=0.125, model="lexical", reason="r", missing=("port",))
    out = replace(run, answer=said).as_dict(QUESTION)
    assert (out["answerable"], out["answerability"], out["answer_state"]) == (False, 0.125, "not_answered")
    assert "answerable" not in replace(run, answer=None).as_dict(QUESTION)


def test_prune_candidates_without_assessing_leaves_the_record_to_the_caller() -> None:
    run = prune_candidates(
        QUESTION,
        _chunks(),
        settings=PruneSettings(strategy="none"),
        reranker=None,
        pruner=None,
        scores=[1, 0],
        assess=False,
    )
    assert run.answer is None and set(run.as_dict()) >= {"kept_ids", "decisions"}


def test_the_record_is_the_trace_shape_and_the_fields_of_every_face() -> None:
    a = Answerability(state="not_answered", probability=0.2, model="lexical", reason="why", missing=("E4012",))
    assert a.as_dict() == {
        "answerable": False,
        "probability": 0.2,
        "model": "lexical",
        "reason": "why",
        "state": "not_answered",
        "missing": ["E4012"],
    }
    assert list(a.as_dict()) == ["state", "answerable", "probability", "model", "reason", "missing"]
    assert a.answer_fields() == {"answerable": False, "answerability": 0.2, "answer_state": "not_answered"}
    assert "'E4012'" in a.note("note") and "rephrase or narrow" in a.note("ask_to_narrow")
    ok = Answerability(state="answered", probability=0.9, model="lexical", reason="fine")
    assert ok.after_pack(True) is ok
    assert ok.after_pack(False).state == "not_answered" and ok.after_pack(False).reason == "no evidence fits the budget"
    with pytest.raises(ConfigError, match="An answer state is one of"):
        Answerability(probability=0.5, model="m", reason="r", state="maybe")  # type: ignore[arg-type]


def test_on_no_answer_notes_or_withholds_and_the_fallback_says_which() -> None:
    survivors = [Scored(chunk=c, score=0.5, rank=i) for i, c in enumerate(_chunks())]
    no = Answerability(state="not_answered", probability=0.1, model="lexical", reason="off topic")
    noted = on_no_answer(no, survivors, "note")
    assert noted.survivors == survivors and len(noted.notes) == 1 and not noted.withheld
    held = on_no_answer(no, survivors, "admit_nothing")
    assert held.survivors == [] and not held.notes
    assert [(d.chunk_id, d.stage, d.reason) for d in held.withheld] == [
        ("port", "pack", "no_answer"),
        ("cake", "pack", "no_answer"),
    ]
    assert "admit_nothing (off topic)" in (held.withheld[0].detail or "")
    (fb,) = no_answer_fallback(no, ["port", "cake"], "admit_nothing", noted=False)
    assert fb.kind == "no_answer" and fb.chunk_ids == ("port", "cake") and "admitted nothing" in fb.detail
    (fb,) = no_answer_fallback(no, ["port"], "note", noted=True)
    assert "noted in the evidence block (on_no_answer = note)" in fb.detail
    yes = Answerability(state="answered", probability=0.9, model="lexical", reason="fine")
    assert on_no_answer(yes, survivors, "admit_nothing").survivors == survivors
    assert no_answer_fallback(yes, ["port"], "note", noted=False) == []


def test_the_setwise_model_is_named_after_the_strategy_and_read_with_its_signals() -> None:
    texts = ["The server listens on port 8080.", "Ports below 1024 need root.", "Logs go to /var/log."]
    graded = assess(QUESTION, texts, dense=[0.7, 0.3, 0.1], probs=[0.9, 0.2, 0.1], graded=len(texts))
    assert graded.model == SetwisePruner.name == SETWISE
    assert assess(QUESTION, texts).model == "lexical"


# ---------------------------------------------------------------- the one text toolkit


def test_one_stemmer_with_the_fitted_models_variant_explicit() -> None:
    assert [_text.stem(w) for w in ("files", "policies", "class", "bus")] == ["file", "policy", "class", "bus"]
    assert [_text.stem(w, ies=False) for w in ("files", "policies", "class")] == ["file", "policie", "class"]


def test_content_tokens_fold_is_the_normalised_variant_and_content_words_its_stemmed_set() -> None:
    text = "The Straße has 5 policies and a ﬁle"
    assert _text.content_tokens(text) == ["straße", "5", "policies", "ﬁle"]
    assert _text.content_tokens(text, fold=True) == ["strasse", "5", "policies", "file"]
    assert _text.content_words(text) == frozenset({"strasse", "policy", "file"})


def test_sentences_by_marks_cuts_at_end_marks_and_paragraphs_without_a_model() -> None:
    text = "First one. Second one!  Third?\n\nA paragraph 3.5 long。次の文"
    assert _text.sentences(text, by="marks") == ["First one.", "Second one!", "Third?", "A paragraph 3.5 long。次の文"]
    assert _text.sentences("Done.  ", by="marks") == ["Done."]
