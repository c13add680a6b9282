"""Issue 46, a question-and-passage reader at sentence level (:mod:`admit.answerability.reader`): does one sentence
of the most probable admitted chunks state what the question asks, and hold a value of the type it asks for?"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from admit.answerability import assess, load_models
from admit.answerability.features import KNOWN_FEATURES, SETWISE
from admit.answerability.model import AnswerabilityModel
from admit.answerability.reader import READ_CHUNKS, READER, answer_type, reader_features, reader_texts
from admit.backends.embedders.shared import shared_embedder

Q = "Who shot President James Garfield at the railroad station?"
ANSWER = (
    "Assassination of James A. Garfield\n"
    "Garfield took office in March. President James Garfield was shot at the railroad station by Charles Guiteau. "
    "He died in September."
)
#: The same entities, no sentence stating the asked relation (who shot him).
NEAR_MISS = (
    "James A. Garfield\n"
    "James Garfield was the 20th President. The railroad station stood on the Mall. "
    "Garfield was born in a log cabin in Ohio."
)


def test_the_answers_sentence_reads_closer_and_fuller_than_a_near_miss_that_names_the_same_entities() -> None:
    emb = shared_embedder("minilm")
    yes = reader_features(Q, [ANSWER], probs=[0.9], embedder=emb)
    no = reader_features(Q, [NEAR_MISS], probs=[0.9], embedder=emb)
    assert yes["sent_cov"] > no["sent_cov"]  # one sentence holds shot, president, railroad, station together
    assert yes["sent_dense"] > no["sent_dense"] + 0.05  # MiniLM reads the sentence that states it as closer
    assert yes["sent_type"] == 1.0  # "Charles Guiteau": a name the question lacks
    assert set(yes) == set(READER) and set(READER) <= KNOWN_FEATURES


def test_answer_types_and_their_presence_in_the_best_sentence() -> None:
    assert [answer_type(q) for q in ("When was it released?", "How many ports are open?", "Who wrote it?")] == [
        "date",
        "count",
        "name",
    ]
    assert answer_type("Which version added the flag?") == "version"
    assert answer_type("How do I enable tracing?") == "steps"
    assert answer_type("Is the cache shared?") == ""
    dated = reader_features("When was the bridge opened?", ["Bridge\nThe bridge was opened in 1932."])
    undated = reader_features("When was the bridge opened?", ["Bridge\nThe bridge was opened by the mayor."])
    assert (dated["sent_type"], undated["sent_type"]) == (1.0, 0.0)
    assert reader_features("Is the bridge open?", ["Bridge\nThe bridge is long."])["sent_type"] == 1.0  # no type asked


def test_two_hops_from_two_chunks_cover_the_question_together() -> None:
    q = "Which river flows through the capital of the country where Tardis Bakery was founded?"
    hop1 = "Tardis Bakery\nTardis Bakery was founded in Norway in 1901."
    hop2 = "Oslo\nOslo is the capital of Norway, and the Akerselva river flows through it."
    f = reader_features(q, [hop1, hop2], probs=[0.8, 0.7])
    assert f["sent_pair_cov"] > f["sent_cov"]  # neither sentence alone holds the bridge question's words


def test_only_the_most_probable_chunks_are_read_and_few_sentences_of_each() -> None:
    calls: list[Sequence[str]] = []

    class Counting:
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            calls.append(list(texts))
            return np.tile(np.eye(1, 384, dtype=np.float32), (len(texts), 1))

    long = "Topic\n" + " ".join(f"Sentence {i} about railroad stations." for i in range(40))
    reader_features(Q, [long] * (READ_CHUNKS + 3), probs=[0.1 * i for i in range(READ_CHUNKS + 3)], embedder=Counting())
    assert len(calls) == 1  # one encoding per request: the question and the sentences together
    assert len(calls[0]) == 1 + READ_CHUNKS * len(reader_texts(Q, long))
    assert len(reader_texts(Q, long)) < 40


def test_the_stage_reads_the_reader_only_for_a_model_that_reads_it() -> None:
    shipped = load_models()[SETWISE]
    reads = AnswerabilityModel(
        name=SETWISE,
        features=(*shipped.features, "sent_dense"),
        mean=(*shipped.mean, 0.0),
        scale=(*shipped.scale, 1.0),
        coef=(*(0.0 for _ in shipped.features), 1.0),
        bias=0.0,
        threshold=0.5,
    )
    emb = shared_embedder("minilm")
    kw = {"dense": [0.5], "probs": [0.9], "graded": 5, "embedder": emb}
    near = assess(Q, [NEAR_MISS], models={SETWISE: reads, "lexical": shipped}, **kw)  # type: ignore[arg-type]
    yes = assess(Q, [ANSWER], models={SETWISE: reads, "lexical": shipped}, **kw)  # type: ignore[arg-type]
    assert yes.probability > near.probability  # the model read the best sentence's similarity
