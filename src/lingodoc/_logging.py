"""The ``lingodoc`` logger, and ``LINGODOC_LOG`` for scripts without logging set up."""

from __future__ import annotations

import logging
import os
import sys

from lingodoc._constants import LOG_ENV

logger = logging.getLogger("lingodoc")

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO}


def configure_from_env() -> None:
    """Apply ``LINGODOC_LOG=debug|info``: the level, and a stderr handler if no logger has one."""
    level = _LEVELS.get(os.environ.get(LOG_ENV, "").strip().lower())
    if level is None:
        return
    logger.setLevel(level)
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
