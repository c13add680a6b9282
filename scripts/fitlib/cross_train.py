"""The cross-encoder fit: per ``K``, train with checkpoints, score out of sample after each epoch, export
(``scripts/fit_cross.py`` is its command line; its docstring describes the steps).

On-disk formats (a running fit resumes from them): the state cache (:mod:`fitlib.cross_cache`), the checkpoint
``ckpt_K{k}_seed{seed}.pt`` under ``--cache-dir`` (``params``, ``opt``, ``sched``, ``step``, ``history``,
``pairs_seen``), the exported ``.npz`` (float16 tensors and a JSON ``meta``) and the ``--log`` JSON (per ``K{k}``:
``run``, ``pairs_seen``, ``pairs_seen_all_runs``, ``earlier_runs``, ``history``, ``args``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from admit._text import bm25_matrix
from admit.backends.rerankers.cross import _tokens as _toks  # the passage choice's tokens
from fitlib.args import FitArgs, arg
from fitlib.cross_cache import StateCache, build_caches
from fitlib.cross_data import EXCLUDE, List_, ListSpec, load_lists, topn_r68
from fitlib.cross_torch import Joint, batch_tensors, listwise_loss, score_lists
from fitlib.data import TRAIN, VALID

__all__ = ["RUN_ID", "CrossArgs", "evaluate", "run", "write_log"]


@dataclass(frozen=True, kw_only=True)
class CrossArgs(FitArgs):
    """``scripts/fit_cross.py``'s arguments (the order is the fit log's and the results file's)."""

    train: str = arg(TRAIN)
    valid: str = arg(VALID)
    cache_dir: str = arg("/tmp/admit_cross")
    layers: list[int] | None = arg(None, help="K, the frozen bottom layers (repeatable): 3, 4, 5")
    per_file: int = arg(300, help="training lists sampled per file (0: all)")
    negatives: int = arg(4, help="hard negatives per training list")
    test_sample: int = arg(150, help="lists scored of each never-fitted family")
    exclude: str = arg(",".join(EXCLUDE), help="training files never fitted on")
    epochs: int = arg(1)
    batch_lists: int = arg(6)
    lr: float = arg(5e-5)
    warmup: int = arg(50)
    dropout: float = arg(0.1)
    ckpt_every: int = arg(100)
    seed: int = arg(0)
    device: str = arg("auto")
    threads: int = arg(0, help="torch threads (0: torch's default)")
    restart: bool = arg(False, help="ignore checkpoints")
    max_steps: int = arg(0, help="stop (checkpointed) after this many steps this run")
    cache_only: bool = arg(False, help="fill the state cache and stop")
    cache_by_other: bool = arg(False, help="another process fills the cache (--cache-only): wait for it")
    out: str = arg("", help="model file of the best K (e.g. src/admit/modelfiles/cross.npz)")
    cache_layers: list[int] | None = arg(None, help="bottom states kept (default: --layers)")
    from_checkpoint: str = arg("", help="score and export this checkpoint instead of training")
    init: str = arg("", help="warm start: a model file of the same K (e.g. the shipped one)")
    log: str = arg("", help="the fit log (JSON: steps, pairs seen, out-of-sample figures)")
    self_supervised: bool = arg(False, help="add heading lists from the documentation files")
    ss_per_file: int = arg(1500, help="heading lists kept per documentation file")
    results: str = arg("", help="JSON of every figure")

    def lists(self) -> ListSpec:
        """Which lists this fit reads."""
        return ListSpec.of(self)


def baselines(lists: Sequence[List_], qc: StateCache, pc: StateCache) -> dict[str, list[np.ndarray]]:
    bm25 = [bm25_matrix([_toks(lst.question)], [_toks(p) for p in lst.passages])[0] for lst in lists]
    dense = [(np.asarray(pc.emb[lst.prows], np.float32) @ np.asarray(qc.emb[lst.qrow], np.float32)) for lst in lists]
    return {"bm25": bm25, "dense": dense}


