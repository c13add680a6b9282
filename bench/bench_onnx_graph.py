"""Where the MiniLM onnxruntime forward pass goes, and this tree's graph beside another graph file in one run.

Encodes the passages of ``../shared/data``'s first RHDH lists (as an ingest or a live setwise call cuts them) in
the batches the embedder makes, one thread, with this tree's graph (``--encoder``) and with each ``--baseline``
graph file (e.g. a checkout's cached ``minilm-...-v4-int8.onnx`` under ``$XDG_CACHE_HOME/admit/onnx``), in turn,
``--repeat`` times; prints each graph's CPU seconds (best) and its ratio to the first baseline, the largest
difference of its vectors from this tree's and, with ``--ops``, the share of each operator in onnxruntime's own
profile of this tree's graph.

    nice -n 10 python bench/bench_onnx_graph.py [DATA_DIR] [--baseline OLD.onnx] [--encoder onnx-int8]
        [--texts 120] [--repeat 3] [--ops]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def _session(model: Any, threads: int = 1, profile: str | None = None) -> Any:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if profile:
        opts.enable_profiling = True
        opts.profile_file_prefix = profile
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data_dir", nargs="?", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--baseline", action="append", default=[], help="another graph file to time beside this tree's")
    ap.add_argument("--encoder", default="onnx-int8", choices=("onnx-int8", "onnx-fp32"))
    ap.add_argument("--texts", type=int, default=120)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ops", action="store_true", help="onnxruntime's profile of this tree's graph, by operator")
    a = ap.parse_args()
    import os

    from admit.backends.embedders.minilm import MiniLMEmbedder, _pad
    from admit.passages import passages

    emb = MiniLMEmbedder(threads=1, encoder=a.encoder)
    emb.warm_up()
    with open(Path(a.data_dir) / "rhdh_docs.jsonl", encoding="utf-8") as fh:
        rows = [json.loads(line) for _, line in zip(range(40), fh, strict=False)]
    texts = [p for r in rows for c in r["candidates"] for p in passages(c["title"], c["text"])][: a.texts]
    ids = [e.ids for e in emb._tokenizer.encode_batch(texts)]
    lengths = [len(x) for x in ids]
    groups = list(emb._batches(lengths))

    def run(session: Any) -> np.ndarray:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for g in groups:
            batch, mask = _pad(ids, lengths, g)
            out[g] = session.run(["embeddings"], {"input_ids": batch, "attention_mask": mask})[0]
        return out

    graphs = {f"baseline {Path(b).name}": _session(b) for b in a.baseline}
    graphs[f"this tree ({Path(str(emb._model)).name if isinstance(emb._model, str) else 'in memory'})"] = _session(
        emb._model
    )
    print(
        f"{len(texts)} RHDH passages, {np.mean(lengths):.0f} word pieces on average, {len(groups)} batches; "
        f"one thread; load average {os.getloadavg()[0]:.1f}"
    )
    mine = run(next(reversed(graphs.values())))
    cpu: dict[str, list[float]] = {k: [] for k in graphs}
    diff: dict[str, float] = {}
    for _ in range(a.repeat):
        for name, session in graphs.items():
            t = time.process_time()
            vecs = run(session)
            cpu[name].append(time.process_time() - t)
            diff[name] = float(np.abs(vecs - mine).max())
    first = min(next(iter(cpu.values())))
    for name, xs in cpu.items():
        print(
            f"{name:60s} CPU s {' '.join(f'{x:.2f}' for x in xs)}  best {min(xs):.2f}  x{min(xs) / first:.3f}  "
            f"max |vector - this tree's| {diff[name]:.2g}"
        )
    if a.ops:
        with tempfile.TemporaryDirectory(prefix="bench-onnx-") as tmp:
            session = _session(emb._model, profile=str(Path(tmp) / "p"))
            run(session)
            events = json.loads(Path(session.end_profiling()).read_text())
        by: collections.Counter[str] = collections.Counter()
        for e in events:
            if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
                by[e["args"]["op_name"]] += e["dur"]
        total = sum(by.values())
        for op, us in by.most_common():
            print(f"  {op:28s} {100 * us / total:5.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
