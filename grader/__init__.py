"""Grading tools for instructors: release, collect, autograde, feedback, export (nbgrader)."""

import sys

# nbformat imports jsonschema, which builds an IRI grammar at import time when rfc3987-syntax is
# installed (Jupyter's event schemas pull it in): most of a CPU second in every grader command
# and every grading job, for a format no notebook schema uses. Marked absent, it is skipped.
sys.modules.setdefault("rfc3987_syntax", None)
