#!/usr/bin/env python3
"""Fit the ``cross`` answerability model: whether the kept chunks answer the question, from the model that reads
question and chunk together (its best and second-best score and their margin) beside the lexical coverage features.

Usage (the same data arguments as the ``scripts/fit_cross.py`` run whose state cache it reads)::

    python3 scripts/fit_cross_answerability.py --model /work/fit/cross.K5.npz --cache-dir /work/fit/cache \\
        [--fit-args /work/fit/fit_log.json] [--write src/admit/modelfiles/answerability.json]

The cross model scores every list the fit kept out of sample (the validation folder and the research-use families,
never fitted on). Each list gives cases of one length: the gold chunks with the best-scored other chunk
(answerable, its gold all kept) against as many of the best-scored other chunks (unanswerable: a near miss, only
related sections remain), and the gold alone against as many others alone. A logistic regression is fitted and its
two thresholds set as in ``scripts/fit_answerability.py`` (``fit_model``), scored leave one family out. The shipped
fit reads the shippable families only (the validation folder's); the research-use families are scored, never fitted.
"""

from __future__ import annotations

from fitlib.cross_answerability import CrossAnswerabilityArgs, run


def main(argv: list[str] | None = None) -> int:
    return run(CrossAnswerabilityArgs.parse(argv, __doc__.split("\n\n")[0]))


if __name__ == "__main__":
    raise SystemExit(main())
