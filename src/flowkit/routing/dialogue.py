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
"""

from __future__ import annotations

from typing import Final

from .._conditions import field
from .._route_table import END, Route, RouteTable

__all__ = [
    "EG",
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
    "route_after_eg",
    "route_after_gst",
    "route_after_ir",
    "route_after_rp",
    "route_after_se",
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

STATES: Final = (SG, IR, NP, GST, SST, SE, GE, SFP, GP, RP, RN_TEMPLATE, RN_LLM, EG)
#: The task branch; seed 001 §5.1 keeps non-task intents out of it.
TASK_STATES: Final = (GST, SST, SE, GE, SFP, GP)
#: Seed 001 §2.1.1 / §5.1: intent types answered by NP alone.
NON_TASK: Final = ("OOS", "QUESTION", "SMALL_TALK")

#: §5.1: non-task intents go to NP and never to GST; everything else goes to GST.
route_after_ir = RouteTable(
    "route_after_ir",
    [Route(field("intent_type").is_in(NON_TASK), NP)],
    default=GST,
)

#: An active goal continues in its mode; no active goal (cancelled, nothing to do) -> GP.
route_after_gst = RouteTable(
    "route_after_gst",
    [
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

#: §5.3: ask while a slot is missing; with nothing missing the goal's action runs (GE).
route_after_se = RouteTable(
    "route_after_se",
    [Route(field("missing_slots"), SFP)],
    default=GE,
)

#: The Response Proxy picks a response node by the plan's style.
route_after_rp = RouteTable(
    "route_after_rp",
    [Route(field("response_plan.style").eq("llm"), RN_LLM)],
    default=RN_TEMPLATE,
)

#: A turn ends waiting for the next one, unless the user ended the conversation.
route_after_eg = RouteTable(
    "route_after_eg",
    [Route(field("next_action").eq("end"), END)],
    default=SG,
)
