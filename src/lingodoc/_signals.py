"""Ctrl-C and SIGTERM held back around steps that must not be cut (``translate_many``, the CLI)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def ctrl_c_held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM back in the main thread until the block ends, where they land.

    A ``Thread.start`` it stops leaves a stray thread; a checkpoint it stops, a torn file.
    """
    main = threading.current_thread() is threading.main_thread()
    if not (main and hasattr(signal, "pthread_sigmask")):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
