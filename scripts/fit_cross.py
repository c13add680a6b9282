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

Torch only here (the ``fit`` extra); inference is numpy. Runs unchanged on a GPU (``--device cuda``).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from admit._text import bm25_matrix  # noqa: E402
from admit.backends.embedders.minilm import model_dir  # noqa: E402
from admit.backends.rerankers.cross import (  # noqa: E402
    _LAYER_KEYS,
    PASSAGE_MAX_TOKENS,
    PASSAGE_TOKENS,
    QUESTION_TOKENS,
    chunk_passage,
)
from admit.backends.rerankers.cross import _tokens as _toks  # noqa: E402  (the passage choice's tokens)
from admit.passages import question_text  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
from fit_setwise import read_folder  # noqa: E402  (one reader of the record format)

CACHE_LAYERS = (3, 4, 5)
HIDDEN = 384
EXCLUDE = ("docs_policyqa", "docs2_evidence_inference")
TARGET_COMPRESSION = 0.68


# ------------------------------------------------------------------------------------------------ data


@dataclass
class List_:
    qid: str
    dataset: str
    question: str
    passages: list[str]
    y: np.ndarray
    bm: np.ndarray = field(default_factory=lambda: np.zeros(0))
    qrow: int = -1
    prows: list[int] = field(default_factory=list)


def make_list(name: str, r: dict[str, Any], negatives: int | None) -> List_:
    q = question_text(r["question"])
    cands = r["candidates"]
    ps = [chunk_passage(q, c.get("title") or "", c.get("text") or "") for c in cands]
    req = set(r["required"])
    y = np.array([1.0 if c["id"] in req else 0.0 for c in cands])
    return _subsample(List_(r["id"], name, q, ps, y), negatives)


def _subsample(lst: List_, negatives: int | None) -> List_:
    """The list's BM25 feature over all its passages (as at inference), then its hard negatives only."""
    bm = list_bm25(lst.question, lst.passages)
    lst.bm = bm
    if negatives is not None and lst.y.sum() > 0:
        neg = [i for i in np.argsort(-bm, kind="stable") if lst.y[i] == 0][:negatives]
        keep = sorted([i for i in range(len(lst.passages)) if lst.y[i] > 0] + [int(i) for i in neg])
        lst.passages, lst.y, lst.bm = [lst.passages[i] for i in keep], lst.y[keep], bm[keep]
    return lst


def heading_split(text: str) -> tuple[str, str] | None:
    """(first line, the rest) when a chunk opens with a short heading line and goes on for 20+ words."""
    lines = [ln.strip() for ln in text.split("\n")]
    lines = [ln for ln in lines if ln]
    if len(lines) < 2:
        return None
    head, rest = lines[0], "\n".join(lines[1:])
    words = head.split()
    if not 1 <= len(words) <= 12 or head.endswith(".") or len(rest.split()) < 20:
        return None
    return head, rest


def self_supervised(name: str, rows: Sequence[dict[str, Any]], negatives: int, rng: random.Random) -> list[List_]:
    """Heading lists from one training file: a section's heading path (page title > heading) as the question,
    the section's text without its heading as the positive, its sibling sections (same page) as negatives."""
    pages: dict[str, dict[str, str]] = {}
    for r in rows:
        for c in r["candidates"]:
            pages.setdefault(c.get("title") or "", {})[c.get("source_id") or c["id"]] = c.get("text") or ""
    out: list[List_] = []
    for title, chunks in sorted(pages.items()):
        parts = [hs for hs in (heading_split(t) for _, t in sorted(chunks.items())) if hs]
        heads = [h for h, _ in parts]
        parts = [(h, r) for h, r in parts if heads.count(h) == 1]
        if len(parts) < 3 or not title:
            continue
        for i in rng.sample(range(len(parts)), min(6, len(parts))):
            q = f"{title} > {parts[i][0]}"
            ps = [chunk_passage(q, title, rest) for _, rest in parts]
            y = np.array([1.0 if j == i else 0.0 for j in range(len(parts))])
            out.append(_subsample(List_(f"ss:{title}:{i}", f"ss_{name}", q, ps, y), negatives))
    return out


