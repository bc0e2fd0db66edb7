"""``redact``: a password in a PostgreSQL URL, or in a message holding one, never shows."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flowkit.cli import main
from flowkit.errors import StoreError
from flowkit.stores.postgres import PostgresStore
from flowkit.stores.postgres._driver import redact

# Anything but whitespace, which ends a URL inside a message; `@`, `:` and `/` included.
passwords = st.text(string.ascii_letters + string.digits + string.punctuation, min_size=1)
users = st.text(string.ascii_lowercase + string.digits + "_", max_size=12)
hosts = st.sampled_from(["127.0.0.1:5432", "db.example", "h1:5432,h2:5433", "[::1]:5432"])


@given(user=users, password=passwords, host=hosts)
def test_the_password_of_a_url_never_shows(user: str, password: str, host: str) -> None:
    url = f"postgresql://{user}:{password}@{host}/flows"
    assert redact(url) == f"postgresql://{user}:***@{host}/flows"
    message = f"PostgreSQL at {url} could not be reached: timeout. Check the server."
    assert redact(message) == message.replace(f":{password}@", ":***@")


@given(password=passwords.filter(lambda p: "&" not in p and "://" not in p))
def test_a_password_query_parameter_never_shows(password: str) -> None:
    url = f"postgres://app@db.example/flows?sslmode=require&password={password}&connect_timeout=3"
    assert redact(url) == (
        "postgres://app@db.example/flows?sslmode=require&password=***&connect_timeout=3"
    )


def test_a_url_without_a_password_is_left_alone() -> None:
    for url in ("postgresql://app@db/flows", "postgres://db:5432/flows", "postgresql:///flows"):
        assert redact(url) == url


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://app:s3cr%et@127.0.0.1:1/flows",  # a bad % escape: quoted whole
        "postgresql://app:hunter@2@127.0.0.1:1/flows",  # an unencoded @: its tail taken for a host
        "postgresql://app@127.0.0.1:1/flows?password=s3cr%et",
    ],
)
def test_a_driver_message_that_quotes_the_password_never_shows_it(url: str) -> None:
    """The masked URL was printed, and after it the driver's own words quoting the password
    (found by a defect hunt)."""
    with pytest.raises(StoreError) as caught:
        PostgresStore(url)
    message = str(caught.value)
    assert "s3cr" not in message and "hunter" not in message and "2@127" not in message
    assert "***" in message


def test_a_keyword_string_taken_for_a_folder_is_quoted_without_its_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    keywords = "host=127.0.0.1 port=1 user=app password=s3cret dbname=flows"
    assert main(["threads", "--store", keywords]) == 2
    err = capsys.readouterr().err
    assert "s3cret" not in err and "password=***" in err
