"""A flow whose only node fails with an e-mail address, a phone number and a key in its message."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from flowkit import END, Flow

MESSAGE = "no account for taro@example.com, call 090-1234-5678, api_key=Zm9vYmFyYmF6cXV4"


class Account(BaseModel):
    user: str = ""


def lookup(state: Account) -> dict[str, Any]:
    raise ValueError(MESSAGE)


flow = Flow(name="accounts", state=Account, start="lookup", nodes={"lookup": lookup},
            routes={"lookup": END}, error_field=None)  # fmt: skip