def list_bm25(question: str, ps: Sequence[str]) -> np.ndarray:
    """BM25 of the question over the list's chosen passages, divided by the list's best (0 when none match):
    the joint head's lexical feature, computed the same way by ``CrossEncoder.score``."""
    from admit.backends.rerankers.cross import list_bm25 as f

    return np.asarray(f(question, ps), dtype=np.float32)


def load_lists(args: argparse.Namespace) -> tuple[list[List_], dict[str, list[List_]]]:
    rng = random.Random(args.seed)
    train_files = read_folder(Path(args.train))
    valid_files = read_folder(Path(args.valid))
    exclude = set(args.exclude.split(",")) if args.exclude else set()
    train: list[List_] = []
    evals: dict[str, list[List_]] = {}
    for name, rows in sorted(train_files.items()):
        rows = [r for r in rows if r.get("required")]
        if name in exclude:
            pick = rng.sample(rows, min(len(rows), args.test_sample))
            evals[f"{name} (never fitted on)"] = [make_list(name, r, None) for r in pick]
            continue
        pick = rng.sample(rows, min(len(rows), args.per_file)) if args.per_file else rows
        train.extend(make_list(name, r, args.negatives) for r in pick)
        if args.self_supervised and name.startswith("docs"):
            ss = self_supervised(name, rows, args.negatives, rng)
            train.extend(rng.sample(ss, min(len(ss), args.ss_per_file)))
    for name, rows in sorted(valid_files.items()):
        evals[name] = [make_list(name, r, None) for r in rows if r.get("required")]
    return train, evals


# ------------------------------------------------------------------------------------ torch MiniLM


def torch_minilm(device: str) -> tuple[Any, Any, dict[str, Any]]:
    """(embeddings + 6 layers as torch tensors, tokenizer, config) from the package's safetensors."""
    import torch
    from tokenizers import Tokenizer

    from admit.backends.embedders._bert import read_safetensors

    folder = model_dir()
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    raw = read_safetensors(folder / "model.safetensors")
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in raw else ""
    t = {k[len(prefix) :]: torch.tensor(np.asarray(v, dtype=np.float32), device=device) for k, v in raw.items()}
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=PASSAGE_MAX_TOKENS, strategy="longest_first")
    return t, tok, config


def layer_params(t: dict[str, Any], i: int) -> dict[str, Any]:
    """Layer ``i``'s weights in the numpy encoder's layout (fused, unscaled QKV)."""
    import torch

    pre = f"encoder.layer.{i}."
    return {
        "qkv_w": torch.cat([t[pre + f"attention.self.{n}.weight"] for n in ("query", "key", "value")]),
        "qkv_b": torch.cat([t[pre + f"attention.self.{n}.bias"] for n in ("query", "key", "value")]),
        "out_w": t[pre + "attention.output.dense.weight"],
        "out_b": t[pre + "attention.output.dense.bias"],
        "ln1_g": t[pre + "attention.output.LayerNorm.weight"],
        "ln1_b": t[pre + "attention.output.LayerNorm.bias"],
        "up_w": t[pre + "intermediate.dense.weight"],
        "up_b": t[pre + "intermediate.dense.bias"],
        "down_w": t[pre + "output.dense.weight"],
        "down_b": t[pre + "output.dense.bias"],
        "ln2_g": t[pre + "output.LayerNorm.weight"],
        "ln2_b": t[pre + "output.LayerNorm.bias"],
    }


