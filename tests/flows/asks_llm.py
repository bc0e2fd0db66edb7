"""A flow whose one node asks the LLM: what `flowkit worker --llm SPEC` must be able to run."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from flowkit import END, Context, Flow


class Question(BaseModel):
    question: str = ""
    answer: str = ""


def ask(state: Question, ctx: Context) -> dict[str, Any]:
    reply = ctx.llm.complete([{"role": "user", "content": state.question}])
    return {"answer": reply.text}


flow = Flow(name="asks_llm", state=Question, start="ask", nodes={"ask": ask}, routes={"ask": END})
