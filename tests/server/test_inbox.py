"""The review page as a reviewer's inbox for any flow, in a real browser (Debian's headless
Chromium, driven by Playwright): a pause's payload rendered for people, approved and
rejected with explicit buttons, what changed since the last round; a page that is behind
gets "this moved since you looked"; a failed thread has its state edited, is retried, and a
checkpoint is forked; a thread is started from the page; two users with different roles see
and may do different things; the timers due (a passed deadline, a node asleep, one due soon)
are listed with where and when.

One server for the module (users from a users file, roles admin / reviewer / reader). With
``FLOWKIT_UPDATE_DOCS_IMG=1`` the screenshots docs/server.md shows are written to docs/img/.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from _live import ThreadServer
from pydantic import BaseModel, Field
from serve_common import TOKEN
from serve_flows import chat

from flowkit import END, Context, Flow, Gate, Route, RouteTable, node, when
from flowkit.foundation._token_hash import hash_token
from flowkit.server import create_app, load_users
from flowkit.stores import JsonFileStore

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOCS_IMG = os.environ.get("FLOWKIT_UPDATE_DOCS_IMG") == "1"

# -- flows: release notes reviewed in rounds, and a job that fails until it is ready -----------


class Article(BaseModel):
    topic: str = "release"
    draft: str = ""
    round: int = 0
    decision: str = ""
    note: str = ""


class Decision(BaseModel):
    decision: Literal["approve", "reject"]
    note: str = Field(default="", max_length=500)


def _write(state: Article) -> dict[str, Any]:
    number = state.round + 1
    lines = [f"# Notes on {state.topic}, round {number}", "", "This release adds **three** things:"]
    lines += ["- a faster `resume`", "- an inbox for reviewers"]
    if number > 1:
        lines.append("- diffs since the last round")
    lines += ["", "```", "flowkit serve articles", "```", "", "<script>window.__pwned=1</script>"]
    return {"draft": "\n".join(lines), "round": number}


articles = Flow(
    name="articles",
    state=Article,
    start="write",
    nodes={"write": node(_write, reads=["round", "topic"], writes=["draft", "round"])},
    gates={
        "review": Gate(
            Decision,
            payload=lambda s: {"draft": s.draft, "round": s.round},
            description="Publish these notes?",
        )
    },
    routes={
        "write": "review",
        "review": RouteTable(
            "after_review",
            [Route(when("rejected", lambda s: s.decision == "reject"), "write")],
            default=END,
        ),
    },
)


class Job(BaseModel):
    ready: bool = False
    result: str = ""


def _work(state: Job) -> dict[str, Any]:
    if not state.ready:
        raise RuntimeError("the input is not ready")
    return {"result": "done"}


jobs = Flow(
    name="jobs",
    state=Job,
    start="work",
    nodes={"work": node(_work, reads=["ready"], writes=["result"])},
    routes={"work": END},
)


# Follow-ups: a gate whose deadline the state decides (a passed one is due at once), and
# invoices whose reminder node sleeps until a time.


class FollowUp(BaseModel):
    customer: str = ""
    remind_at: datetime | None = None
    replied: bool = False
    chased: bool = False


class Reply(BaseModel):
    replied: bool


def _chase(state: FollowUp) -> dict[str, Any]:
    return {"chased": True}


@node(writes=["chased"])
def _sleep(state: FollowUp, ctx: Context) -> None:
    assert state.remind_at is not None
    ctx.sleep_until(state.remind_at)


followups = Flow(
    name="followups",
    state=FollowUp,
    start="reply",
    nodes={"chase": _chase},
    gates={"reply": Gate(Reply, deadline=lambda s: s.remind_at, on_timeout="chase")},
    routes={"reply": END, "chase": END},
)
invoices = Flow(
    name="invoices",
    state=FollowUp,
    start="remind",
    nodes={"remind": _sleep},
    routes={"remind": END},
)

# -- the server: users with roles ----------------------------------------------------------------

PEOPLE = {
    "ada": (["admin"], "ada-token-0123456789abcdef"),
    "rita": (["reviewer"], "rita-token-0123456789abcdef"),
    "rae": (["reader"], "rae-token-0123456789abcdef"),
}
CHEAP = {"n": 2**10, "r": 8, "p": 1}


def auth(who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {PEOPLE[who][1]}"}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadServer]:
    folder = tmp_path_factory.mktemp("inbox")
    users = folder / "users.toml"
    users.write_text(
        "".join(
            f'[users.{name}]\ntoken_hash = "{hash_token(token, **CHEAP)}"\n'
            f"roles = [{', '.join(repr(r) for r in roles)}]\n".replace("'", '"')
            for name, (roles, token) in PEOPLE.items()
        )
    )
    users.chmod(0o600)
    store = JsonFileStore(folder / "store", fsync=False)
    # No timer loop: timers stay due for the inbox to list (workers would fire them).
    app = create_app(
        [articles, jobs, chat, followups, invoices], store=store, token=TOKEN,
        authenticate=load_users(users), timer_poll_s=None,
    )  # fmt: skip
    with ThreadServer(app) as server:
        yield server


def start(live: ThreadServer, flow: str, thread_id: str, **values: Any) -> dict[str, Any]:
    made = httpx.post(
        f"{live.base}/flows/{flow}/threads",
        json={"thread_id": thread_id, "input": values},
        headers=auth("ada"),
        timeout=60,
    )
    assert made.status_code == 201, made.text
    body: dict[str, Any] = made.json()
    return body


def open_page(live: ThreadServer, browser: Any, who: str, where: str = "") -> Any:
    """A page signed in as ``who`` (its token given once), at ``#/`` + ``where``."""
    page = browser.new_page(viewport={"width": 900, "height": 600})
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.goto(live.base + "/")
    page.fill("#token", PEOPLE[who][1])
    page.click("#token-form button")
    if where:
        page.goto(live.base + "/#/" + where)
    return page