def run_layer(p: dict[str, Any], x: Any, bias: Any, heads: int, eps: float, dropout: float = 0.0) -> Any:
    """One post-LayerNorm BERT layer (the numpy encoder's arithmetic, in torch)."""
    import torch.nn.functional as F

    b, n, h = x.shape
    hd = h // heads
    qkv = F.linear(x, p["qkv_w"], p["qkv_b"]).view(b, n, 3, heads, hd)
    q, k, v = (qkv[:, :, j].transpose(1, 2) for j in range(3))
    att = (q @ k.transpose(-1, -2)) / math.sqrt(hd) + bias
    ctx = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, n, h)
    a = F.linear(ctx, p["out_w"], p["out_b"])
    if dropout:
        a = F.dropout(a, dropout, True)
    x = F.layer_norm(a + x, (h,), p["ln1_g"], p["ln1_b"], eps)
    u = F.gelu(F.linear(x, p["up_w"], p["up_b"]))
    d = F.linear(u, p["down_w"], p["down_b"])
    if dropout:
        d = F.dropout(d, dropout, True)
    return F.layer_norm(d + x, (h,), p["ln2_g"], p["ln2_b"], eps)


def key_bias(mask: Any) -> Any:
    return (1.0 - mask[:, None, None, :].float()) * -1e9


# ------------------------------------------------------------------------------------ state cache


