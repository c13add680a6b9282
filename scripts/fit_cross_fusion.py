#!/usr/bin/env python3
"""Fit how ``setwise`` reads the ``cross`` score, on documentation families neither model was fitted on.

Usage::

    python3 scripts/fit_cross_fusion.py --phase setwise --train ../shared/train --out /tmp/admit_fusion
    python3 scripts/fit_cross_fusion.py --phase fuse --cross /tmp/admit_cross/cross.npz --out /tmp/admit_fusion \\
        [--write src/admit/modelfiles/cross.npz]

Held-out lists: ``--per-family`` lists of each documentation family that the shipped ``setwise`` trees never saw
(the ``docs2_*`` files and ``docs_policyqa``), none of them among the lists ``scripts/fit_cross.py`` trains on
(the same seeded sample is drawn and skipped; the research-use families are never trained on at all).

1. ``--phase setwise``: the shipped ``setwise`` model scores each list (its final-stage chunk probabilities); they
   are written to ``OUT/setwise.json`` (slow: MiniLM over every passage; resumable per family).
2. ``--phase fuse``: the cross model scores every chunk; the fusion, a logistic regression of "required" on
   ``logit(p_setwise)``, the cross score's z-score within the list and its raw value, is fitted leave-one-family-out
   (fit on the other families, score the left-out one) and the script prints, per family, R@68 and the default
   threshold's recall / compression for ``setwise`` alone, fused, and cross top-N. With ``--write`` the fusion
   fitted on every family (the shippable ones: research-use families are left out) goes into the cross model file.
"""

from __future__ import annotations

from pathlib import Path

from fitlib.fusion import FusionArgs, phase_fuse, phase_setwise


def main(argv: list[str] | None = None) -> int:
    args = FusionArgs.parse(argv, __doc__.split("\n\n")[0])
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if args.phase == "setwise":
        phase_setwise(args)
    else:
        phase_fuse(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
