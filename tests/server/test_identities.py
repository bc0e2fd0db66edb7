"""Real identities for `flowkit serve` (issue #26, part 4): a users file with hashed tokens and
roles, bearer JWTs checked against a JWKS (a file, or a URL on loopback), roles per action,
private (quality) threads for their starter and admins, and an audit line per answer."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest
import structlog
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi.testclient import TestClient
from pydantic import BaseModel
from serve_common import AUTH, TOKEN, problem

from flowkit import END, Flow
from flowkit.errors import ServerConfigError
from flowkit.examples.review import flow as review
from flowkit.foundation._token_hash import hash_token, parse_hash, verify_token
from flowkit.server import Access, Identity, JwtVerifier, create_app, load_users
from flowkit.stores import MemoryStore

# -- flows: one that records its starter, and a stand-in for the (private) quality flow -------


class Ticket(BaseModel):
    title: str = ""
    started_by: str = ""
    ok: bool = False


class Answer(BaseModel):
    ok: bool


def _ticket_flow(name: str) -> Flow:
    return Flow(
        name=name,
        state=Ticket,
        start="check",
        nodes={},
        gates={"check": Answer},
        routes={"check": END},
    )


tickets, quality = _ticket_flow("ticket"), _ticket_flow("quality")

# Cheap scrypt costs keep the module fast; the defaults are tested once, in the round trip.
CHEAP = {"n": 2**10, "r": 8, "p": 1}
PEOPLE = {
    "ada": (["admin"], "ada-token-0123456789abcdef"),
    "rita": (["reviewer"], "rita-token-0123456789abcdef"),
    "sam": (["starter"], "sam-token-0123456789abcdef"),
    "sue": (["starter"], "sue-token-0123456789abcdef"),
    "rae": (["reader"], "rae-token-0123456789abcdef"),
}


def bearer(who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {PEOPLE[who][1]}"}


def users_file(folder: Path, text: str | None = None, mode: int = 0o600) -> Path:
    path = folder / "users.toml"
    if text is None:
        text = "".join(
            f'[users.{name}]\ntoken_hash = "{hash_token(token, **CHEAP)}"\nroles = {roles!r}\n'
            for name, (roles, token) in PEOPLE.items()
        ).replace("'", '"')
    path.write_text(text)
    path.chmod(mode)
    return path


SEEN: list[Access] = []


def remember(access: Access) -> bool:
    SEEN.append(access)
    return True


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    users = load_users(users_file(tmp_path_factory.mktemp("users")))
    app = create_app(
        [review, tickets, quality],
        store=MemoryStore(),
        token=TOKEN,
        authenticate=users,
        authorize=remember,
        open_reads=True,
    )
    with TestClient(app) as opened:
        yield opened


# -- hashes ------------------------------------------------------------------------------------


def test_a_token_hash_round_trips_and_is_salted() -> None:
    token = "a-long-random-token-0123456789"
    first, second = hash_token(token), hash_token(token)
    assert first.startswith("scrypt$16384$8$1$") and first != second
    assert verify_token(token, parse_hash(first)) and verify_token(token, parse_hash(second))
    assert not verify_token(token + "x", parse_hash(first))


def test_flowkit_auth_hash_reads_the_token_from_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from flowkit.cli import main

    monkeypatch.setattr(sys, "stdin", io.StringIO("stdin-token-0123456789abcdef\n"))
    assert main(["auth", "hash"]) == 0
    made = capsys.readouterr().out.strip()
    assert verify_token("stdin-token-0123456789abcdef", parse_hash(made))
    monkeypatch.setattr(sys, "stdin", io.StringIO("short\n"))
    assert main(["auth", "hash"]) == 2
    assert "shorter than 16" in capsys.readouterr().err


# -- roles over HTTP ---------------------------------------------------------------------------

ALLOWED = {
    "ada": {"read", "start", "resume", "fork", "update", "delete"},
    "rita": {"read", "resume"},
    "sam": {"start"},  # reads only the threads it started: the review flow records none
    "rae": {"read"},
}


def _attempt(client: TestClient, action: str, thread: str, headers: dict[str, str]) -> Any:
    if action == "read":
        return client.get(f"/threads/{thread}", headers=headers)
    if action == "start":
        return client.post("/flows/review/threads", json={"thread_id": thread + "-new"},
                           headers=headers)  # fmt: skip
    if action == "resume":
        return client.post(f"/threads/{thread}/resume", json={"input": {"approved": True}},
                           headers=headers)  # fmt: skip
    if action == "fork":
        return client.post(f"/threads/{thread}/fork", json={}, headers=headers)
    if action == "update":
        return client.patch(f"/threads/{thread}/state", json={"values": {"topic": "x"}},
                            headers=headers)  # fmt: skip
    return client.delete(f"/threads/{thread}", headers=headers)


@pytest.mark.parametrize("action", ["read", "start", "resume", "fork", "update", "delete"])
@pytest.mark.parametrize("who", sorted(ALLOWED))
def test_each_role_may_do_its_actions_and_no_other(
    client: TestClient, who: str, action: str
) -> None:
    thread = f"doc-{who}-{action}"
    assert client.post("/flows/review/threads", json={"thread_id": thread}, headers=AUTH).is_success
    response = _attempt(client, action, thread, bearer(who))
    if action in ALLOWED[who]:
        assert response.is_success, response.text
    else:
        problem(response, 403, "forbidden")
        assert client.get(f"/threads/{thread}", headers=AUTH).json()["version"] == 1


def test_a_role_refusal_names_the_roles_and_a_wrong_token_is_401(client: TestClient) -> None:
    body = problem(client.delete("/threads/x", headers=bearer("rae")), 403, "forbidden")
    assert "reader" in body["detail"] and "delete" in body["detail"]
    problem(client.get("/threads", headers={"Authorization": "Bearer nobody-0123456789abcdef"}),
            401, "unauthorized")  # fmt: skip


def test_me_tells_a_page_who_its_user_is_and_what_they_may_do(client: TestClient) -> None:
    assert client.get("/me", headers=bearer("rita")).json() == {
        "principal": "rita", "roles": ["reviewer"], "admin": False,
        "actions": ["read", "resume"]}  # fmt: skip
    assert client.get("/me", headers=AUTH).json()["admin"] is True
    assert client.get("/me").json() == {
        "principal": None, "roles": [], "admin": False, "actions": ["read"]}  # fmt: skip


def test_a_starter_reads_the_threads_it_started_and_no_others(client: TestClient) -> None:
    made = client.post("/flows/ticket/threads", json={"thread_id": "t-sam", "input": {
        "title": "fix it", "started_by": "sue"}}, headers=bearer("sam"))  # fmt: skip
    assert made.status_code == 201, made.text
    assert made.json()["state"]["started_by"] == "sam"  # the server says who, not the client
    assert client.get("/threads/t-sam", headers=bearer("sam")).status_code == 200
    problem(client.get("/threads/t-sam", headers=bearer("sue")), 403, "forbidden")
    assert client.get("/threads/t-sam", headers=bearer("rae")).status_code == 200  # a reader
    listed = client.get("/threads", params={"flow": "ticket"}, headers=bearer("sue")).json()
    assert "t-sam" not in str(listed)
    listed = client.get("/threads", params={"flow": "ticket"}, headers=bearer("sam")).json()
    assert [t["thread_id"] for t in listed["threads"]] == ["t-sam"]
    problem(client.post("/threads/t-sam/resume", json={"input": {"ok": True}},
                        headers=bearer("sam")), 403, "forbidden")  # fmt: skip


def test_a_thread_started_through_the_langgraph_api_records_its_starter_too(
    client: TestClient,
) -> None:
    made = client.post("/langgraph/threads/t-lg/runs/wait", json={
        "assistant_id": "ticket", "input": {"title": "fix it", "started_by": "sue"},
        "if_not_exists": "create"}, headers=bearer("sam"))  # fmt: skip
    assert made.status_code == 200, made.text
    state = client.get("/threads/t-lg", headers=bearer("sam")).json()["state"]
    assert state["started_by"] == "sam"
    problem(client.get("/threads/t-lg", headers=bearer("sue")), 403, "forbidden")


def test_the_authorize_hook_sees_the_principal_and_its_roles(client: TestClient) -> None:
    SEEN.clear()
    client.post("/flows/review/threads", json={"thread_id": "hooked"}, headers=AUTH)
    client.post("/threads/hooked/resume", json={"input": {"approved": False}},
                headers=bearer("rita"))  # fmt: skip
    answer = [a for a in SEEN if a.action == "resume"][-1]
    assert (answer.principal, answer.roles, answer.thread_id) == (
        "rita", frozenset({"reviewer"}), "hooked")  # fmt: skip
    assert isinstance(answer.principal, Identity)
    start = [a for a in SEEN if a.action == "start"][-1]
    assert start.principal == "admin" and start.roles == frozenset({"admin"})


# -- private (quality) threads -----------------------------------------------------------------


def test_quality_threads_are_their_starters_and_admins_only_even_with_open_reads(
    client: TestClient,
) -> None:
    made = client.post("/flows/quality/threads", json={"thread_id": "qc-sam"},
                       headers=bearer("sam"))  # fmt: skip
    assert made.status_code == 201, made.text
    assert client.get("/threads/qc-sam", headers=bearer("sam")).status_code == 200
    assert client.get("/threads/qc-sam", headers=bearer("ada")).status_code == 200
    assert client.get("/threads/qc-sam", headers=AUTH).status_code == 200  # the server token
    for headers in ({}, bearer("rae"), bearer("rita"), bearer("sue")):
        problem(client.get("/threads/qc-sam", headers=headers), 403, "forbidden")
        problem(client.get("/threads/qc-sam/history", headers=headers), 403, "forbidden")
    assert "qc-sam" not in str(client.get("/threads").json())  # anonymous listing
    assert "qc-sam" not in str(client.get("/threads", headers=bearer("rae")).json())
    problem(client.post("/threads/qc-sam/resume", json={"input": {"ok": True}},
                        headers=bearer("rita")), 403, "forbidden")  # fmt: skip
    # Other flows stay readable with open reads.
    client.post("/flows/review/threads", json={"thread_id": "open-doc"}, headers=AUTH)
    assert client.get("/threads/open-doc").status_code == 200


# -- the audit line ----------------------------------------------------------------------------


def test_each_answer_leaves_an_audit_line_without_values(client: TestClient) -> None:
    client.post("/flows/review/threads", json={"thread_id": "audited"}, headers=AUTH)
    with structlog.testing.capture_logs() as logs:
        client.post("/threads/audited/resume",
                    json={"input": {"approved": False, "feedback": "SECRET-7"}},
                    headers=bearer("rita"))  # fmt: skip
        client.patch("/threads/audited/state", json={"values": {"topic": "SECRET-8"},
                     "reason": "typo"}, headers=bearer("ada"))  # fmt: skip
        client.post("/threads/audited/fork", json={"new_thread_id": "audited-2"},
                    headers=bearer("ada"))  # fmt: skip
        client.delete("/threads/audited-2", headers=bearer("ada"))
    lines = [line for line in logs if line["event"] == "thread_answered"]
    assert [(x["principal"], x["action"], x["thread_id"]) for x in lines] == [
        ("rita", "resume", "audited"),
        ("ada", "update", "audited"),
        ("ada", "fork", "audited"),
        ("ada", "delete", "audited-2"),
    ]
    assert lines[0]["pause"] == "review" and lines[0]["at"].endswith("+00:00")
    assert "SECRET" not in str(logs)
    patches = client.get("/threads/audited/history", headers=AUTH).json()["checkpoints"]
    assert [c["actor"] for c in patches if c["kind"] == "patch"] == ["ada"]


# -- malformed users files ---------------------------------------------------------------------

GOOD_HASH = hash_token("good-token-0123456789abcdef", **CHEAP)


@pytest.mark.parametrize(
    ("text", "mode", "says"),
    [
        (f'[users.a]\ntoken_hash = "{GOOD_HASH}"\nroles = ["reader"]\n', 0o644, "chmod 600"),
        ("[users.a\n", 0o600, "not valid TOML"),
        ("title = 'x'\n", 0o600, "no `[users.NAME]`"),
        (f'[users.a]\ntoken_hash = "{GOOD_HASH}"\nroles = ["boss"]\n', 0o600, "unknown role"),
        ('[users.a]\ntoken_hash = "plain-token-0123456789"\nroles = ["reader"]\n', 0o600,
         "never put a token itself"),
        (f'[users.a]\ntoken_hash = "{GOOD_HASH}"\n', 0o600, "needs roles"),
        (f'[users.a]\ntoken_hash = "{GOOD_HASH}"\nroles = ["reader"]\ntoken = "x"\n', 0o600,
         "unknown key `token`"),
        (f'[users."a b"]\ntoken_hash = "{GOOD_HASH}"\nroles = ["reader"]\n', 0o600,
         "a name is"),
        ('[users.a]\ntoken_hash = "scrypt$1048576$8$1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"\n'
         'roles = ["reader"]\n', 0o600, "64 MiB"),
    ],
)  # fmt: skip
def test_a_users_file_that_cannot_be_used_is_a_server_config_error(
    tmp_path: Path, text: str, mode: int, says: str
) -> None:
    path = users_file(tmp_path, text, mode)
    with pytest.raises(ServerConfigError) as raised:
        load_users(path)
    assert says in str(raised.value)
    assert "0123456789" not in str(raised.value)  # a token, even a misplaced one, is not shown


def test_a_missing_users_file_stops_flowkit_serve_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from flowkit.cli import main

    monkeypatch.delenv("FLOWKIT_SERVER_TOKEN", raising=False)
    code = main(["serve", "review", "--store", str(tmp_path), "--auth", str(tmp_path / "no")])
    err = capsys.readouterr().err
    assert code == 1 and "does not exist" in err and "Traceback" not in err


# -- JWTs --------------------------------------------------------------------------------------

ISSUER, AUDIENCE = "https://id.example.test/", "flowkit-test"


@pytest.fixture(scope="module")
def keys() -> dict[str, Any]:
    signing = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(signing.public_key()))
    public.update(kid="k1", use="sig", alg="RS256")
    return {"signing": signing, "stranger": stranger, "jwks": {"keys": [public]}}


def token_for(keys: dict[str, Any], *, key: str = "signing", **claims: Any) -> str:
    now = int(time.time())
    body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "jo", "iat": now, "exp": now + 300,
            "roles": ["reviewer"], **claims}  # fmt: skip
    body = {name: value for name, value in body.items() if value is not None}  # None: left out
    return jwt.encode(body, keys[key], algorithm="RS256", headers={"kid": "k1"})


@pytest.fixture(scope="module")
def jwt_client(
    keys: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestClient]:
    jwks = tmp_path_factory.mktemp("jwks") / "jwks.json"
    jwks.write_text(json.dumps(keys["jwks"]))
    verifier = JwtVerifier(jwks=str(jwks), issuer=ISSUER, audience=AUDIENCE)
    app = create_app([review], store=MemoryStore(), token=TOKEN, authenticate=verifier)
    with TestClient(app) as opened:
        opened.post("/flows/review/threads", json={"thread_id": "doc"}, headers=AUTH)
        yield opened


def test_a_good_jwt_is_its_subject_with_its_roles(
    jwt_client: TestClient, keys: dict[str, Any]
) -> None:
    headers = {"Authorization": f"Bearer {token_for(keys)}"}
    assert jwt_client.get("/threads/doc", headers=headers).status_code == 200
    problem(jwt_client.delete("/threads/doc", headers=headers), 403, "forbidden")  # a reviewer
    with structlog.testing.capture_logs() as logs:
        done = jwt_client.post("/threads/doc/resume", json={"input": {"approved": True}},
                               headers=headers)  # fmt: skip
    assert done.status_code == 200, done.text
    assert [x["principal"] for x in logs if x["event"] == "thread_answered"] == ["jo"]
    no_roles = {"Authorization": f"Bearer {token_for(keys, roles=[])}"}
    problem(jwt_client.get("/threads/doc", headers=no_roles), 403, "forbidden")


@pytest.mark.parametrize(
    ("claims", "says"),
    [
        ({"exp": int(time.time()) - 60}, "expired"),
        ({"aud": "another-app"}, "another audience"),
        ({"iss": "https://evil.example.test/"}, "another issuer"),
        ({"key": "stranger"}, "not valid"),
        ({"sub": None}, "not valid"),  # no subject
        ({"exp": None}, "not valid"),  # a token that never expires
    ],
)
def test_a_bad_jwt_is_401_and_never_echoed(
    jwt_client: TestClient, keys: dict[str, Any], claims: dict[str, Any], says: str
) -> None:
    bad = token_for(keys, **claims)
    response = jwt_client.get("/threads/doc", headers={"Authorization": f"Bearer {bad}"})
    body = problem(response, 401, "unauthorized")
    assert says in body["detail"]
    assert bad not in response.text and bad.split(".")[1] not in response.text


def test_an_hmac_token_made_with_the_public_key_is_refused(
    jwt_client: TestClient, keys: dict[str, Any]
) -> None:
    import base64
    import hashlib
    import hmac

    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    now = int(time.time())
    signed = (
        part({"alg": "HS256", "typ": "JWT", "kid": "k1"})
        + "."
        + part({"iss": ISSUER, "aud": AUDIENCE, "sub": "x", "exp": now + 60, "roles": ["admin"]})
    )
    secret = json.dumps(keys["jwks"]["keys"][0]).encode()  # what the server knows: public
    mac = hmac.new(secret, signed.encode(), hashlib.sha256).digest()
    forged = signed + "." + base64.urlsafe_b64encode(mac).rstrip(b"=").decode()
    problem(jwt_client.get("/threads/doc", headers={"Authorization": f"Bearer {forged}"}),
            401, "unauthorized")  # fmt: skip


class _Jwks(BaseHTTPRequestHandler):
    body = b""
    fetched = 0

    def do_GET(self) -> None:
        type(self).fetched += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_jwks_from_a_url_is_fetched_once_and_kept(keys: dict[str, Any]) -> None:
    _Jwks.body = json.dumps(keys["jwks"]).encode()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Jwks)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
        verifier = JwtVerifier(jwks=url, issuer=ISSUER, audience=AUDIENCE,
                               roles_claim="realm.roles")  # fmt: skip
        assert _Jwks.fetched == 0  # not before the first token
        first = verifier(token_for(keys, roles=None, realm={"roles": ["reader", "x"]}))
        second = verifier(token_for(keys, sub="kim"))
        assert (first, first.roles if first else None) == ("jo", frozenset({"reader"}))
        assert second == "kim" and second.roles == frozenset()
        assert _Jwks.fetched == 1
        assert verifier("not-a-jwt-0123456789") is None  # another hook may know it
    finally:
        server.shutdown()
        server.server_close()
    gone = JwtVerifier(jwks=url, issuer=ISSUER, audience=AUDIENCE)
    with pytest.raises(Exception) as raised:
        gone(token_for(keys))
    assert getattr(raised.value, "status", None) == 503


def test_jwt_settings_that_cannot_work_are_server_config_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "empty.json").write_text('{"keys": []}')
    with pytest.raises(ServerConfigError, match="no usable public key"):
        JwtVerifier(jwks=str(tmp_path / "empty.json"), issuer=ISSUER, audience=AUDIENCE)
    with pytest.raises(ServerConfigError, match="must be https://"):
        JwtVerifier(jwks="http://id.example.test/jwks", issuer=ISSUER, audience=AUDIENCE)
    with pytest.raises(ServerConfigError, match="issuer and an audience"):
        JwtVerifier(jwks=str(tmp_path / "empty.json"), issuer=ISSUER, audience="")
    monkeypatch.setitem(sys.modules, "jwt", None)
    with pytest.raises(ServerConfigError) as raised:
        JwtVerifier(jwks="x", issuer=ISSUER, audience=AUDIENCE)
    assert "pip install 'flowkit-workflows[jwt]'" in str(raised.value)


def test_importing_the_server_does_not_import_pyjwt() -> None:
    code = "import sys, flowkit.server; assert 'jwt' not in sys.modules, 'jwt imported'"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr


# -- `flowkit serve --auth FILE --jwt ...`, a real server ------------------------------------


def test_flowkit_serve_takes_a_users_file_and_jwts_together(
    tmp_path: Path, keys: dict[str, Any]
) -> None:
    import httpx
    from _live import free_port, serve_command

    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(keys["jwks"]))
    options = ["--auth", str(users_file(tmp_path)), "--jwt", "--jwt-issuer", ISSUER,
               "--jwt-audience", AUDIENCE, "--jwt-jwks", str(jwks)]  # fmt: skip
    process, base = serve_command(str(tmp_path / "store"), free_port(), TOKEN, *options)
    try:
        with httpx.Client(base_url=base, timeout=10) as http:
            made = http.post(
                "/flows/review/threads", json={"thread_id": "d"}, headers=bearer("sam")
            )
            assert made.status_code == 201, made.text
            jo = {"Authorization": f"Bearer {token_for(keys)}"}  # a reviewer, by JWT
            assert http.get("/threads/d", headers=jo).status_code == 200
            problem(http.delete("/threads/d", headers=bearer("rita")), 403, "forbidden")
            answered = http.post("/threads/d/resume", json={"input": {"approved": True}},
                                 headers=bearer("rita"))  # fmt: skip
            assert answered.json()["status"] == "done"
            assert http.delete("/threads/d", headers=AUTH).status_code == 204  # the one token
    finally:
        process.terminate()
        process.communicate(timeout=30)
