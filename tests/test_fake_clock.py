"""lingodoc.testing.FakeClock: what it shows of itself."""

from __future__ import annotations

from lingodoc.testing import FakeClock


def test_repr_shows_the_time_and_the_sleeps() -> None:
    clock = FakeClock(start=0)
    assert repr(clock) == "FakeClock(monotonic=0.0, sleeps=[])"
    for seconds in (5, 5, 2.5):
        clock.sleep(seconds)
    clock.advance(1)  # moves the time, records no sleep
    assert repr(clock) == "FakeClock(monotonic=13.5, sleeps=[5.0, 5.0, 2.5])"


def test_repr_of_many_sleeps_shows_the_last_five_and_how_many_came_before() -> None:
    clock = FakeClock()
    for seconds in range(1, 13):
        clock.sleep(seconds)
    assert repr(clock) == (
        "FakeClock(monotonic=78.0, sleeps=[<7 earlier>, 8.0, 9.0, 10.0, 11.0, 12.0])"
    )