def evaluate(
    model: Joint, evals: dict[str, list[List_]], qc: StateCache, pc: StateCache, device: str
) -> dict[str, dict[str, float]]:
    while pc.done < len(pc.texts) or qc.done < len(qc.texts):  # filled by another process (--cache-by-other)
        time.sleep(10)
    out: dict[str, dict[str, float]] = {}
    print(f"  {'dataset':45s} {'cross':>6s} {'bm25':>6s} {'dense':>6s}", file=sys.stderr)
    for name, lists in evals.items():
        sc = score_lists(model, lists, qc, pc, device)
        base = baselines(lists, qc, pc)
        row = {"cross": topn_r68(lists, sc), **{k: topn_r68(lists, v) for k, v in base.items()}, "n": len(lists)}
        out[name] = row
        print(
            f"  {name:45s} {row['cross']:6.3f} {row['bm25']:6.3f} {row['dense']:6.3f}  ({len(lists)} lists)",
            file=sys.stderr,
            flush=True,
        )
    return out


# ------------------------------------------------------------------------------------------ training


def train_k(
    k: int,
    args: CrossArgs,
    train: Sequence[List_],
    evals: dict[str, list[List_]],
    qc: StateCache,
    pc: StateCache,
) -> tuple[Joint, dict[str, Any]]:
    import torch

    device = args.device
    model = Joint(k, device, args.seed)
    if args.init and Path(args.init).is_file():
        loaded = model.load(Path(args.init))
        print(f"K={k}: warm start from {args.init} ({len(loaded)} of {len(model.params)} tensors)", file=sys.stderr)
    slow = [v for n, v in model.params.items() if n.startswith("joint.")]
    fast = [v for n, v in model.params.items() if not n.startswith("joint.")]
    opt = torch.optim.AdamW([{"params": slow, "lr": args.lr}, {"params": fast, "lr": args.lr * 20}], weight_decay=0.01)
    steps_per_epoch = math.ceil(len(train) / args.batch_lists)
    total = steps_per_epoch * args.epochs
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / max(1, args.warmup)) * max(0.05, 1.0 - s / max(1, total))
    )
    ckpt = Path(args.cache_dir) / f"ckpt_K{k}_seed{args.seed}.pt"
    step, history, pairs_seen = 0, [], 0
    if ckpt.exists() and not args.restart:
        state = torch.load(ckpt, map_location=device, weights_only=False)
        for n, v in state["params"].items():
            model.params[n].data.copy_(v)
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        step, history = state["step"], state["history"]
        pairs_seen = int(state.get("pairs_seen", 0))
        print(f"K={k}: resumed at step {step}/{total}", file=sys.stderr, flush=True)

    def save() -> None:
        tmp = ckpt.with_suffix(".tmp")
        torch.save(
            {
                "params": {n: v.detach() for n, v in model.params.items()},
                "opt": opt.state_dict(),
                "sched": sched.state_dict(),
                "step": step,
                "history": history,
                "pairs_seen": pairs_seen,
            },
            tmp,
        )
        os.replace(tmp, ckpt)

    t0, losses = time.time(), []
    stop = step + args.max_steps if args.max_steps else total
    while step < min(total, stop):
        epoch, within = divmod(step, steps_per_epoch)
        order = list(range(len(train)))
        random.Random(args.seed * 1000 + epoch).shuffle(order)
        part = [train[i] for i in order[within * args.batch_lists : (within + 1) * args.batch_lists]]
        torch.manual_seed(args.seed * 1_000_003 + step)
        q, qm, p, pm, f2, sizes = batch_tensors(part, qc, pc, k, device)
        scores = model.forward(q, qm, p, pm, f2, dropout=args.dropout)
        loss = listwise_loss(scores, sizes, [lst.y for lst in part])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(model.params.values()), 1.0)
        opt.step()
        sched.step()
        step += 1
        pairs_seen += sum(len(lst.prows) for lst in part)
        losses.append(float(loss.detach()))
        if step % 20 == 0:
            print(
                f"K={k} step {step}/{total} loss {np.mean(losses[-20:]):.4f}"
                f" ({(time.time() - t0) / 20:.2f}s/step, {pairs_seen} pairs seen)",
                file=sys.stderr,
                flush=True,
            )
            t0 = time.time()
        if step % args.ckpt_every == 0 or step == total:
            save()
        if step % steps_per_epoch == 0 or step == total:
            ep = math.ceil(step / steps_per_epoch)
            print(f"K={k} epoch {ep}: out of sample (top-N R@68)", file=sys.stderr, flush=True)
            history.append(
                {"epoch": ep, "step": step, "pairs_seen": pairs_seen, "results": evaluate(model, evals, qc, pc, device)}
            )
            save()
            write_log(args, k, history, pairs_seen)
            if args.out:  # every epoch's model, so a stop mid-fit still leaves the latest one
                model.export(Path(args.out).with_suffix(f".K{k}.npz"), {"epoch": ep, "pairs_seen": pairs_seen})
    if step < total:
        save()
        print(f"K={k}: stopped at step {step}/{total} (--max-steps); rerun to resume", file=sys.stderr, flush=True)
        return model, {"K": k, "history": history, "interrupted_at": step, "pairs_seen": pairs_seen}
    if not history:
        history.append(
            {"epoch": args.epochs, "step": step, "pairs_seen": pairs_seen,
             "results": evaluate(model, evals, qc, pc, device)}
        )  # fmt: skip
    return model, {"K": k, "history": history, "pairs_seen": pairs_seen}


