"""Route tables of the dialogue workflow (seed 001), as data.

One turn runs SG -> IR -> (NP | GST -> (SST -> SE -> (SFP | GE) | GE | GP)) -> RP -> RN -> EG
and waits at SG again. Machine states carry the seed's abbreviations; the tables read only
state fields, so each resolves in isolation::

    SG   Start Gate (the user's turn enters: a flowkit gate)   GE   Goal Executor
    IR   Intent Recognition                                     SFP  Slot Filling Policy
    NP   Non-task Policy (QUESTION / SMALL_TALK / OOS)          GP   Goal Policy
    GST  Goal State Tracker                                     RP   Response Proxy
    SST  Slot State Tracker                                     RN_template / RN_llm
    SE   Slot Evaluator (validation)                                 Response Nodes
    EG   End Gate (reports the turn; END when the user ends the conversation)
    EP   Error Policy (a node failed: the reply for the error's class)

A node that raises does not fail the thread: the engine writes the failure into ``error``
(with seed 001's class: user / external / internal / policy, see ``flowkit.dialogue.errors``)
and the node's table routes on it. Each table's first row is ``error.node == <this node>``
-> EP, which plans the class's reply; the turn then ends as usual (RP -> RN -> EG -> SG).
SG clears ``error`` when the next turn starts. GE records a failing *action* itself (the
goal failed; GP explains it) and only a crash of GE's own code goes to EP.

A goal with ``confirm: true`` (``goal_state.confirm``) does not go from SE to GE when its
slots are filled: GP asks the user to confirm (SE -> GP). The answer comes back through GST:
yes (``command: confirm``) -> GE, which runs the action; a bare no (``deny``) or a reply
that is neither (``unclear``) -> GP, which asks what to change or asks again; new values go
the usual way (SST -> SE) and are confirmed again.

A "stop" during a goal (``command: stop``) -> GP, which asks "Do you want to continue?"; the
goal is ``paused`` until the answer: yes continues it the usual way (SST -> SE -> SFP asks the
same slot again), no cancels it (GP says so), anything else (``unclear``) -> GP asks again.
"""

from __future__ import annotations

from typing import Final

from ..definition._conditions import Condition, field, not_
from ..definition._route_table import END, Route, RouteTable

__all__ = [
    "EG",
    "EP",
    "GE",
    "GP",
    "GST",
    "IR",
    "NON_TASK",
    "NP",
    "RN_LLM",
    "RN_TEMPLATE",
    "RP",
    "SE",
    "SFP",
    "SG",
    "SST",
    "STATES",
    "TASK_STATES",
    "failed_at",
    "route_after_eg",
    "route_after_ep",
    "route_after_ge",
    "route_after_gp",
    "route_after_gst",
    "route_after_ir",
    "route_after_np",
    "route_after_rn_llm",
    "route_after_rn_template",
    "route_after_rp",
    "route_after_se",
    "route_after_sfp",
    "route_after_sst",
]

SG: Final = "SG"
IR: Final = "IR"
NP: Final = "NP"
GST: Final = "GST"
SST: Final = "SST"
SE: Final = "SE"
GE: Final = "GE"
SFP: Final = "SFP"
GP: Final = "GP"
RP: Final = "RP"
RN_TEMPLATE: Final = "RN_template"
RN_LLM: Final = "RN_llm"
EG: Final = "EG"
EP: Final = "EP"

STATES: Final = (SG, IR, NP, GST, SST, SE, GE, SFP, GP, RP, RN_TEMPLATE, RN_LLM, EG, EP)
#: The task branch; seed 001 §5.1 keeps non-task intents out of it.
TASK_STATES: Final = (GST, SST, SE, GE, SFP, GP)
#: Seed 001 §2.1.1 / §5.1: intent types answered by NP alone.
NON_TASK: Final = ("OOS", "QUESTION", "SMALL_TALK")