def shot(page: Any, name: str, artifacts: Path, at: str = "", block: str = "start") -> None:
    """A 900x600 screenshot, scrolled to the top or to the element ``at`` names."""
    if at:
        page.locator(at).evaluate(f"node => node.scrollIntoView({{block: '{block}'}})")
    else:
        page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(artifacts / f"inbox-{name}.png"))
    if DOCS_IMG:
        page.screenshot(path=str(ROOT / "docs" / "img" / f"inbox-{name}.png"))


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("FLOWKIT_TEST_ARTIFACTS") or tmp_path / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# -- a pause: its payload for people, rejected, the diff of the next round, approved ---------------


def test_a_pause_is_shown_for_people_rejected_then_approved(
    live: ThreadServer, browser: Any, artifacts: Path
) -> None:
    start(live, "articles", "notes-1", topic="flowkit 2")
    start(live, "jobs", "job-0")  # failed: listed apart
    page = open_page(live, browser, "ada")
    page.locator("#waiting a", has_text="notes-1").wait_for()
    page.locator("#failed a", has_text="job-0").wait_for()
    assert page.locator("#waiting a", has_text="job-0").count() == 0
    assert page.locator("#who").inner_text() == "ada (admin)"
    shot(page, "list", artifacts)
    page.select_option("#filter-flow", "jobs")  # filters: only the jobs flow's threads
    page.locator("#waiting", has_text="Nobody is waited for.").wait_for()
    page.select_option("#filter-flow", "articles")
    page.locator("#waiting a", has_text="notes-1").wait_for()

    page.click("#waiting a:text('notes-1')")
    form = page.locator("form.gate[data-gate='review']")
    draft = form.locator(".payload dd[data-key='draft']")
    draft.locator("h4", has_text="Notes on flowkit 2, round 1").wait_for()
    assert draft.locator("li").all_inner_texts() == ["a faster resume", "an inbox for reviewers"]
    assert draft.locator("li code").inner_text() == "resume"
    assert draft.locator("strong").inner_text() == "three"
    assert draft.locator("pre code").inner_text() == "flowkit serve articles"
    assert "<script>window.__pwned=1</script>" in draft.inner_text()  # text, not markup
    assert page.evaluate("window.__pwned") is None
    assert page.locator("main script").count() == 0
    # Explicit actions from the input model; nothing is chosen for the person.
    assert form.locator("button.action").all_inner_texts() == ["Approve", "Reject"]
    assert form.locator("select").count() == 0
    assert page.locator("#round").count() == 0  # the first round: nothing to compare

    form.locator("[id='field-review-note']").fill("List the diffs too.")
    form.locator("button.reject").click()
    # Round two: what changed since the answer, as a word diff.
    page.locator("#round ins", has_text="diffs since the last round").wait_for(timeout=30_000)
    assert page.locator("#round del", has_text="1").count() >= 1
    draft.locator("h4", has_text="round 2").wait_for()
    shot(page, "pause", artifacts, at="#review")
    state = httpx.get(f"{live.base}/threads/notes-1", headers=auth("ada"), timeout=30).json()
    assert state["state"]["decision"] == "reject"
    assert state["state"]["note"] == "List the diffs too."

    form.locator("button.approve").click()
    page.locator("#status", has_text="done").wait_for(timeout=30_000)
    page.locator("#history li strong", has_text="input").first.wait_for()
    assert page.locator("#history li strong", has_text="input").count() == 2
    assert page.locator("#history .actor", has_text="answered by ada").count() == 2
    assert page.errors == []


