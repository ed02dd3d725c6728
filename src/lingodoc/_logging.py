"""The ``lingodoc`` logger, and ``LINGODOC_LOG`` for scripts without logging set up."""

from __future__ import annotations

import logging
import os

from lingodoc._constants import LOG_ENV

logger = logging.getLogger("lingodoc")


def configure_from_env() -> None:
    """Apply ``LINGODOC_LOG=debug|info``: the level, and a stderr handler if no logger has one."""
    name = os.environ.get(LOG_ENV, "").strip().lower()
    if name not in ("debug", "info"):
        return
    logger.setLevel(name.upper())
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()  # to sys.stderr
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