def export_checkpoint(
    args: CrossArgs, train: Sequence[List_], evals: dict[str, list[List_]], qc: StateCache, pc: StateCache
) -> int:
    """The model of a running (or stopped) fit's last checkpoint, scored out of sample and exported (``--out``):
    a fit that cannot run to its end still leaves a model and its figures."""
    import torch

    k = (args.layers or [5])[0]
    state = torch.load(Path(args.from_checkpoint), map_location=args.device, weights_only=False)
    model = Joint(k, args.device, args.seed)
    for n, v in state["params"].items():
        model.params[n].data.copy_(v)
    step, pairs = int(state["step"]), int(state.get("pairs_seen", 0))
    print(f"K={k}: checkpoint at step {step}, {pairs} pairs seen", file=sys.stderr, flush=True)
    history = [
        *state["history"],
        {"step": step, "pairs_seen": pairs, "results": evaluate(model, evals, qc, pc, args.device)},
    ]
    write_log(args, k, history, pairs)
    if args.out:
        final = history[-1]["results"]
        meta = {
            "fitted_on": sorted({lst.dataset for lst in train}),
            "lists": len(train),
            "seed": args.seed,
            "step": step,
            "pairs_seen": pairs,
            "validation_r68": {n: round(v["cross"], 4) for n, v in final.items()},
            "features": ["minilm_cosine", "list_bm25"],
        }
        model.export(Path(args.out), meta)
        print(f"wrote {args.out} (K={k}, step {step})", file=sys.stderr)
    return 0


RUN_ID = time.strftime("%Y-%m-%dT%H:%M:%S")


def write_log(args: CrossArgs, k: int, history: list[dict[str, Any]], pairs_seen: int) -> None:
    """The small fit log committed beside the weights: steps, pairs seen, out-of-sample figures per family."""
    if not args.log:
        return
    path = Path(args.log)
    log = json.loads(path.read_text()) if path.exists() else {}
    prior = log.get(f"K{k}", {})
    earlier = list(prior.get("earlier_runs", []))
    if prior and prior.get("run") != RUN_ID:  # a warm start: the run it started from is kept, its pairs counted
        earlier.append({n: v for n, v in prior.items() if n != "earlier_runs"})
    log[f"K{k}"] = {"run": RUN_ID, "pairs_seen": pairs_seen,
                    "pairs_seen_all_runs": pairs_seen + sum(int(r.get("pairs_seen", 0)) for r in earlier),
                    "earlier_runs": earlier, "history": history, "args": {
        n: v for n, v in args.as_dict().items() if n in ("per_file", "negatives", "epochs", "batch_lists", "lr", "seed",
                                                       "self_supervised", "init", "dropout")}}  # fmt: skip
    path.write_text(json.dumps(log, indent=1, default=str) + "\n")


