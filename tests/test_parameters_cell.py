"""Every solution's parameters cell (tagged "parameters", where papermill injects MODE and the
rest) reads cleanly in papermill's own parser: each line one name, one `=`, its comment the help.
A second `=` in a comment ("to decline: USE_DRIVE = False") made papermill log "Unable to parse
line" for every notebook of every maintainer's run, and drop that parameter from what it
inspects."""

import logging
import re

import jupytext
import pytest
from papermill.translators import PythonTranslator
from paths import ROOT

SOLUTIONS = sorted((ROOT / "solutions").glob("[0-9][0-9]_*.py"))


def parameters_cell(path):
    (cell,) = [c for c in jupytext.read(path).cells if "parameters" in c.metadata.get("tags", [])]
    return cell


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda path: path.stem)
def test_papermill_reads_every_line_of_the_parameters_cell(path, caplog):
    cell = parameters_cell(path)
    with caplog.at_level(logging.WARNING, logger="papermill"):
        found = PythonTranslator.inspect(cell)
    assert not caplog.records, [record.getMessage() for record in caplog.records]
    assigned = re.findall(r"^(\w+) = ", cell.source, flags=re.M)
    assert [parameter.name for parameter in found] == assigned
    assert all(parameter.help for parameter in found), "each parameter says what it does"


def test_every_solution_has_its_parameters_cell():
    assert len(SOLUTIONS) == 6