def failed_at(node: str) -> Condition:
    """``node`` raised this turn: the engine wrote its failure into ``error``."""
    return field("error.node").eq(node)


def _on_error(node: str) -> Route:
    return Route(failed_at(node), EP)


#: §5.1: non-task intents go to NP and never to GST; everything else goes to GST.
route_after_ir = RouteTable(
    "route_after_ir",
    [_on_error(IR), Route(field("intent_type").is_in(NON_TASK), NP)],
    default=GST,
)

route_after_np = RouteTable("route_after_np", [_on_error(NP)], default=RP)
route_after_sst = RouteTable("route_after_sst", [_on_error(SST)], default=SE)
route_after_sfp = RouteTable("route_after_sfp", [_on_error(SFP)], default=RP)
route_after_gp = RouteTable("route_after_gp", [_on_error(GP)], default=RP)

#: A failing action is the goal's failure (GE records it, the goal is ``failed`` or holds the
#: handler's refusal) and GP explains it; only a crash of GE itself leaves the goal untouched.
route_after_ge = RouteTable(
    "route_after_ge",
    [
        Route(
            failed_at(GE)
            & field("goal_state.status").eq("active")
            & not_(field("goal_state.refusal")),
            EP,
        )
    ],
    default=GP,
)

#: The Error Policy's reply goes out like any other.
route_after_ep = RouteTable("route_after_ep", [], default=RP)

#: An LLM phrasing failure is answered from the error templates. A template failure while
#: answering an error ends the turn without a reply rather than looping.
route_after_rn_llm = RouteTable("route_after_rn_llm", [_on_error(RN_LLM)], default=EG)
route_after_rn_template = RouteTable(
    "route_after_rn_template",
    [Route(failed_at(RN_TEMPLATE) & not_(field("response_plan.by").eq("EP")), EP)],
    default=EG,
)

#: An active goal continues in its mode; no active goal (cancelled, nothing to do) -> GP.
#: The answer to a confirmation question comes first: yes runs the action (GE), a bare no or
#: an unclear answer is GP's to reply to, and so is a stop (GP asks whether to continue).
route_after_gst = RouteTable(
    "route_after_gst",
    [
        _on_error(GST),
        Route(
            field("goal_state.status").eq("active") & field("goal_state.command").eq("confirm"), GE
        ),
        Route(
            field("goal_state.status").eq("active")
            & field("goal_state.command").is_in(("deny", "unclear", "stop")),
            GP,
        ),
        Route(
            field("goal_state.status").eq("active") & field("dialogue_mode").eq("SLOT_FILLING"),
            SST,
        ),
        Route(
            field("goal_state.status").eq("active") & field("dialogue_mode").eq("STEP_BY_STEP"),
            GE,
        ),
    ],
    default=GP,
)

#: §5.3: ask while a slot is missing; with nothing missing the goal's action runs (GE), or,
#: for a goal that asks first (``confirm: true``), GP asks the user to confirm.
route_after_se = RouteTable(
    "route_after_se",
    [_on_error(SE), Route(field("missing_slots"), SFP), Route(field("goal_state.confirm"), GP)],
    default=GE,
)

#: The Response Proxy picks a response node by the plan's style.
route_after_rp = RouteTable(
    "route_after_rp",
    [
        # A failure while relaying the error reply goes straight to the template: no loop.
        Route(failed_at(RP) & not_(field("response_plan.by").eq("EP")), EP),
        Route(failed_at(RP), RN_TEMPLATE),
        Route(field("response_plan.style").eq("llm"), RN_LLM),
    ],
    default=RN_TEMPLATE,
)

#: A turn ends waiting for the next one, unless the user ended the conversation.
route_after_eg = RouteTable(
    "route_after_eg",
    # EG only logs: a failure there still ends the turn normally.
    [Route(failed_at(EG), SG), Route(field("next_action").eq("end"), END)],
    default=SG,
)
