"""The torch side of the cross-encoder fit: MiniLM's layers in torch (the numpy encoder's arithmetic), the trained
part (:class:`Joint`), batches and the listwise loss. Torch is imported inside the functions (the ``fit`` extra)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from admit.backends.embedders.minilm import model_dir
from admit.backends.rerankers.cross import _LAYER_KEYS, PASSAGE_MAX_TOKENS
from fitlib.cross_data import List_

if TYPE_CHECKING:
    from fitlib.cross_cache import StateCache

__all__ = [
    "HIDDEN",
    "Joint",
    "batch_tensors",
    "key_bias",
    "layer_params",
    "listwise_loss",
    "run_layer",
    "score_lists",
    "torch_minilm",
]

HIDDEN = 384


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
