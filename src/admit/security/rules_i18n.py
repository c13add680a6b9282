"""Rules for hijacks written in French, German, Spanish, Italian, Portuguese, Russian, Chinese and Japanese.

RE2's ``\\b`` knows ASCII letters only, so a word boundary next to an accented or non-Latin letter is written
``(?:^|\\W)`` (before) or ``(?:\\W|$)`` (after) here.
"""

from __future__ import annotations

from admit.security.base import RULE_FLAGS as _I
from admit.security.base import Rule
from admit.security.base import rule as _rule

__all__ = ["I18N_RULES"]


I18N_RULES: tuple[Rule, ...] = (
    _rule(
        "grader_manipulation",
        "rank_i18n",
        r"他の(?:すべての)?(?:文書|文章|資料|結果|パッセージ)[^。\n]{0,12}(?:無視|関連性がない)|(?:最も|一番)関連性(?:が|の)高い[^。\n]{0,12}(?:評価|扱)"
        r"|(?:排在|放在)(?:第一|最前|首位)|其他(?:所有)?(?:文档|段落|结果|文件)[^。\n]{0,8}(?:无关|忽略)"
        r"|(?:^|\W)(?:classe[zr]?|place[zr]?)\s+ce\s+(?:passage|document)\s+en\s+premier|(?:^|\W)stell\w*\s+dies\w*\s+\w+\s+an\s+die\s+spitze"
        r"|(?:^|\W)coloca\w*\s+este\s+(?:documento|pasaje|fragmento)\s+(?:en\s+)?(?:primer\s+lugar|primero|arriba)",
        _I,
        triggers=("他の", "関連性", "排在", "放在", "其他", "ce passage", "ce document", "spitze", "coloca"),
    ),
    # task hijacks in other languages: a verb of dismissal, then "previous" and "instructions" (either order)
    _rule(
        "hijack",
        "ignore_previous_i18n",
        r"(?:^|\W)(?:ignor\w*|oubli\w*|ne\s+(?:tiens|tenez)\s+pas\s+compte|faites\s+abstraction|mets\s+de\s+c[ôo]t[ée]|mettez\s+de\s+c[ôo]t[ée])(?:\W|$)"
        r"[^.\n]{0,40}?(?:(?:^|\W)(?:pr[ée]c[ée]dent\w*|ant[ée]rieur\w*|initia\w*|ci-dessus)[^.\n]{0,25}?(?:^|\W)(?:instructions?|consignes?|"
        r"r[èe]gles?|directives?|ordres?|indications?)(?:\W|$)|(?:^|\W)(?:instructions?|consignes?|r[èe]gles?|directives?|ordres?|"
        r"indications?)[^.\n]{0,25}?(?:^|\W)(?:pr[ée]c[ée]dent\w*|ant[ée]rieur\w*|initia\w*|ci-dessus)(?:\W|$))"
        # German
        r"|(?:^|\W)(?:ignorier\w*|vergiss|vergessen|missacht\w*|[üu]bergeh\w*|verwirf|verwerfen)[^.\n]{0,40}?(?:(?:^|\W)(?:vorherig\w*|"
        r"bisherig\w*|fr[üu]her\w*|obig\w*|vorangegangen\w*|urspr[üu]nglich\w*)[^.\n]{0,25}?(?:^|\W)(?:anweisung\w*|regeln|"
        r"befehle?|instruktion\w*|vorgaben|richtlinien)(?:\W|$)|(?:^|\W)(?:anweisung\w*|regeln|befehle?|instruktion\w*|vorgaben|"
        r"richtlinien)[^.\n]{0,25}?(?:^|\W)(?:vorherig\w*|bisherig\w*|fr[üu]her\w*|obig\w*)(?:\W|$))"
        # Spanish, Italian, Portuguese
        r"|(?:^|\W)(?:ignor\w*|olvid\w*|omit\w*|descart\w*|deja\s+de\s+lado|dejad\s+de\s+lado|haz\s+caso\s+omiso|dimentic\w*|"
        r"trascur\w*|esque[çc]\w*|desconsider\w*)[^.\n]{0,40}?(?:(?:^|\W)(?:anteriores?|previas?|previos?|originales?|"
        r"precedenti|originali|pr[ée]vias)[^.\n]{0,25}?(?:^|\W)(?:instrucciones|indicaciones|reglas|[óo]rdenes|directrices|"
        r"normas|istruzioni|regole|indicazioni|direttive|instru[çc][õo]es|regras|orienta[çc][õo]es|diretrizes)(?:\W|$)"
        r"|(?:^|\W)(?:instrucciones|indicaciones|reglas|[óo]rdenes|directrices|normas|istruzioni|regole|indicazioni|direttive|"
        r"instru[çc][õo]es|regras|orienta[çc][õo]es|diretrizes)[^.\n]{0,25}?(?:^|\W)(?:anteriores?|previas?|previos?|"
        r"originales?|precedenti|originali|pr[ée]vias)(?:\W|$))"
        # Russian
        r"|(?:игнорир\w*|проигнорир\w*|забуд\w*|забыва\w*|не\s+обраща\w*|отбро\w*|пренебреги)[^.\n]{0,40}?(?:предыдущ\w*|"
        r"прежн\w*|прошл\w*|вышеуказанн\w*|изначальн\w*|преж\w*)[^.\n]{0,25}?(?:инструкци\w*|указани\w*|правил\w*|"
        r"команд\w*|директив\w*)"
        # Chinese, Japanese
        r"|(?:忽略|无视|忘记|忘掉|不要理会|不要遵守|抛开|放弃)[^。\n]{0,10}(?:之前|以前|先前|上面|上述|此前|原来|原有|所有)"
        r"[^。\n]{0,8}(?:指令|指示|说明|规则|提示|要求|设定)"
        r"|(?:これまで|以前|前|上記|先ほど|元|すべて)の(?:すべての)?(?:指示|命令|ルール|指令|設定|プロンプト)[^。\n]{0,12}(?:無視|忘れ)",
        _I,
        triggers=(
            "ignor",
            "oubli",
            "tiens pas",
            "tenez pas",
            "abstraction",
            "de côté",
            "de cote",
            "vergiss",
            "vergessen",
            "missacht",
            "bergeh",
            "verwirf",
            "verwerfen",
            "olvid",
            "omit",
            "descart",
            "de lado",
            "caso omiso",
            "dimentic",
            "trascur",
            "esque",
            "desconsider",
            "игнор",
            "забу",
            "забыва",
            "обраща",
            "отбро",
            "пренебр",
            "忽略",
            "无视",
            "忘记",
            "忘掉",
            "不要理会",
            "不要遵守",
            "抛开",
            "放弃",
            "無視",
            "忘れ",
        ),
    ),
    _rule(
        "hijack",
        "you_are_now_i18n",
        r"(?:^|\W)(?:[àa]\s+partir\s+de\s+maintenant|d[ée]sormais|dor[ée]navant),?\s+(?:tu\s+es|vous\s+[êe]tes|tu\s+dois|vous\s+devez)"
        r"|(?:^|\W)(?:ab\s+(?:jetzt|sofort)|von\s+nun\s+an),?\s+(?:bist\s+du|sind\s+sie|musst\s+du|m[üu]ssen\s+sie)"
        r"|(?:^|\W)(?:a\s+partir\s+de\s+ahora|desde\s+ahora|de\s+ahora\s+en\s+adelante),?\s+(?:eres|ser[áa]s|usted\s+es|debes)"
        r"|(?:^|\W)da\s+ora\s+in\s+poi,?\s+(?:sei|tu\s+sei|devi)|(?:^|\W)a\s+partir\s+de\s+agora,?\s+(?:voc[êe]\s+[ée]|[ée]s|deves)"
        r"|(?:с\s+этого\s+момента|отныне|теперь),?\s+ты\s+(?:—\s*)?(?:\w+\s+)?(?:ассистент|бот|ии|помощник|модель|должен)"
        r"|从现在(?:开始|起)[，,]?\s*你(?:是|将|只能|必须)|(?:今から|これから|今後)[、,]?\s*(?:あなたは|君は|お前は)",
        _I,
        triggers=(
            "partir de",
            "désormais",
            "desormais",
            "dorénavant",
            "dorenavant",
            "ab jetzt",
            "ab sofort",
            "von nun an",
            "desde ahora",
            "en adelante",
            "da ora",
            "этого момента",
            "отныне",
            "теперь",
            "从现在",
            "今から",
            "これから",
            "今後",
        ),
    ),
    _rule(
        "hijack",
        "reveal_prompt_i18n",
        r"(?:^|\W)(?:ton|ta|tes|votre|vos)\s+(?:prompt|instructions?|consignes?)\s+(?:syst[èe]me|initia\w*)"
        r"|(?:^|\W)(?:deine|ihre|dein|ihr)\s+(?:systemanweisung\w*|systemprompt\w*|system-prompt\w*|anweisungen)(?:\W|$)"
        r"|(?:^|\W)(?:tu|su|tus|sus)\s+(?:prompt|instrucciones|indicaciones)\s+(?:del\s+sistema|de\s+sistema|originales)"
        r"|(?:^|\W)(?:il\s+tuo|i\s+tuoi)\s+(?:prompt|istruzioni)\s+di\s+sistema|(?:^|\W)(?:seu|sua|seus)\s+(?:prompt|instru[çc][õo]es)\s+do\s+sistema"
        r"|(?:сво\w+|тво\w+|ваш\w*)\s+системн\w+\s+(?:промпт\w*|подсказк\w*|инструкци\w*|сообщени\w*)"
        r"|你的系统(?:提示|指令|设定)|(?:输出|显示|告诉我)[^。\n]{0,4}系统提示|システムプロンプトを(?:表示|出力|教え)",
        _I,
        triggers=("syst", "anweisungen", "originales", "системн", "系统", "システムプロンプト"),
    ),
    _rule(
        "role_marker",
        "system_header_i18n",
        r"^\s*(?:系统(?:提示|消息|通知|指令)|システム(?:メッセージ|通知|プロンプト)|СИСТЕМН\w+\s+(?:СООБЩЕНИЕ|УВЕДОМЛЕНИЕ|"
        r"ИНСТРУКЦИ\w*)|MESSAGE\s+SYST[ÈE]ME|SYSTEMNACHRICHT|SYSTEMANWEISUNG|MENSAJE\s+DEL\s+SISTEMA)\s*[:：]",
        _I,
        triggers=("系统", "システム", "системн", "système", "systeme", "systemnachricht", "systemanweisung", "sistema"),
    ),
)
