"""The sas demo's assembly cell: its robot task, the reviewer's feedback, and its shipped files.

The example is the bearing / housing / pallet assembly cell of SAS_FACTS §10. Its files
(``answers.json``, ``cassette.json``, ``teaching.yaml``) ship in ``flowkit/sas/demo/``, which
runs the demo (``flowkit.sas.demo``). This module holds only the data, so the flow's nodes can
map the demo's own request onto the demo cell's teaching table without importing the demo.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["FEEDBACK", "REQUEST", "demo_file", "teaching_for"]

REQUEST = (
    "An automated cell assembles a bearing (BRG) into a bearing housing (BH) and ships it on "
    "a pallet (PLT). Fetch the bearing and the housing, put both into the right machining "
    "center (RMC) for press-fitting, take the assembly out and park it in the left machining "
    "center (LMC), fetch an empty pallet and put it on the conveyor (CNV), finally take the "
    "assembly from the LMC and place it on the pallet. Repeat."
)
#: The reviewer's feedback on the first task list (it forgot to put the assembly on the pallet).
FEEDBACK = (
    "The plan never places the assembly on the pallet: add CNV_Put_BH_On_PLT after "
    "LMC_Get_BH_Stored."
)


def demo_file(name: str) -> Path:
    """A file shipped with the demo (answers.json, cassette.json, teaching.yaml)."""
    return Path(str(resources.files("flowkit.sas").joinpath("demo").joinpath(name)))


def teaching_for(request: str) -> str | None:
    """The demo's teaching table for the demo's own :data:`REQUEST` (it describes the demo
    cell, whose points that table holds), else None: the demo runs without ``--teaching``,
    from the shell or a server, and a request of one's own never gets the demo's points."""
    if " ".join(request.split()) != " ".join(REQUEST.split()):
        return None
    return str(demo_file("teaching.yaml"))