class StateCache:
    """Bottom states of every distinct text, float16 memory-maps under one folder, filled in a fixed order."""

    def __init__(
        self, folder: Path, texts: Sequence[str], kind: str, tokens: int, layers: Sequence[int] = CACHE_LAYERS
    ) -> None:
        self.folder = folder
        self.kind = kind
        self.tokens = tokens
        self.layers = tuple(sorted(layers))
        folder.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha1("\x00".join(texts).encode()).hexdigest()[:12]
        self.stem = f"{kind}_{digest}"
        self.texts = list(texts)
        self.row = {t: i for i, t in enumerate(self.texts)}
        n = max(1, len(self.texts))
        self.states = {
            k: np.lib.format.open_memmap(
                self._path(f"L{k}.npy"),
                mode="r+" if self._path(f"L{k}.npy").exists() else "w+",
                dtype=np.float16,
                shape=(n, tokens, HIDDEN),
            )
            for k in self.layers
        }
        emb_path = self._path("emb.npy")
        # the text's MiniLM embedding (all layers on the text alone, mean-pooled, unit length): the dense feature
        self.emb = np.lib.format.open_memmap(
            emb_path, mode="r+" if emb_path.exists() else "w+", dtype=np.float16, shape=(n, HIDDEN)
        )
        len_path = self._path("len.npy")
        self.lens = np.lib.format.open_memmap(
            len_path, mode="r+" if len_path.exists() else "w+", dtype=np.int32, shape=(n,)
        )

    def _path(self, suffix: str) -> Path:
        return self.folder / f"{self.stem}.{suffix}"

    @property
    def done(self) -> int:
        p = self._path("done")
        return int(p.read_text()) if p.exists() else 0

    def fill(self, device: str, batch: int = 32, log_every: int = 50) -> None:
        import torch

        start = self.done
        if start >= len(self.texts):
            return
        t, tok, config = torch_minilm(device)
        heads, eps = int(config["num_attention_heads"]), float(config.get("layer_norm_eps", 1e-12))
        layers = [layer_params(t, i) for i in range(int(config["num_hidden_layers"]))]
        limit = QUESTION_TOKENS if self.kind == "q" else PASSAGE_MAX_TOKENS
        t0, since = time.time(), start
        with torch.inference_mode():
            for s in range(start, len(self.texts), batch):
                part = self.texts[s : s + batch]
                ids = []
                for e in tok.encode_batch(part):
                    x = list(e.ids)
                    ids.append([*x[: limit - 1], x[-1]] if len(x) > limit else x)
                n = max(len(x) for x in ids)
                idt = torch.zeros((len(ids), n), dtype=torch.long, device=device)
                mask = torch.zeros((len(ids), n), dtype=torch.long, device=device)
                for r, x in enumerate(ids):
                    idt[r, : len(x)] = torch.tensor(x, device=device)
                    mask[r, : len(x)] = 1
                pos = torch.arange(n, device=device)
                emb = t["embeddings.word_embeddings.weight"][idt] + t["embeddings.position_embeddings.weight"][pos]
                emb = emb + t["embeddings.token_type_embeddings.weight"][0]
                x = torch.nn.functional.layer_norm(
                    emb, (HIDDEN,), t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"], eps
                )
                bias = key_bias(mask)
                keep = min(n, self.tokens)
                for li, p in enumerate(layers, start=1):
                    x = run_layer(p, x, bias, heads, eps)
                    if li in self.states:
                        self.states[li][s : s + len(ids), :keep] = x[:, :keep].cpu().numpy().astype(np.float16)
                        self.states[li][s : s + len(ids), keep:] = 0
                m = mask.float()[:, :, None]
                pooled = (x * m).sum(1) / m.sum(1).clamp(min=1.0)
                pooled = torch.nn.functional.normalize(pooled, dim=-1)
                self.emb[s : s + len(ids)] = pooled.cpu().numpy().astype(np.float16)
                self.lens[s : s + len(ids)] = [min(len(x), self.tokens) for x in ids]
                if (s // batch) % log_every == 0 or s + batch >= len(self.texts):
                    for arr in (*self.states.values(), self.emb, self.lens):
                        arr.flush()
                    self._path("done").write_text(str(min(s + batch, len(self.texts))))
                    rate = (s + len(ids) - since) / max(1e-9, time.time() - t0)
                    print(
                        f"  cache {self.kind}: {s + len(ids)}/{len(self.texts)} ({rate:.1f} texts/s)",
                        file=sys.stderr,
                        flush=True,
                    )
        self._path("done").write_text(str(len(self.texts)))


def build_caches(
    args: argparse.Namespace, train: Sequence[List_], evals: dict[str, list[List_]]
) -> tuple[StateCache, StateCache]:
    """Question and passage caches; training texts first (short first), then the evaluation texts."""
    all_lists = [*train, *(lst for ls in evals.values() for lst in ls)]
    qs = list(dict.fromkeys(lst.question for lst in all_lists))
    n_train_p = sorted(dict.fromkeys(p for lst in train for p in lst.passages), key=lambda p: (len(p), p))
    seen = set(n_train_p)
    rest = {p for ls in evals.values() for lst in ls for p in lst.passages if p not in seen}
    ps = n_train_p + sorted(rest, key=lambda p: (len(p), p))
    qs = sorted(qs, key=lambda q: (len(q), q))
    folder = Path(args.cache_dir)
    layers = sorted(set(args.cache_layers or args.layers or [5]))
    qc = StateCache(folder, qs, "q", QUESTION_TOKENS, layers)
    pc = StateCache(folder, ps, "p", PASSAGE_TOKENS, layers)
    size = sum(a.nbytes for c in (qc, pc) for a in (*c.states.values(), c.emb, c.lens))
    print(f"state cache: {size / 2**30:.2f} GiB on disk under {folder} (layers {layers})", file=sys.stderr)
    for lst in all_lists:
        lst.qrow = qc.row[lst.question]
        lst.prows = [pc.row[p] for p in lst.passages]
    print(f"texts: {len(qs)} questions, {len(ps)} passages ({len(n_train_p)} of them training)", file=sys.stderr)
    return qc, pc


# --------------------------------------------------------------------------------------- the model


class Joint:
    """The trained part: joint layers (from MiniLM's top layers), a passage segment vector, the head: an MLP over
    the joint [CLS] and the passage's mean state, plus a learned scale times MaxSim of the joint token states."""

    def __init__(self, k: int, device: str, seed: int) -> None:
        import torch

        torch.manual_seed(seed)
        t, _, config = torch_minilm(device)
        self.k = k
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.n_layers = int(config["num_hidden_layers"])
        self.params: dict[str, Any] = {}
        for j, i in enumerate(range(k, self.n_layers)):
            for key, v in layer_params(t, i).items():
                self.params[f"joint.{j}.{key}"] = v.clone().requires_grad_(True)
        self.params["segment"] = torch.zeros(HIDDEN, device=device, requires_grad=True)
        h0 = torch.nn.Linear(2 * HIDDEN, 256)
        h1 = torch.nn.Linear(256, 1)
        self.params["head.0.w"] = h0.weight.detach().to(device).clone().requires_grad_(True)
        self.params["head.0.b"] = h0.bias.detach().to(device).clone().requires_grad_(True)
        # the head starts at zero, so the first score is the MaxSim term alone (a sane ranking to start from)
        self.params["head.1.w"] = torch.zeros_like(h1.weight).to(device).requires_grad_(True)
        self.params["head.1.b"] = torch.zeros_like(h1.bias).to(device).requires_grad_(True)
        self.params["maxsim.scale"] = torch.full((1,), 10.0, device=device, requires_grad=True)
        # the two list features the joint states are read beside: MiniLM's own cosine and the list's BM25
        self.params["feat.w"] = torch.tensor([10.0, 3.0], device=device, requires_grad=True)

    def load(self, path: Path) -> list[str]:
        """Warm start from an exported model file of the same depth; returns the names it set."""
        import torch

        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(bytes(z["meta"]).decode("utf-8"))
            if int(meta["bottom_layers"]) != self.k:
                return []
            done = []
            for n, v in self.params.items():
                if n in z.files and tuple(z[n].shape) == tuple(v.shape):
                    v.data.copy_(torch.from_numpy(np.asarray(z[n], dtype=np.float32)))
                    done.append(n)
        return done

    @property
    def joint_layers(self) -> int:
        return self.n_layers - self.k

    def forward(self, q: Any, qmask: Any, p: Any, pmask: Any, feats2: Any, dropout: float = 0.0) -> Any:
        import torch
        import torch.nn.functional as F

        x = torch.cat([q, p + self.params["segment"]], dim=1)
        mask = torch.cat([qmask, pmask], dim=1)
        bias = key_bias(mask)
        for j in range(self.joint_layers):
            lp = {key: self.params[f"joint.{j}.{key}"] for key in _LAYER_KEYS}
            x = run_layer(lp, x, bias, self.heads, self.eps, dropout)
        nq = q.shape[1]
        pm = pmask.float()[:, :, None]
        pmean = (x[:, nq:] * pm).sum(1) / pm.sum(1).clamp(min=1.0)
        feats = torch.cat([x[:, 0], pmean], dim=1)
        h = F.gelu(F.linear(feats, self.params["head.0.w"], self.params["head.0.b"]), approximate="tanh")
        head = F.linear(h, self.params["head.1.w"], self.params["head.1.b"])[:, 0]
        # MaxSim (ColBERT's late interaction) over the joint outputs: each question token's best passage token
        qn = F.normalize(x[:, :nq], dim=-1)
        pn = F.normalize(x[:, nq:], dim=-1)
        sim = (qn @ pn.transpose(1, 2)).masked_fill(~pmask[:, None, :].bool(), -1.0)
        qm = qmask.float()
        maxsim = (sim.max(dim=2).values * qm).sum(1) / qm.sum(1).clamp(min=1.0)
        return head + self.params["maxsim.scale"] * maxsim + feats2 @ self.params["feat.w"]

    def export(self, path: Path, meta: dict[str, Any]) -> None:
        arrays = {k: v.detach().cpu().numpy().astype(np.float16) for k, v in self.params.items()}
        meta = {**meta, "bottom_layers": self.k, "joint_layers": self.joint_layers, "minilm_layers": self.n_layers}
        arrays["meta"] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)
        tmp = path.with_suffix(".tmp.npz")
        np.savez_compressed(tmp, **arrays)
        os.replace(tmp, path)


