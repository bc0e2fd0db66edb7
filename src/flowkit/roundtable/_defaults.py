"""The rules every character gets when a configuration does not write its own, in Japanese
(the origin's language) and English: response constraints, flow rules and the prompt
template, each using only the placeholders ``prompt.PLACEHOLDERS`` names."""

from __future__ import annotations

from typing import Final

__all__ = ["EMPTY_TEXTS", "NO_MEMORY", "RULES"]

RULES: Final[dict[str, dict[str, str]]] = {
    "ja": {
        "response_constraints": (
            "- あなたは『{character_name}』です。ペルソナになりきって応答してください。\n"
            "- 必ず日本語で、2文以内で手短に応答してください。挨拶や前置きは不要です。\n"
            "- ユーザーや他の参加者の発言を繰り返さず、思考過程やメタ情報を含めないでください。\n"
            "- 分からないことは「分かりません」と言ってください。"
        ),
        "flow_rules": (
            "- 応答の最後に、次の話者を `[Next: INTERNAL_ID]` の形式で必ず指名してください。\n"
            '- 可能なら応答末尾に {"next":"INTERNAL_ID"} も含めてください。\n'
            "- 指名は他の参加者（{other_ids}）から、会話の流れに最もふさわしい一人を選んで"
            "ください。自分自身や USER は指名しないでください。"
        ),
        "prompt_template": (
            "## あなたの役割と制約\n{response_constraints}\n\n"
            "## あなたのペルソナ\n{persona_prompt}\n\n"
            "## 会話の進行ルール\n{flow_rules}\n\n"
            "## これまでのセッションの要約\n{memory}\n\n"
            "## 現在の会話状況\n- 他の参加者: {other_characters}\n"
            "- これまでの会話履歴:\n{conversation_log}\n\n"
            "## 指示\n以上を踏まえ、『{character_name}』として応答してください。"
        ),
    },
    "en": {
        "response_constraints": (
            "- You are {character_name}. Stay in your persona.\n"
            "- Answer in English, briefly: two sentences at most, no greeting or preamble.\n"
            "- Do not repeat what the person or the others said; no reasoning or meta text.\n"
            '- When you do not know, say "I don\'t know".'
        ),
        "flow_rules": (
            "- End every reply by naming the next speaker as `[Next: INTERNAL_ID]`.\n"
            '- If you can, also end with {"next":"INTERNAL_ID"}.\n'
            "- Choose the one of the others ({other_ids}) who fits the conversation best; "
            "never yourself and never USER."
        ),
        "prompt_template": (
            "## Your role and constraints\n{response_constraints}\n\n"
            "## Your persona\n{persona_prompt}\n\n"
            "## How the conversation goes\n{flow_rules}\n\n"
            "## Summaries of earlier sessions\n{memory}\n\n"
            "## The conversation now\n- Others at the table: {other_characters}\n"
            "- The conversation so far:\n{conversation_log}\n\n"
            "## Task\nWith all of the above in mind, reply as {character_name}."
        ),
    },
}

#: The displayed text of a reply with nothing left in it.
EMPTY_TEXTS: Final[dict[str, str]] = {"ja": "（応答なし）", "en": "(no response)"}
#: What ``{memory}`` and ``{conversation_log}`` say when there is nothing yet.
NO_MEMORY: Final[dict[str, str]] = {"ja": "（なし）", "en": "(none)"}
