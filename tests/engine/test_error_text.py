"""A failed node's exception text is masked where its ``NodeError`` is built, unless the
runner opts in to raw text (``Runner(..., error_text="raw")``): state, journal, history,
events and the CLI all show the one stored text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from flowkit import (
    END,
    Context,
    Event,
    Failed,
    Flow,
    Map,
    NodeError,
    NodeFinished,
    Route,
    RouteTable,
    Runner,
    Subflow,
    field,
)
from flowkit.cli import main
from flowkit.foundation._logging import mask_text
from flowkit.records._node_error import ErrorText
from flowkit.stores import JsonFileStore

EMAIL, PHONE, KEY = "taro@example.com", "090-1234-5678", "Zm9vYmFyYmF6cXV4"
LEAKY = f"no account for {EMAIL}, call {PHONE}, api_key={KEY}"
MASKED = "no account for ***, call ***, api_key=***"
SECRETS = (EMAIL, PHONE, KEY)


class Account(BaseModel):
    user: str = ""
    users: list[str] = []
    found: str = ""


class Routed(BaseModel):
    found: str = ""
    error: NodeError | None = None


def lookup(state: Any) -> dict[str, Any]:
    raise ValueError(LEAKY)


def lookup_one(state: Account, user: str) -> dict[str, Any]:
    if user == "taro":
        raise ValueError(LEAKY)
    return {}


failing = Flow(
    name="accounts", state=Account, start="lookup", nodes={"lookup": lookup},
    routes={"lookup": END}, error_field=None,
)  # fmt: skip


def _run(tmp_path: Path, flow: Flow, **options: Any) -> tuple[Runner[Any], list[Event]]:
    events: list[Event] = []
    runner = Runner(flow, store=JsonFileStore(tmp_path / "store", fsync=False), **options)
    runner.subscribe(events.append)
    result = runner.start("t1", {"users": ["hanako", "taro"]})
    assert result.status == "failed"
    return runner, events


def _journal(tmp_path: Path) -> str:
    return (tmp_path / "store" / "threads" / "t1" / "journal.jsonl").read_text("utf-8")


def _cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    store = str(tmp_path / "store")
    texts = []
    for argv in (["show", "t1"], ["show", "t1", "--json", "--history"], ["history", "t1"]):
        main([*argv, "--store", store])
        captured = capsys.readouterr()
        texts.append(captured.out + captured.err)
    return "\n".join(texts)


def _leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def test_a_failed_node_stores_its_message_masked_everywhere_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner, events = _run(tmp_path, failing)
    error = runner.get_state("t1").error
    assert error is not None
    assert (error.type, error.message, error.node, error.attempts) == (
        "ValueError", MASKED, "lookup", 1
    )  # fmt: skip
    assert [c.error.message for c in runner.history("t1") if c.error] == [MASKED]
    failed = [e for e in events if isinstance(e, Failed)]
    assert [e.error.message for e in failed] == [MASKED]
    finished = [e.error.message for e in events if isinstance(e, NodeFinished) and e.error]
    assert finished == [MASKED]
    assert _leaks(_journal(tmp_path)) == []
    shown = _cli(tmp_path, capsys)
    assert MASKED in shown
    assert _leaks(shown) == []


def test_error_text_raw_keeps_the_exception_text_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner, events = _run(tmp_path, failing, error_text="raw")
    error = runner.get_state("t1").error
    assert error is not None and error.message == LEAKY
    assert [e.error.message for e in events if isinstance(e, Failed)] == [LEAKY]
    assert _leaks(_journal(tmp_path)) == list(SECRETS)
    assert _leaks(_cli(tmp_path, capsys)) == list(SECRETS)


def test_routing_on_a_masked_error_still_works() -> None:
    flow = Flow(
        name="routed", state=Routed, start="lookup",
        nodes={"lookup": lookup, "apologise": lambda s: {"found": s.error.message}},
        routes={"lookup": RouteTable("after_lookup", [Route(field("error"), "apologise")],
                                     default=END),
                "apologise": END},
    )  # fmt: skip
    result = Runner(flow).start("r1")
    assert result.status == "done"
    assert result.state.found == MASKED
    assert result.state.error is not None and result.state.error.type == "ValueError"


def test_a_failed_map_item_is_masked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flow = Flow(
        name="batch", state=Account, start="lookup",
        nodes={"lookup": Map(lookup_one, over=lambda s: s.users)},
        routes={"lookup": END}, error_field=None,
    )  # fmt: skip
    _, events = _run(tmp_path, flow)
    items = [e.error.message for e in events if isinstance(e, NodeFinished) and e.error]
    assert MASKED in items[0]
    assert _leaks(" ".join(items)) == []
    assert _leaks(_journal(tmp_path)) == []
    assert _leaks(_cli(tmp_path, capsys)) == []
    _run(tmp_path / "raw", flow, error_text="raw")
    assert _leaks(_journal(tmp_path / "raw")) == list(SECRETS)


def test_a_map_whose_over_function_raises_is_masked() -> None:
    def over(state: Account) -> list[str]:
        raise KeyError(LEAKY)

    flow = Flow(
        name="batch", state=Account, start="lookup",
        nodes={"lookup": Map(lookup_one, over=over)},
        routes={"lookup": END}, error_field=None,
    )  # fmt: skip
    error = Runner(flow).start("m1").error
    assert error is not None and error.type == "KeyError"
    assert _leaks(error.message) == [] and "***" in error.message


def test_a_failed_subflow_child_is_masked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parent = Flow(
        name="desk", state=Account, start="research",
        nodes={"research": Subflow(failing, writes=["found"])},
        routes={"research": END}, error_field=None,
    )  # fmt: skip
    runner, events = _run(tmp_path, parent)
    error = runner.get_state("t1").error
    assert error is not None and error.message == f"research/lookup: {MASKED}"
    assert [e.error.message for e in events if isinstance(e, Failed)] == [error.message]
    assert _leaks(_journal(tmp_path)) == []
    assert _leaks(_cli(tmp_path, capsys)) == []
    raw, _ = _run(tmp_path / "raw", parent, error_text="raw")
    assert raw.get_state("t1").error == error.model_copy(
        update={"message": f"research/lookup: {LEAKY}"}
    )


def test_a_failing_subflow_input_function_is_masked() -> None:
    def ask(state: Account) -> dict[str, Any]:
        raise ValueError(LEAKY)

    parent = Flow(
        name="desk", state=Account, start="research",
        nodes={"research": Subflow(failing, input=ask, writes=["found"])},
        routes={"research": END}, error_field=None,
    )  # fmt: skip
    error = Runner(parent).start("s1").error
    assert error is not None and error.message == MASKED


@pytest.mark.parametrize(("choice", "expected"), [("masked", MASKED), ("raw", LEAKY)])
def test_a_node_recording_its_own_error_follows_the_runners_choice(
    choice: ErrorText, expected: str
) -> None:
    def careful(state: Routed, ctx: Context) -> dict[str, Any]:
        try:
            lookup(state)
        except ValueError as exc:
            error = NodeError.from_exception(exc, node=ctx.node, attempts=1, text=ctx.error_text)
            return {"error": error}
        return {}

    flow = Flow(name="careful", state=Routed, start="careful", nodes={"careful": careful},
                routes={"careful": END})  # fmt: skip
    error = Runner(flow, error_text=choice).start("c1").state.error
    assert error is not None and error.message == expected


def test_an_unknown_error_text_choice_is_refused() -> None:
    with pytest.raises(ValueError, match=r"error_text.*'masked'.*'raw'"):
        Runner(failing, error_text="plain")  # type: ignore[arg-type]


def test_cli_start_and_resume_of_a_failing_node_print_the_masked_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    leaky = f"{Path(__file__).parent.parent / 'flows' / 'leaky.py'}:flow"
    store = str(tmp_path / "store")
    for argv in (["start", leaky, "t1"], ["resume", "t1", "--flow", leaky]):
        assert main([*argv, "--store", store]) == 1
        captured = capsys.readouterr()
        assert f"ValueError: {MASKED}" in captured.err
        assert _leaks(captured.out + captured.err) == []


def test_the_cli_json_of_a_failed_run_holds_the_masked_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(tmp_path, failing)
    main(["show", "t1", "--json", "--store", str(tmp_path / "store")])
    shown = json.loads(capsys.readouterr().out)
    assert shown["error"]["message"] == MASKED


# -- the masker itself --------------------------------------------------------------------


def test_mask_text_masks_secret_looking_key_values_in_free_text() -> None:
    text = 'db password: hunter2; "client_secret": "a b", Token=xyz, tokens are fine'
    masked = 'db password: ***; "client_secret": ***, Token=***, tokens are fine'
    assert mask_text(text) == masked


@pytest.mark.timeout(30)
def test_mask_text_reads_long_key_like_text_in_linear_time() -> None:
    # Words are read once: a run of `-`-joined words or of keys without a value used to be
    # a classic way to make a key=value pattern retry from every character.
    for text in ("a-" * 300_000, "password=" * 100_000, "x_token" + "-a" * 300_000):
        assert mask_text(text).startswith(text[:2])


@given(st.text())
def test_mask_text_never_raises_and_masking_twice_changes_nothing(text: str) -> None:
    once = mask_text(text)
    assert mask_text(once) == once


@given(st.text(alphabet="ab@.-_ +=:\"'0123456789 apikeytoken()", max_size=60))
def test_mask_text_is_idempotent_on_text_made_of_what_it_masks(text: str) -> None:
    once = mask_text(text)
    assert mask_text(once) == once


# -- credential shapes (issue 23 item 17) ------------------------------------------------------

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n"
    "aFDrBz9vFqU4yQn9uwIDAQABAoIBAQCgZ2bR1gA5pNvDnX5Kb2Qk+Zs7D3H4eBmZ\n"
    "-----END RSA PRIVATE KEY-----"
)
#: (what the shape is, the text a node's exception carries, the secret parts to hide)
CREDENTIALS = [
    ("pem private key", f"cannot load key:\n{PEM}\nfrom disk",
     ["MIIEowIBAAKCAQEA0Z3VS5JJ", "aFDrBz9vFqU4yQn9", "-----END RSA"]),
    ("openssh key without its end", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA",
     ["b3BlbnNzaC1rZXktdjEAAAAA"]),
    ("aws access key id", "denied for AKIAIOSFODNN7EXAMPLE today", ["AKIAIOSFODNN7EXAMPLE"]),
    ("aws secret key, bare", "secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY rejected",
     ["wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"]),
    ("aws secret key, named", "AWS_SECRET_ACCESS_KEY=abc123def456 is wrong", ["abc123def456"]),
    ("github classic token", "bad credentials ghp_16C7e42F292c6912E7710c838347Ae178B4a",
     ["ghp_16C7e42F292c6912E7710c838347Ae178B4a"]),
    ("github oauth token", "token gho_16C7e42F292c6912E7710c838347Ae178B4a expired",
     ["gho_16C7e42F292c6912E7710c838347Ae178B4a"]),
    ("github fine-grained token",
     "push refused: github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCD",
     ["github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCD"]),
    ("slack bot token", "slack said invalid_auth for xoxb-1234567890-0987654321-AbCdEfGhIjKl",
     ["xoxb-1234567890-0987654321-AbCdEfGhIjKl"]),
    ("slack user token", "xoxp-1234567890-0987654321-1122334455-abcdef0123456789 revoked",
     ["xoxp-1234567890-0987654321-1122334455-abcdef0123456789"]),
    ("password in a url", "cannot reach postgresql://app:hunter2pw@localhost:5432/db",
     ["hunter2pw"]),
    ("password in an https url", "GET https://bob:s3cr%40t@example.com/x failed", ["s3cr%40t"]),
    ("second line of a key holding a newline",
     "api_key=first-half\nsecond-half-of-key\nwas rejected", ["first-half", "second-half-of-key"]),
    ("quoted key holding a newline", 'password: "line-one\nline-two" refused',
     ["line-one", "line-two"]),
]  # fmt: skip


def _raising(text: str) -> Flow:
    def leak(state: Any) -> dict[str, Any]:
        raise RuntimeError(text)

    return Flow(name="creds", state=Account, start="leak", nodes={"leak": leak},
                routes={"leak": END}, error_field=None)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "secrets"), [case[1:] for case in CREDENTIALS], ids=[case[0] for case in CREDENTIALS]
)
def test_common_credential_shapes_are_masked_in_state_journal_and_history(
    tmp_path: Path, text: str, secrets: list[str]
) -> None:
    runner, events = _run(tmp_path, _raising(text))
    error = runner.get_state("t1").error
    assert error is not None and "***" in error.message
    shown = [
        error.message,
        *(c.error.message for c in runner.history("t1") if c.error),
        *(e.error.message for e in events if isinstance(e, Failed)),
        _journal(tmp_path),
    ]
    assert [s for s in secrets if any(s in each for each in shown)] == []
    raw, _ = _run(tmp_path / "raw", _raising(text), error_text="raw")
    raw_error = raw.get_state("t1").error
    assert raw_error is not None and raw_error.message == text


def test_masking_credentials_keeps_the_text_around_them() -> None:
    assert mask_text("cannot reach postgresql://app:pw123@db/x") == (
        "cannot reach postgresql://app:***@db/x"
    )
    assert mask_text(f"load failed:\n{PEM}\nretry") == "load failed:\n***\nretry"
    # Things that only look a little like keys stay readable.
    for text in (
        "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904 not found",  # a git sha
        "see https://example.com/a:b/c@d for help",
        "api_key=abc\nThe next line is prose, not a key.",
    ):
        assert mask_text(text).startswith(text.split("=")[0][:10])
    assert mask_text("api_key=abc\nThe next line is prose, not a key.").endswith(
        "\nThe next line is prose, not a key."
    )
    assert "4b825dc642cb6eb9a060e54bf8d69288fbee4904" in mask_text(
        "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904 not found"
    )


@pytest.mark.timeout(30)
def test_credential_shapes_are_found_in_linear_time() -> None:
    for text in (
        "-----BEGIN PRIVATE KEY-----" * 50_000,
        "a.a" * 200_000 + "://",
        "x://" + "u:" * 200_000,
        "A" * 600_000,
        "api_key=x" + "\nabc" * 200_000,
    ):
        assert isinstance(mask_text(text), str)
