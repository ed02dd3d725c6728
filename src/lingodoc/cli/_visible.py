"""What a server sent, made safe to print on a terminal."""

from __future__ import annotations

import re

# C0 controls, DEL and C1 controls (ESC and CSI among them: clear-screen, OSC 52 clipboard
# writes, window titles), and lone surrogates, which no terminal encoding can print.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_CONTROLS_BUT_LAYOUT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(found: re.Match[str]) -> str:
    char = found.group()
    code = ord(char)
    return _SHORT.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def visible(value: object, *, layout: bool = False) -> str:
    r"""Return ``value`` as text with its control characters shown as escapes.

    Every piece of what a server sent goes through here before the command
    line prints it: a control character would otherwise act on the terminal
    (clear it, set its title, write to the clipboard) or forge lines of
    output. Each becomes the escape Python would write: ``\x1b``, ``\x9b``,
    ``\r``, ``\n``, ``\t``; a lone surrogate becomes ``\udc80``.

    Args:
        value: What to print (a string, an id, a state, a number).
        layout: Keep line breaks and tabs: for a translated text, whose lines
            and tabs are those of the text the user gave.

    Returns:
        The text, with no control character left but, with ``layout``, ``\n``
        and ``\t``.
    """
    pattern = _CONTROLS_BUT_LAYOUT if layout else _CONTROLS
    return pattern.sub(_escape, str(value))
