"""Seed 003 §6.2 over HTTP: a quality session is its initiator's and the admins' (issue #17,
acceptance 4), through ``session_access`` as the server's ``authorize`` hook."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from flowkit.quality import session_access
from flowkit.quality.services import Workspace
from flowkit.server import create_app

ADMIN_TOKEN = "admin-token-0123456789abcdef"
PEOPLE = {"aki-token-0123456789abcd": "aki", "ben-token-0123456789abcd": "ben"}


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_another_principals_quality_session_is_403_and_the_initiators_200(
    workspace: Workspace, make_checker: Callable[..., Any], two_issues: Path
) -> None:
    outcome = make_checker().check(two_issues, episode=1)  # begun by aki
    session = outcome.session_id
    app = create_app(
        ["quality"],
        store=workspace.engine_store(),
        token=ADMIN_TOKEN,
        authenticate=PEOPLE.get,
        authorize=session_access(workspace.state_store(), admins=["admin"]),
    )
    with TestClient(app) as client:
        aki, ben = _bearer("aki-token-0123456789abcd"), _bearer("ben-token-0123456789abcd")
        assert client.get(f"/threads/{session}", headers=aki).status_code == 200
        assert client.get(f"/threads/{session}", headers=_bearer(ADMIN_TOKEN)).status_code == 200
        for method, path in [("get", ""), ("get", "/history"), ("delete", "")]:
            response = client.request(method.upper(), f"/threads/{session}{path}", headers=ben)
            assert response.status_code == 403, (method, path, response.text)
            assert response.json()["code"] == "forbidden"
        listed = client.get("/threads", headers=ben).json()
        assert session not in str(listed)
        assert session in str(client.get("/threads", headers=aki).json())
