#!/usr/bin/env python3
"""Fit admit's answerability models and score them out of sample.

Usage::

    python3 scripts/fit_answerability.py --train ../shared/train --valid ../shared/data \\
        [--per-file 120] [--out src/admit/modelfiles/answerability.json] [--no-write]
        [--reader] [--setwise-extra sent_dense,sent_cov,sent_pair_cov,sent_type]

Every labelled list gives two cases: the list as retrieved (answerable: its gold chunks are in it) and the list
with every gold chunk removed (not answerable). The setwise pruner grades each list as it would in a request
(threshold 3, keep_top_k 1); the ``setwise`` model reads the kept chunks' features
(:func:`admit.answerability.features`), the ``lexical`` model the whole list's lexical features (what
strategy ``none`` admits). A logistic regression (L2, standardised features) is fitted on the training folder and
scored on the validation folder, whose questions it never saw: precision and recall of "not answered" per file.
Only coefficients, scalings and figures are written; never a label. ``--reader`` (or a reader feature in
``--setwise-extra``) adds the sentence reader's features (:mod:`admit.answerability.reader`) to every setwise case:
the sentences it reads of every candidate are encoded first in one batch (cached under ``--cache-dir``).
"""

from __future__ import annotations

from fitlib.answerability import AnswerabilityArgs, run


def main(argv: list[str] | None = None) -> None:
    run(AnswerabilityArgs.parse(argv, __doc__.split("\n")[0]))


if __name__ == "__main__":
    main()
