"""Lateness from Canvas's downloads, as the instructor sees it: a class of six hands in 01, 02
and 04 on Canvas, Bob's 01 after its due date (Canvas names it LATE), Carol's 01 twice (a
first, untouched upload, then her solution); the instructor downloads each assignment's zip,
built as Canvas builds it (every entry the moment the zip was built: here 3 days after 04's
due date), and runs roster, collect, autograde (in the sandbox) and export through the CLI.
Figures only: for each notebook, the time collect took and where from, the lateness and score
autograde settled, and the grade sheet's status and score.

    python -m maintainer.lms_lateness [--checkout PATH]

--checkout runs the grader (and the release) of another tree, a `git archive` of an earlier
commit say, on the same downloads, for a before and after.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

from grader.course import Layout
from maintainer import corpus_or_exit
from maintainer.fabricated_class import ROOT, canvas_name, canvas_zip, perfect, release, untouched

ROSTER = """id,first_name,last_name,email,lms_user_id
alice,Alice,Archer,,101
bob,Bob,Stone,,102
carol,Carol,Reed,,103
dave,Dave,Kent,,104
erin,Erin,Hale,,105
frank,Frank,Moss,,106
"""
COURSE_TOML = """timezone = "UTC"
assigned = ["01_attention", "02_causal_mask", "04_training"]

[due]
01_attention = 2027-01-15T23:59:00+00:00
02_causal_mask = 2027-01-22T23:59:00+00:00
04_training = 2027-01-29T23:59:00+00:00

[late]
penalty = "percent_per_day"
percent_per_day = 10
"""
BUILT = datetime(2027, 2, 1, 12, 0)  # when the instructor downloaded: 3 days after 04 was due
NOTEBOOKS = ("01_attention", "02_causal_mask", "04_training")


def downloads(course: Path, folder: Path) -> list[Path]:
    """One Canvas zip per assignment, as Canvas builds it (fabricated_class.canvas_zip)."""
    students = [row.split(",") for row in ROSTER.splitlines()[1:]]
    zips, attachment = [], 9000
    for notebook in NOTEBOOKS:
        files = []
        for sid, first, last, _, user in students:
            sortable = f"{last}, {first}"
            if sid == "carol" and notebook == "01_attention":  # her first upload, untouched
                attachment += 1
                name = canvas_name(sortable, int(user), attachment, f"{notebook}.ipynb")
                files.append((name, json.dumps(untouched(course, notebook))))
                notebook_name = f"{notebook}-1.ipynb"  # Canvas's name for a second upload
            else:
                notebook_name = f"{notebook}.ipynb"
            attachment += 1
            late = sid == "bob" and notebook == "01_attention"
            name = canvas_name(sortable, int(user), attachment, notebook_name, late)
            files.append((name, json.dumps(perfect(course, notebook))))
        zips.append(canvas_zip(folder / f"lab-{notebook}_submissions.zip", files[::-1], BUILT))
    return zips


def grader(checkout: Path, course: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "grader", "--course", str(course), *args],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        sys.exit(f"grader {args[0]} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def handed_in(course: Path) -> dict:
    """(student, notebook) -> the 'handed in' cell of the file that counts, from the log."""
    out = {}
    for line in Layout(course).report("term_log.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 7 and cells[1] not in ("student", "–", "---") and "refused" != cells[5]:
            out[cells[1], cells[2]] = cells[3]
    return out


def _number(value) -> str:
    return "–" if value is None else f"{value:g}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=ROOT)
    checkout = parser.parse_args(argv).checkout.resolve()
    corpus_or_exit("python -m maintainer.lms_lateness")  # the grader's jobs read it
    home = Path(tempfile.mkdtemp(prefix="tl-lms-lateness-"))
    course = home / "course"
    if checkout == ROOT:
        release(course)
    else:  # that tree's release, so that its checks grade its own notebooks
        build = [sys.executable, "-m", "maintainer.notebook_build", "--no-workshop", "--course"]
        subprocess.run([*build, str(course)], cwd=checkout, check=True, capture_output=True)
    Layout(course).settings.write_text(COURSE_TOML)
    (home / "students.csv").write_text(ROSTER)
    grader(checkout, course, "roster", str(home / "students.csv"))
    for batch in downloads(course, home):
        print(grader(checkout, course, "collect", str(batch)).splitlines()[0])
    grader(checkout, course, "autograde", "--workers", "2")
    grader(checkout, course, "export")
    report = json.loads(Layout(course).report("autograde.json").read_text())["outcomes"]
    graded = {(o["student"], o["assignment"]): o for o in report}
    with Layout(course).report("gradesheet.csv").open() as f:
        sheet = {row["id"]: row for row in csv.DictReader(f)}
    times = handed_in(course)
    print(f"\ngrader of {checkout}; measured {datetime.now():%Y-%m-%d %H:%M} on {home}\n")
    print("| student | notebook | handed in (collect) | late | penalty | score | sheet |")
    print("|---|---|---|---:|---:|---:|---|")
    for key in sorted(graded, key=lambda k: (k[0], NOTEBOOKS.index(k[1]))):
        o, row = graded[key], sheet[key[0]]
        late = f"{o.get('seconds_late', 0) / 86400:.1f} d" if o.get("seconds_late") else "0"
        status = f"{row[f'{key[1]}_status']} {row[f'{key[1]}_score']}".strip()
        print(
            f"| {key[0]} | {key[1]} | {times.get(key, '?')} | {late} "
            f"| {o.get('late_penalty') or 0:g} | {_number(o['score'])} | {status} |"
        )


if __name__ == "__main__":
    main()
