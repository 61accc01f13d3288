"""Who a student id is, for the reports an instructor reads: the id (the folder in submitted/,
often an SIS number), then the name and the LMS login where the roster has them.

    S-1042 (Alice Liddell, alice)     on the roster with a name and a Canvas login
    dave                              handed something in, on no roster
"""

from __future__ import annotations

from .course_open import Course
from .roster import kept_rows


def _login(row: dict) -> str:
    return row.get("sis_login_id") or ""


def known(course: Course, gb) -> dict[str, str]:
    """student id -> "First Last, login", for those the gradebook (`gb`, the command's session;
    None where the course has none) or the roster names."""
    people: dict[str, tuple[str, str, str]] = {}
    for row in kept_rows(course):
        people[row["id"]] = (row.get("first_name") or "", row.get("last_name") or "", _login(row))
    for s in gb.students if gb is not None else []:
        # The formgrader may have changed a name since the roster.
        login = people.get(s.id, ("", "", ""))[2]
        people[s.id] = (s.first_name or "", s.last_name or "", login)
    said = {}
    for student, (first, last, login) in people.items():
        parts = [" ".join(p for p in (first, last) if p)]
        parts += [login] if login and login.casefold() != student.casefold() else []
        text = ", ".join(p for p in parts if p)
        if text:
            said[student] = text
    return said


def namer(course: Course, gb):
    """A function: student id -> "id (First Last, login)", or the id alone where no one is
    named."""
    said = known(course, gb)

    def who(student: str) -> str:
        return f"{student} ({said[student]})" if student in said else student

    return who
