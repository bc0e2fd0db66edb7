"""``flowkit demo quality``: the check -> fix -> re-check loop on two short episodes (Japanese
and English), offline, from recorded LLM answers.

The answers come from a scripted editor (:func:`editor_llm`) that reports the problems listed
in ``edits.json`` wherever their text appears and proposes the listed fix. One fix on purpose
is wrong the first time (検討→検討がつかない, definately→definatly), so the re-check finds the
problem again: a Recurrence with a new issue id, fixed in round 2. The structure problem needs
a tool that is not registered (QC-012) and stays open until a person defers it. The answers
were recorded once (``cassette.json``, ``python -m flowkit.quality.demo --record``) and are
replayed, so the demo needs no network and no API key; ``--llm replay:demo`` names the
cassette in ``flowkit quality`` commands.
"""

from __future__ import annotations

import json
import re
import shlex
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from ...terminal.demo_llm import USE_A_MODEL, DemoAnswers

__all__ = [
    "ANSWERS",
    "EPISODES",
    "RECORD_WITH",
    "demo_file",
    "editor_llm",
    "record_cassette",
    "run_quality_demo",
]

#: Episode number -> the demo manuscript checked as that episode.
EPISODES = {1: "episode_ja.txt", 2: "episode_en.txt"}
RECORD_WITH = "python -m flowkit.quality.demo --record"
#: Who runs the demo's sessions.
DEMO_USER = "demo-editor"
_MARKED = re.compile(r"⟦(.*?)⟧", re.S)


def demo_file(name: str) -> Path:
    """A file shipped with the demo (episode_ja.txt, episode_en.txt, edits.json, cassette.json)."""
    return Path(str(resources.files(__name__).joinpath(name)))


#: The shipped cassette (``--llm replay:demo``); it answers only the checks of the demo's own
#: episodes, so any other manuscript is told which ones those are and how to ask a model.
ANSWERS = DemoAnswers(
    cassette=demo_file("cassette.json"),
    miss="The quality demo's recorded answers (--llm replay:demo) answer only the checks of "
    "the demo's own manuscripts, and this is not one of them: they are "
    + ", ".join(f"{name} as episode {n}" for n, name in EPISODES.items())
    + f" (--policy count=2), in {demo_file('cassette.json').parent}; `flowkit demo quality` "
    f"runs them. For a manuscript of your own, use a model: {USE_A_MODEL}.",
)


def _edits() -> list[dict[str, Any]]:
    data = json.loads(demo_file("edits.json").read_text(encoding="utf-8"))
    return [*data["ja"], *data["en"]]


def _check(prompt: str) -> dict[str, Any]:
    text = prompt.split("Manuscript:\n", 1)[1]
    issues = []
    for edit in _edits():
        for quote in edit["fixes"]:
            if quote in text:
                fix = edit["fixes"][quote] or "rewrite the passage"
                issues.append({"category": edit["category"], "severity": edit["severity"],
                               "description": edit["description"], "quote": quote,
                               "suggested_fix": fix})  # fmt: skip
                break
    counts: dict[str, int] = {}
    for issue in issues:
        counts[issue["category"]] = counts.get(issue["category"], 0) + 1
    metrics = {c: round(1.0 - 0.1 * counts.get(c, 0), 2)
               for c in ("typo", "notation", "style", "structure")}  # fmt: skip
    return {"issues": issues, "metrics": metrics}


def _plan(prompt: str) -> dict[str, Any]:
    found = _MARKED.search(prompt)
    marked = found.group(1) if found else ""
    for edit in _edits():
        fix = edit["fixes"].get(marked)
        if marked in edit["fixes"]:
            if fix is None:
                return {"tool": "polish_manuscript", "replacement": "",
                        "description": "rewrite the passage"}  # fmt: skip
            return {"tool": "replace_text", "replacement": fix,
                    "description": f"{marked} -> {fix}"}  # fmt: skip
    return {"tool": "replace_text", "replacement": marked, "defer": True,
            "description": "no fix known"}  # fmt: skip


def editor_llm() -> Any:
    """The scripted editor the cassette was recorded from."""
    from ...llm.scripted import ScriptedLLM

    return ScriptedLLM([("Manuscript:\n", _check), ("Excerpt:\n", _plan)])


def _checker(root: Path, llm: Any) -> Any:
    from ..app import QualityChecker
    from ..models import Principal

    return QualityChecker(root, principal=Principal(user_id=DEMO_USER), llm=llm)


def record_cassette(path: Path | None = None) -> Path:
    """Re-record the cassette from the scripted editor (run after changing the prompts)."""
    from ...llm import save_cassette
    from ..models import IterationPolicy

    calls: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for episode, name in EPISODES.items():
            with _checker(Path(tmp), editor_llm()) as checker:
                outcome = checker.check(
                    demo_file(name), episode=episode, policy=IterationPolicy(count=2)
                )
                if not outcome.result.done:
                    raise AssertionError(f"recording ended {outcome.result.status}")
                calls.extend(checker.runner.llm_calls(outcome.session_id))
    target = path or demo_file("cassette.json")
    save_cassette(target, calls, record_with=RECORD_WITH)
    return target


def run_quality_demo(store_dir: str | None, out: TextIO) -> int:
    """Check both episodes from the cassette and narrate. Sessions are kept under
    ``<store>/quality`` (a new temporary store without ``--store``), where ``flowkit quality
    status`` / ``history`` find them."""
    from ...llm import ReplayLLM
    from ...terminal.output import command_hint
    from ..models import IterationPolicy

    store = Path(store_dir) if store_dir else Path(tempfile.mkdtemp(prefix="flowkit-quality-demo-"))
    root = store / "quality"
    llm = ReplayLLM.from_file(demo_file("cassette.json"))
    out.write("flowkit demo quality: check -> fix -> re-check, issues tracked per session\n")
    out.write(f"store: {store}   LLM: recorded answers   user: {DEMO_USER}\n")
    ok = True
    for episode, name in EPISODES.items():
        with _checker(root, llm) as checker:
            if checker.status(episode) is not None:
                out.write(f"\nepisode {episode} was checked in this store before; skipped\n")
                continue
            out.write(f"\n> flowkit quality check {name} --episode {episode} --policy count=2\n")
            outcome = checker.check(
                demo_file(name), episode=episode, policy=IterationPolicy(count=2)
            )
            for line in outcome.result.state.messages:
                out.write(f"  {line}\n")
            found = checker.status(episode)
            assert found is not None
            session, issues, _ = found
            out.write(f"  session {session.session_id}: {session.current_status}\n")
            for issue in sorted(issues, key=lambda i: (i.text_range.start_char, i.issue_id)):
                related = (
                    f" (came back as {_successor(issues, issue.issue_id)})"
                    if issue.state == "Recurrence"
                    else ""
                )
                out.write(
                    f"    {issue.issue_id} {issue.category:<9} {issue.state:<10} "
                    f"{issue.adjustment_method or '-':<12}{related}\n"
                )
            ok = ok and outcome.result.done
    where = str(store)
    out.write(
        "\nlook around (as the demo's user):\n"
        f"  {command_hint('quality', 'history', store=where, user=DEMO_USER)}\n"
        f"  {command_hint('quality', 'status', store=where, episode='1', user=DEMO_USER)}\n"
        f"  ls {shlex.quote(str(root))}/checks/*/ {shlex.quote(str(root))}/audit/*/\n"
    )
    return 0 if ok else 1


def _successor(issues: Any, issue_id: str) -> str:
    return next((i.issue_id for i in issues if issue_id in i.related_issue_ids), "?")
