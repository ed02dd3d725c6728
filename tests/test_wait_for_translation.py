"""get_translation and wait_for_translation: one poll, and every path of the poller.

The fake clock records each sleep and moves fake time, so intervals, timeouts
and rate-limit waits are checked exactly without really waiting.
"""

from __future__ import annotations

import inspect
import json
import time
from datetime import datetime, timezone
from typing import Any

import anyio
import anyio.lowlevel
import httpx
import pytest
import respx

import lingodoc
from lingodoc import _clock
from lingodoc.testing import FakeClock, fake_clock
from tests.conftest import (
    API_KEY,
    BASE_URL,
    call,
    cancelled_midway,
    close,
    envelope,
    failure,
    rate_limit_headers,
    running_tasks,
)

WHOLE_SECOND = 1_700_000_000.0
PATH = "/translations/tr_1"


def status(state: str, progress: int = 0, **extra: Any) -> dict[str, Any]:
    return {"translation_id": "tr_1", "status": state, "progress": progress, **extra}


def polled(*statuses: dict[str, Any] | httpx.Response) -> list[httpx.Response]:
    return [
        s if isinstance(s, httpx.Response) else httpx.Response(200, json=envelope(s))
        for s in statuses
    ]


def limited(reset: int = 30, **headers: str) -> httpx.Response:
    headers = {**rate_limit_headers(remaining=0, reset=reset), **headers}
    return httpx.Response(429, json=failure("RATE_LIMITED"), headers=headers)


COMPLETED = status(
    "completed", 100, document_id="doc_1", target_language="de", completed_at="2024-05-01T10:00:00Z"
)


# get_translation: one poll.


