"""The English rule table: what each rule flags, its pattern and the literals a match must contain.

Rules are data (:class:`~admit.security.base.Rule`); :func:`~admit.security.scan.scan` runs them. Every pattern
is compiled for RE2 (:mod:`admit._linear`), so matching is linear in the text whatever the text holds. Rules
for other languages are in :mod:`admit.security.rules_i18n`, those aimed at an LLM grader or ranker in
:mod:`admit.security.rules_grader`.
"""

from __future__ import annotations

import hashlib
import re

from admit.security.base import RULE_FLAGS as _I
from admit.security.base import Rule
from admit.security.base import rule as _rule
from admit.security.rules_agent import AGENT_RULES
from admit.security.rules_grader import GRADER_RULES
from admit.security.rules_i18n import I18N_RULES

__all__ = ["EN_RULES", "RULES", "RULES_VERSION"]


_PREV = r"(?:previous|prior|preceding|above|earlier|former|original|system|initial|old|existing|current)"
_ORDERS = r"(?:instructions?|directions?|rules?|prompts?|guidelines?|context|constraints?|orders?|commands?|messages?)"

EN_RULES: tuple[Rule, ...] = (
    # fake envelope / data boundaries of admit's renderer and grader prompt, and generic context ends
    _rule(
        "boundary_forgery",
        "admit_envelope",
        r"</?\s*(?:passage|evidence)[-_][\w-]*",
        _I,
        triggers=("<",),
    ),
    _rule(
        "boundary_forgery",
        "admit_data_fence",
        r"\b(?:BEGIN|END)\s+DATA\b",
        re.MULTILINE,
        triggers=("BEGIN", "END"),
    ),
    _rule(
        "boundary_forgery",
        "grader_header",
        r"(?:^|\s)#{2,4}\s*C\d{1,4}\b",
        re.MULTILINE,
        triggers=("#",),
    ),
    _rule(
        "boundary_forgery",
        "context_tag",
        r"</\s*(?:context|document|documents|source|sources|untrusted[-_\w]*|data|retrieved[-_\w]*|"
        r"search[-_]results?|evidence|passages?|user|input|text|article|email|tool[-_]output)\s*>",
        _I,
        triggers=("<",),
    ),
    _rule(
        "boundary_forgery",
        "end_marker",
        r"(?:[\[(<=*#-]{1,5}\s*)\bend\s+(?:of\s+)?(?:the\s+)?(?:context|document|documents|evidence|"
        r"passages?|sources?|retrieved\s+\w+|search\s+results?|data|input|email|article)\b",
        _I,
        triggers=("end",),
    ),
    _rule(
        "boundary_forgery",
        "end_marker_caps",
        r"\bEND\s+OF\s+(?:CONTEXT|DOCUMENTS?|EVIDENCE|PASSAGES?|SOURCES?|DATA|INPUT|EMAIL|ARTICLE|SEARCH\s+RESULTS?)\b",
        triggers=("END",),
    ),
    # chat-template role markers
    _rule(
        "role_marker",
        "special_token",
        r"<\|\s*(?:im_start|im_end|im_sep|system|user|assistant|endoftext|begin_of_text|end_of_text|"
        r"start_header_id|end_header_id|eot_id|eom_id|end)\s*\|>",
        _I,
        triggers=("<",),
    ),
    _rule(
        "role_marker",
        "llama_inst",
        r"\[/?INST\]|<<\s*/?SYS\s*>>|<start_of_turn>|<end_of_turn>",
        _I,
        triggers=("<", "["),
    ),
    _rule(
        "role_marker",
        "heading_role",
        r"^\s*(?:(?:#{1,6}|\*\*|<)\s*(?:system|assistant|developer|admin(?:istrator)?|root)\s*"
        r"(?:message|prompt|instructions?|override|note)?\s*(?:>|\*\*)?\s*:|\[\s*(?:system|developer|admin)\s*\])",
        _I,
        triggers=("system", "assistant", "developer", "admin", "root"),
    ),
    _rule(
        "role_marker",
        "line_role",
        r"^\s*(?:system|assistant|developer)\s*(?:message|prompt|override)?\s*:\s*\S",
        _I,
        triggers=("system", "assistant", "developer"),
    ),
    _rule(
        "role_marker",
        "role_tag",
        r"<\s*/?\s*(?:system|assistant|system[-_]prompt|instructions?)\s*>",
        _I,
        triggers=("<",),
    ),
    _rule(
        "role_marker",
        "human_assistant",
        r"^\s*(?:human|assistant|user)\s*:\s*\S.*\n\s*(?:assistant)\s*:",
        _I,
        triggers=("assistant",),
    ),
    # task hijacks
    _rule(
        "hijack",
        "ignore_previous",
        rf"\b(?:ignore|disregard|forget|skip|override|bypass|drop|abandon|neglect|discard)\b[\s\w,'-]{{0,30}}?"
        rf"\b(?:all|any|the|your|these|those|every|my|of|what)?\s*{_PREV}?\s*{_ORDERS}",
        _I,
        triggers=(
            "abandon",
            "bypass",
            "discard",
            "disregard",
            "drop",
            "forget",
            "ignore",
            "neglect",
            "override",
            "skip",
        ),
        # "skip the source-first-line command line flag", "ignore the prompt-for-password command-line option":
        # a command line is no order given to the model
        unless_after=r"[\s-]*line\b",
    ),
    _rule(
        "hijack",
        "new_instructions",
        r"\b(?:new|updated|real|actual|true|revised|secret|hidden|important|urgent|additional)\s+"
        r"(?:system\s+)?(?:instructions?|task|directives?|orders|objective|prompt)\s*(?::|-|are|is|follow)",
        _I,
        triggers=(
            "actual",
            "additional",
            "hidden",
            "important",
            "new",
            "real",
            "revised",
            "secret",
            "true",
            "updated",
            "urgent",
        ),
    ),
    _rule(
        "hijack",
        "you_are_now",
        r"\byou\s+are\s+now\b|\byou\s+will\s+now\s+(?:act|behave|respond|answer|reply|obey|ignore|pretend|only|"
        r"always|speak|talk|follow|be\s+(?:an?|my|the|called|known))\b"
        r"|\bfrom\s+(?:now|this\s+(?:point|line|message|moment))\s+on\b,?\s+(?:your\b|the\s+(?:assistant|model|"
        r"ai|bot)\b|act\b|respond\b|answer\b|reply\b|only\b|always\b|never\b|ignore\b|speak\b|talk\b)",
        _I,
        triggers=("now",),
    ),
    # "from now on you ..." unless it goes on as a reader's guide does ("from now on you can see ...")
    _rule(
        "hijack",
        "from_now_on_you",
        r"\bfrom\s+(?:now|this\s+(?:point|line|message|moment))\s+on\b,?\s+you\b",
        _I,
        triggers=("now",),
        unless_after=r"(?:\s+|')(?:can|could|may|might|need|will\s+(?:see|find|get|need|have|be\s+able)|"
        r"ll\s+(?:see|find|get|need))\b",
    ),
    _rule(
        "hijack",
        "instead_do",
        r"\binstead\s*,?\s+(?:you\s+(?:must|should|will)\s+)?(?:just\s+)?"
        r"(?:do|answer|respond|reply|say|write|print|output|tell|translate|summari[sz]e|recommend|"
        r"ask|include|return|state|claim|insert|append|start|end)\b",
        _I,
        triggers=("instead",),
    ),
    _rule(
        "hijack",
        "must_respond",
        r"\b(?:you|the\s+(?:assistant|model|ai|bot))\s+(?:must|should|are\s+required\s+to|have\s+to|shall)\s+"
        r"(?:now\s+)?(?:only\s+)?(?:respond|reply|answer|output|say|print|append|"
        r"recommend|tell\s+the\s+user|ask\s+the\s+user|refuse)\b",
        _I,
        triggers=("must", "should", "required", "have to", "shall"),
    ),
    _rule(
        "hijack",
        "respond_only",
        r"\b(?:respond|reply|answer|output)\s+(?:only\s+)?with\s+(?:only\s+)?(?:the\s+(?:word|phrase|text)|"
        r"[\"'“])",
        _I,
        triggers=("answer", "output", "reply", "respond"),
    ),
    _rule(
        "hijack",
        "your_task",
        r"\byour\s+(?:new\s+|real\s+|only\s+|actual\s+)?(?:task|job|goal|purpose|role)\s+(?:is|now)\b",
        _I,
        triggers=("task", "job", "goal", "purpose", "role"),
    ),
    _rule(
        "hijack",
        "pretend_roleplay",
        r"\b(?:pretend\s+(?:to\s+be|you\s+are)|act\s+as\s+(?:if\s+you|an?\s+(?:unrestricted|unfiltered|evil|different|new|rogue)|the\s+(?:system|admin|administrator|developer|ceo))\b|roleplay\s+as|"
        r"(?:developer|god|dan|debug|admin|unrestricted)\s+mode|jailbreak|do\s+anything\s+now)\b",
        _I,
        triggers=("pretend", "act as", "roleplay", "mode", "jailbreak", "anything now"),
    ),
    _rule(
        "hijack",
        "reveal_prompt",
        r"\b(?:reveal|print|repeat|show|output|leak|dump|disclose)\s+(?:me\s+)?(?:your|the)\s+(?:full\s+|entire\s+|"
        r"original\s+|hidden\s+)?(?:system\s+prompt|instructions|prompt|initial\s+prompt|configuration|api\s+keys?)\b",
        _I,
        triggers=("disclose", "dump", "leak", "output", "print", "repeat", "reveal", "show"),
    ),
    _rule(
        "hijack",
        "do_not_tell",
        r"\b(?:do\s+not|don't|never)\s+(?:tell|inform|mention\s+(?:this|these)\s+(?:instructions?|to))\b"
        r"[\s\w]{0,20}\b(?:user|anyone|human)\b",
        _I,
        triggers=("user", "anyone", "human"),
    ),
    # text addressed to the model
    _rule(
        "ai_addressed",
        "note_to_ai",
        r"\b(?:note|message|instructions?|attention|reminder|memo|hey|dear|hi|hello)\s*(?:to|for)?\s*(?:the\s+|all\s+|any\s+)?"
        r"(?:ai|a\.i\.|llms?|assistants?|language\s+models?|chat\s*bots?|gpt|chatgpt|claude|copilot|"
        r"ai\s+(?:models?|systems?|assistants?|agents?)|models?\s+reading\s+this)\b\s*[:,!-]",
        _I,
        triggers=("ai", "a.i.", "llm", "assistant", "language model", "chat", "gpt", "claude", "copilot", "model"),
    ),
    _rule(
        "ai_addressed",
        "if_you_are_ai",
        r"\bif\s+you\s+are\s+(?:an?\s+)?(?:ai|llm|language\s+model|assistant|chat\s*bot|gpt|automated\s+system)\b"
        r"|\b(?:ai|llm|assistant)s?\s+(?:reading|processing|summari[sz]ing|grading)\s+this\b",
        _I,
        triggers=("ai", "llm", "language model", "assistant", "chat", "gpt", "automated"),
    ),
    # tool / function calls
    _rule(
        "tool_call",
        "tool_json",
        r"[\"']\s*(?:tool_calls?|function_call|tool_name|tool_use|functionCall)\s*[\"']\s*:"
        r"|[\"']\s*(?:name|function|tool)\s*[\"']\s*:\s*[\"'][\w.-]+[\"']\s*,\s*[\"']\s*(?:arguments|args|parameters|input)\s*[\"']\s*:",
        _I,
        triggers=("tool", "function", "arguments", "args", "parameters"),
    ),
    _rule(
        "tool_call",
        "use_tool_to_act",
        r"\b(?:use|run)\s+(?:the\s+)?[\w.-]+\s+(?:tool|plugin|function|integration)\s+to\s+(?:cancel|delete|send|"
        r"transfer|submit|remove|buy|purchase|post|forward|email|wire|pay|wipe|erase|grant|revoke)\b",
        _I,
        triggers=("tool", "plugin", "function", "integration"),
    ),
    _rule(
        "tool_call",
        "tool_tag",
        r"<\s*/?\s*(?:tool_call|function_call|tool_use|invoke|function_calls)\b",
        _I,
        triggers=("<",),
    ),
    _rule(
        "tool_call",
        "call_the_tool",
        r"\b(?:call|invoke|execute|trigger)\s+(?:the\s+)?[`\"']?[\w.-]+[`\"']?\s+"
        r"(?:tool|function|api|plugin|action)\b[^.\n]{0,80}?\b(?:with|to|now|immediately|and)\b"
        r"|\b(?:send_email|delete_\w+|transfer_funds|execute_(?:code|command|shell)|http_request|browser\.open|"
        r"run_shell|exec_sql)\s*\(",
        _I,
        triggers=("tool", "function", "api", "plugin", "action", "_", "browser.open"),
    ),
    # exfiltration
    _rule(
        "exfiltration",
        "md_image_query",
        r"!\[[^\]]*\]\(\s*<?https?://[^)\s]*\?[^)\s]*(?:[{<$%]|\[|=(?:\s|\)|$)|"
        r"(?:data|q|query|secret|token|key|conv|chat|history|prompt|msg|message|email|pw|password|info|user|"
        r"session|cookie|ssn|card|summary|answer|d|c|p)=)",
        _I,
        triggers=("!",),
    ),
    _rule(
        "exfiltration",
        "link_placeholder",
        r"https?://[^\s)\"'>]*\?[^\s)\"'>]*(?:\{[^}\s]{1,40}\}|<[A-Z_ ]{2,40}>|\[[A-Z_ ]{2,40}\]|\$\{?[A-Za-z_]+)",
        _I,
        triggers=("http",),
    ),
    _rule(
        "exfiltration",
        "send_to_url",
        r"\b(?:send|post|upload|forward|submit|transmit|leak|exfiltrate|report\s+(?:the|this|all|every|any|it|them)|"
        r"email|append|encode|include|add|put|attach)\b[^.\n]{0,80}\b(?:to|at|in(?:to)?|on)\s+(?:the\s+)?(?:url|link|endpoint|webhook|address|"
        r"https?://)",
        _I,
        triggers=("url", "link", "endpoint", "webhook", "address", "http"),
    ),
    _rule(
        "exfiltration",
        "visit_link",
        r"\b(?:click|visit|open|go\s+to|navigate\s+to|load|render|display|show)\s+(?:on\s+)?(?:this|the\s+"
        r"following|the)?\s*(?:link|url|image|page|site|website)\b[^.\n]{0,40}https?://",
        _I,
        triggers=("http",),
    ),
    _rule(
        "exfiltration",
        "html_img",
        r"<\s*img\b[^>]*\bsrc\s*=\s*[\"']?https?://[^\"'>\s]*\?",
        _I,
        triggers=("<",),
    ),
    # polite / indirect hijacks
    _rule(
        "hijack",
        "set_aside",
        r"\b(?:set|put|lay|push|keep|place)\s+(?:aside|to\s+one\s+side|on\s+hold)\s+(?:the|your|its|their|any|all|my)\s+"
        r"(?:\w+\s+){0,2}?(?:guidance|directions?|instructions?|rules|guidelines|orders|prompt|directives)"
        r"|\b(?:set|put|lay|push|keep|place)\s+(?:the|your|its|their|any|all|my)\s+(?:\w+\s+){0,2}?(?:guidance|"
        r"directions?|instructions?|rules|guidelines|orders|prompt|directives)\s+(?:\w+\s+){0,3}?(?:aside|to\s+one\s+side|"
        r"on\s+hold)",
        _I,
        triggers=("aside", "one side", "on hold"),
    ),
    _rule(
        "hijack",
        "dismiss_given",
        r"\b(?:ignore|disregard|forget|skip|drop|abandon|discard|omit|leave\s+out|refrain\s+from\s+(?:following|"
        r"obeying|applying|giving|mentioning))\b[^.\n]{0,40}?\b(?:rules|guidance|guidelines|instructions|directions|"
        r"warnings|caveats|disclaimers|prompt|directives)\s+(?:that\s+)?(?:it|you|they|he|she)\s+(?:\w+\s+)?"
        r"(?:received|got|given|handed|told|instructed|asked)"
        r"|\b(?:ignore|disregard|forget)\s+(?:what|everything|anything|all)\s+(?:that\s+)?(?:you|the\s+\w+|they|it)\s+"
        r"(?:were\s+|was\s+|has\s+|have\s+|had\s+)?(?:told|said|instructed|asked|given)"
        r"|\brefrain\s+from\s+(?:following|obeying|applying)\s+(?:its|your|their|the|any)\s+(?:\w+\s+)?(?:guidelines|"
        r"instructions|rules|guidance|directions|prompt)",
        _I,
        triggers=(
            "ignore",
            "disregard",
            "forget",
            "skip",
            "drop",
            "abandon",
            "discard",
            "omit",
            "leave out",
            "refrain",
        ),
    ),
    # fake system headers aimed at the model ("SYSTEM NOTICE >> the assistant must ...")
    _rule(
        "role_marker",
        "system_notice",
        r"(?:^|\n)\s*[\[(<*=#>-]*\s*(?:SYSTEM|ADMIN(?:ISTRATOR)?|OPERATOR|SECURITY|PRIORITY|DEVELOPER|IMPORTANT|URGENT)\s+"
        r"(?:NOTICE|ALERT|OVERRIDE|MESSAGE|UPDATE|INSTRUCTIONS?|DIRECTIVE|ANNOUNCEMENT|COMMAND)\s*"
        r"(?:[\])>*=#-]{2,}|[\])>*=#-]?\s*(?:>{1,3}|::|:|—|-))[^\n]{0,160}?(?i:\b(?:assistant|models?|ai|llm|chatbot|bot|"
        r"respond|answer|reply|must|required\s+to)\b)",
        triggers=("SYSTEM", "ADMIN", "OPERATOR", "SECURITY", "PRIORITY", "DEVELOPER", "IMPORTANT", "URGENT"),
    ),
    _rule(
        "role_marker",
        "bare_special_token",
        r"<\s*/?\s*(?:im_start|im_end|im_sep|endoftext|eot_id|"
        r"start_header_id|end_header_id|begin_of_text)\s*>",
        _I,
        triggers=("<",),
    ),
    _rule(
        "role_marker",
        "begin_system_prompt",
        r"\b(?:BEGIN|START)\s+(?:OF\s+)?(?:THE\s+)?(?:NEW\s+|UPDATED\s+|REAL\s+|ACTUAL\s+|TRUE\s+)?(?:SYSTEM|ADMIN|DEVELOPER|"
        r"OPERATOR)\s+(?:PROMPT|MESSAGE|INSTRUCTIONS?|DIRECTIVES?)\b",
        _I,
        triggers=("begin", "start"),
    ),
    _rule(
        "role_marker",
        "alpaca_header",
        r"(?:^|\s)#{2,4}\s*(?:Instruction|Response)\s*(?::|$)",
        re.MULTILINE,
        triggers=("#",),
    ),
    # persona games
    _rule(
        "hijack",
        "persona_game",
        r"\blet'?s\s+play\s+a\s+game\b[^.\n]{0,100}?\byou\s+(?:are|will\s+be|play|become)\b"
        r"|\b(?:imagine|pretend|suppose|assume)\s+(?:that\s+)?you(?:'re|\s+are)\b[^.\n]{0,80}?\b(?:an?\s+ai|bot|assistant|"
        r"model|character|persona|no\s+(?:rules|restrictions|limits|filters)|without\s+(?:any\s+)?(?:rules|"
        r"restrictions|limits|filters)|never\s+refuses?|always\s+obeys?|unrestricted|unfiltered|uncensored)\b"
        r"|\b(?:an?\s+)(?:ai|assistant|bot|character|model|chatbot)\s+(?:with\s+no|without\s+(?:any\s+)?)\s*(?:rules|"
        r"restrictions|limits|filters|guidelines|ethics)\b"
        r"|\bcharacter\s+who\s+(?:never\s+refuses|always\s+(?:obeys|answers|tells|reveals|complies))"
        r"|\brole\s*-?\s*play(?:ing)?\s+(?:time|game)\b|\blet'?s\s+role\s*-?\s*play\b",
        _I,
        triggers=("game", "imagine", "pretend", "suppose", "assume", "without", "with no", "character", "play"),
    ),
    # text addressed to the summariser / grader / automated reader
    _rule(
        "ai_addressed",
        "automated_reader",
        r"\b(?:dear|hey|hi|hello|attention|note\s+(?:to|for)|hint\s+(?:to|for)|message\s+(?:to|for)|instructions?\s+"
        r"(?:to|for))\s+(?:the\s+|any\s+|all\s+)?(?:retrieval\s+|relevance\s+|ranking\s+)?(?:summari[sz]er|automated\s+"
        r"readers?|crawler|grader|ranker|reranker|retriever|judge|evaluator)s?\b"
        r"|\b(?:any|every|the)\s+(?:automated|automatic|machine)\s+(?:readers?|systems?|agents?|summari[sz]ers?|"
        r"processors?)\b"
        r"|\bwhoever\s+(?:is\s+)?(?:reading|processing|summari[sz]ing|parsing|answering|handling)\b"
        r"|\b(?:the|an?|any)\s+(?:ai|model|assistant|llm|bot|chatbot|summari[sz]er)\s+(?:that\s+is\s+|which\s+is\s+|who\s+is\s+)?"
        r"(?:reading|processing|handling|answering|summari[sz]ing|parsing)\s+(?:from\s+)?(?:this|these|the\s+following)\b"
        r"|\bif\s+you\s+happen\s+to\s+be\s+(?:an?\s+)?(?:ai|llm|language\s+model|assistant|chat\s*bot|model|bot)",
        _I,
        triggers=(
            "summari",
            "automated",
            "automatic",
            "machine",
            "crawler",
            "grader",
            "ranker",
            "retriever",
            "judge",
            "evaluator",
            "whoever",
            "reading",
            "processing",
            "handling",
            "answering",
            "parsing",
            "happen to be",
        ),
    ),
    # agent / tool formats
    _rule(
        "tool_call",
        "react_action",
        r"(?:^|[.!?]\s+)Action\s*:\s*[\w.-]+\s*[\[(]"
        r"|^\s*Action\s*:\s*[\w.-]+\s*\n\s*Action\s+Input\s*:"
        r"|^\s*Thought\s*:[^\n]*\n(?:[^\n]*\n){0,2}?\s*Action\s*:",
        re.MULTILINE,
        triggers=("Action",),
    ),
    _rule(
        "tool_call",
        "function_tag_eq",
        r"<\s*function\s*=\s*[\w.-]+\s*>",
        _I,
        triggers=("<",),
    ),
)

RULES: tuple[Rule, ...] = (*EN_RULES, *AGENT_RULES, *GRADER_RULES, *I18N_RULES)
"""Every pattern rule, in scan order."""

SCAN_REVISION = "47.8"
"""Bumped when the scan's code changes what it flags without a rule's pattern changing (issue 47 item 8: a Latin
word is disguised only when its other-script letters are all look-alikes)."""

RULES_VERSION: str = hashlib.sha256(
    repr(
        [SCAN_REVISION]
        + [
            (r.kind, r.name, r.pattern.pattern, r.pattern.flags, r.triggers, r.unless_after and r.unless_after.pattern)
            for r in RULES
        ]
    ).encode()
).hexdigest()[:12]
"""A digest of the rule set and :data:`SCAN_REVISION`: flags stored with this version (at ingest) are trusted only
by the same scanner."""
