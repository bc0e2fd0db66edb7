"""The review page in a real browser (Debian's headless Chromium, driven by Playwright).

A person opens the page, sees the sas thread waiting, sends feedback, sees the revised task
list arrive live, approves twice, and downloads the validated program. Screenshots go to
``$FLOWKIT_TEST_ARTIFACTS`` (default: the test's temporary folder); with
``FLOWKIT_UPDATE_DOCS_IMG=1`` the one docs/server.md shows is written to docs/img/ too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _live import ThreadServer
from pause_flows import EVIL, PAUSE_FLOWS
from serve_common import AUTH, TOKEN
from serve_flows import chat

from flowkit.examples.review import flow as review
from flowkit.llm import ReplayLLM
from flowkit.robot import validate_xml
from flowkit.sas.demo import FEEDBACK, REQUEST, demo_file
from flowkit.sas.workflow import flow as sas
from flowkit.server import create_app
from flowkit.stores import JsonFileStore

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("FLOWKIT_TEST_ARTIFACTS") or tmp_path / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def live(tmp_path: Path) -> Iterator[ThreadServer]:
    store = JsonFileStore(tmp_path / "store", fsync=False)
    llm = ReplayLLM.from_file(demo_file("cassette.json"))
    app = create_app([sas, review, chat], store=store, token=TOKEN, llm={"sas": llm})
    with ThreadServer(app) as server:
        config = {
            "output_dir": str(tmp_path / "out"),
            "teaching_file": str(demo_file("teaching.yaml")),
        }
        started = httpx.post(
            f"{server.base}/flows/sas/threads",
            json={"thread_id": "bearing-cell", "input": {"user_input": REQUEST, "config": config}},
            headers=AUTH,
            timeout=120,
        )
        assert started.status_code == 201, started.text
        assert started.json()["node"] == "sas_awaiting_task_list_review"
        yield server


def test_a_person_reviews_a_sas_thread_in_the_browser(
    live: ThreadServer, browser: Any, artifacts: Path, tmp_path: Path
) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 1000}, accept_downloads=True)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    def shot(name: str) -> None:
        page.screenshot(path=str(artifacts / f"{name}.png"), full_page=True)

    # Opens the page, gives the token, and sees the thread waiting for a person.
    page.goto(live.base + "/")
    page.fill("#token", TOKEN)
    page.click("#token-form button")
    waiting = page.locator("#waiting a", has_text="bearing-cell")
    waiting.wait_for()
    shot("1-waiting-list")
    waiting.click()
    page.locator("#status", has_text="waiting").wait_for()
    tasks = page.locator("#tasks > li")
    tasks.first.wait_for()
    assert tasks.count() == 13
    assert page.locator("#tasks", has_text="CNV_Put_BH_On_PLT").count() == 0
    page.locator("#live", has_text="live").wait_for()
    shot("2-task-list")

    # Sends feedback: the revised list arrives over the event stream, no reload.
    page.evaluate("window.__samePage = true")
    page.fill("#feedback", FEEDBACK)
    page.click("#send-feedback")
    page.locator("#tasks", has_text="CNV_Put_BH_On_PLT").wait_for(timeout=60_000)
    assert page.evaluate("window.__samePage") is True
    assert tasks.count() == 14
    page.locator("#history li", has_text="input").first.wait_for()
    shot("3-task-list-revised")
    if os.environ.get("FLOWKIT_UPDATE_DOCS_IMG") == "1":
        page.screenshot(path=str(ROOT / "docs" / "img" / "server-review.png"), full_page=True)

    # Approves the task list: module steps to review, one section per task.
    page.click("#approve")
    page.locator("#approve", has_text="module steps").wait_for(timeout=60_000)
    assert page.locator(".steps").count() == 14
    assert "select_robot" in page.locator(".steps[data-task='Main_Task'] pre").inner_text()
    shot("4-module-steps")

    # Approves the module steps: the program is written, validated, offered for download.
    page.click("#approve")
    page.locator("#status", has_text="done").wait_for(timeout=60_000)
    button = page.locator("button.download[data-file='flow.xml']")
    button.wait_for()
    shot("5-done")
    with page.expect_download() as download_info:
        button.click()
    download = download_info.value
    assert download.suggested_filename == "bearing-cell-flow.xml"
    saved = tmp_path / "downloaded-flow.xml"
    download.save_as(str(saved))
    xml = saved.read_text(encoding="utf-8")
    assert xml == (tmp_path / "out" / "flow.xml").read_text(encoding="utf-8")
    assert [p for p in validate_xml(xml) if p.severity == "error"] == []
    assert errors == []


def _open_review_thread(live: ThreadServer, browser: Any, thread_id: str, topic: str) -> Any:
    """A review thread waiting at its gate, opened in a new page with the token given."""
    made = httpx.post(
        f"{live.base}/flows/review/threads",
        json={"thread_id": thread_id, "input": {"topic": topic}},
        headers=AUTH,
        timeout=60,
    )
    assert made.status_code == 201
    page = browser.new_page()
    page.goto(live.base + "/")
    page.fill("#token", TOKEN)
    page.click("#token-form button")
    page.goto(live.base + "/#/threads/" + thread_id)
    page.locator("form.gate[data-gate='review']").wait_for()
    return page


def test_nothing_a_thread_holds_is_rendered_as_markup(
    live: ThreadServer, browser: Any, artifacts: Path
) -> None:
    evil = "<img src=x onerror=window.__pwned=1><script>window.__pwned=2</script>"
    page = _open_review_thread(live, browser, "x-1", evil)
    page.locator("#state-details summary").click()  # the state, shown as text
    assert evil in page.locator("#state").inner_text()
    assert page.evaluate("window.__pwned") is None
    assert page.locator("main img[src='x']").count() == 0
    # The generated form answers the gate: its required `approved` is two buttons.
    assert page.locator("form.gate button.action").all_inner_texts() == ["Approve", "Reject"]
    page.click("form.gate button.approve")
    page.locator("#status", has_text="done").wait_for(timeout=30_000)
    page.screenshot(path=str(artifacts / "generic-gate-done.png"), full_page=True)


def test_what_a_person_types_survives_the_redraw_when_the_stream_opens(
    live: ThreadServer, browser: Any
) -> None:
    # The page draws once more when its event stream opens (a step may have landed in
    # between); a drawing of the version already shown must not rebuild the form under the
    # person's hands (it did: the box came back unchecked and "approve" sent approved=false).
    page = _open_review_thread(live, browser, "typing", "t")
    page.fill("#field-review-feedback", "half a sentence")
    page.locator("#live", has_text="live").wait_for()
    page.wait_for_timeout(1_000)  # the redraw is debounced by 150 ms; give it time to land
    assert page.input_value("#field-review-feedback") == "half a sentence"
    page.click("form.gate button.approve")
    page.locator("#status", has_text="done").wait_for(timeout=30_000)


def test_a_conversation_shows_as_a_chat_and_takes_what_a_person_types(
    live: ThreadServer, browser: Any, artifacts: Path
) -> None:
    made = httpx.post(
        f"{live.base}/flows/chat/threads", json={"thread_id": "talk"}, headers=AUTH, timeout=60
    )
    assert made.status_code == 201
    page = browser.new_page()
    page.goto(live.base + "/")
    page.fill("#token", TOKEN)
    page.click("#token-form button")
    page.goto(live.base + "/#/threads/talk")
    page.locator("#say").wait_for()
    page.fill("#say", "hello <b>there</b>")
    page.press("#say", "Enter")
    reply = page.locator("#chat li.theirs", has_text="you said: hello <b>there</b>")
    reply.wait_for(timeout=30_000)
    assert page.locator("#chat li.mine .text").inner_text() == "hello <b>there</b>"
    assert page.locator("#chat b").count() == 0
    page.screenshot(path=str(artifacts / "chat.png"), full_page=True)


# -- pauses: what each open pause shows, next to its form -------------------------------------


@pytest.fixture
def pause_live(tmp_path: Path) -> Iterator[ThreadServer]:
    store = JsonFileStore(tmp_path / "pauses", fsync=False)
    with ThreadServer(create_app(PAUSE_FLOWS, store=store, token=TOKEN)) as server:
        yield server


def _open_thread(live: ThreadServer, browser: Any, flow: str, thread_id: str) -> Any:
    made = httpx.post(
        f"{live.base}/flows/{flow}/threads", json={"thread_id": thread_id}, headers=AUTH, timeout=60
    )
    assert made.status_code == 201, made.text
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(live.base + "/")
    page.fill("#token", TOKEN)
    page.click("#token-form button")
    page.goto(live.base + "/#/threads/" + thread_id)
    page.locator("form.gate").first.wait_for()
    return page


def test_each_open_pause_shows_its_payload_as_text_beside_its_form(
    pause_live: ThreadServer, browser: Any, artifacts: Path
) -> None:
    page = _open_thread(pause_live, browser, "drafts", "draft-1")
    shown = page.locator("form.gate[data-gate='review'] .payload")
    assert shown.locator("dd[data-key='draft']").inner_text() == f"Release notes {EVIL} (written)"
    assert shown.locator("dd[data-key='api_key']").inner_text() == "***"  # masked as the state is
    assert shown.locator("dd[data-key='options'] li").all_inner_texts() == ["approve", "reject"]
    assert page.evaluate("window.__pwned") is None
    assert page.locator("main img[src='x']").count() == 0
    assert page.locator("main script").count() == 0
    page.screenshot(path=str(artifacts / "pause-payload.png"), full_page=True)
    page.click("form.gate[data-gate='review'] button.approve")
    page.locator("#status", has_text="done").wait_for(timeout=30_000)


def test_a_map_that_asks_shows_one_form_per_open_call_and_each_answers_its_own(
    pause_live: ThreadServer, browser: Any, artifacts: Path
) -> None:
    page = _open_thread(pause_live, browser, "checks", "checks-1")
    forms = page.locator("form.gate")
    assert [forms.nth(i).get_attribute("data-gate") for i in range(forms.count())] == [
        "check[0]",
        "check[2]",
        "check[4]",
    ]
    question = page.locator("form.gate[data-gate='check[2]'] .payload")
    assert question.locator("dd[data-key='question']").inner_text() == "Is item 3 fine?"
    assert question.locator("dd[data-key='item']").inner_text() == "3"
    page.screenshot(path=str(artifacts / "map-pauses.png"), full_page=True)
    page.click("form.gate[data-gate='check[2]'] button.approve")
    page.locator("form.gate[data-gate='check[2]']").wait_for(state="detached", timeout=30_000)
    assert forms.count() == 2
    for call in ("check[0]", "check[4]"):
        page.click(f"form.gate[data-gate='{call}'] button.reject")
        page.locator(f"form.gate[data-gate='{call}']").wait_for(state="detached", timeout=30_000)
    page.locator("#status", has_text="done").wait_for(timeout=30_000)
    state = httpx.get(f"{pause_live.base}/threads/checks-1", headers=AUTH, timeout=30).json()
    assert state["state"]["results"] == ["no", "auto2", "ok", "auto4", "no", "auto6"]
