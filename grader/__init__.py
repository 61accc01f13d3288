"""Grading tools for instructors, on nbgrader, in two rooms: engine/ executes and scores notebooks
(everything that can change a score, and so the rerun key); term/ is everything around it that
only reads scores (roster, collect, due dates and lateness, copies, reports, grade sheets,
feedback, the formgrader). The CLI (`python -m grader`), the course folder and the nbgrader
configuration are shared, here at the top."""

import sys

# nbformat imports jsonschema, which builds an IRI grammar at import time when rfc3987-syntax is
# installed (Jupyter's event schemas pull it in): most of a CPU second in every grader command
# and every grading job, for a format no notebook schema uses. Marked absent, it is skipped.
sys.modules.setdefault("rfc3987_syntax", None)
