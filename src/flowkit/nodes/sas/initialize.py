"""``initial``: prepare a run — its output directory and the request it works from."""

from __future__ import annotations

from typing import Any

from ...definition._node import Context, node
from ...robot._tables import TeachingTable
from ...routing.sas import INITIAL
from ...sas.state import SasState
from .output_dir import choose_output_directory, holds_teaching_table

__all__ = ["initialize"]


@node(
    reads=["config", "user_input", "current_user_request", "run_output_directory"],
    writes=[
        "run_output_directory",
        "current_user_request",
        "user_input",
        "is_error",
        "error_message",
        "failed_step",
        "warnings",
        "messages",
        "current_step_description",
    ],
)
def initialize(state: SasState, ctx: Context) -> dict[str, Any]:
    """Choose the output directory (seed 000 §1.2.A) and take the first input as the request.

    The request is set once: later input is feedback, kept beside it, never replacing it.
    The error state is reset (seed 000 §1.2.A step 3), so a run started again from
    ``initial`` after a failure does not carry the old error into its routing.
    """
    update: dict[str, Any] = {
        "current_step_description": "initialising the run",
        "is_error": False,
        "error_message": None,
        "failed_step": None,
    }
    if not state.current_user_request and state.user_input:
        update["current_user_request"] = state.user_input
        update["messages"] = [f"user: {state.user_input}"]
        update["user_input"] = ""
    if state.run_output_directory is None:
        choice = choose_output_directory(
            state.config.output_dir, state.config.base_output_dir, ctx.clock()
        )
        if choice.warnings:
            update["warnings"] = choice.warnings
            for warning in choice.warnings:
                ctx.log.warning("output_directory_fallback", detail=warning)
        if choice.path is None:
            update["is_error"] = True
            update["failed_step"] = INITIAL
            update["error_message"] = (
                "No output directory could be created (" + "; ".join(choice.warnings) + "). "
                "Pass a writable --output-dir."
            )
            return update
        update["run_output_directory"] = str(choice.path)
    folder = update.get("run_output_directory", state.run_output_directory)
    if folder is not None and holds_teaching_table(folder, state.config.teaching_file):
        update["is_error"] = True
        update["failed_step"] = INITIAL
        update["error_message"] = (
            f"The output directory {folder} holds the input teaching table "
            f"{TeachingTable.filename}, which parameter mapping would overwrite with the "
            "updated one; input tables are never modified in place. Start again with another "
            "output directory (--output-dir)."
        )
    return update
