"""Progress while waiting for a translation: a bar on a terminal, a line per change elsewhere."""

from __future__ import annotations

import time
from typing import IO, TYPE_CHECKING

from lingodoc.cli._visible import visible

if TYPE_CHECKING:
    import lingodoc


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def progress_bar(percent: int, state: str, elapsed: float, width: int = 20) -> str:
    """Render a line of the progress bar: ``[#########-----------]  45%  processing  12s``.

    Args:
        percent: The progress, clamped to 0..100.
        state: The translation's state.
        elapsed: Seconds since the wait began.
        width: Characters between the brackets.

    Returns:
        The line, without a line ending.
    """
    percent = min(100, max(0, percent))
    filled = percent * width // 100
    return f"[{'#' * filled}{'-' * (width - filled)}] {percent:>3}%  {state}  {_duration(elapsed)}"


class Progress:
    """Reports a wait on a stream: a bar redrawn in place, or a line per change.

    The CLI gives it stderr, so stdout holds only the result (clean JSON with ``--json``).
    """

    def __init__(self, stream: IO[str], *, bar: bool) -> None:
        self.stream, self.bar = stream, bar
        self.started = time.monotonic()
        self.last: tuple[str, int] | None = None
        self.drawn = 0  # length of the bar on screen; 0 if none

    def __call__(self, status: lingodoc.TranslationStatus) -> None:
        """Show a status read by ``wait_for_translation``."""
        state = (visible(status.status), status.progress)
        if self.bar:
            line = progress_bar(status.progress, state[0], time.monotonic() - self.started)
            # Padded to cover a longer line before it (a state's name can get shorter).
            self.stream.write("\r" + line.ljust(self.drawn))
            self.drawn = max(self.drawn, len(line))
        elif state != self.last:
            self.stream.write(f"{state[0]} {state[1]}%\n")
        self.last = state
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line, so that what follows starts on a line of its own."""
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = 0