def batch_tensors(
    lists: Sequence[List_], qc: StateCache, pc: StateCache, k: int, device: str
) -> tuple[Any, Any, Any, Any, Any, list[int]]:
    """Padded (question states, mask, passage states, mask) for every pair of the lists, and list sizes."""
    import torch

    qrows = [lst.qrow for lst in lists for _ in lst.prows]
    prows = [r for lst in lists for r in lst.prows]
    nq = int(max(qc.lens[r] for r in qrows))
    npas = int(max(pc.lens[r] for r in prows))
    q = torch.from_numpy(np.asarray(qc.states[k][qrows, :nq], dtype=np.float32)).to(device)
    p = torch.from_numpy(np.asarray(pc.states[k][prows, :npas], dtype=np.float32)).to(device)
    qmask = torch.from_numpy(np.arange(nq)[None, :] < qc.lens[qrows][:, None]).to(device)
    pmask = torch.from_numpy(np.arange(npas)[None, :] < pc.lens[prows][:, None]).to(device)
    cos = (np.asarray(qc.emb[qrows], np.float32) * np.asarray(pc.emb[prows], np.float32)).sum(1)
    bm = np.concatenate([lst.bm for lst in lists]).astype(np.float32)
    feats2 = torch.from_numpy(np.stack([cos, bm], axis=1)).to(device)
    return q, qmask, p, pmask, feats2, [len(lst.prows) for lst in lists]


