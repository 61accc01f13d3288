"""nbgrader configuration of the Transformer Lab course (its folder: grader.course.COURSE).

The one place for the stubs and the cell timeout: the notebook build and autograde read them
from the loaded configuration (grader.course.nbgrader_config).
"""

import sys
from pathlib import Path

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)

c.CourseDirectory.course_id = "transformer-lab"
# One stub for both student flavours: the checkpoints turn it into "Exercise N is not done yet".
c.ClearSolutions.code_stub = {
    "python": '# TODO: your code here\nraise NotImplementedError("not done yet")'
}
c.ClearSolutions.text_stub = "_Your answer here._"
# Seconds a cell may run when graded: grading-mode cells take a few, a slow laptop ten times that.
c.Execute.timeout = 60
# Our classes by name, not as objects: the formgrader shows this configuration as JSON, and a
# class object in it makes it log "Formgrader config is not serializable".
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# Feedback shows each check's result and diagnosis, not the hidden tests' code.
c.GenerateFeedback.preprocessors = [
    "grader.engine.preprocessors.HideHiddenTests",
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
# Notebooks run only in the sandbox, through `python -m grader autograde`: nbgrader's own
# autograde (the formgrader's Autograde button) refuses with a message saying so.
c.Autograde.exporter_class = "grader.term.formgrader.SandboxOnly"
# `nbgrader export` writes what the grade sheet has: the notebooks that count, a quarantined or
# failed notebook with no score rather than 0, and a status column.
c.ExportApp.plugin_class = "grader.term.gradesheet.NbgraderCsv"
