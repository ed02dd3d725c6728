"""The endpoints: each checks its JSON body and answers from the emulator's state.

A handler takes the state, the path's parameters (percent-decoded) and the request's JSON
object, and returns the ``data`` of the success envelope, or raises `Fail` for an error
envelope. The router has already authenticated the request, counted it against the rate
limit and checked that its key may use the endpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lingodoc import _constants
from lingodoc.emulator._state import State, iso
from lingodoc.emulator._translate import SUPPORTED_LANGUAGES, translate_text

# lingodoc.emulator's names for limits the SDK shares with it; users import them from there.
MAX_TEXT_CHARS = _constants.MAX_TEXT_LENGTH
"""Longest text accepted by ``/translate`` and per item of ``/translate/batch``."""
MAX_BATCH_ITEMS = _constants.MAX_BATCH_ITEMS
"""Most texts accepted by one ``/translate/batch`` request."""

Handler = Callable[[State, list[str], dict[str, Any]], dict[str, Any]]


class Fail(Exception):
    """A refusal, answered with the error envelope.

    Args:
        status: The HTTP status.
        code: The envelope's ``error.code``, such as ``"VALIDATION_ERROR"``.
        message: The envelope's ``error.message``.
        headers: Response headers to add, such as ``Retry-After``.
    """

    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = headers or {}


def field(body: Mapping[str, Any], name: str, kind: type, *, required: bool = True) -> Any:
    """Return the body's field ``name`` if it is a ``kind`` (``None`` if absent and optional).

    Raises:
        Fail: A 400 ``VALIDATION_ERROR`` if it is missing and required, or of another type.
    """
    value = body.get(name)
    if value is None:
        if required:
            raise Fail(400, "VALIDATION_ERROR", f"Field '{name}' is required.")
        return None
    if not isinstance(value, kind):
        kinds = {str: "a string", list: "an array of strings", bool: "a boolean"}
        raise Fail(400, "VALIDATION_ERROR", f"Field '{name}' must be {kinds[kind]}.")
    return value


def language(body: Mapping[str, Any], name: str) -> str:
    """Return the body's language code ``name``.

    Raises:
        Fail: A 400 ``INVALID_LANGUAGE`` if the language is not supported, or as `field`.
    """
    code: str = field(body, name, str)
    if code not in SUPPORTED_LANGUAGES:
        raise Fail(
            400,
            "INVALID_LANGUAGE",
            f"Field '{name}': {code[:20]!r} is not a supported language.",
        )
    return code


def check_length(text: str, name: str) -> None:
    """Refuse a text longer than [`MAX_TEXT_CHARS`][lingodoc.emulator.MAX_TEXT_CHARS].

    Raises:
        Fail: A 400 ``TEXT_TOO_LONG``.
    """
    if len(text) > MAX_TEXT_CHARS:
        raise Fail(
            400,
            "TEXT_TOO_LONG",
            f"Field '{name}' has {len(text):,} characters; the limit is {MAX_TEXT_CHARS:,}.",
        )


def translate(state: State, params: list[str], body: dict[str, Any]) -> dict[str, Any]:
    """``POST /translate``: one text."""
    text: str = field(body, "text", str)
    source, target = language(body, "source_language"), language(body, "target_language")
    style: str | None = field(body, "style", str, required=False)
    check_length(text, "text")
    return {
        "translated_text": translate_text(text, source, target, style),
        "source_language": source,
        "target_language": target,
    }


def translate_batch(state: State, params: list[str], body: dict[str, Any]) -> dict[str, Any]:
    """``POST /translate/batch``: several texts in one request."""
    texts: list[Any] = field(body, "texts", list)
    source, target = language(body, "source_language"), language(body, "target_language")
    if not texts or len(texts) > MAX_BATCH_ITEMS:
        message = f"Field 'texts' must hold 1 to {MAX_BATCH_ITEMS} items, not {len(texts)}."
        raise Fail(400, "VALIDATION_ERROR", message)
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise Fail(400, "VALIDATION_ERROR", f"Field 'texts[{index}]' must be a string.")
        check_length(text, f"texts[{index}]")
    return {"translations": [translate_text(text, source, target) for text in texts]}


def translate_document(state: State, params: list[str], body: dict[str, Any]) -> dict[str, Any]:
    """``POST /documents/{document_id}/translate``: start a job."""
    document_id = params[0]
    if document_id not in state.documents:
        raise Fail(404, "NOT_FOUND", f"Document {document_id[:80]!r} not found.")
    target = language(body, "target_language")
    field(body, "style", str, required=False)
    field(body, "use_translation_memory", bool, required=False)
    job = state.start_job(document_id, target)
    return {
        "document_id": document_id,
        "translation_id": job.translation_id,
        "status": "pending" if job.queued else "processing",
        "estimated_completion": iso(job.finishes_at),
    }


def get_translation(state: State, params: list[str], body: dict[str, Any]) -> dict[str, Any]:
    """``GET /translations/{translation_id}``: a job's status."""
    job = state.jobs.get(params[0])
    if job is None:
        raise Fail(404, "NOT_FOUND", f"Translation {params[0][:80]!r} not found.")
    return job.view(state.now())


def list_documents(state: State, params: list[str], body: dict[str, Any]) -> dict[str, Any]:
    """``GET /documents``."""
    return {"documents": [dict(doc) for doc in state.documents.values()]}
