"""Where one in-process ``Client.translate()`` spends its time, by pyinstrument.

The same set-up as bench_inprocess.py. Prints JSON with the profile as text (or a note that
pyinstrument is not installed: ``nox -s bench`` installs it).
"""

from __future__ import annotations

import argparse
import json

import httpx
from _common import BASE_URL, ENVELOPE, KEY, RESPONSE_HEADERS, TEXT, emit

import lingodoc


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args()
    try:
        from pyinstrument import Profiler
    except ImportError:
        emit({"skipped": "pyinstrument is not installed"})
        return
    body = json.dumps(ENVELOPE).encode()
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, headers=RESPONSE_HEADERS, content=body)
    )
    client = lingodoc.Client(KEY, base_url=BASE_URL, http_client=httpx.Client(transport=transport))
    for _ in range(500):
        client.translate(TEXT, source_language="en", target_language="de")
    profiler = Profiler(interval=0.0001)
    profiler.start()
    for _ in range(args.calls):
        client.translate(TEXT, source_language="en", target_language="de")
    profiler.stop()
    # lingodoc is installed as a library in the bench session: show its frames anyway.
    text = profiler.output_text(
        unicode=False,
        color=False,
        processor_options={"show_regex": r".*[/\\]lingodoc[/\\]", "filter_threshold": 0.01},
    )
    # Keep the call tree; drop pyinstrument's banner.
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if "Client.translate" in line), 0)
    emit({"calls": args.calls, "text": "\n".join(lines[start:]).rstrip()})


if __name__ == "__main__":
    main()
