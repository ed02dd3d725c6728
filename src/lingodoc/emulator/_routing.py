"""The one path every request takes, from (method, target, headers, body) to a `Reply`.

[`Emulator.handle`][lingodoc.emulator.Emulator.handle] (which the in-process transport
calls) and the HTTP server both answer with `Router.handle`, so the two faces cannot
answer differently. They only move bytes and carry out the two faults that are about the
connection rather than the answer: dropping it and answering late.
"""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from lingodoc.emulator._handlers import (
    Fail,
    Handler,
    get_translation,
    list_documents,
    translate,
    translate_batch,
    translate_document,
)
from lingodoc.emulator._state import (
    SERVER_ERRORS,
    Fault,
    Key,
    RequestRecord,
    State,
    count,
    iso,
    mask,
)

MAX_BODY_BYTES = 16 * 1024 * 1024
"""Longest request body, in bytes (16 MiB): a longer one is answered 413 ``REQUEST_TOO_LARGE``.

Well above the longest valid request: a batch of ``MAX_BATCH_ITEMS`` texts of
``MAX_TEXT_CHARS`` characters, each escaped in JSON as its longest (a character outside the
Basic Multilingual Plane as ``\\ud83d\\ude00``, 12 bytes), is some 12 MB.
"""
BODY_TOO_LARGE = f"The request body is over the limit of {MAX_BODY_BYTES:,} bytes (16 MiB)."


@dataclass(frozen=True)
class Reply:
    """The answer of [`Emulator.handle`][lingodoc.emulator.Emulator.handle], for a face to send.

    Attributes:
        status: The HTTP status (0 when the connection is to be dropped).
        headers: The response headers, without ``Content-Length``.
        body: The JSON body.
        delay: Seconds to wait before answering (a ``slow`` fault, ``--latency``).
        disconnect: Whether to drop the connection without answering instead.
    """

    status: int
    headers: dict[str, str]
    body: bytes
    delay: float = 0.0
    disconnect: bool = False


class Answers(Protocol):
    """What the faces (the HTTP server, the in-process transport) hand requests to."""

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """Answer one request, as [`Emulator.handle`][lingodoc.emulator.Emulator.handle] does."""
        ...


# (path segments after /v1 with None for a parameter, method, handler, starts a translation)
ROUTES: tuple[tuple[tuple[str | None, ...], str, Handler, bool], ...] = (
    (("translate",), "POST", translate, True),
    (("translate", "batch"), "POST", translate_batch, True),
    (("documents",), "GET", list_documents, False),
    (("documents", None, "translate"), "POST", translate_document, True),
    (("translations", None), "GET", get_translation, False),
)


