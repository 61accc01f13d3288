"""nbgrader configuration of the Transformer Lab course (grader/course is the course folder)."""

from transformer_lab.notebook_build import CODE_STUB, TEXT_STUB

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)

c.CourseDirectory.course_id = "transformer-lab"
# The same stubs as the workshop notebooks, so the checkpoints say "not done yet" in both.
c.ClearSolutions.code_stub = {"python": CODE_STUB}
c.ClearSolutions.text_stub = TEXT_STUB
