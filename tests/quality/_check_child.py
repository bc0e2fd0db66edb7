"""Child process: check a manuscript with an LLM that hangs while planning fixes (to be killed)."""

from __future__ import annotations

import sys
import time

from flowkit.quality.app import QualityChecker
from flowkit.quality.demo import editor_llm
from flowkit.quality.models import IterationPolicy, Principal
from flowkit.testing import ScriptedLLM


def hang(prompt: str) -> str:
    time.sleep(120)
    return "{}"


def main() -> None:
    workspace, manuscript = sys.argv[1:3]
    editor = editor_llm()
    llm = ScriptedLLM(
        [
            ("Manuscript:\n", lambda p: editor.complete([{"role": "user", "content": p}]).text),
            ("Excerpt:\n", hang),
        ]
    )
    with QualityChecker(workspace, principal=Principal(user_id="aki"), llm=llm) as checker:
        checker.check(manuscript, episode=1, policy=IterationPolicy(count=2))


if __name__ == "__main__":
    main()
