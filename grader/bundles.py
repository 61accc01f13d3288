"""Each student's feedback in one zip, for an LMS's bulk upload (`make feedback` writes them):

    reports/feedback_bundles/STUDENT_feedback.zip     NN_topic.html for each graded notebook

An LMS's bulk upload of feedback files matches a file to a student by the start of its name, so
each name starts with the student's id on the roster (the name the LMS knows the student by,
where the roster came from the LMS's export). The bundles are rebuilt from feedback/ each time:
a student's zip holds that student's files and nobody else's.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

SUFFIX = "_feedback.zip"


def bundle_name(student: str) -> str:
    return f"{student}{SUFFIX}"


def bundle_feedback(course: Path) -> list[Path]:
    """One zip per student with feedback in feedback/; returns their paths."""
    course = Path(course)
    folder = course / "reports" / "feedback_bundles"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob(f"*{SUFFIX}"):  # a student whose feedback is gone keeps no stale zip
        old.unlink()
    written = []
    for student in sorted(p for p in (course / "feedback").glob("*") if p.is_dir()):
        pages = sorted(student.glob("*/*.html"))
        if not pages:
            continue
        target = folder / bundle_name(student.name)
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
            for page in pages:
                # Flat: one page per notebook, named for it, is what a student opens.
                archive.write(page, arcname=page.name)
        written.append(target)
    return written
