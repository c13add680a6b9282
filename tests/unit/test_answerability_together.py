"""Issue 46, better evidence for the verdict: how the question's words sit in ONE passage (features read by the
answerability models: ``best_rare_cov``, ``best_pair_window``, ``best_prob_share``)."""

from __future__ import annotations

from admit.answerability import features
from admit.answerability.features import KNOWN_FEATURES

Q = "Which Tekton plugin shows the pipeline runs of a Kubernetes cluster?"
TOGETHER = ["The Tekton plugin shows the pipeline runs of each Kubernetes cluster in the catalog."]
SPREAD = [
    "The Tekton plugin is enabled in the dynamic plugins file.",
    "Each Kubernetes cluster is listed on the topology page.",
]
#: The same key words, each more than PAIR_WINDOW content words from the next.
_FILL = "administrator writes secrets tokens routes images names options settings values files"
FAR = [
    f"Tekton: {_FILL}. Plugin: {_FILL}. Shows: {_FILL}. Pipeline: {_FILL}. Runs: {_FILL}. Kubernetes: {_FILL}. "
    f"Cluster: {_FILL}."
]


def test_rare_words_held_by_one_passage_score_above_the_same_words_spread_over_two() -> None:
    one, two = features(Q, TOGETHER), features(Q, SPREAD)
    assert one["best_rare_cov"] == 1.0  # tekton, plugin, kubernetes (not common English words) all in one passage
    assert two["best_rare_cov"] < 1.0
    assert two["union_q_cov"] > two["best_q_cov"]  # the union holds more than the best: spread


def test_key_word_pairs_close_together_score_above_the_same_words_far_apart() -> None:
    near, far = features(Q, TOGETHER), features(Q, FAR)
    assert near["best_q_cov"] == far["best_q_cov"]  # the same words held ...
    assert near["best_pair_window"] > far["best_pair_window"]  # ... but only one passage names them together
    assert near["best_pair_window"] == 1.0


def test_the_best_chunks_share_of_the_probability_and_every_new_feature_is_known() -> None:
    f = features(Q, [*TOGETHER, *SPREAD], dense=[0.6, 0.3, 0.2], probs=[0.6, 0.3, 0.1])
    assert abs(f["best_prob_share"] - 0.6) < 1e-9
    assert features(Q, TOGETHER)["best_prob_share"] == 0.0  # no pruner probabilities
    assert {"best_rare_cov", "best_pair_window", "best_prob_share"} <= KNOWN_FEATURES
