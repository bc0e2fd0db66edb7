"""How a state store reports a session whose stored state cannot be read (seed 003 §6.3):
one ``quality_store_corrupt`` error line for the administrator to alert on, naming the
session and never its content, and the typed QC-009 error the caller gets."""

from __future__ import annotations

from pydantic import ValidationError

from ...foundation._logging import get_logger
from ...foundation._plain import describe_validation_error, shorten
from ..errors import CorruptStateError

__all__ = ["corrupt_state"]


def corrupt_state(
    session_id: str, *, store: str, where: str, fix: str, cause: BaseException
) -> CorruptStateError:
    """Log the notice and build the error for ``session_id``, whose state at ``where`` failed
    to read with ``cause``; ``store`` names the backend, ``fix`` says what an operator does.

    The notice carries the session, the backend and the kind of failure: no path, no
    document text, no validation input (pydantic's messages would echo the stored values).
    """
    get_logger().error(
        "quality_store_corrupt", session_id=session_id, store=store, problem=type(cause).__name__
    )
    reason = (
        describe_validation_error(cause)
        if isinstance(cause, ValidationError)
        else shorten(str(cause), 200)
    )
    return CorruptStateError(
        f"The state of session {session_id} in {where} cannot be read ({reason}); {fix}",
        session_id=session_id,
    )
