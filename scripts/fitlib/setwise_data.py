"""The setwise fit's lists: augmented training lists and prepared features (cached per dataset)."""

from __future__ import annotations

import hashlib
import pickle
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from admit import passages as _passages
from admit.prune import setwise_model as sm
from fitlib.data import Record, family, labels
from fitlib.vectors import VectorCache, setwise_texts

__all__ = ["Question", "augment", "prepare_set", "setwise_items"]

_TEMPLATES = {
    "date of birth": "When was {s} born?",
    "date of death": "When did {s} die?",
    "place of birth": "Where was {s} born?",
    "place of death": "Where did {s} die?",
    "country of citizenship": "What country is {s} a citizen of?",
    "director": "Who directed {s}?",
    "father": "Who is the father of {s}?",
    "mother": "Who is the mother of {s}?",
    "spouse": "Who is the spouse of {s}?",
    "publication date": "When was {s} published?",
    "country": "Which country is {s} in?",
    "performer": "Who performed {s}?",
    "founded by": "Who founded {s}?",
    "inception": "When was {s} founded?",
}


def setwise_items(candidates: Sequence[Record]) -> list[sm.SetwiseItem]:
    """A record's candidates as the setwise scorer's items."""
    return [sm.SetwiseItem(id=c["id"], title=c.get("title") or "", text=c.get("text") or "") for c in candidates]


def _musique_singles(r: Record) -> list[Record]:
    """The single-hop sub-questions of a MuSiQue decomposition (earlier answers filled in), one required chunk each."""
    out: list[Record] = []
    answers: list[str] = []
    for k, d in enumerate((r.get("meta") or {}).get("decomposition") or []):
        q = str(d.get("question", ""))
        for i, a in enumerate(answers, start=1):
            q = q.replace(f"#{i}", a)
        answers.append(str(d.get("answer", "")))
        if "#" not in q and d.get("support") in r["required"]:
            out.append({**r, "id": f"{r['id']}::sub{k}", "question": q, "required": [d["support"]]})
    return out


def _wiki_singles(r: Record) -> list[Record]:
    """Questions from 2Wiki evidence triples (subject, relation, object) whose subject's chunk is required."""
    out: list[Record] = []
    titles = {c.get("title", ""): c["id"] for c in r["candidates"]}
    for k, ev in enumerate((r.get("meta") or {}).get("evidences") or []):
        if len(ev) != 3:
            continue
        s, rel, _ = ev
        cid = titles.get(s)
        if cid in r["required"]:
            q = _TEMPLATES.get(rel, "What is the " + str(rel) + " of {s}?").format(s=s)
            out.append({**r, "id": f"{r['id']}::ev{k}", "question": q, "required": [cid]})
    return out


def _resampled(r: Record, rng: random.Random) -> list[Record]:
    """Two copies of a long list cut to 10 candidates: its gold chunks and re-sampled distractors."""
    req = set(r["required"])
    gold = [c for c in r["candidates"] if c["id"] in req]
    dis = [c for c in r["candidates"] if c["id"] not in req]
    out: list[Record] = []
    if len(dis) > 10 - len(gold):
        for k in range(2):
            cand = gold + rng.sample(dis, 10 - len(gold))
            rng.shuffle(cand)
            out.append({**r, "id": f"{r['id']}::rs{k}", "candidates": cand})
    return out


def augment(train: dict[str, list[Record]], seed: int) -> dict[str, list[Record]]:
    """Augmented lists made from the training records only: single-hop sub-questions of MuSiQue decompositions
    and of 2Wiki evidence triples, and MuSiQue lists re-sampled to 10 candidates."""
    rng = random.Random(seed)
    single_mus: list[Record] = []
    single_wiki: list[Record] = []
    resampled: list[Record] = []
    for name, rows in train.items():
        for r in rows:
            single_mus += _musique_singles(r)
            single_wiki += _wiki_singles(r)
            if family(name) == "musique":
                resampled += _resampled(r, rng)
    return {
        "aug_single_musique": single_mus,
        "aug_single_2wikimultihopqa": single_wiki,
        "aug_resample_musique": resampled,
    }


@dataclass
class Question:
    """One labelled list with its prepared features."""

    qid: str
    dataset: str
    prep: sm.Prepared
    y: np.ndarray

    @property
    def n(self) -> int:
        return int(self.y.size)


class _Unpickler(pickle.Unpickler):
    """Reads prepared lists pickled by the script before this module existed (as ``__main__.Question``)."""

    def find_class(self, module: str, name: str) -> type:
        if module == "__main__" and name == "Question":
            return Question
        found: type = super().find_class(module, name)
        return found


def _feature_code_hash() -> str:
    """Hash of the feature code the prepared lists depend on (the cache key's first part)."""
    code = hashlib.sha1()
    folder = Path(sm.__file__).parent
    for mod in ("text", "features", "links"):
        code.update((folder / f"{mod}.py").read_bytes())
    code.update(Path(_passages.__file__).read_bytes())
    return code.hexdigest()[:10]


def prepare_set(name: str, rows: Sequence[Record], vc: VectorCache, cache_dir: Path) -> list[Question]:
    """Prepared questions of one dataset (pickled by feature-code hash and record ids)."""
    ids = hashlib.sha1("|".join(r["id"] for r in rows).encode()).hexdigest()[:10]
    pkl = cache_dir / f"prep_{name}_{_feature_code_hash()}_{ids}.pkl"
    if pkl.exists():
        with open(pkl, "rb") as fh:
            out: list[Question] = _Unpickler(fh).load()
            return out
    vc.fill(setwise_texts(rows))
    out = [
        Question(r["id"], name, sm.prepare(r["question"], setwise_items(r["candidates"]), vc), labels(r)) for r in rows
    ]
    with open(pkl, "wb") as fh:
        pickle.dump(out, fh)
    return out
