"""Built-in responses in English and Japanese, used when a domain does not define its own.

A domain overrides any of them under ``responses:`` with the same id; a domain in another
language must define them all (``load_domain`` lists the missing ones).
"""

from __future__ import annotations

from typing import Final

__all__ = ["BUILTIN_RESPONSES", "REASONS"]

#: response id -> language -> template. Placeholders are filled by the response nodes.
BUILTIN_RESPONSES: Final[dict[str, dict[str, str]]] = {
    "fallback": {
        "en": "Sorry, I did not understand that. Could you say it another way?",
        "ja": "すみません、よく分かりませんでした。別の言い方でお願いできますか。",
    },
    "faq_answer": {"en": "{answer}", "ja": "{answer}"},
    "faq_unknown": {
        "en": "I do not have an answer to that question yet.",
        "ja": "その質問にはまだお答えできません。",
    },
    "ask_slot": {"en": "{question}", "ja": "{question}"},
    "slot_invalid": {"en": "{reason} {question}", "ja": "{reason}{question}"},
    "slot_corrected": {
        "en": "Changed {label} to {value}.",
        "ja": "{label}を{value}に変更しました。",
    },
    "resume_goal": {"en": "Back to {goal}: {question}", "ja": "{goal}に戻ります。{question}"},
    "goal_cancelled": {"en": "OK, I cancelled {goal}.", "ja": "{goal}を取り消しました。"},
    "nothing_to_cancel": {
        "en": "There is nothing to cancel.",
        "ja": "取り消すものはありません。",
    },
    "no_active_goal": {
        "en": "What would you like to do?",
        "ja": "何をしましょうか。",
    },
    "goal_done": {"en": "{goal}: done.", "ja": "{goal}が完了しました。"},
    # After a finished task, as its own message, when the domain sets `anything_else: true`.
    "anything_else": {
        "en": "Is there anything else I can help you with?",
        "ja": "ほかにご用件はありますか？",
    },
    "nothing_else": {
        "en": "All right. Just ask if you need anything.",
        "ja": "承知しました。また何かあればお声がけください。",
    },
    # A goal with `confirm: true` asks before its action runs (GP); {summary} lists its slots.
    "confirm_goal": {
        "en": "Shall I go ahead with {goal} ({summary})? (yes / no)",
        "ja": "{goal}（{summary}）を実行してよろしいですか？（はい／いいえ）",
    },
    "confirm_repeat": {
        "en": "Please answer yes or no: shall I go ahead with {goal} ({summary})?",
        "ja": "「はい」か「いいえ」でお答えください。{goal}（{summary}）を実行してよろしいですか？",
    },
    "confirm_declined": {
        "en": "OK, nothing is done yet. What would you like to change? Tell me the new value, "
        "or say cancel to drop {goal}.",
        "ja": "承知しました。まだ実行していません。どこを変更しますか？新しい内容を"
        "お伝えいただくか、「キャンセル」で{goal}を取り消せます。",
    },
    # A goal paused by "stop" (forms.py): yes resumes it, no drops it.
    "continue_goal": {
        "en": "Do you want to continue with {goal}? (yes / no)",
        "ja": "{goal}を続けますか？（はい／いいえ）",
    },
    "continue_repeat": {
        "en": "Please answer yes or no: do you want to continue with {goal}?",
        "ja": "「はい」か「いいえ」でお答えください。{goal}を続けますか？",
    },
    "action_failed": {
        "en": "Sorry, {goal} failed ({error_type}). Please try again later.",
        "ja": "申し訳ありません、{goal}に失敗しました（{error_type}）。"
        "後でもう一度お試しください。",
    },
    # The Error Policy's replies, one per seed 001 error class (errors.py).
    "error_user": {
        "en": "Sorry, I could not do that as you said it. Could you say it another way?",
        "ja": "すみません、そのままでは対応できませんでした。別の言い方でお願いできますか。",
    },
    "error_external": {
        "en": "Sorry, a service I need is not answering right now. Please try again shortly.",
        "ja": "申し訳ありません、必要なサービスが応答していません。"
        "少し後でもう一度お試しください。",
    },
    "error_internal": {
        "en": "Sorry, something went wrong on my side. Please try again.",
        "ja": "申し訳ありません、こちらで問題が発生しました。もう一度お試しください。",
    },
    "error_policy": {
        "en": "Sorry, I cannot help with that request.",
        "ja": "申し訳ありませんが、そのご依頼にはお応えできません。",
    },
    "present_step": {
        "en": "Step {step}/{total}: {step_text}",
        "ja": "手順 {step}/{total}：{step_text}",
    },
    "procedure_done": {
        "en": "All {total} steps of {goal} are done.",
        "ja": "{goal}の全{total}手順が完了しました。",
    },
}

#: Why a slot value was refused: reason code -> language -> template (validation parameters).
REASONS: Final[dict[str, dict[str, str]]] = {
    "min": {"en": "{label} must be at least {min}.", "ja": "{label}は{min}以上にしてください。"},
    "max": {"en": "{label} must be at most {max}.", "ja": "{label}は{max}以下にしてください。"},
    "whole": {"en": "{label} must be a whole number.", "ja": "{label}は整数で入力してください。"},
    "min_length": {
        "en": "{label} needs at least {min_length} characters.",
        "ja": "{label}は{min_length}文字以上で入力してください。",
    },
    "max_length": {
        "en": "{label} can have at most {max_length} characters.",
        "ja": "{label}は{max_length}文字以内で入力してください。",
    },
    "pattern": {
        "en": "{label} is not in the expected format.",
        "ja": "{label}の形式が正しくありません。",
    },
    "choice": {
        "en": "{label} is not one of the choices.",
        "ja": "{label}は選択肢の中から選んでください。",
    },
    "not_past": {"en": "That date is in the past.", "ja": "その日付は過去です。"},
    "max_days_ahead": {
        "en": "Bookings open at most {max_days_ahead} days ahead.",
        "ja": "予約は{max_days_ahead}日先までです。",
    },
    "earliest": {
        "en": "The earliest possible time is {earliest}.",
        "ja": "{earliest}以降の時刻を指定してください。",
    },
    "latest": {
        "en": "The latest possible time is {latest}.",
        "ja": "{latest}までの時刻を指定してください。",
    },
}
