"""Two nbgrader preprocessors that change what stock nbgrader does with our notebooks.

StderrIsNotFailure  (before SaveAutoGrades) a warning printed to stderr by a check that
                    passed no longer scores 0; a check that raised still does.
HideHiddenTests     (in generate_feedback) the hidden tests' code and the traceback lines that
                    quote it are left out; each check keeps its result and its diagnosis.
"""

from __future__ import annotations

import re

from nbconvert.preprocessors import Preprocessor
from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests

ANSI = re.compile(r"\x1b\[[0-9;]*m")


class StderrIsNotFailure(Preprocessor):
    def preprocess_cell(self, cell: NotebookNode, resources, index):
        if utils.is_grade(cell) and cell.cell_type == "code":
            outputs = cell.get("outputs", [])
            if not any(o.output_type == "error" for o in outputs):
                for output in outputs:
                    if output.output_type == "stream" and output.name == "stderr":
                        output.name = "stdout"
                        output.text = "".join(
                            f"[stderr] {line}" for line in output.text.splitlines(True)
                        )
        return cell, resources


class HideHiddenTests(ClearHiddenTests):
    """nbgrader's own hidden-test remover, applied to the graded copy, plus short errors."""

    enforce_metadata = False

    def preprocess_cell(self, cell: NotebookNode, resources, index):
        cell, resources = super().preprocess_cell(cell, resources, index)
        if utils.is_grade(cell) and cell.cell_type == "code":
            for output in cell.get("outputs", []):
                if output.output_type == "error":
                    # The traceback quotes the cell's lines, hidden ones included: keep the
                    # diagnosis (the error's name and message) only.
                    output.traceback = [f"{output.ename}: {ANSI.sub('', output.evalue)}"]
        return cell, resources
