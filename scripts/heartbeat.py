#!/usr/bin/env python3
"""Keep a long, verbose command readable: ``cmd 2>&1 | python scripts/heartbeat.py LOG LABEL``.

Writes everything to LOG, and every ``--every`` seconds (default 30) prints one line to stdout
with the elapsed time and the latest thing the command said, so a minutes-long build is never
silent. On end of input prints the total time; the caller prints the log's tail on failure.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", help="file that receives the whole output")
    ap.add_argument("label", help="what is running, e.g. 'building llama-cpp-python'")
    ap.add_argument("--every", type=float, default=30.0, help="seconds between lines")
    args = ap.parse_args(argv)
    started = time.monotonic()
    latest = [""]
    done = threading.Event()

    def beat() -> None:
        while not done.wait(args.every):
            said = latest[0].strip()[:100]
            elapsed = time.monotonic() - started
            print(f"  {args.label}: {elapsed:.0f} s ... {said}", flush=True)

    threading.Thread(target=beat, daemon=True).start()
    with open(args.log, "w", encoding="utf-8", errors="replace") as log:
        for line in sys.stdin:
            log.write(line)
            if line.strip():
                latest[0] = line
    done.set()
    print(f"  {args.label}: finished in {time.monotonic() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
