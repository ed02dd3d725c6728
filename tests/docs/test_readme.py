"""The README is also the PyPI page: its links must work there, and it starts with `pip install`.

PyPI shows README.md with no repository around it, so a relative link (``docs/errors.md``)
leads nowhere; the README links to the documentation site instead, and each of those links
must name a page of docs/ (and a heading of it, for an anchor).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS_SITE = "https://lingodoc.github.io/lingodoc-python/"
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)|<(?P<bare>https?://[^>\s]+)>")


def links() -> list[str]:
    return [m["target"] or m["bare"] for m in LINK.finditer(README)]


def slug(heading: str) -> str:
    """The anchor mkdocs' toc extension gives a heading (its default slugify)."""
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"[-\s]+", "-", text)


def test_every_link_of_the_readme_is_absolute() -> None:
    relative = [t for t in links() if not t.startswith(("https://", "http://", "#"))]
    assert links()
    assert relative == []


@pytest.mark.parametrize("target", sorted({t for t in links() if t.startswith(DOCS_SITE)}))
def test_each_link_to_the_docs_site_names_a_page_and_heading_of_docs(target: str) -> None:
    path, _, anchor = target.removeprefix(DOCS_SITE).partition("#")
    page = ROOT / "docs" / (f"{path.strip('/')}.md" if path else "index.md")
    assert page.is_file(), f"{target}: no {page.relative_to(ROOT)}"
    if anchor:
        headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.MULTILINE)
        assert anchor in {slug(h) for h in headings}, f"{target}: no such heading"


def test_the_pypi_install_comes_before_the_checkout_commands() -> None:
    install = README.index("pip install lingodoc")
    first_shell_block = README.index("```shell")
    assert install < first_shell_block
    heading = README.rfind("\n## ", 0, first_shell_block)
    assert "checkout" in README[heading:first_shell_block].lower()


def test_the_first_snippet_needs_no_account_nor_environment() -> None:
    first = README.index("```python")
    assert "Emulator().client()" in README[first : README.index("```\n", first + 3)]
