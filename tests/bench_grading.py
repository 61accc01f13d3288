"""Autograde wall time for the fabricated test class with 2 workers, in the bubblewrap sandbox
and without it (the sandbox's cost), and each notebook's grading time. Figures only:

    python tests/bench_grading.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from test_grading import fabricate, release  # noqa: E402

from grader import collect  # noqa: E402
from grader.autograde import autograde  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        course, downloads = Path(tmp) / "course", Path(tmp) / "downloads"
        release(course)
        fabricate(course, downloads)
        collect.collect(downloads, course)
        seconds = {}
        for sandboxed in (True, False):
            start = time.perf_counter()
            outcomes = autograde(
                course, workers=2, cell_timeout=10, memory_gb=3, force=True, sandboxed=sandboxed
            )
            graded = sum(o.status == "graded" for o in outcomes)
            print(
                f"{'sandbox' if sandboxed else 'no sandbox'}, 2 workers: "
                f"{time.perf_counter() - start:.1f} s for {graded} notebooks "
                f"({len(outcomes) - graded} quarantined)"
            )
            seconds[sandboxed] = {
                o.assignment: o.seconds for o in outcomes if o.student == "perfect"
            }
        print(
            "grading time per notebook (student 'perfect': job wall time, kernel start included):"
        )
        print(f"  {'notebook':<16} {'sandbox':>8} {'none':>8}")
        for name, with_sandbox in seconds[True].items():
            print(f"  {name:<16} {with_sandbox:7.1f}s {seconds[False][name]:7.1f}s")


if __name__ == "__main__":
    main()