def listwise_loss(scores: Any, sizes: Sequence[int], ys: Sequence[np.ndarray]) -> Any:
    """Multi-positive listwise loss: each required chunk's softmax against the list's non-required ones."""
    import torch

    losses = []
    k = 0
    for n, y in zip(sizes, ys, strict=True):
        s = scores[k : k + n]
        k += n
        pos = torch.from_numpy(y > 0).to(s.device)
        if pos.all() or not pos.any():
            continue
        neg = s[~pos]
        for sp in s[pos]:
            losses.append(torch.logsumexp(torch.cat([sp[None], neg]), 0) - sp)
    return torch.stack(losses).mean() if losses else scores.sum() * 0.0


# ------------------------------------------------------------------------------------------ scoring


def topn_r68(lists: Sequence[List_], scores: Sequence[np.ndarray]) -> float:
    """Retained recall at 68% chunk compression for top-N by the scores, interpolated over N."""
    nmax = max(len(lst.y) for lst in lists)
    total = sum(len(lst.y) for lst in lists)
    pts = [(0.0, 1.0)]
    for n in range(1, nmax + 1):
        rec, kept = 0, 0
        for lst, s in zip(lists, scores, strict=True):
            top = np.argsort(-s, kind="stable")[:n]
            mask = np.zeros(len(s), dtype=bool)
            mask[top] = True
            rec += bool(np.all(mask[lst.y > 0]))
            kept += int(mask.sum())
        pts.append((1.0 - kept / total, rec / len(lists)))
    pts.sort()
    for (x0, y0), (x1, y1) in itertools.pairwise(pts):
        if x0 <= TARGET_COMPRESSION <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (TARGET_COMPRESSION - x0) / (x1 - x0)
    return max(y for x, y in pts if x >= TARGET_COMPRESSION) if pts[-1][0] >= TARGET_COMPRESSION else 0.0


def score_lists(model: Joint, lists: Sequence[List_], qc: StateCache, pc: StateCache, device: str) -> list[np.ndarray]:
    import torch

    out = []
    with torch.inference_mode():
        for s in range(0, len(lists), 4):
            part = lists[s : s + 4]
            q, qm, p, pm, f2, sizes = batch_tensors(part, qc, pc, model.k, device)
            sc = model.forward(q, qm, p, pm, f2).float().cpu().numpy()
            k = 0
            for n in sizes:
                out.append(sc[k : k + n])
                k += n
    return out


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
    args: argparse.Namespace,
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
    args: argparse.Namespace, train: Sequence[List_], evals: dict[str, list[List_]], qc: StateCache, pc: StateCache
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


