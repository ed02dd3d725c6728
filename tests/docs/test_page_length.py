"""The docs stay readable in an afternoon: word budgets for the user's pages and for each page.

Words are counted as ``wc -w`` counts them, in the raw Markdown, code included:
``ls docs/*.md | grep -vE '/(architecture|contributing|changelog)\\.md$' | xargs cat | wc -w``
for the user's pages. The contributor pages (architecture, contributing) and the changelog
(which includes CHANGELOG.md) are left out of that sum; every page is held to its own limit.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.md"))
NOT_THE_USERS = {"architecture.md", "contributing.md", "changelog.md"}
USER_PAGES_WORDS = 20_000
PAGE_WORDS = 3_000


def words(page: Path) -> int:
    """The words of ``page`` as ``wc -w`` counts them: runs of non-space characters."""
    return len(page.read_bytes().split())


def test_the_users_pages_hold_at_most_20000_words() -> None:
    counted = {page.name: words(page) for page in PAGES if page.name not in NOT_THE_USERS}
    assert "index.md" in counted
    assert sum(counted.values()) <= USER_PAGES_WORDS, sorted(counted.items(), key=lambda i: i[1])


def test_no_page_holds_more_than_3000_words() -> None:
    counted = {page.name: words(page) for page in PAGES}
    assert "contributing.md" in counted
    assert {name: n for name, n in counted.items() if n > PAGE_WORDS} == {}
