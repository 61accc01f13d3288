"""Autograde wall time for the fabricated test class, with 1 and with 2 workers, and each
notebook's grading time in grading mode. Figures only:

    python tests/bench_grading.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_grading import ROOT, fabricate  # noqa: E402

from grader import collect  # noqa: E402
from grader.autograde import autograde  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        course, downloads = Path(tmp) / "course", Path(tmp) / "downloads"
        grader = [sys.executable, "-m", "grader", "--course", str(course)]
        subprocess.run([*grader, "release"], check=True, cwd=ROOT, capture_output=True)
        fabricate(course, downloads)
        collect.collect(downloads, course)
        for workers in (1, 2):
            start = time.perf_counter()
            outcomes = autograde(course, workers=workers, cell_timeout=10, memory_gb=3, force=True)
            graded = sum(o.status == "graded" for o in outcomes)
            print(
                f"{workers} worker(s): {time.perf_counter() - start:.1f} s for {graded} notebooks "
                f"({len(outcomes) - graded} quarantined)"
            )
        print(
            "grading time per notebook (student 'perfect': job wall time, kernel start included):"
        )
        for o in outcomes:
            if o.student == "perfect":
                print(f"  {o.assignment:<16} {o.seconds:6.1f} s")


if __name__ == "__main__":
    main()
