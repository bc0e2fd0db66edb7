"""pydantic's own words for a refusal, for tests that check flowkit passes them on: the words
change between pydantic releases, so tests ask pydantic for them instead of spelling them out."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError


def reason(model: type[BaseModel] | Any, data: object) -> str:
    """The message of the first error pydantic reports for ``data`` against ``model`` (a model
    class, or any type a ``TypeAdapter`` takes)."""
    try:
        if isinstance(model, type) and issubclass(model, BaseModel):
            model.model_validate(data)
        else:
            TypeAdapter(model).validate_python(data)
    except ValidationError as exc:
        return str(exc.errors()[0]["msg"])
    raise AssertionError(f"{data!r} is valid, so pydantic gives no reason")
