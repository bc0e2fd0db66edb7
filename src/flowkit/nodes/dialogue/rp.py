"""Response Proxy (RP): the hand-off between the policies and the response nodes.

It writes nothing (seed 001 §4.1); its route table picks the response node by the plan's
style. Reaching it without a plan is a programming error and fails the turn loudly.
"""

from __future__ import annotations

from ...definition._node import Node, node
from ...dialogue.state import DialogueState

__all__ = ["make_rp"]


def make_rp() -> Node:
    @node(reads=["response_plan"], writes=[])
    def response_proxy(state: DialogueState) -> None:
        if state.response_plan is None:
            raise ValueError("RP reached without a response plan; a policy node must plan one")

    return response_proxy
