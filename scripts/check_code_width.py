"""Check, in a real browser, that no code block of the built docs scrolls sideways.

Usage::

    nox -s docs -- --site-dir /tmp/site
    python scripts/check_code_width.py /tmp/site [--width 1280] [--chromium /usr/bin/chromium]

It opens every page of the built site in headless Chromium (driven by the ``playwright``
package, ``pip install playwright``, on a Chromium of the machine's: no browser download) at
a viewport of ``--width`` pixels, and for each ``pre > code`` block compares its
``scrollWidth`` with its ``clientWidth``. It prints each block that scrolls, and how many
monospace characters fit in a line, which is the limit tests/docs/test_code_width.py holds
the Markdown to. Exit code 1 if any block scrolls. CI does not run it: it needs a browser.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

# Each block: its page, its width and what it holds; and how many characters fit a line.
MEASURE = """() => {
    // Open every collapsed block (the examples): measured as a reader who opens it sees it.
    document.querySelectorAll("details").forEach((details) => { details.open = true; });
    const blocks = [...document.querySelectorAll("pre > code")];
    if (!blocks.length) {
        return { fits: null, blocks: [] };
    }
    const probe = document.createElement("span");
    probe.textContent = "x".repeat(100);
    probe.style.whiteSpace = "pre";  // a console block wraps (docs/stylesheets/extra.css)
    blocks[0].appendChild(probe);
    const charWidth = probe.getBoundingClientRect().width / 100;
    probe.remove();
    const fits = (code) => {
        const style = getComputedStyle(code);
        const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
        return Math.floor((code.clientWidth - padding) / charWidth);
    };
    return {
        fits: fits(blocks[0]),
        blocks: blocks.map((code) => ({
            scroll: code.scrollWidth,
            client: code.clientWidth,
            longest: Math.max(...code.textContent.split("\\n").map((line) => line.length)),
            start: code.textContent.slice(0, 60),
        })),
    };
}"""


def main() -> int:
    """Measure every page; print the blocks that scroll; 1 if any does."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="the built site (mkdocs build --site-dir)")
    parser.add_argument("--width", type=int, default=1280, help="viewport width in pixels")
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="the browser to run")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright  # not a dependency of the project

    pages = sorted(args.site.glob("**/index.html"))
    if not pages:
        parser.error(f"no pages in {args.site}: build the site first")
    scrolling = 0
    fits: dict[int, list[str]] = {}
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as playwright:
        browser = playwright.chromium.launch_persistent_context(
            profile,
            executable_path=args.chromium,
            headless=True,
            viewport={"width": args.width, "height": 900},
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        page = browser.new_page()
        for path in pages:
            page.goto(path.resolve().as_uri())
            found = page.evaluate(MEASURE)
            name = path.parent.relative_to(args.site).as_posix()
            name = "(home)" if name == "." else name
            if found["fits"] is not None:
                fits.setdefault(found["fits"], []).append(name)
            for block in found["blocks"]:
                if block["scroll"] > block["client"]:
                    scrolling += 1
                    print(
                        f"{name}: {block['longest']} characters, {block['scroll']} px in "
                        f"{block['client']} px: {block['start']!r}"
                    )
        browser.close()
    print(f"{len(pages)} pages at {args.width} px; characters a line of code holds:")
    for count, names in sorted(fits.items()):
        print(f"  {count}: {', '.join(names)}")
    print(f"{scrolling} code blocks scroll sideways")
    return 1 if scrolling else 0


if __name__ == "__main__":
    sys.exit(main())
