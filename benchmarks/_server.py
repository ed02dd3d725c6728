"""Serve an emulator on 127.0.0.1 for the benchmarks, until stdin closes or time runs out.

Prints one JSON line with ``base_url`` and ``api_key`` once it listens.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading

from lingodoc.emulator import Emulator


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate-limit", type=int, default=10**9)
    parser.add_argument("--max-seconds", type=float, default=900)
    args = parser.parse_args()
    emulator = Emulator(rate_limit=args.rate_limit, seed_documents=False)
    with emulator.serve("127.0.0.1", 0) as server:
        print(json.dumps({"base_url": server.base_url, "api_key": server.api_key}), flush=True)
        # Until the parent closes our stdin (or exits), or the time limit passes.
        watcher = threading.Thread(target=sys.stdin.read, daemon=True)
        watcher.start()
        watcher.join(timeout=args.max_seconds)


if __name__ == "__main__":
    main()
