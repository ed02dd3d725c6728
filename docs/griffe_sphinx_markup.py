"""A griffe extension that lets the API reference render lingodoc's reST-flavoured docstrings.

lingodoc's docstrings are Google style, read in ``help()`` and IDEs as much as on the
site, so they use the reST markup those show well: roles such as :class:`Client` and
:meth:`close`, and ``::`` before an indented code block. Markdown (which mkdocstrings
renders) knows neither, so before the docstrings are parsed this extension:

* turns a role into inline code that links to the object when the API reference
  documents it (an *optional* autorefs cross-reference: no link, and no warning, when it
  does not): ``:meth:`close``` in ``Client`` links to ``lingodoc.Client.close``;
* turns ``text::`` followed by an indented block into ``text:`` and a fenced Python block.

mkdocs.yml loads it with the python handler's ``extensions`` option; it changes nothing in
the package itself.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(class|meth|func|attr|data|exc|mod|obj):`(~?)\.?([\w.]+)`")


def public_path(path: str) -> str:
    """Drop the private parts of ``path``: ``lingodoc._client.Client`` -> ``lingodoc.Client``.

    Args:
        path: A dotted path.

    Returns:
        The path as users import it.
    """
    return ".".join(part for part in path.split(".") if not part.startswith("_"))


def _scopes(obj: griffe.Object) -> tuple[str, str]:
    """Return the public paths of the class (or module) and the module enclosing ``obj``."""
    cls: griffe.Object | None = obj if obj.is_class else obj.parent
    if cls is not None and not cls.is_class:
        cls = None
    module = obj if obj.is_module else obj.module
    public_module = public_path(module.path)
    return (public_path(cls.path) if cls is not None else public_module), public_module


def _role(match: re.Match[str], obj: griffe.Object) -> str:
    role, short, target = match.groups()
    enclosing, module = _scopes(obj)
    if target.startswith("lingodoc"):
        identifier = target
    elif role in ("meth", "attr") and "." not in target:
        identifier = f"{enclosing}.{target}"
    else:
        identifier = f"{module}.{target}"
    shown = target.rsplit(".", 1)[-1] if short else target
    if role in ("meth", "func"):
        shown += "()"
    return f'<autoref identifier="{identifier}" optional><code>{shown}</code></autoref>'


def _literal_blocks(text: str) -> str:
    """Replace reST ``::`` literal blocks with fenced Python blocks."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.rstrip().endswith("::"):
            out.append(line)
            i += 1
            continue
        indent = len(line) - len(line.lstrip())
        head = line.rstrip()[:-2].rstrip()
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        block_start = j
        while j < len(lines) and (
            not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent
        ):
            j += 1
        while j > block_start and not lines[j - 1].strip():
            j -= 1
        if j == block_start:  # no indented block follows: leave the line alone
            out.append(line)
            i += 1
            continue
        if head.strip():
            out.append(head + ":")
        code = textwrap.dedent("\n".join(lines[block_start:j]))
        pad = " " * indent
        out.extend(["", pad + "```python"])
        out.extend(pad + code_line if code_line else "" for code_line in code.split("\n"))
        out.extend([pad + "```", ""])
        i = j
    return "\n".join(out)


def convert(text: str, obj: griffe.Object) -> str:
    """Return the docstring ``text`` of ``obj`` in the Markdown that mkdocstrings renders.

    Args:
        text: The docstring.
        obj: The object it documents, to resolve relative names such as ``:meth:`close```.

    Returns:
        The converted docstring.
    """
    return _ROLE.sub(lambda match: _role(match, obj), _literal_blocks(text))


class SphinxMarkup(griffe.Extension):
    """Convert the reST markup of every docstring as griffe loads it."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Convert the docstring of one object.

        Args:
            obj: The object griffe just loaded.
            **kwargs: The other arguments of the hook, unused.
        """
        if obj.docstring is not None:
            obj.docstring.value = convert(obj.docstring.value, obj)
