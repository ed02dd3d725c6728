"""The ``lingodoc`` logger, and ``LINGODOC_LOG`` for scripts without logging set up."""

from __future__ import annotations

import logging
import os
import sys

from lingodoc._constants import LOG_ENV

logger = logging.getLogger("lingodoc")

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO}


def configure_from_env() -> None:
    """Apply ``LINGODOC_LOG=debug|info``: set the level, and print to stderr if nothing else will.

    A handler is added only when neither the root logger nor ``lingodoc``
    has one, so an application's own logging set-up is never doubled.
    """
    level = _LEVELS.get(os.environ.get(LOG_ENV, "").strip().lower())
    if level is None:
        return
    logger.setLevel(level)
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