async def test_get_translation_reads_the_status(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.get("/translations/tr_1").respond(json=envelope(COMPLETED))
    status = await call(client, "get_translation", "tr_1")
    assert isinstance(status, lingodoc.TranslationStatus)
    assert status.status is lingodoc.TranslationState.COMPLETED
    assert (status.progress, status.document_id, status.target_language) == (100, "doc_1", "de")
    assert status.completed_at == datetime(2024, 5, 1, 10, 0, tzinfo=timezone.utc)
    assert route.calls.last.request.content == b""


async def test_timestamps_without_offset_are_read_as_utc(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.get("/translations/tr_1").respond(
        json=envelope(COMPLETED | {"completed_at": "2026-11-22T10:00:05"})
    )
    status = await call(client, "get_translation", "tr_1")
    assert status.completed_at.tzinfo is timezone.utc


async def test_unknown_fields_and_states_are_kept(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    api.get("/translations/tr_1").respond(
        json=envelope(COMPLETED | {"status": "queued", "priority": "high"})
    )
    status = await call(client, "get_translation", "tr_1")
    assert status.status == "queued"
    assert not isinstance(status.status, lingodoc.TranslationState)
    assert status.model_extra == {"priority": "high"}


async def test_many_different_ids_each_reach_their_own_url(
    client: lingodoc.Client, api: respx.MockRouter
) -> None:
    route = api.get(path__regex=r"/translations/(?P<tid>[^/]+)$").mock(
        side_effect=lambda request, tid: httpx.Response(
            200, json=envelope(status("processing", 5, translation_id=tid))
        )
    )
    for number in range(200):
        await call(client, "get_translation", f"tr_{number}")
        assert route.calls.last.request.url.path == f"/v1/translations/tr_{number}"


# wait_for_translation.


class Recorder:
    """An on_progress callback that records each status and the fake time it came at."""

    def __init__(self) -> None:
        self.statuses: list[lingodoc.TranslationStatus] = []
        self.times: list[float] = []

    def __call__(self, status: lingodoc.TranslationStatus) -> None:
        self.statuses.append(status)
        self.times.append(_clock.current().monotonic())

    @property
    def progress(self) -> list[int]:
        return [s.progress for s in self.statuses]


async def test_returns_the_completed_status_polling_every_5_seconds(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    route = api.get(PATH).mock(
        side_effect=polled(status("processing", 10), status("processing", 50), COMPLETED)
    )
    result = await call(client, "wait_for_translation", "tr_1")
    assert isinstance(result, lingodoc.TranslationStatus)
    assert (result.status, result.progress, result.document_id) == ("completed", 100, "doc_1")
    assert result.status is lingodoc.TranslationState.COMPLETED
    assert result.completed_at is not None
    assert result.completed_at.year == 2024
    assert len(route.calls) == 3
    assert clock.sleeps == [5.0, 5.0]


async def test_poll_interval_sets_the_time_between_polls(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    route = api.get(PATH).mock(
        side_effect=polled(status("pending"), status("processing"), COMPLETED)
    )
    await call(client, "wait_for_translation", "tr_1", poll_interval=2)
    assert len(route.calls) == 3
    assert clock.sleeps == [2.0, 2.0]


@pytest.mark.parametrize(
    "job_or_id",
    [
        lingodoc.TranslationJob.model_validate(
            {"document_id": "doc_1", "translation_id": "tr_1", "status": "processing"}
        ),
        "tr_1",
    ],
    ids=["job", "id"],
)
async def test_polls_at_once_for_a_job_or_an_id(
    client: Any, api: respx.MockRouter, clock: FakeClock, job_or_id: Any
) -> None:
    route = api.get(PATH).mock(side_effect=polled(COMPLETED))
    result = await call(client, "wait_for_translation", job_or_id)
    assert result.translation_id == "tr_1"
    assert len(route.calls) == 1
    assert clock.sleeps == []


async def test_failed_translation_raises_with_the_failed_status_and_stops_polling(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    failed = status("failed", 40, document_id="doc_1", target_language="de", reason="corrupt")
    route = api.get(PATH).mock(side_effect=polled(status("processing", 20), failed, COMPLETED))
    progress = Recorder()
    with pytest.raises(lingodoc.TranslationFailed) as info:
        await call(client, "wait_for_translation", "tr_1", on_progress=progress)
    last = info.value.status
    assert isinstance(last, lingodoc.TranslationStatus)
    assert last.status is lingodoc.TranslationState.FAILED
    assert (last.translation_id, last.progress, last.document_id) == ("tr_1", 40, "doc_1")
    assert (last.target_language, last.model_extra) == ("de", {"reason": "corrupt"})
    assert "tr_1" in str(info.value)
    assert len(route.calls) == 2
    assert clock.sleeps == [5.0]
    assert progress.progress == [20, 40]


async def test_timeout_raises_wait_timeout_after_a_last_poll_at_the_deadline(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    route = api.get(PATH).mock(
        side_effect=polled(*(status("processing", p) for p in (1, 2, 3, 4, 5)))
    )
    progress = Recorder()
    with pytest.raises(lingodoc.WaitTimeout) as info:
        await call(client, "wait_for_translation", "tr_1", timeout=12, on_progress=progress)
    assert clock.sleeps == [5.0, 5.0, 2.0]
    assert progress.times == [0.0, 5.0, 10.0, 12.0]
    assert len(route.calls) == 4
    assert info.value.timeout == 12
    assert info.value.status is not None
    assert info.value.status.progress == 4
    assert info.value.status.status is lingodoc.TranslationState.PROCESSING


async def test_timeout_zero_polls_once_then_raises(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    route = api.get(PATH).mock(side_effect=polled(status("pending", 0), COMPLETED))
    with pytest.raises(lingodoc.WaitTimeout) as info:
        await call(client, "wait_for_translation", "tr_1", timeout=0)
    assert (info.value.timeout, info.value.status.status) == (0, "pending")
    assert len(route.calls) == 1
    assert clock.sleeps == []


async def test_timeout_that_is_not_reached_returns_the_completed_status(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    api.get(PATH).mock(side_effect=polled(status("processing"), COMPLETED))
    result = await call(client, "wait_for_translation", "tr_1", timeout=6)
    assert result.progress == 100
    assert clock.sleeps == [5.0]


async def test_without_a_timeout_argument_the_wait_ends_after_ten_minutes(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    # A job that never completes must not hold a worker for good when the caller forgot
    # the argument: the default is a finite 600 seconds. (This one completes at 1,000 s,
    # so that a wait with no limit fails the test rather than hangs it.)
    route = api.get(PATH).mock(side_effect=polled(*[status("processing", 7)] * 200, COMPLETED))
    with pytest.raises(lingodoc.WaitTimeout) as info:
        await call(client, "wait_for_translation", "tr_1")
    assert info.value.timeout == 600
    assert info.value.status is not None
    assert info.value.status.progress == 7
    assert clock.sleeps == [5.0] * 120  # polls at 0, 5, ..., 600 s: the last at the deadline
    assert len(route.calls) == 121


async def test_timeout_none_waits_past_the_default_ten_minutes(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    route = api.get(PATH).mock(side_effect=polled(*[status("processing")] * 121, COMPLETED))
    result = await call(client, "wait_for_translation", "tr_1", timeout=None)
    assert result.status is lingodoc.TranslationState.COMPLETED
    assert clock.sleeps == [5.0] * 121  # completed at 605 s, one interval past 600
    assert len(route.calls) == 122


async def test_on_progress_sees_every_status_in_order(client: Any, api: respx.MockRouter) -> None:
    api.get(PATH).mock(
        side_effect=polled(
            status("pending", 0), status("processing", 10), status("processing", 50), COMPLETED
        )
    )
    progress = Recorder()
    result = await call(client, "wait_for_translation", "tr_1", on_progress=progress)
    assert progress.progress == [0, 10, 50, 100]
    assert [s.status for s in progress.statuses] == [
        "pending",
        "processing",
        "processing",
        "completed",
    ]
    assert progress.statuses[-1] == result
    assert progress.times == [0.0, 5.0, 10.0, 15.0]


# A 429 while polling is waited out: waiting is the poller's job.


@pytest.mark.parametrize("max_retries", [0, 2])
@pytest.mark.parametrize(
    ("response", "wait"),
    [(limited(reset=30), 30.0), (limited(reset=30, **{"Retry-After": "4"}), 4.0)],
    ids=["reset", "retry-after"],
)
async def test_rate_limit_while_polling_waits_for_the_reset_then_continues(
    client_class: Any, api: respx.MockRouter, clock: FakeClock,
    max_retries: int, response: httpx.Response, wait: float,
) -> None:  # fmt: skip
    client = client_class(API_KEY, base_url=BASE_URL, max_retries=max_retries)
    route = api.get(PATH).mock(side_effect=polled(status("processing", 10), response, COMPLETED))
    result = await call(client, "wait_for_translation", "tr_1")
    assert result.progress == 100
    assert len(route.calls) == 3
    assert clock.sleeps == [5.0, wait]
    await close(client)


@pytest.mark.parametrize("max_retries", [0, 2])
async def test_rate_limit_beyond_the_remaining_timeout_raises_wait_timeout(
    client_class: Any, api: respx.MockRouter, clock: FakeClock, max_retries: int
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL, max_retries=max_retries)
    route = api.get(PATH).mock(
        side_effect=polled(
            status("processing", 10), limited(30), limited(30), limited(30), COMPLETED
        )
    )
    with pytest.raises(lingodoc.WaitTimeout) as info:
        await call(client, "wait_for_translation", "tr_1", timeout=10)
    assert info.value.timeout == 10
    assert info.value.status is not None
    assert info.value.status.progress == 10
    assert clock.sleeps == [5.0]
    assert len(route.calls) == 2
    await close(client)


@pytest.mark.parametrize("max_retries", [0, 2])
async def test_rate_limit_reset_beyond_60_seconds_is_waited_out_without_a_timeout(
    client_class: Any, api: respx.MockRouter, clock: FakeClock, max_retries: int
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL, max_retries=max_retries)
    route = api.get(PATH).mock(side_effect=polled(limited(reset=3600), COMPLETED))
    result = await call(client, "wait_for_translation", "tr_1", timeout=None)
    assert result.progress == 100
    assert len(route.calls) == 2
    assert clock.sleeps == [3600.0]
    await close(client)


async def test_unknown_states_keep_polling_and_keep_the_raw_value(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    route = api.get(PATH).mock(
        side_effect=polled(status("queued"), status("scanning", 5), COMPLETED)
    )
    progress = Recorder()
    await call(client, "wait_for_translation", "tr_1", on_progress=progress)
    first = progress.statuses[0].status
    assert first == "queued"
    assert not isinstance(first, lingodoc.TranslationState)
    assert progress.statuses[1].status == "scanning"
    assert len(route.calls) == 3
    assert clock.sleeps == [5.0, 5.0]


async def test_a_state_unknown_on_three_polls_in_a_row_ends_the_wait_as_failed(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    # Without a timeout, a state such as "cancelled" would be polled for ever.
    route = api.get(PATH).mock(side_effect=polled(*[status("cancelled", 40)] * 3, COMPLETED))
    progress = Recorder()
    with pytest.raises(lingodoc.TranslationFailed) as info:
        await call(client, "wait_for_translation", "tr_1", timeout=None, on_progress=progress)
    assert info.value.status.status == "cancelled"
    assert info.value.status.progress == 40
    assert "'cancelled', which this version of lingodoc does not know" in str(info.value)
    assert "after 3 polls in a row" in str(info.value)
    assert len(route.calls) == 3
    assert clock.sleeps == [5.0, 5.0]
    assert progress.progress == [40, 40, 40]


async def test_a_known_state_between_unknown_ones_starts_the_count_again(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    route = api.get(PATH).mock(
        side_effect=polled(
            status("queued"), status("queued"), status("processing", 10),
            status("scanning", 20), status("scanning", 30), COMPLETED,
        )
    )  # fmt: skip
    result = await call(client, "wait_for_translation", "tr_1")
    assert result.progress == 100
    assert len(route.calls) == 6


async def test_an_unknown_state_that_echoes_the_key_is_masked_and_cut(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    api.get(PATH).mock(side_effect=polled(*[status(API_KEY + "x" * 100)] * 3))
    with pytest.raises(lingodoc.TranslationFailed) as info:
        await call(client, "wait_for_translation", "tr_1")
    assert API_KEY not in str(info.value)
    assert API_KEY not in str(info.value.status)
    assert "x" * 100 not in str(info.value)


@pytest.mark.parametrize("state", ["failed", "processing"])
async def test_a_status_nested_deeper_than_a_recursion_could_walk_ends_in_a_typed_error(
    client: Any, api: respx.MockRouter, clock: FakeClock, state: str
) -> None:
    # json reads a field nested 600 deep; the key echoed at its bottom is masked all the
    # same, and the wait ends in its own error (not a RecursionError from the masking).
    depth = 600
    details = "[" * depth + json.dumps(API_KEY) + "]" * depth
    data = f'{{"translation_id": "tr_1", "status": "{state}", "progress": 5, "details": {details}}}'
    body = f'{{"success": true, "data": {data}}}'.encode()
    api.get(PATH).mock(return_value=httpx.Response(200, content=body))
    expected = lingodoc.TranslationFailed if state == "failed" else lingodoc.WaitTimeout
    with pytest.raises(expected) as info:
        await call(client, "wait_for_translation", "tr_1", timeout=12)
    status = info.value.status
    assert status is not None
    assert status.status == state
    bottom = status.details  # type: ignore[attr-defined]
    for _ in range(depth):
        assert isinstance(bottom, list)
        assert len(bottom) == 1
        bottom = bottom[0]
    assert isinstance(bottom, str)
    assert API_KEY not in bottom
    assert API_KEY[-4:] in bottom  # masked, as every echo of the key is


async def test_a_key_echoed_as_the_name_of_a_field_of_a_status_is_masked(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    details = {"attempts": [{API_KEY: 1, "kept": "as sent"}], "reason": "quota"}
    api.get(PATH).mock(side_effect=polled(status("failed", details=details)))
    with pytest.raises(lingodoc.TranslationFailed) as info:
        await call(client, "wait_for_translation", "tr_1")
    masked = info.value.status.details  # type: ignore[union-attr]
    assert API_KEY not in json.dumps(masked)
    assert masked["reason"] == "quota"
    [attempt] = masked["attempts"]
    assert len(attempt) == 2
    assert attempt["kept"] == "as sent"
    assert [value for name, value in attempt.items() if API_KEY[-4:] in name] == [1]


@pytest.mark.parametrize("before", [0, 1])
async def test_other_errors_while_polling_propagate(
    client: Any, api: respx.MockRouter, clock: FakeClock, before: int
) -> None:
    not_found = httpx.Response(404, json=failure("NOT_FOUND", "no translation tr_1"))
    route = api.get(PATH).mock(
        side_effect=polled(*[status("processing")] * before, not_found, COMPLETED)
    )
    with pytest.raises(lingodoc.NotFound) as info:
        await call(client, "wait_for_translation", "tr_1")
    assert (info.value.status_code, info.value.code) == (404, "NOT_FOUND")
    assert len(route.calls) == before + 1
    assert clock.sleeps == [5.0] * before


def server_error() -> httpx.Response:
    return httpx.Response(503, json=failure("UNAVAILABLE"))


async def test_without_timeout_a_failure_that_outlasts_the_retries_propagates(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    route = api.get(PATH).mock(side_effect=polled(status("processing", 10), *[server_error()] * 3))
    with pytest.raises(lingodoc.ServerError):
        await call(client, "wait_for_translation", "tr_1", timeout=None)
    assert len(route.calls) == 4  # one poll, then three attempts at the next


async def test_with_timeout_transient_failures_are_ridden_out_until_completed(
    client_class: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL, max_retries=0)
    route = api.get(PATH).mock(
        side_effect=[
            *polled(status("processing", 10), server_error()),
            httpx.ConnectError("down"),
            *polled(COMPLETED),
        ]
    )
    result = await call(client, "wait_for_translation", "tr_1", timeout=60)
    assert result.progress == 100
    assert len(route.calls) == 4
    assert clock.sleeps == [5.0, 5.0, 5.0]
    await close(client)


async def test_a_failure_at_the_deadline_is_a_wait_timeout_with_the_last_status(
    client_class: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL, max_retries=0)
    api.get(PATH).mock(side_effect=polled(status("processing", 40), server_error()))
    with pytest.raises(lingodoc.WaitTimeout) as info:
        await call(client, "wait_for_translation", "tr_1", timeout=5)
    assert info.value.status is not None
    assert info.value.status.progress == 40
    assert isinstance(info.value.__cause__, lingodoc.ServerError)
    assert clock.sleeps == [5.0]
    await close(client)


@pytest.mark.parametrize(("reset", "wait"), [(0, 1.0), (10**8, 3600.0)])
async def test_a_rate_limit_wait_while_polling_is_at_least_a_second_and_at_most_an_hour(
    client_class: Any, api: respx.MockRouter, clock: FakeClock, reset: int, wait: float
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL, max_retries=0)
    api.get(PATH).mock(side_effect=polled(limited(reset=reset), COMPLETED))
    assert (await call(client, "wait_for_translation", "tr_1", timeout=None)).progress == 100
    assert clock.sleeps == [wait]
    await close(client)


NO_WAIT = {
    "reset-0": {"X-RateLimit-Reset": "0"},
    "reset-past": {"X-RateLimit-Reset": "1000000001"},  # a Unix time, in 2001
    "retry-after-0": {"Retry-After": "0"},
    "retry-after-0.001": {"Retry-After": "0.001"},
    "retry-after-negative": {"Retry-After": "-5"},
    "retry-after-past-date": {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"},
}


@pytest.mark.parametrize("headers", NO_WAIT.values(), ids=NO_WAIT.keys())
async def test_429s_without_a_wait_while_polling_back_off_more_each_time(
    client_class: Any, api: respx.MockRouter, clock: FakeClock, headers: dict[str, str]
) -> None:
    # A short poll interval must not turn 429s that ask for no wait into a tight loop.
    client = client_class(API_KEY, base_url=BASE_URL, max_retries=0)
    refusals = [limited(**headers) for _ in range(5)]  # the reset is 30 s unless replaced
    route = api.get(PATH).mock(side_effect=[*refusals, *polled(COMPLETED)])
    result = await call(client, "wait_for_translation", "tr_1", poll_interval=0.01)
    assert result.progress == 100
    assert len(route.calls) == 6
    # Exponential backoff with jitter: within [ceiling / 2, ceiling] for 0.5, 1, 2, 4, 8.
    assert len(clock.sleeps) == 5
    for wait, ceiling in zip(clock.sleeps, [0.5, 1.0, 2.0, 4.0, 8.0], strict=True):
        assert ceiling / 2 <= wait <= ceiling
    await close(client)


async def test_a_successful_poll_starts_the_429_backoff_again(
    client_class: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL, max_retries=0)
    api.get(PATH).mock(
        side_effect=[
            limited(reset=0), limited(reset=0), *polled(status("processing")),
            limited(reset=0), *polled(COMPLETED),
        ]
    )  # fmt: skip
    await call(client, "wait_for_translation", "tr_1", poll_interval=0.01)
    first, second, interval, again = clock.sleeps
    assert 0.25 <= first <= 0.5
    assert 0.5 <= second <= 1.0
    assert interval == 0.01
    assert 0.25 <= again <= 0.5
    await close(client)


# Each poll is cut to the time left before the wait's deadline.


class TimeoutsSeen:
    """A respx side effect: answers ``responses`` in turn, noting each request's timeouts."""

    def __init__(self, *responses: httpx.Response) -> None:
        self._responses = list(responses)
        self.read: list[float | None] = []
        self.connect: list[float | None] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions["timeout"]
        self.read.append(timeouts.get("read"))
        self.connect.append(timeouts["connect"])
        return self._responses.pop(0)


async def test_each_poll_is_cut_to_the_time_left_and_the_last_gets_a_second(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    seen = TimeoutsSeen(*polled(*(status("processing", p) for p in (1, 2, 3, 4))))
    api.get(PATH).mock(side_effect=seen)
    with pytest.raises(lingodoc.WaitTimeout):
        await call(client, "wait_for_translation", "tr_1", timeout=12)
    assert clock.sleeps == [5.0, 5.0, 2.0]
    # The client's timeout is 30 s. Polls at 0, 5 and 10 s get what is left of the 12 s;
    # the last one, at the deadline, gets a second for a last look.
    assert seen.read == [12.0, 7.0, 2.0, 1.0]
    assert seen.connect == [12.0, 7.0, 2.0, 1.0]


async def test_without_a_timeout_each_poll_has_the_clients_timeout(
    client_class: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    client = client_class(API_KEY, base_url=BASE_URL, timeout=httpx.Timeout(20, connect=3))
    seen = TimeoutsSeen(*polled(status("processing"), COMPLETED))
    api.get(PATH).mock(side_effect=seen)
    await call(client, "wait_for_translation", "tr_1", timeout=None)
    assert seen.read == [20.0, 20.0]
    assert seen.connect == [3.0, 3.0]
    await close(client)


async def test_a_wait_longer_than_python_can_wait_puts_no_deadline_on_the_polls(
    client_class: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    # A poll cut to 1e300 s left: a socket past its longest wait raises OverflowError.
    client = client_class(API_KEY, base_url=BASE_URL, timeout=httpx.Timeout(None))
    seen = TimeoutsSeen(*polled(status("processing"), COMPLETED))
    api.get(PATH).mock(side_effect=seen)
    await call(client, "wait_for_translation", "tr_1", timeout=1e300)
    assert (seen.read, seen.connect) == ([None, None], [None, None])
    await close(client)


async def test_a_poll_interval_longer_than_python_can_sleep_is_refused_before_any_request(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    route = api.get(PATH).mock(side_effect=polled(status("processing"), COMPLETED))
    with pytest.raises(lingodoc.InvalidArgument, match=r"^poll_interval must be a finite number"):
        await call(client, "wait_for_translation", "tr_1", poll_interval=1e300)
    assert not route.calls
    assert clock.sleeps == []


async def test_a_copy_with_a_timeout_bounds_each_poll_and_the_wait_keeps_its_own(
    client: Any, api: respx.MockRouter, clock: FakeClock
) -> None:
    seen = TimeoutsSeen(*polled(status("processing"), COMPLETED))
    api.get(PATH).mock(side_effect=seen)
    done = await call(client.with_options(timeout=4), "wait_for_translation", "tr_1", timeout=600)
    assert done.status == "completed"
    assert seen.read == [4.0, 4.0]  # not the 600 s of the whole wait, nor the client's 30 s
    assert clock.sleeps == [5.0]


# on_progress: a coroutine function is awaited by AsyncClient, refused by Client.


async def test_async_client_awaits_an_async_on_progress_after_every_poll(
    api: respx.MockRouter, clock: FakeClock
) -> None:
    api.get(PATH).mock(side_effect=polled(status("processing", 10), COMPLETED))
    seen: list[int] = []

    async def on_progress(status: lingodoc.TranslationStatus) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append(status.progress)

    class Callback:
        async def __call__(self, status: lingodoc.TranslationStatus) -> None:
            await anyio.lowlevel.checkpoint()
            seen.append(-status.progress)

    async with lingodoc.AsyncClient(API_KEY, base_url=BASE_URL) as client:
        result = await client.wait_for_translation("tr_1", on_progress=on_progress)
        assert result.progress == 100
        assert seen == [10, 100]
        api.get(PATH).mock(side_effect=polled(COMPLETED))
        await client.wait_for_translation("tr_1", on_progress=Callback())
        assert seen == [10, 100, -100]


async def test_client_refuses_an_async_on_progress_before_polling(
    api: respx.MockRouter, clock: FakeClock
) -> None:
    route = api.get(PATH).mock(side_effect=polled(COMPLETED))

    async def on_progress(status: lingodoc.TranslationStatus) -> None:
        pass

    class Callback:
        async def __call__(self, status: lingodoc.TranslationStatus) -> None:
            pass

    with lingodoc.Client(API_KEY, base_url=BASE_URL) as client:
        for callback in (on_progress, Callback()):
            with pytest.raises(TypeError, match="coroutine function"):
                client.wait_for_translation("tr_1", on_progress=callback)
    assert not route.calls


async def test_client_refuses_an_on_progress_that_returns_a_coroutine(
    api: respx.MockRouter, clock: FakeClock
) -> None:
    route = api.get(PATH).mock(side_effect=polled(status("processing"), COMPLETED))
    made: list[Any] = []

    async def report(status: lingodoc.TranslationStatus) -> None:
        pass

    def on_progress(status: lingodoc.TranslationStatus) -> Any:
        made.append(report(status))
        return made[-1]

    client = lingodoc.Client(API_KEY, base_url=BASE_URL)
    with pytest.raises(TypeError, match="returned a coroutine"):
        client.wait_for_translation("tr_1", on_progress=on_progress)
    client.close()
    assert len(route.calls) == 1
    assert inspect.getcoroutinestate(made[0]) == inspect.CORO_CLOSED  # no "never awaited"


@pytest.mark.parametrize(
    ("job_or_id", "kwargs", "raised"),
    [
        ("tr_1", {"poll_interval": 0}, ValueError),
        ("tr_1", {"poll_interval": -1}, ValueError),
        ("tr_1", {"poll_interval": float("nan")}, ValueError),
        ("tr_1", {"timeout": -1}, ValueError),
        ("tr_1", {"timeout": float("nan")}, ValueError),
        ("", {}, ValueError),
        ("tr_1", {"on_progress": "print"}, TypeError),
        (42, {}, TypeError),
    ],
    ids=["interval-0", "interval-negative", "interval-nan", "timeout-negative", "timeout-nan",
         "empty-id", "on-progress-not-callable", "id-not-str"],
)  # fmt: skip
async def test_invalid_arguments_are_refused_before_any_request(
    client: Any, api: respx.MockRouter, clock: FakeClock, job_or_id: Any, kwargs: Any, raised: type
) -> None:
    route = api.get(PATH).mock(side_effect=polled(COMPLETED))
    with pytest.raises(raised):
        await call(client, "wait_for_translation", job_or_id, **kwargs)
    assert not route.calls
    assert not api.calls
    assert clock.sleeps == []


async def test_poller_sleeps_only_through_lingodoc_clock(
    client: Any, api: respx.MockRouter, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    import trio

    def no_sleep(seconds: float) -> None:
        raise AssertionError(f"really slept {seconds} s")

    async def no_async_sleep(seconds: float, *args: Any) -> Any:
        no_sleep(seconds)

    monkeypatch.setattr(time, "sleep", no_sleep)
    # The fake clock yields with anyio's checkpoint: none of these may be called.
    for library in (anyio, asyncio, trio):
        monkeypatch.setattr(library, "sleep", no_async_sleep)
    monkeypatch.setattr(_clock.SystemClock, "sleep", lambda self, s: no_sleep(s))
    api.get(PATH).mock(side_effect=polled(status("processing"), limited(reset=20), COMPLETED))
    result = await call(client, "wait_for_translation", "tr_1", poll_interval=3)
    assert result.progress == 100
    assert clock.sleeps == [3.0, 20.0]
    assert clock.monotonic() == 23.0


# Async only: cancelling the wait.


class BlockingClock(FakeClock):
    """A fake clock whose async sleeps never end, so a wait can be cancelled mid-sleep."""

    def __init__(self) -> None:
        super().__init__(start=WHOLE_SECOND)
        self.sleeping = anyio.Event()

    async def async_sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.sleeping.set()
        await anyio.Event().wait()


async def test_cancelling_the_wait_between_polls_leaves_the_client_usable(
    api: respx.MockRouter,
) -> None:
    route = api.get(PATH).mock(side_effect=polled(status("processing", 10), COMPLETED))
    client = lingodoc.AsyncClient(API_KEY, base_url=BASE_URL)
    tasks = running_tasks()
    with fake_clock(BlockingClock()) as blocking:
        await cancelled_midway(lambda: client.wait_for_translation("tr_1"), blocking.sleeping)
        assert len(route.calls) == 1
        assert running_tasks() == tasks
        assert blocking.sleeps == [5.0]
        assert (await client.get_translation("tr_1")).progress == 100
        assert len(route.calls) == 2
    await client.aclose()
    assert client.is_closed
    assert running_tasks() == tasks


async def test_cancelling_the_wait_during_a_poll_leaves_the_client_usable(
    api: respx.MockRouter, clock: FakeClock
) -> None:
    in_flight, seen = anyio.Event(), []

    async def first_hangs(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) == 1:
            in_flight.set()
            await anyio.Event().wait()
        return polled(COMPLETED)[0]

    api.get(PATH).mock(side_effect=first_hangs)
    tasks = running_tasks()
    async with lingodoc.AsyncClient(API_KEY, base_url=BASE_URL) as client:
        await cancelled_midway(lambda: client.wait_for_translation("tr_1"), in_flight)
        assert running_tasks() == tasks
        assert clock.sleeps == []
        assert (await client.wait_for_translation("tr_1")).progress == 100
        assert len(seen) == 2
    assert client.is_closed