# -- a page that is behind: "this moved since you looked", never a silent apply ------------------


def test_a_page_that_is_behind_gets_the_conflict_with_the_new_content(
    live: ThreadServer, browser: Any, artifacts: Path
) -> None:
    start(live, "articles", "notes-2")
    page = open_page(live, browser, "rita")
    page.route("**/threads/notes-2/events", lambda route: route.abort())  # it misses updates
    page.goto(live.base + "/#/threads/notes-2")
    page.locator("#version", has_text="1").wait_for()
    form = page.locator("form.gate[data-gate='review']")
    form.locator("button.approve").wait_for()

    patched = httpx.patch(
        f"{live.base}/threads/notes-2/state",
        json={"values": {"note": "Hold: legal has a question"}, "reason": "legal"},
        headers=auth("ada"),
        timeout=30,
    )
    assert patched.status_code == 200, patched.text
    assert page.locator("#version").inner_text() == "1"  # the page has not seen it

    form.locator("button.approve").click()
    moved = page.locator("#moved")
    moved.wait_for(timeout=30_000)
    assert "This moved since you looked." in moved.inner_text()
    assert "changed: note" in moved.inner_text()
    assert page.locator("#version").inner_text() == "2"  # the new content is drawn
    assert page.input_value("[id='field-review-note']") == "Hold: legal has a question"
    shot(page, "conflict", artifacts, at="#review")
    state = httpx.get(f"{live.base}/threads/notes-2", headers=auth("ada"), timeout=30).json()
    assert state["status"] == "waiting"  # nothing was applied
    assert state["state"]["decision"] == ""

    # Deciding again on what it shows now goes through (live again, to see it finish).
    page.unroute("**/threads/notes-2/events")
    page.locator("form.gate[data-gate='review'] button.approve").click()
    page.locator("#status", has_text="done").wait_for(timeout=30_000)
    assert page.errors == []


# -- a failed thread: edit its state, retry; fork from a checkpoint ------------------------------


def test_a_failed_thread_is_edited_retried_and_forked(
    live: ThreadServer, browser: Any, artifacts: Path
) -> None:
    assert start(live, "jobs", "job-1")["status"] == "failed"
    page = open_page(live, browser, "ada", "threads/job-1")
    page.locator("#failure", has_text="RuntimeError").wait_for()
    page.locator("#retry").wait_for()
    shot(page, "failed", artifacts)

    page.fill("#edit-values", '{"ready": true, "result": ""}')
    page.fill("#edit-reason", "the input is ready now")
    page.click("#save-state")
    page.locator("#history .actor", has_text="by ada: the input is ready now").wait_for()
    page.click("#retry")
    page.locator("#status", has_text="done").wait_for(timeout=30_000)
    page.locator("#history li strong", has_text="patch").wait_for()

    # Fork from the very first checkpoint: a new thread standing where job-1 started.
    page.click("#history li[data-version='0'] button.fork")
    page.locator("h1", has_text="job-1-fork-1").wait_for(timeout=30_000)
    forked = httpx.get(f"{live.base}/threads/job-1-fork-1", headers=auth("ada"), timeout=30)
    assert forked.status_code == 200
    assert forked.json()["state"]["ready"] is False
    shot(page, "fork", artifacts)
    page.click("#continue")  # it runs on from there, and fails as job-1 did at first
    page.locator("#failure", has_text="RuntimeError").wait_for(timeout=30_000)
    assert page.errors == []


# -- start a thread from the page ------------------------------------------------------------------


def test_a_thread_is_started_from_the_page_with_its_flows_fields(
    live: ThreadServer, browser: Any
) -> None:
    page = open_page(live, browser, "ada")
    page.select_option("#start-flow", "articles")
    page.fill("[id='field-start-topic']", "the inbox")
    page.fill("#start-id", "notes-started")
    page.click("#start-thread")
    page.locator("h1", has_text="notes-started").wait_for()
    page.locator(".payload h4", has_text="Notes on the inbox, round 1").wait_for(timeout=30_000)
    assert page.errors == []


# -- roles: what each user sees and may do ---------------------------------------------------------


