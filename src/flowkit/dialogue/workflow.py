"""The dialogue flow: seed 001's nodes wired with the dialogue route tables and §5's
invariants, for one domain.

``build_flow(domain)`` returns an ordinary ``flowkit.Flow``: run it with a ``Runner``, resume
the ``SG`` gate with ``{"text": ...}`` for every user turn. ``example_flow()`` is the shipped
``robot_cell`` domain's flow (the registered workflow ``dialogue``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from ..definition._flow import Flow
from ..nodes.dialogue.eg import make_eg
from ..nodes.dialogue.ep import make_ep
from ..nodes.dialogue.ge import make_ge
from ..nodes.dialogue.gp import make_gp
from ..nodes.dialogue.gst import make_gst
from ..nodes.dialogue.ir import make_ir
from ..nodes.dialogue.np import make_np
from ..nodes.dialogue.rn import make_rn
from ..nodes.dialogue.rp import make_rp
from ..nodes.dialogue.se import make_se
from ..nodes.dialogue.sfp import make_sfp
from ..nodes.dialogue.sst import make_sst
from ..nodes.dialogue.start_gate import make_start_gate
from ..routing import dialogue as r
from .actions import Artifacts, Handler
from .domain import Domain, load_domain
from .invariants import invariants_for
from .ledger import Ledger
from .services import make_services
from .state import DialogueState

__all__ = ["CHANGE_CLASSES", "EXAMPLE", "build_flow", "example_flow"]

#: The shipped example domain.
EXAMPLE = "robot_cell"

#: Which changed fields a front end must react to (events' change classes).
CHANGE_CLASSES = {
    "critical": ["final_answer", "error", "dialogue_mode"],
    "progress": ["goal_state", "slots", "missing_slots", "tool_result_ref"],
    "approval": ["clarifying_question"],
}


def build_flow(
    domain: Domain | Mapping[str, Any] | str | Path,
    *,
    understanding: Literal["auto", "offline", "llm"] = "auto",
    actions: Mapping[str, Handler] | None = None,
    artifacts: Artifacts | None = None,
    ledger: Ledger | None = None,
    response_seed: int | None = None,
) -> Flow:
    """The dialogue flow for ``domain`` (a ``Domain``, its data, a file or an example name).

    ``understanding``: ``auto`` uses the runner's LLM for IR when it has one, else the offline
    recogniser; ``offline`` never calls an LLM. ``actions`` overrides handlers by action name;
    ``artifacts`` keeps large action results and ``ledger`` what actions have taken, shared by
    every conversation of this flow (both default to memory). ``response_seed`` makes the
    choice among a response's variations repeatable (tests); without it, it is random.
    """
    domain = load_domain(domain)
    services = make_services(
        domain,
        understanding=understanding,
        actions=actions,
        artifacts=artifacts,
        ledger=ledger,
        response_seed=response_seed,
    )
    return Flow(
        name="dialogue",
        description=f"Task-oriented dialogue for domain `{domain.name}`",
        state=DialogueState,
        start=r.SG,
        gates={r.SG: make_start_gate(services)},
        nodes={
            r.IR: make_ir(services),
            r.NP: make_np(services),
            r.GST: make_gst(services),
            r.SST: make_sst(services),
            r.SE: make_se(services),
            r.GE: make_ge(services),
            r.SFP: make_sfp(services),
            r.GP: make_gp(services),
            r.RP: make_rp(),
            r.RN_TEMPLATE: make_rn(services, llm=False),
            r.RN_LLM: make_rn(services, llm=True),
            r.EG: make_eg(),
            r.EP: make_ep(),
        },
        routes={
            r.SG: r.IR,
            r.IR: r.route_after_ir,
            r.NP: r.route_after_np,
            r.GST: r.route_after_gst,
            r.SST: r.route_after_sst,
            r.SE: r.route_after_se,
            r.SFP: r.route_after_sfp,
            r.GE: r.route_after_ge,
            r.GP: r.route_after_gp,
            r.RP: r.route_after_rp,
            r.RN_TEMPLATE: r.route_after_rn_template,
            r.RN_LLM: r.route_after_rn_llm,
            r.EG: r.route_after_eg,
            r.EP: r.route_after_ep,
        },
        # A node that raises does not fail the conversation: the engine writes the failure
        # into `error` (classed by the state's validator) and every node's table routes it to
        # the Error Policy, which answers for the error's class.
        error_field="error",
        change_classes=CHANGE_CLASSES,
        invariants=invariants_for(domain),
    )


def example_flow() -> Flow:
    """The flow of the shipped ``robot_cell`` example domain."""
    return build_flow(EXAMPLE)
