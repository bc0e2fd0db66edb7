"""Document review: draft -> human review gate -> publish, or back to draft with feedback.

The smallest flow that shows every engine part: a state model with an append reducer,
nodes with declared reads/writes, a gate with a pydantic input model, and a route table.
Registered as workflow ``review``: ``flowkit graph review``, ``flowkit demo review``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from .. import END, Flow, Route, RouteTable, append, field, node

__all__ = ["Doc", "ReviewInput", "draft", "flow", "publish", "route_after_review"]


class Doc(BaseModel):
    """The document under review."""

    topic: str = "flowkit"
    text: str = ""
    feedback: str = ""
    revision: int = 0
    approved: bool = False
    published: bool = False
    is_error: bool = False  # set (e.g. with update_state) to withdraw the document
    messages: Annotated[list[str], append] = []


class ReviewInput(BaseModel):
    """What the reviewer answers at the `review` gate."""

    approved: bool
    feedback: str = Field(default="", max_length=2000)


def _draft(state: Doc) -> dict[str, Any]:
    revision = state.revision + 1
    text = f"{state.topic}: draft {revision}"
    if state.feedback:
        text += f" (revised: {state.feedback})"
    return {"text": text, "revision": revision, "messages": [f"draft {revision} written"]}


def _publish(state: Doc) -> dict[str, Any]:
    return {"published": True, "messages": [f"published: {state.text}"]}


# Declared contracts: the engine rejects a write outside `writes`.
draft = node(
    _draft, reads=["topic", "feedback", "revision"], writes=["text", "revision", "messages"]
)
publish = node(_publish, reads=["text"], writes=["published", "messages"])


route_after_review = RouteTable(
    "route_after_review",
    [
        Route(field("is_error"), END),
        Route(field("approved"), "publish"),
    ],
    default="draft",
)

flow = Flow(
    name="review",
    description="Draft a document, have a person review it, publish it once approved.",
    state=Doc,
    start="draft",
    nodes={"draft": draft, "publish": publish},
    gates={"review": ReviewInput},
    routes={"draft": "review", "review": route_after_review, "publish": END},
    change_classes={
        "critical": ["is_error"],
        "progress": ["text", "revision", "published"],
        "approval": ["approved", "feedback"],
    },
)
