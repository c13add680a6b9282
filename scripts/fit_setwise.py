#!/usr/bin/env python3
"""Fit admit's ``setwise`` model on a training folder and score it out of sample on a validation folder.

Usage::

    python3 scripts/fit_setwise.py --train ../shared/train --valid ../shared/data \\
        [--out src/admit/modelfiles/setwise.json] [--ship train+valid|train] [--lodo] [--no-write]

1. Reads every ``*.jsonl`` / ``*.jsonl.gz`` file of both folders (the record format of ``../shared/data``;
   labels are read for fitting and scoring only, never stored) and adds augmented training lists made from
   the *training* records alone: the single-hop sub-questions of MuSiQue decompositions and of 2Wiki evidence
   triples (one required chunk each, so the model also learns questions that need one chunk), and MuSiQue lists
   re-sampled to 10 candidates.
2. Embeds every question and passage with all-MiniLM-L6-v2 (vectors cached under ``--cache-dir``) and computes
   the features of :mod:`admit.prune.setwise_model`.
3. Fits the staged tree model on the training lists: stage k reads stage k-1's out-of-fold probabilities; the
   coverage stage reads the last stage's out-of-fold probabilities; the grade cut points are chosen on those
   same out-of-fold values (training data only): grade 3 at the level whose mean compression over the training
   datasets is 68%, grades 2 / 4 / 5 at the levels for 55% / 76% / 85%.
4. Prints, per validation dataset, retained recall and chunk compression at grade thresholds 1-5, R@68 (recall at
   68% chunk compression, interpolated along the grade thresholds, as ``admit prune`` output is scored), the
   model's top-N R@68, and the dense / BM25 / hybrid top-N baselines, in the same run.
5. ``--lodo``: leave one dataset family out (fit on every other family of train + valid, score on it).
6. Writes the model JSON (with ``--ship train+valid``, the default, refit on both folders; the figures printed
   and stored in ``meta`` are those of the train-only fit scored on the validation folder).

Needs numpy, scikit-learn and the ``admit[fit]`` extras. The steps are :mod:`fitlib.setwise`'s.
"""

from __future__ import annotations

from fitlib.setwise import SetwiseArgs, run


def main(argv: list[str] | None = None) -> int:
    return run(SetwiseArgs.parse(argv, __doc__, raw=True))


if __name__ == "__main__":
    raise SystemExit(main())