def _setup(args: CrossArgs) -> CrossArgs:
    """Resolve ``--device auto``, set torch's threads and seed the generators."""
    import torch

    if args.device == "auto":
        args = dataclasses.replace(args, device="cuda" if torch.cuda.is_available() else "cpu")
    if args.threads:
        torch.set_num_threads(args.threads)
    random.seed(args.seed)
    np.random.seed(args.seed)
    return args


def _fill_caches(args: CrossArgs, train: Sequence[List_], qc: StateCache, pc: StateCache) -> None:
    """Fill the state caches, or wait for the process that fills them (``--cache-by-other``)."""
    if args.cache_by_other:
        # another process fills the cache (--cache-only); the training texts come first, so training can start
        # as soon as they are done, and evaluation waits for the rest
        n_train = len({p for lst in train for p in lst.passages})
        while qc.done < len(qc.texts) or pc.done < n_train:
            time.sleep(10)
    else:
        qc.fill(args.device)
        pc.fill(args.device)


def _train_all(
    args: CrossArgs, train: Sequence[List_], evals: dict[str, list[List_]], qc: StateCache, pc: StateCache
) -> tuple[tuple[float, Joint | None, dict[str, Any]], dict[str, Any]]:
    """Train each ``K``; the best finished one by mean validation R@68, and every run's figures."""
    results: dict[str, Any] = {"args": args.as_dict(), "runs": []}
    best: tuple[float, Joint | None, dict[str, Any]] = (-1.0, None, {})
    for k in args.layers or [5]:
        model, run_k = train_k(k, args, train, evals, qc, pc)
        results["runs"].append(run_k)
        if "interrupted_at" in run_k:
            continue
        final = run_k["history"][-1]["results"]
        valid = [v["cross"] for n, v in final.items() if "never fitted" not in n]
        mean = float(np.mean(valid)) if valid else 0.0
        if mean > best[0]:
            best = (mean, model, final)
        if args.results:
            Path(args.results).write_text(json.dumps(results, indent=1, default=str))
    return best, results


def _export_best(
    args: CrossArgs, train: Sequence[List_], best: tuple[float, Joint | None, dict[str, Any]], results: dict[str, Any]
) -> None:
    """Write the best ``K``'s model file (``--out``)."""
    model = best[1]
    if not args.out or model is None:
        return
    meta = {
        "fitted_on": sorted({lst.dataset for lst in train}),
        "lists": len(train),
        "seed": args.seed,
        "epochs": args.epochs,
        "validation_r68": {n: round(v["cross"], 4) for n, v in best[2].items()},
        "pairs_seen": int(sum(r.get("pairs_seen", 0) for r in results["runs"] if r["K"] == model.k)),
        "features": ["minilm_cosine", "list_bm25"],
    }
    model.export(Path(args.out), meta)
    print(f"wrote {args.out} (K={model.k})", file=sys.stderr)


def run(args: CrossArgs) -> int:
    """The whole fit (or, with ``--from-checkpoint``, a checkpoint's export)."""
    args = _setup(args)
    train, evals = load_lists(args.lists())
    print(
        f"training lists: {len(train)} ({sum(len(lst.passages) for lst in train)} pairs); "
        + ", ".join(f"{n}: {len(v)}" for n, v in evals.items()),
        file=sys.stderr,
        flush=True,
    )
    layers = args.cache_layers or args.layers or [5]
    qc, pc = build_caches(Path(args.cache_dir), layers, train, evals)
    _fill_caches(args, train, qc, pc)
    if args.cache_only:
        return 0
    if args.from_checkpoint:
        return export_checkpoint(args, train, evals, qc, pc)
    best, results = _train_all(args, train, evals, qc, pc)
    _export_best(args, train, best, results)
    return 0
