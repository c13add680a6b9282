"""The cross-encoder fit's state cache: the bottom states of every distinct text, float16 memory-maps.

Layout under ``--cache-dir`` (kept as it is: a running fit resumes from it): per kind (``q`` questions, ``p``
passages) and digest of the ordered texts, ``{kind}_{digest}.L{k}.npy`` (states after layer k),
``.emb.npy`` (MiniLM embedding), ``.len.npy`` (token counts) and ``.done`` (rows filled).
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from admit.backends.rerankers.cross import PASSAGE_MAX_TOKENS, PASSAGE_TOKENS, QUESTION_TOKENS
from fitlib.cross_data import List_
from fitlib.cross_torch import HIDDEN, key_bias, layer_params, run_layer, torch_minilm

__all__ = ["CACHE_LAYERS", "StateCache", "build_caches"]

CACHE_LAYERS = (3, 4, 5)


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
                    toks = list(e.ids)
                    ids.append([*toks[: limit - 1], toks[-1]] if len(toks) > limit else toks)
                n = max(len(row) for row in ids)
                idt = torch.zeros((len(ids), n), dtype=torch.long, device=device)
                mask = torch.zeros((len(ids), n), dtype=torch.long, device=device)
                for r, row in enumerate(ids):
                    idt[r, : len(row)] = torch.tensor(row, device=device)
                    mask[r, : len(row)] = 1
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
                self.lens[s : s + len(ids)] = [min(len(row), self.tokens) for row in ids]
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
    folder: Path, layers: Sequence[int], train: Sequence[List_], evals: dict[str, list[List_]]
) -> tuple[StateCache, StateCache]:
    """Question and passage caches; training texts first (short first), then the evaluation texts."""
    all_lists = [*train, *(lst for ls in evals.values() for lst in ls)]
    qs = list(dict.fromkeys(lst.question for lst in all_lists))
    n_train_p = sorted(dict.fromkeys(p for lst in train for p in lst.passages), key=lambda p: (len(p), p))
    seen = set(n_train_p)
    rest = {p for ls in evals.values() for lst in ls for p in lst.passages if p not in seen}
    ps = n_train_p + sorted(rest, key=lambda p: (len(p), p))
    qs = sorted(qs, key=lambda q: (len(q), q))
    layers = sorted(set(layers))
    qc = StateCache(folder, qs, "q", QUESTION_TOKENS, layers)
    pc = StateCache(folder, ps, "p", PASSAGE_TOKENS, layers)
    size = sum(a.nbytes for c in (qc, pc) for a in (*c.states.values(), c.emb, c.lens))
    print(f"state cache: {size / 2**30:.2f} GiB on disk under {folder} (layers {layers})", file=sys.stderr)
    for lst in all_lists:
        lst.qrow = qc.row[lst.question]
        lst.prows = [pc.row[p] for p in lst.passages]
    print(f"texts: {len(qs)} questions, {len(ps)} passages ({len(n_train_p)} of them training)", file=sys.stderr)
    return qc, pc
