"""``ScriptedLLM``: a fake LLM for tests and offline examples, answering by ordered rules.

It lives in ``flowkit.llm.scripted`` (the LLM layer's ``scripted:PATH`` spec builds it, and the
workflows' offline demos answer with it); the names are the same objects here, for tests.
"""

from __future__ import annotations

from flowkit.llm.scripted import Matcher, Reply, ScriptedCall, ScriptedLLM

__all__ = ["Matcher", "Reply", "ScriptedCall", "ScriptedLLM"]
