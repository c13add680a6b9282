#!/usr/bin/env python3
"""Fit the split cross-encoder behind the ``cross`` reranker (``admit/modelfiles/cross.npz``).

Usage::

    python3 scripts/fit_cross.py --train ../shared/train --valid ../shared/data \\
        --cache-dir /tmp/admit_cross --layers 5 [--layers 4 ...] [--epochs 2] [--out src/admit/modelfiles/cross.npz]

The model (see :mod:`admit.backends.rerankers.cross`): all-MiniLM-L6-v2's bottom ``K`` layers run on the question
and on the chunk's passage apart and stay frozen; its top ``6 - K`` layers run on their concatenation and are
fine-tuned with a scoring head and a listwise loss (multi-positive: each required chunk against the list's
non-required ones).

1. Reads every ``*.jsonl(.gz)`` of both folders. Training lists: at most ``--per-file`` per training file (a seeded
   sample), each with its required chunks and the ``--negatives`` non-required chunks BM25 ranks highest in the
   list (hard negatives). Families in ``--exclude`` (default: the research-use ``docs_policyqa`` and
   ``docs2_evidence_inference``) are never fitted on; ``--test-sample`` lists of each are scored as families the
   model never saw, beside every list of the validation folder.
2. Bottom states: every distinct question and chosen passage is encoded once with MiniLM (torch) and its states
   after layers 3, 4 and 5 are kept in float16 memory-mapped files under ``--cache-dir`` (question: 40 word pieces;
   passage: its first 160). Texts are encoded shortest first within the training texts and within the rest.
   Resumable: rows are written in a fixed order and a progress file records how many are done.
3. Training per ``K``: checkpoints every ``--ckpt-every`` steps (model, optimiser, step, data order) and resumes
   from the last one; deterministic given ``--seed``. After each epoch prints, per dataset, R@68 (retained recall
   at 68% chunk compression, top-N by the model's score) beside BM25 top-N on the same passages.
4. Writes the float16 model file of the best ``K`` (``--out``) and a JSON of every figure (``--results``).

Torch only here (the ``fit`` extra); inference is numpy. Runs unchanged on a GPU (``--device cuda``). The steps are
:mod:`fitlib.cross_train`'s, which also lists the on-disk formats (cache, checkpoints, log) a resumed fit reads.
"""

from __future__ import annotations

from fitlib.cross_train import CrossArgs, run


def main(argv: list[str] | None = None) -> int:
    return run(CrossArgs.parse(argv, __doc__.split("\n\n")[0]))


if __name__ == "__main__":
    raise SystemExit(main())
