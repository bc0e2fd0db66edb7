"""The chat page (``/chat/{id}``, ``/chat?flow=NAME``): a person talks with the roundtable's
characters and the dialogue assistant in Debian's headless Chromium (Playwright), and the
routes and the socket's opt-in token frames without a browser.

One server and one browser for the module. The characters' LLMs are scripted and answer
after a short pause, so each character's "is typing…" is on screen for a while; the test
records every text the typing line shows (a ``MutationObserver``), so a short one is not missed.
Screenshots go to ``$FLOWKIT_TEST_ARTIFACTS`` (default: a temporary folder); with
``FLOWKIT_UPDATE_DOCS_IMG=1`` the ones docs/server.md shows are written to docs/img/ too.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import httpx
import pytest
from _live import ThreadServer
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field
from serve_common import AUTH, TOKEN

from flowkit import Flow, Gate, append, node
from flowkit.dialogue.workflow import build_flow as dialogue_flow
from flowkit.llm.scripted import ScriptedLLM
from flowkit.roundtable.demo import REPLIES
from flowkit.roundtable.logs import RoundLogs
from flowkit.roundtable.workflow import build_flow as roundtable_flow
from flowkit.server import create_app
from flowkit.stores import JsonFileStore, MemoryStore

ROOT = Path(__file__).resolve().parents[2]
VIEWPORT = {"width": 900, "height": 600}

# -- the flows: the shipped three-character table and dialogue domain, and a streaming echo --

ROUNDS = [
    *REPLIES["en"]["messages"],
    "What should I eat there?\nSomething near the station.",
]
THIRD = {
    "LUMINA": "Try <b>yudofu</b> near Nanzenji. [Next: Nox]",
    "NOX": "Summary: tofu, matcha. [Next: Claris]",
    "CLARIS": "Matcha sweets in Uji are a short train ride away.",
}
#: Who speaks in each round (the demo's nominations; see tests/roundtable).
SPEAKERS = [["Lumina", "Claris", "Nox"], ["Lumina", "Nox", "Claris"], ["Lumina", "Nox", "Claris"]]


def _slowly(text: str, seconds: float = 0.4) -> Any:
    def reply(_: str) -> str:
        time.sleep(seconds)
        return text

    return reply


def _characters() -> dict[str, Any]:
    script = REPLIES["en"]
    llms: dict[str, Any] = {}
    for character in ("LUMINA", "CLARIS", "NOX"):
        rules: list[tuple[Any, Any]] = [
            ("] USER: ", script["summaries"][0]),  # a round summary, if the runner keeps any
            (ROUNDS[0], _slowly(script[character][0])),
            (ROUNDS[1], _slowly(script[character][1])),
            ("What should I eat there?", _slowly(THIRD[character])),
        ]
        llms[character] = ScriptedLLM(rules, model=f"scripted-{character.lower()}")
    return llms


class Typist(ScriptedLLM):
    """A scripted LLM that streams its answer a word at a time, as a model does."""

    def stream(self, messages: Any, **options: Any) -> Iterator[Any]:
        for chunk in super().stream(messages, **options):
            time.sleep(0.15)
            yield chunk


class Echo(BaseModel):
    messages: Annotated[list[dict[str, str]], append] = []
    heard: str = ""


class Say(BaseModel):
    text: str = Field(min_length=1, max_length=2000)


def _echo(state: Echo, ctx: Any) -> dict[str, Any]:
    said = "".join(c.text for c in ctx.llm.stream([{"role": "user", "content": state.heard}]))
    return {
        "messages": [{"speaker": "USER", "text": state.heard}, {"speaker": "Echo", "text": said}]
    }


echo = Flow(
    name="echo",
    state=Echo,
    start="say",
    nodes={"answer": node(_echo, reads=["heard"], writes=["messages"])},
    gates={"say": Gate(Say, apply=lambda s, said: {"heard": said.text}, writes=["heard"])},
    routes={"say": "answer", "answer": "say"},
)
ECHOED = "one two three four five six seven eight"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadServer]:
    folder = tmp_path_factory.mktemp("chat")
    logs = RoundLogs(conversation_dir=folder / "talk", operation_dir=folder / "ops")
    flows = [
        roundtable_flow("trio-en", llms=_characters(), logs=logs),
        dialogue_flow("robot_cell", understanding="offline"),
        echo,
    ]
    store = JsonFileStore(folder / "store", fsync=False)
    app = create_app(flows, store=store, token=TOKEN, llm={"echo": Typist(default=ECHOED)})
    with ThreadServer(app) as server:
        yield server


@pytest.fixture(scope="module")
def chromium(_chromium: Any) -> Any:
    """Debian's headless Chromium under Playwright, once for the module (conftest's)."""
    return _chromium


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("FLOWKIT_TEST_ARTIFACTS") or tmp_path / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _shot(page: Any, artifacts: Path, name: str) -> None:
    page.screenshot(path=str(artifacts / f"{name}.png"))
    if os.environ.get("FLOWKIT_UPDATE_DOCS_IMG") == "1":
        page.screenshot(path=str(ROOT / "docs" / "img" / f"{name}.png"))


def _open(chromium: Any, url: str) -> tuple[Any, list[str]]:
    """A new page at ``url`` with the token given, and the script errors it meets."""
    page = chromium.new_page(viewport=VIEWPORT)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url)
    page.fill("#token", TOKEN)
    page.click("#token-form button")
    return page, errors


#: Installs a recorder of every text the typing line shows, in ``window.__typing``.
_RECORD_TYPING = """() => {
  window.__typing = [];
  new MutationObserver((records) => {
    for (const record of records) {
      for (const added of record.addedNodes) window.__typing.push(added.textContent);
    }
  }).observe(document.getElementById("typing"), { childList: true });
}"""


def _theirs(page: Any) -> list[tuple[str, str]]:
    found = page.eval_on_selector_all(
        "#messages .message.theirs",
        "items => items.map(i => [i.querySelector('.speaker').textContent,"
        " i.querySelector('.text').textContent])",
    )
    return [(speaker, text) for speaker, text in found]


# -- in the browser -----------------------------------------------------------------------------


@pytest.mark.slow  # a browser
def test_a_person_talks_with_the_roundtable_for_three_rounds(
    live: ThreadServer, chromium: Any, artifacts: Path
) -> None:
    page, errors = _open(chromium, live.base + "/chat?flow=roundtable")
    page.fill("#thread-id", "kyoto")
    page.click("#start-chat")
    page.wait_for_url("**/chat/kyoto")
    page.locator("#live", has_text="live").wait_for()
    assert page.locator("#title").inner_text() == "roundtable · kyoto"
    typing = page.locator("#typing")
    page.evaluate(_RECORD_TYPING)
    seen = 0
    for number, (message, speakers) in enumerate(zip(ROUNDS, SPEAKERS, strict=True)):
        first, _, rest = message.partition("\n")
        page.fill("#say", first)
        if rest:  # Shift+Enter is a new line, not a send
            page.press("#say", "Shift+Enter")
            page.keyboard.type(rest)
            assert page.input_value("#say") == message
            assert page.locator("#messages .message.mine").count() == number
        page.press("#say", "Enter")
        assert page.input_value("#say") == ""
        # Each character types, then speaks; the page shows both as they happen.
        page.wait_for_function(
            "who => window.__typing.includes(who + ' is typing…')", arg=speakers[0]
        )
        if number == 2:  # the picture of a character typing (docs/server.md)
            _shot(page, artifacts, "chat-typing")
        page.locator("#messages .message.theirs").nth(seen + 2).wait_for(timeout=20_000)
        typing.wait_for(state="hidden", timeout=20_000)
        page.locator("#send:enabled").wait_for()
        shown = page.evaluate("window.__typing.splice(0)")
        assert [f"{who} is typing…" for who in speakers] == [
            text for text in shown if text.endswith(" is typing…")
        ], shown  # each in turn, and nobody else: no "typing" that is not a status
        said = _theirs(page)
        assert [speaker for speaker, _ in said[seen:]] == speakers
        seen += 3
        assert page.locator("#messages .message.mine .text").nth(number).inner_text() == message
    texts = dict(_theirs(page)[-3:])
    assert texts["Lumina"] == "Try <b>yudofu</b> near Nanzenji."  # text, never markup
    assert page.locator("#messages b").count() == 0
    assert page.locator("#messages .message.mine .speaker").first.inner_text() == "You"
    _shot(page, artifacts, "chat-roundtable")
    # The page drew the transcript from the thread's state once the table waited again.
    stored = httpx.get(f"{live.base}/threads/kyoto/view", headers=AUTH, timeout=30).json()
    assert len(stored["messages"]) == page.locator("#messages .message").count() == 12
    assert errors == []
    page.close()


@pytest.mark.slow  # a browser
def test_a_person_books_with_the_dialogue_assistant_in_two_turns(
    live: ThreadServer, chromium: Any, artifacts: Path
) -> None:
    made = httpx.post(
        f"{live.base}/flows/dialogue/threads", json={"thread_id": "booking"}, headers=AUTH
    )
    assert made.status_code == 201, made.text
    page, errors = _open(chromium, live.base + "/chat/booking")
    page.locator("#live", has_text="live").wait_for()
    replies = page.locator("#messages .message.theirs")
    page.fill("#say", "book maintenance for robot 1 tomorrow at 10:00")
    page.press("#say", "Enter")
    replies.filter(has_text="Please tell me your name").wait_for(timeout=20_000)
    page.locator("#send:enabled").wait_for()
    page.fill("#say", "Tanaka")
    page.press("#say", "Enter")
    replies.filter(has_text="Booked maintenance of robot 1").wait_for(timeout=20_000)
    page.locator("#send:enabled").wait_for()
    assert [speaker for speaker, _ in _theirs(page)] == ["assistant", "assistant"]
    assert page.locator("#messages .message.mine").count() == 2
    assert page.locator("#typing").is_hidden()
    _shot(page, artifacts, "chat-dialogue")
    assert errors == []
    page.close()


@pytest.mark.slow  # a browser
def test_streamed_tokens_appear_as_they_come(
    live: ThreadServer, chromium: Any, artifacts: Path
) -> None:
    made = httpx.post(f"{live.base}/flows/echo/threads", json={"thread_id": "echo"}, headers=AUTH)
    assert made.status_code == 201, made.text
    page, errors = _open(chromium, live.base + "/chat/echo")
    page.locator("#live", has_text="live").wait_for()
    page.fill("#say", "count to eight")
    page.press("#say", "Enter")
    draft = page.locator("#messages .message.draft .text")
    page.wait_for_function(
        "() => { const d = document.querySelector('#messages .draft .text');"
        " return d && d.textContent.split(' ').length >= 3; }",
        timeout=20_000,
    )
    partial = draft.inner_text()
    assert ECHOED.startswith(partial) and partial != ECHOED
    _shot(page, artifacts, "chat-streaming")
    final = page.locator("#messages .message.theirs:not(.draft) .text", has_text=ECHOED)
    final.wait_for(timeout=20_000)
    assert page.locator("#messages .message.draft").count() == 0
    assert errors == []
    page.close()


# -- without a browser ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/chat/kyoto", "/chat?flow=roundtable", "/chat"])
def test_the_chat_page_is_served_with_a_strict_policy(live: ThreadServer, path: str) -> None:
    page = httpx.get(live.base + path, timeout=30)
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assert "connect-src 'self'" in policy
    assert '<script src="/static/chat.js"></script>' in page.text
    assert "http://" not in page.text and "https://" not in page.text  # nothing from elsewhere


def test_a_chat_of_a_flow_the_server_does_not_run_is_a_404(live: ThreadServer) -> None:
    page = httpx.get(live.base + "/chat?flow=bogus", timeout=30)
    assert page.status_code == 404
    assert page.json()["code"] == "flow_not_served"


@pytest.mark.parametrize(
    ("name", "media"), [("chat.js", "text/javascript"), ("chat.css", "text/css")]
)
def test_the_chat_page_files_are_served(live: ThreadServer, name: str, media: str) -> None:
    found = httpx.get(f"{live.base}/static/{name}", timeout=30)
    assert found.status_code == 200
    assert found.headers["content-type"].startswith(media)
    assert "http://" not in found.text and "https://" not in found.text
    assert "innerHTML" not in found.text


def test_a_chat_page_for_an_impossible_thread_id_is_refused(live: ThreadServer) -> None:
    assert httpx.get(live.base + "/chat/has%20a%20space", timeout=30).status_code == 422
    assert "/chat/{thread_id}" not in httpx.get(live.base + "/openapi.json").json()["paths"]


def test_the_socket_sends_streamed_tokens_only_when_asked() -> None:
    app = create_app([echo], store=MemoryStore(), token=TOKEN, llm=Typist(default="a b c"))
    with TestClient(app) as client:
        for thread in ("plain", "tokens"):
            client.post("/flows/echo/threads", json={"thread_id": thread}, headers=AUTH)
        with client.websocket_connect("/threads/tokens/ws?tokens=true", headers=AUTH) as socket:
            socket.send_text("hi")
            frames = [socket.receive_json()]
            while frames[-1]["type"] != "pause":
                frames.append(socket.receive_json())
        tokens = [f for f in frames if f["type"] == "token"]
        assert tokens and all(set(f) == {"type", "node", "text", "done"} for f in tokens)
        assert "".join(f["text"] for f in tokens) == "a b c" and tokens[-1]["done"]
        with client.websocket_connect("/threads/plain/ws", headers=AUTH) as socket:
            socket.send_text("hi")
            assert socket.receive_json()["type"] == "pause"  # no token frames before it


def test_with_open_reads_a_browser_authenticates_when_it_says_so() -> None:
    app = create_app(
        [echo], store=MemoryStore(), token=TOKEN, open_reads=True, llm=Typist(default="ok")
    )
    with TestClient(app) as client:
        client.post("/flows/echo/threads", json={"thread_id": "t"}, headers=AUTH)
        with client.websocket_connect("/threads/t/ws?auth=message") as socket:
            socket.send_json({"type": "auth", "token": "wrong-token-0123456789"})
            assert socket.receive_json()["code"] == "unauthorized"
        with client.websocket_connect("/threads/t/ws?auth=message") as socket:
            socket.send_json({"type": "auth", "token": TOKEN})
            socket.send_text("hi")  # answered as the principal: anonymous readers cannot
            assert socket.receive_json()["type"] == "pause"
        with client.websocket_connect("/threads/t/ws") as socket:
            socket.send_text("hi")  # anonymous, as before
            assert socket.receive_json()["code"] in ("unauthorized", "forbidden")
