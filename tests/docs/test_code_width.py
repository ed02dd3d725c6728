"""No code block of the docs scrolls sideways at 1280 px: each line fits the page.

``python scripts/check_code_width.py SITE`` measures the built site in Chromium, at a
1280 px wide viewport: a code block holds 80 characters of a line on a page with its table
of contents, and 108 on a page that hides it (its front matter), as docs/examples.md and
docs/async-services.md do for the example files they include, formatted by ruff to 100
columns. This holds the Markdown to those numbers, without a browser:

* every line of a fenced block in docs/*.md and README.md, the ``<!-- output -->`` of a
  Python block included, is at most 80 characters (the README's on GitHub, whose column
  is wider);
* the example files (or their sections) a page includes (``--8<--``) are at most 100 on a
  page that hides its table of contents, as docs/examples.md does, and 80 elsewhere;
* what a ``console`` transcript shows a command printing is exempt: the tests compare it,
  exactly, with what the command prints (test_console_transcripts.py), and the site wraps
  it as a terminal would (docs/stylesheets/extra.css). A command itself is held to 80
  characters: a longer one goes on over ``> `` lines after a trailing backslash, as bash
  shows it;
* the lines of ``EXEMPT``, each for the reason it gives.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.test_doc_snippets import ALL_BLOCKS, ROOT, Block

FITS = 80  # characters, measured by scripts/check_code_width.py
EXAMPLE_FILES_FIT = 100  # ruff's line-length; examples.md holds 108
# Lines longer than FITS, and why each may be.
EXEMPT = {
    (
        "README.md",
        'python -m pip install "pip>=25.1" && python -m pip install -e . --group test'
        " && python -m pytest",
    ): ".ci/run runs the second line of the README's first block as it is: one command",
}


def output_lines(block: Block) -> set[int]:
    """The indices of the lines a console transcript shows a command printing."""
    printed: set[int] = set()
    continued = False
    for index, line in enumerate(block.code.splitlines()):
        command = line.startswith("$ ") or (continued and line.startswith("> "))
        continued = command and line.endswith("\\")
        if not command:
            printed.add(index)
    return printed


def hides_toc(page: Path) -> bool:
    """Whether the page's front matter hides its table of contents."""
    front_matter = re.match(r"---\n(.*?)\n---\n", page.read_text(encoding="utf-8"), re.S)
    hide = r"^hide:\n(\s+- \w+\n?)*\s+- toc$"
    return front_matter is not None and re.search(hide, front_matter.group(1), re.M) is not None


def too_long(block: Block) -> list[str]:
    """The lines of ``block``, and of the output it shows, longer than fits, not exempt."""
    limit = EXAMPLE_FILES_FIT if block.include and hides_toc(block.page) else FITS
    exempt = output_lines(block) if block.lang == "console" else set()
    lines = [line for index, line in enumerate(block.code.splitlines()) if index not in exempt]
    return [
        line
        for line in [*lines, *(block.output or "").splitlines()]
        if len(line) > limit and (block.page.name, line.strip()) not in EXEMPT
    ]


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=lambda block: block.name)
def test_code_block_lines_fit_the_page(block: Block) -> None:
    long = too_long(block)
    assert not long, f"{block.name}: {len(long)} lines over {FITS} characters: {long[0]!r}"


def test_the_exemptions_are_real() -> None:
    lines = {
        (block.page.name, line.strip()) for block in ALL_BLOCKS for line in block.code.split("\n")
    }
    assert set(EXEMPT) <= lines


def test_examples_md_and_async_services_md_hide_their_table_of_contents() -> None:
    # Without the table of contents, the pages are wide enough for the example files.
    assert hides_toc(ROOT / "docs" / "examples.md")
    assert hides_toc(ROOT / "docs" / "async-services.md")
    assert not hides_toc(ROOT / "docs" / "recipes.md")  # its example files fit 80 columns


def test_console_output_wraps_on_the_site() -> None:
    css = (ROOT / "docs" / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    assert re.search(r"\.language-console[^{]*\{[^}]*white-space:\s*pre-wrap", css)
    assert "stylesheets/extra.css" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_the_check_sees_long_lines_and_reads_transcripts() -> None:
    page = ROOT / "docs" / "cli.md"
    command = "$ lingodoc batch corpus.jsonl --to de -o corpus.de.jsonl \\"
    code = f"{command}\n>   --resume\n{'x' * 90}\n$ {'y' * 90}\n"
    block = Block(page, 1, "console", code, None)
    assert output_lines(block) == {2}
    assert too_long(block) == [f"$ {'y' * 90}"]
    assert too_long(Block(page, 1, "python", "x" * 81 + "\n", None)) == ["x" * 81]
    shown = Block(page, 1, "python", "print()\n", "run", output="z" * 81 + "\n")
    assert too_long(shown) == ["z" * 81]
    included = "x" * 100 + "\n"
    assert too_long(Block(page, 1, "python", included, None, include="a.py")) == ["x" * 100]
    wide = ROOT / "docs" / "examples.md"  # no table of contents
    assert not too_long(Block(wide, 1, "python", included, None, include="a.py"))
    assert isinstance(ROOT, Path)