def test_two_users_with_different_roles_see_and_may_do_different_things(
    live: ThreadServer, browser: Any, artifacts: Path
) -> None:
    start(live, "articles", "notes-3")
    start(live, "jobs", "job-3")
    start(live, "chat", "talk-3")

    reviewer = open_page(live, browser, "rita", "threads/notes-3")
    reviewer.locator("form.gate button.approve").wait_for()
    assert reviewer.locator("form.gate button.approve").is_enabled()
    assert reviewer.locator("#edit-state").count() == 0  # reviewers answer; they do not patch
    assert reviewer.locator("button.fork").count() == 0
    reviewer.goto(live.base + "/#/threads/job-3")
    reviewer.locator("#failure").wait_for()
    assert reviewer.locator("#retry").count() == 1  # retrying is resuming
    reviewer.goto(live.base + "/#/")
    reviewer.locator("#waiting a", has_text="notes-3").wait_for()
    assert reviewer.locator("#start").count() == 0

    reader = open_page(live, browser, "rae", "threads/notes-3")
    reader.locator("#role-note").wait_for()
    assert reader.locator("form.gate button.approve").is_disabled()
    assert reader.locator("form.gate button.reject").is_disabled()
    assert reader.locator("#edit-state, #retry, button.fork").count() == 0
    shot(reader, "reader", artifacts, at="form.gate .buttons", block="end")
    reader.goto(live.base + "/#/threads/talk-3")  # a conversation links to its chat page
    link = reader.locator("#chat-link")
    link.wait_for()
    assert link.get_attribute("href") == "/chat/talk-3"
    assert reviewer.errors == [] and reader.errors == []


def test_an_answer_run_on_in_the_background_is_refused_at_once_when_behind(
    live: ThreadServer,
) -> None:
    # The page answers with wait: false; a stale expected_version is a 409 before anything
    # runs (not a failure of the background run the page would never hear of).
    start(live, "articles", "notes-4")
    answer = {"input": {"decision": "approve"}, "wait": False}
    stale = httpx.post(
        f"{live.base}/threads/notes-4/resume",
        json={**answer, "expected_version": 0},
        headers=auth("rita"),
        timeout=30,
    )
    assert stale.status_code == 409, stale.text
    assert stale.json()["code"] == "conflict"
    assert stale.json()["version"] == 1
    fresh = httpx.post(
        f"{live.base}/threads/notes-4/resume",
        json={**answer, "expected_version": 1},
        headers=auth("rita"),
        timeout=30,
    )
    assert fresh.status_code == 202, fresh.text


# -- timers due: a passed deadline, a node asleep, one due soon ----------------------------------


def test_timers_due_are_listed_with_where_and_when(
    live: ThreadServer, browser: Any, artifacts: Path
) -> None:
    now = datetime.now(UTC)
    for flow, thread_id, customer, at in [
        ("followups", "chase-acme", "Acme", -timedelta(hours=2, minutes=1)),
        ("invoices", "invoice-17", "Globex", -timedelta(minutes=6)),
        ("followups", "chase-initech", "Initech", timedelta(minutes=21)),
        ("followups", "chase-later", "Umbrella", timedelta(days=3)),
    ]:
        start(live, flow, thread_id, customer=customer, remind_at=(now + at).isoformat())
    page = open_page(live, browser, "rae")  # a reader sees them too
    passed = page.locator("#timers tr[data-thread='chase-acme']")
    passed.wait_for()
    # Earliest first, passed or within the hour (the default): three days ahead is not near.
    rows = page.locator("#timers tbody tr").all()
    listed = [row.get_attribute("data-thread") for row in rows]
    assert listed == ["chase-acme", "invoice-17", "chase-initech"]
    assert passed.locator("td").nth(1).inner_text() == "followups"
    assert passed.locator("td").nth(2).inner_text() == "deadline of gate reply"
    assert passed.locator("td.overdue").inner_text().startswith("overdue by 2 hours (")
    asleep = page.locator("#timers tr[data-thread='invoice-17']")
    assert asleep.locator("td").nth(2).inner_text() == "wake-up of node remind"
    assert asleep.locator("td.overdue").inner_text().startswith("overdue by 6 minutes")
    soon = page.locator("#timers tr[data-thread='chase-initech'] td.due").inner_text()
    assert re.match(r"due in (20|21) minutes \(", soon), soon
    shot(page, "timers", artifacts, at="#timers-due")

    page.select_option("#filter-due", "0")  # passed ones only
    page.locator("#timers tr[data-thread='chase-initech']").wait_for(state="detached")
    assert page.locator("#timers tbody tr").count() == 2
    page.select_option("#filter-flow", "invoices")
    page.locator("#timers tr[data-thread='chase-acme']").wait_for(state="detached")
    page.select_option("#filter-flow", "")
    page.click("#timers a:text('chase-acme')")  # to the thread: it waits at the gate
    page.locator("h1", has_text="chase-acme").wait_for()
    answered = httpx.post(
        f"{live.base}/threads/chase-acme/resume",
        json={"input": {"replied": True}},
        headers=auth("ada"),
        timeout=30,
    )
    assert answered.json()["status"] == "done"
    page.goto(live.base + "/#/")
    page.locator("#timers tr[data-thread='invoice-17']").wait_for()
    assert page.locator("#timers tr[data-thread='chase-acme']").count() == 0  # answered: gone
    assert page.errors == []
