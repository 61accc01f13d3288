"""nbgrader configuration of the Transformer Lab course (grader/course is the course folder)."""

import sys
from pathlib import Path

from transformer_lab.notebook_build import CODE_STUB, TEXT_STUB

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)

c.CourseDirectory.course_id = "transformer-lab"
# The same stubs as the workshop notebooks, so the checkpoints say "not done yet" in both.
c.ClearSolutions.code_stub = {"python": CODE_STUB}
c.ClearSolutions.text_stub = TEXT_STUB
# Cells run by nbgrader itself (validate, a plain `nbgrader autograde`) get grading-mode time.
c.Execute.timeout = 60
# Feedback shows each check's result and diagnosis, not the hidden tests' code.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from grader.preprocessors import HideHiddenTests  # noqa: E402

c.GenerateFeedback.preprocessors = [
    HideHiddenTests,
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