class Router:
    """Answers requests from a state, one at a time: each holds the state's lock throughout.

    Args:
        state: The state to answer from, and to record the requests in.
    """

    def __init__(self, state: State) -> None:
        self.state = state

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """Answer one request; [`Emulator.handle`][lingodoc.emulator.Emulator.handle] documents it.

        It is recorded in the state's log, and raises nothing: an emulator bug is a 500.
        """
        if len(body) > MAX_BODY_BYTES:  # as the server refuses it, before reading it all
            return self.error_reply(413, "REQUEST_TOO_LARGE", BODY_TOO_LARGE)
        # An absolute-form target (http://host/v1/...) is reduced to its path.
        path = target.split("?", 1)[0] if target.startswith("/") else urlsplit(target).path
        method, headers = method.upper(), {name.lower(): value for name, value in headers.items()}
        with self.state.lock:
            try:
                reply = self._answer(method, path, headers, body)
            except Exception as exc:  # an emulator bug must not take the server down
                reply = self._reply(500, _error("INTERNAL_ERROR", f"Emulator error: {exc!r}"), None)
            self.state.log.append(
                RequestRecord(method, path, None if reply.disconnect else reply.status)
            )
        return reply

    def error_reply(self, status: int, code: str, message: str) -> Reply:
        """Answer, in the error envelope, a request that cannot even be read.

        Such as one whose body's end is unknown, which the server refuses before
        [`handle`][lingodoc.emulator.Emulator.handle] could see it. It is not recorded.

        Args:
            status: The HTTP status.
            code: The envelope's ``error.code``.
            message: The envelope's ``error.message``.

        Returns:
            The answer, with the rate-limit headers of a fresh window.
        """
        with self.state.lock:
            return self._reply(status, _error(code, message), None)

    def _answer(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        relative = path[3:] if path == "/v1" or path.startswith("/v1/") else None
        fault = self.state.take_fault(method, relative if relative is not None else path)
        if fault is not None and fault.kind == "disconnect":
            return Reply(0, {}, b"", disconnect=True)
        key: Key | None = None
        try:
            if fault is not None and fault.kind in ("rate_limit", "server_error"):
                # The key, if valid, only fills in the rate-limit headers of the answer.
                with suppress(Fail):
                    key = self._authenticate(headers)
                raise self._fault_error(fault)
            key = self._authenticate(headers)
            self._count(key)
            handler, params, writes = route(method, relative)
            if writes and key.permission == "read_only":
                raise Fail(
                    401,
                    "UNAUTHORIZED",
                    f"API key '{key.name}' has Read Only permission, which cannot start "
                    "translations; use a Read & Write or Full Access key.",
                )
            payload = parse_body(headers, body) if method == "POST" else {}
            data = handler(self.state, params, payload)
            reply = self._reply(200, {"success": True, "data": data}, key)
        except Fail as fail:
            reply = self._reply(fail.status, _error(fail.code, fail.message), key, fail.headers)
        slow = fault.delay if fault is not None and fault.kind == "slow" else 0.0
        return replace(reply, delay=slow + self.state.latency)

    def _reply(
        self,
        status: int,
        content: dict[str, Any],
        key: Key | None,
        extra: dict[str, str] | None = None,
    ) -> Reply:
        remaining, reset = self.state.window(key)
        headers = {
            "Content-Type": "application/json",
            "X-Request-Id": "req_" + secrets.token_hex(12),
            "X-RateLimit-Limit": str(self.state.settings.rate_limit),
            "X-RateLimit-Remaining": str(remaining),
            "X-RateLimit-Reset": self._reset_header(reset),
            **(extra or {}),
        }
        return Reply(status, headers, json.dumps(content).encode())

    def _reset_header(self, seconds: int) -> str:
        unix = self.state.settings.reset_style == "unix"
        return str(math.ceil(self.state.now()) + seconds if unix else seconds)

    def _count(self, key: Key) -> None:
        wait = self.state.spend(key)
        if wait is not None:
            limit = self.state.settings.rate_limit
            raise Fail(
                429,
                "RATE_LIMITED",
                f"Rate limit of {count(limit, 'request')} per hour reached; retry in {wait} s.",
                {"Retry-After": str(wait)},
            )

    def _fault_error(self, fault: Fault) -> Fail:
        if fault.kind == "rate_limit":
            headers = {
                "Retry-After": str(fault.retry_after),
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset": self._reset_header(fault.retry_after),
            }
            message = f"Rate limit reached (injected); retry in {fault.retry_after} s."
            return Fail(429, "RATE_LIMITED", message, headers)
        code = SERVER_ERRORS[fault.status]
        return Fail(fault.status, code, f"Injected server error ({fault.status}).")

    def _authenticate(self, headers: Mapping[str, str]) -> Key:
        header = headers.get("authorization")
        if header is None:
            message = "Missing Authorization header; send 'Authorization: Bearer <API key>'."
            raise Fail(401, "UNAUTHORIZED", message)
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            message = "Malformed Authorization header; expected 'Bearer <API key>'."
            raise Fail(401, "UNAUTHORIZED", message)
        key = self.state.keys.get(token)
        if key is None:
            raise Fail(401, "UNAUTHORIZED", f"Invalid API key{mask(token)}: it does not exist.")
        if key.revoked:
            raise Fail(401, "UNAUTHORIZED", f"API key '{key.name}' has been revoked.")
        if key.expires_at is not None and self.state.now() >= key.expires_at:
            message = f"API key '{key.name}' expired at {iso(key.expires_at)}."
            raise Fail(401, "UNAUTHORIZED", message)
        return key


def route(method: str, relative: str | None) -> tuple[Handler, list[str], bool]:
    """Find the endpoint of a request.

    Args:
        method: The request's method, upper-case (``HEAD`` is served as ``GET``).
        relative: Its path after ``/v1``, percent-encoded; ``None`` if it is not under ``/v1``.

    Returns:
        The handler, the path's parameters (percent-decoded), and whether it starts a
        translation (which a Read Only key may not).

    Raises:
        Fail: A 404 ``NOT_FOUND`` for no endpoint, or a 405 ``METHOD_NOT_ALLOWED`` with
            ``Allow`` for one that takes other methods.
    """
    if relative is None:
        raise Fail(404, "NOT_FOUND", "Not found: every endpoint is under /v1.")
    segments = [unquote(part) for part in relative.split("/")[1:]]
    if len(segments) > 1 and not segments[-1]:
        segments.pop()  # a trailing slash is harmless
    allowed = []
    for pattern, route_method, handler, writes in ROUTES:
        if len(pattern) != len(segments):
            continue
        if any(
            part is not None and part != seg for part, seg in zip(pattern, segments, strict=True)
        ):
            continue
        if route_method == method or (method, route_method) == ("HEAD", "GET"):
            params = [seg for part, seg in zip(pattern, segments, strict=True) if part is None]
            return handler, params, writes
        allowed.append(route_method)
    if allowed:
        raise Fail(
            405,
            "METHOD_NOT_ALLOWED",
            f"Method {method} is not allowed here; use {', '.join(allowed)}.",
            {"Allow": ", ".join(allowed)},
        )
    raise Fail(404, "NOT_FOUND", f"No endpoint at /v1{relative[:100]}.")


def parse_body(headers: Mapping[str, str], body: bytes) -> dict[str, Any]:
    """Read a request's JSON object.

    Args:
        headers: The request headers, names in lower case.
        body: The request body.

    Returns:
        The object.

    Raises:
        Fail: A 400 ``VALIDATION_ERROR`` for another content type, JSON that does not parse
            (or nests too deep), or JSON that is not an object.
    """
    content_type = headers.get("content-type", "").split(";")[0].strip().lower()
    if body and content_type != "application/json":
        message = f"Content-Type must be application/json, not {content_type[:40]!r}."
        raise Fail(400, "VALIDATION_ERROR", message)
    try:
        payload = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # also too deep, or a number too long
        message = f"The request body is not valid JSON: {str(exc)[:200]}."
        raise Fail(400, "VALIDATION_ERROR", message) from None
    if not isinstance(payload, dict):
        raise Fail(400, "VALIDATION_ERROR", "The request body must be a JSON object.")
    return payload


def _error(code: str, message: str) -> dict[str, Any]:
    return {"success": False, "error": {"code": code, "message": message}}