def write_log(args: argparse.Namespace, k: int, history: list[dict[str, Any]], pairs_seen: int) -> None:
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
        n: v for n, v in vars(args).items() if n in ("per_file", "negatives", "epochs", "batch_lists", "lr", "seed",
                                                       "self_supervised", "init", "dropout")}}  # fmt: skip
    path.write_text(json.dumps(log, indent=1, default=str) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", default=str(ROOT.parent / "shared" / "train"))
    ap.add_argument("--valid", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--cache-dir", default="/tmp/admit_cross")
    ap.add_argument("--layers", type=int, action="append", help="K, the frozen bottom layers (repeatable): 3, 4, 5")
    ap.add_argument("--per-file", type=int, default=300, help="training lists sampled per file (0: all)")
    ap.add_argument("--negatives", type=int, default=4, help="hard negatives per training list")
    ap.add_argument("--test-sample", type=int, default=150, help="lists scored of each never-fitted family")
    ap.add_argument("--exclude", default=",".join(EXCLUDE), help="training files never fitted on")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-lists", type=int, default=6)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--ckpt-every", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--restart", action="store_true", help="ignore checkpoints")
    ap.add_argument("--max-steps", type=int, default=0, help="stop (checkpointed) after this many steps this run")
    ap.add_argument("--cache-only", action="store_true", help="fill the state cache and stop")
    ap.add_argument(
        "--cache-by-other", action="store_true", help="another process fills the cache (--cache-only): wait for it"
    )
    ap.add_argument("--out", default="", help="model file of the best K (e.g. src/admit/modelfiles/cross.npz)")
    ap.add_argument("--cache-layers", type=int, action="append", help="bottom states kept (default: --layers)")
    ap.add_argument("--from-checkpoint", default="", help="score and export this checkpoint instead of training")
    ap.add_argument("--init", default="", help="warm start: a model file of the same K (e.g. the shipped one)")
    ap.add_argument("--log", default="", help="the fit log (JSON: steps, pairs seen, out-of-sample figures)")
    ap.add_argument("--self-supervised", action="store_true", help="add heading lists from the documentation files")
    ap.add_argument("--ss-per-file", type=int, default=1500, help="heading lists kept per documentation file")
    ap.add_argument("--results", default="", help="JSON of every figure")
    args = ap.parse_args(argv)

    import torch

    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.threads:
        torch.set_num_threads(args.threads)
    random.seed(args.seed)
    np.random.seed(args.seed)
    train, evals = load_lists(args)
    print(
        f"training lists: {len(train)} ({sum(len(lst.passages) for lst in train)} pairs); "
        + ", ".join(f"{n}: {len(v)}" for n, v in evals.items()),
        file=sys.stderr,
        flush=True,
    )
    qc, pc = build_caches(args, train, evals)
    if args.cache_by_other:
        # another process fills the cache (--cache-only); the training texts come first, so training can start
        # as soon as they are done, and evaluation waits for the rest
        n_train = len({p for lst in train for p in lst.passages})
        while qc.done < len(qc.texts) or pc.done < n_train:
            time.sleep(10)
    else:
        qc.fill(args.device)
        pc.fill(args.device)
    if args.cache_only:
        return 0
    if args.from_checkpoint:
        return export_checkpoint(args, train, evals, qc, pc)
    results: dict[str, Any] = {"args": dict(vars(args)), "runs": []}
    best: tuple[float, Joint | None, dict[str, Any]] = (-1.0, None, {})
    for k in args.layers or [5]:
        model, run = train_k(k, args, train, evals, qc, pc)
        results["runs"].append(run)
        if "interrupted_at" in run:
            continue
        final = run["history"][-1]["results"]
        valid = [v["cross"] for n, v in final.items() if "never fitted" not in n]
        mean = float(np.mean(valid)) if valid else 0.0
        if mean > best[0]:
            best = (mean, model, final)
        if args.results:
            Path(args.results).write_text(json.dumps(results, indent=1, default=str))
    if args.out and best[1] is not None:
        meta = {
            "fitted_on": sorted({lst.dataset for lst in train}),
            "lists": len(train),
            "seed": args.seed,
            "epochs": args.epochs,
            "validation_r68": {n: round(v["cross"], 4) for n, v in best[2].items()},
            "pairs_seen": int(sum(r.get("pairs_seen", 0) for r in results["runs"] if r["K"] == best[1].k)),
            "features": ["minilm_cosine", "list_bm25"],
        }
        best[1].export(Path(args.out), meta)
        print(f"wrote {args.out} (K={best[1].k})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
