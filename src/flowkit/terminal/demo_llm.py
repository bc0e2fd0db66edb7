"""The LLM a command runs with, and ``--llm replay:demo``: the recorded answers shipped with the
demo of the flow being run.

A workflow whose demo ships a cassette registers its :class:`DemoAnswers` in
``flowkit.workflows.DEMO_ANSWERS``, so the generic commands find it by the flow's name without
importing any other workflow. A shipped cassette answers only its demo's own requests; the
generic advice on a miss, to record the cassette again, would overwrite the installed file and
still not answer the user's request, so a miss says what the demo answers and how to ask a
model instead. ``python -m flowkit.<workflow>.demo`` plays a demo from its cassette, or records
it again (:func:`demo_module_parser`).
"""

from __future__ import annotations

import argparse
import importlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..errors import ReplayMismatchError
from ..llm import LLM, LLMResponse, Message, ReplayLLM, from_spec
from .errors import CommandError
from .inputs import DEMO_LLM
from .store import folder_argument

if TYPE_CHECKING:
    from ..definition._flow import Flow
    from ..llm._tools import ToolLike

__all__ = [
    "USE_A_MODEL",
    "DemoAnswers",
    "DemoReplayLLM",
    "chosen_llm",
    "demo_module_parser",
    "llm_for",
    "resolve_spec",
]

#: How to ask a model instead, for the end of a miss's advice.
USE_A_MODEL = "--llm openai:MODEL or --llm ollama:MODEL (or set FLOWKIT_LLM)"


class DemoReplayLLM(ReplayLLM):
    """``ReplayLLM`` on a demo's shipped cassette, with the demo's own advice on a miss.

    Its answers are played again for every thread that asks the demo's requests: a server
    (``flowkit serve ... --llm replay:demo``) runs many such threads in one process.
    """

    repeats = True
    #: What a request the cassette has no answer for is told.
    miss = ""

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        tools: Sequence[ToolLike] | None = None,
        timeout: float | None = None,
    ) -> LLMResponse:
        try:
            return super().complete(messages, schema=schema, tools=tools, timeout=timeout)
        except ReplayMismatchError as exc:
            # With a cause, a recorded answer no longer fits its schema: a flowkit bug, for
            # which recording the cassette again is the right advice.
            if exc.__cause__ is not None:
                raise
            raise ReplayMismatchError(self.miss, model=self.model) from exc


@dataclass(frozen=True, kw_only=True)
class DemoAnswers:
    """A demo's recorded answers: its cassette, and what a request it cannot answer is told."""

    cassette: Path
    miss: str

    @property
    def spec(self) -> str:
        """The resolved spec of the cassette (what a thread keeps to replay it later)."""
        return f"replay:{self.cassette}"

    def llm(self) -> DemoReplayLLM:
        return _with_miss(DemoReplayLLM.from_file(self.cassette), self.miss)


def _with_miss(replay: DemoReplayLLM, miss: str) -> DemoReplayLLM:
    replay.miss = miss
    return replay


def demo_answers(workflow: str) -> DemoAnswers | None:
    """The answers the demo of ``workflow`` ships, or None; imports that demo's module only."""
    from ..workflows import DEMO_ANSWERS

    target = DEMO_ANSWERS.get(workflow)
    if target is None:
        return None
    module, _, attribute = target.partition(":")
    answers: DemoAnswers = getattr(importlib.import_module(module), attribute)
    return answers


def _names_demo(spec: str) -> bool:
    # A file called `demo` in the current folder is a cassette of the user's own.
    return spec == DEMO_LLM and not Path("demo").is_file()


def resolve_spec(spec: str, workflow: str) -> str:
    """``replay:demo`` -> the cassette of ``workflow``'s demo; relative cassette/rules paths
    made absolute, so a spec kept with a thread works from any folder later."""
    answers = demo_answers(workflow) if _names_demo(spec) else None
    if answers is not None:
        return answers.spec
    kind, _, rest = spec.partition(":")
    if kind in ("replay", "scripted") and rest:
        return f"{kind}:{Path(rest).expanduser().absolute()}"
    return spec


def llm_for(spec: str | None, workflows: Sequence[str]) -> LLM:
    """The LLM ``spec`` names for running flows named ``workflows`` (``None``: ``$FLOWKIT_LLM``).

    ``replay:demo``, or the path of a shipped cassette, replays the answers of the one demo
    among ``workflows`` that ships any, with the demo's advice on a miss. Flows of two demos
    cannot share one LLM (exit 2); a flow without a demo is told so when it asks the LLM.
    """
    if spec is None or not spec.startswith("replay:"):
        return from_spec(spec)
    names = list(dict.fromkeys(workflows))
    found = {name: a for name in names if (a := demo_answers(name)) is not None}
    if not _names_demo(spec):
        given = f"replay:{Path(spec.removeprefix('replay:')).expanduser().absolute()}"
        shipped = next((a for a in found.values() if given == a.spec), None)
        return shipped.llm() if shipped is not None else from_spec(spec)
    if len(found) > 1:
        raise CommandError(
            f"--llm {DEMO_LLM}: {' and '.join(sorted(found))} ship demo answers of their own, "
            "and one LLM serves every flow; run them apart, or pass --llm replay:PATH.",
            code=2,
        )
    if found:
        return next(iter(found.values())).llm()
    from ..workflows import DEMO_ANSWERS

    which = ", ".join(f"`{name}`" for name in names)
    which = f"flow {which} ships" if len(names) == 1 else f"flows {which} ship"
    return _with_miss(
        DemoReplayLLM([]),
        f"--llm {DEMO_LLM} replays the recorded answers shipped with a workflow's demo (those "
        f"of {', '.join(sorted(DEMO_ANSWERS))}), and {which} no demo answers. "
        f"Use a cassette of your own (--llm replay:PATH) or a model: {USE_A_MODEL}.",
    )


def chosen_llm(args: argparse.Namespace, flows: Sequence[Flow]) -> Any:
    """The LLM ``--llm`` names, else the one ``$FLOWKIT_LLM`` names, else None (no LLM).

    ``replay:demo`` is the recorded answers of the demo of the flows run (see :func:`llm_for`).
    """
    spec = args.llm or os.environ.get("FLOWKIT_LLM")
    if not spec:
        return None
    return llm_for(spec, [flow.name for flow in flows])


def demo_module_parser(workflow: str, *, records_from: str) -> argparse.ArgumentParser:
    """The parser of ``python -m flowkit.<workflow>.demo``: ``--store``, and ``--record`` for
    flowkit's maintainers (the demo module adds its own options)."""
    parser = argparse.ArgumentParser(
        prog=f"python -m flowkit.{workflow}.demo",
        description=f"Run the {workflow} demo offline from its recorded LLM answers (the same "
        f"as `flowkit demo {workflow}`).",
    )
    parser.add_argument(
        "--store",
        metavar="DIR",
        type=folder_argument,
        help="the JSON-file store (default: a new temporary folder)",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help=f"instead, record the shipped cassette again from {records_from} (for flowkit's "
        "maintainers, after changing the prompts; it overwrites the installed file)",
    )
    return parser
