"""End to end: release, fabricated submissions (good, broken, hostile), collect, autograde with
two workers, export; every student's score asserted exactly."""

from __future__ import annotations

import copy
import csv
import inspect
import json
import os
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader import collect, preflight, sandbox
from grader.autograde import autograde
from grader.course import release_notebook
from maintainer.notebook_build import SOLUTION_MARKERS
from transformer_lab import attention as tl_attention

if sandbox.problem() and not os.environ.get("CI"):  # CI installs bubblewrap: there it must work
    pytest.skip(f"bubblewrap {sandbox.problem()}", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
NAMES = ["01_attention", "02_causal_mask", "03_positions", "04_training", "05_heads", "06_stretch"]
RELEASE = [sys.executable, "-m", "maintainer.notebook_build", "--no-workshop", "--course"]


def release(course: Path) -> None:
    """`make release` into `course`: nbgrader's source and release, built from solutions/."""
    subprocess.run([*RELEASE, str(course)], check=True, cwd=ROOT, capture_output=True)


WRONG_ATTENTION = """def scaled_dot_product_attention(Q, K, V, allowed=None):
    scores = Q @ K.transpose(-2, -1)  # not divided by sqrt(d_k)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    A = torch.softmax(scores, dim=-1)
    return A @ V, A
"""
LOOPING_ATTENTION = """def scaled_dot_product_attention(Q, K, V, allowed=None):
    while True:
        pass
"""
HOG_ATTENTION = """def scaled_dot_product_attention(Q, K, V, allowed=None):
    hog = torch.ones(10**12)  # 4 TB
    return hog, hog
"""
ALWAYS_EQUAL = """class Anything(torch.Tensor):
    def __eq__(self, other):
        return True

    def allclose(self, *args, **kwargs):
        return True


def scaled_dot_product_attention(Q, K, V, allowed=None):
    shape = (*Q.shape[:-1], V.shape[-1])
    return torch.zeros(shape).as_subclass(Anything), torch.zeros(Q.shape[:-1] + K.shape[-2:-1])
"""
PATCHED_ALLCLOSE = "torch.allclose = lambda *args, **kwargs: True\n\n" + WRONG_ATTENTION
# Hands the work to the package: the check's watch fails it, here as in the notebook.
DELEGATED_ATTENTION = """from transformer_lab.attention import scaled_dot_product_attention as ready


def scaled_dot_product_attention(Q, K, V, allowed=None):
    return ready(Q, K, V, allowed)
"""
# The package's own source pasted into the cell: right, so full marks, but flagged for review.
COPIED_ATTENTION = "\n\n".join(
    [
        "EMPTY_ROW_POLICIES = ('error', 'zero')",
        inspect.getsource(tl_attention._check_inputs),
        inspect.getsource(tl_attention.scaled_dot_product_attention),
    ]
)
SNOOP = """import os
import pathlib

# The strongest snoop knows where the course is. It reads, and opens for writing without
# writing (so a failed defence does not wreck the other grades), whatever it can reach.
course = pathlib.Path("@COURSE@")
targets = [course / "gradebook.db", course / "source", course / "submitted"]
reached = [str(p) for p in targets if os.access(p, os.R_OK)]
try:
    with open(course / "gradebook.db", "ab"):
        reached.append("gradebook.db opened for writing")
except OSError:
    pass
reached += [v for v in os.environ.values() if str(course) in v]
print("snoop reached", reached or "nothing")


"""


def _text(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    course = tmp_path_factory.mktemp("course")
    release(course)
    return course


def perfect(course: Path, name: str) -> dict:
    """The release with every exercise cell filled in with the solution."""
    release = json.loads((course / "release" / name / f"{name}.ipynb").read_text())
    source = json.loads((course / "source" / name / f"{name}.ipynb").read_text())
    solutions = {
        c["metadata"]["nbgrader"]["grade_id"]: SOLUTION_MARKERS.sub("", _text(c))
        for c in source["cells"]
        if c["metadata"].get("nbgrader", {}).get("solution")
    }
    for cell in release["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("solution"):
            cell["source"] = solutions[meta["grade_id"]]
    return release


def untouched(course: Path, name: str) -> dict:
    return json.loads((course / "release" / name / f"{name}.ipynb").read_text())


def cell_of(nb: dict, grade_id: str) -> dict:
    (cell,) = [
        c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == grade_id
    ]
    return cell


def with_attention(course: Path, source: str) -> dict:
    nb = perfect(course, "01_attention")
    cell_of(nb, "ex1_attention")["source"] = source
    return nb


def colab_shaped(nb: dict) -> dict:
    """What Colab's File > Download gives: nbformat 4.0, no cell ids, its metadata, outputs."""
    nb = copy.deepcopy(nb)
    nb["nbformat_minor"] = 0
    nb["metadata"] = {"colab": {"provenance": [], "name": "Copy of 01_attention.ipynb"}}
    nb["metadata"]["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    for n, cell in enumerate(nb["cells"]):
        cell.pop("id", None)
        cell["metadata"]["id"] = f"colab{n}"
        cell["source"] = _text(cell).splitlines(keepends=True)
        if cell["cell_type"] == "code":
            cell["execution_count"] = n
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["ran\n"]}]
    return nb


def stripped(nb: dict) -> dict:
    for cell in nb["cells"]:
        cell["metadata"].pop("nbgrader", None)
    return nb


def write(path: Path, nb) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nb if isinstance(nb, str) else json.dumps(nb))


def fabricate(course: Path, folder: Path) -> None:
    for name in NAMES:
        write(folder / "perfect" / f"{name}.ipynb", perfect(course, name))
    for name in ("01_attention", "04_training"):
        write(folder / "untouched" / f"{name}.ipynb", untouched(course, name))
    partial = untouched(course, "01_attention")
    cell_of(partial, "ex0_read_the_model")["source"] = _text(
        cell_of(perfect(course, "01_attention"), "ex0_read_the_model")
    )
    write(folder / "partial" / "01_attention.ipynb", partial)
    write(
        folder / "colab_Copy of 01_attention (1).ipynb",
        colab_shaped(perfect(course, "01_attention")),
    )
    write(folder / "stripped" / "01_attention.ipynb", stripped(perfect(course, "01_attention")))
    # Most students work in the workshop flavour the Colab badge opens, with its folded solutions.
    workshop = json.loads((ROOT / "notebooks" / "01_attention.ipynb").read_text())
    for grade_id in ("ex0_read_the_model", "ex1_attention"):
        cell_of(workshop, grade_id)["source"] = _text(
            cell_of(perfect(course, "01_attention"), grade_id)
        )
    write(folder / "workshop" / "01_attention.ipynb", workshop)

    dup = perfect(course, "01_attention")
    check = cell_of(dup, "ex1_check")
    dup["cells"].insert(dup["cells"].index(check), {**copy.deepcopy(check), "id": "copied"})
    write(folder / "duplicated" / "01_attention.ipynb", dup)

    deleted = with_attention(course, WRONG_ATTENTION)
    deleted["cells"].remove(cell_of(deleted, "ex1_check"))
    write(folder / "deleted" / "01_attention.ipynb", deleted)
    edited = with_attention(course, WRONG_ATTENTION)
    cell_of(edited, "ex1_check")["source"] = "pass"
    write(folder / "edited" / "01_attention.ipynb", edited)
    markdown = stripped(with_attention(course, WRONG_ATTENTION))
    for cell in markdown["cells"]:
        if _text(cell).startswith("check.exercise_1("):
            cell.update(cell_type="markdown", source="(my notes)")
            cell.pop("outputs"), cell.pop("execution_count")
    write(folder / "markdown" / "01_attention.ipynb", markdown)
    skipped = with_attention(course, WRONG_ATTENTION)
    cell_of(skipped, "ex1_check")["metadata"]["tags"] = ["skip-execution"]
    write(folder / "skiptag" / "01_attention.ipynb", skipped)

    write(
        folder / "badjson" / "01_attention.ipynb",
        json.dumps(perfect(course, "01_attention"))[:5000],
    )
    write(folder / "looping" / "01_attention.ipynb", with_attention(course, LOOPING_ATTENTION))
    write(folder / "hog" / "01_attention.ipynb", with_attention(course, HOG_ATTENTION))
    warns = with_attention(
        course,
        "import warnings\n\n" + _text(cell_of(perfect(course, "01_attention"), "ex1_attention")),
    )
    cell = cell_of(warns, "ex1_attention")
    cell["source"] = _text(cell).replace('"""\n', '"""\n    warnings.warn("deprecated style")\n', 1)
    write(folder / "warns" / "01_attention.ipynb", warns)
    write(folder / "allclose" / "01_attention.ipynb", with_attention(course, PATCHED_ALLCLOSE))
    write(folder / "alwayseq" / "01_attention.ipynb", with_attention(course, ALWAYS_EQUAL))
    write(folder / "delegate" / "01_attention.ipynb", with_attention(course, DELEGATED_ATTENTION))
    write(folder / "copycat" / "01_attention.ipynb", with_attention(course, COPIED_ATTENTION))
    snoop = perfect(course, "01_attention")
    cell = cell_of(snoop, "ex1_attention")
    cell["source"] = SNOOP.replace("@COURSE@", str(course)) + _text(cell)
    write(folder / "snoop" / "01_attention.ipynb", snoop)

    with zipfile.ZipFile(folder / "erin.zip", "w") as archive:  # a zip per student
        older = zipfile.ZipInfo("01_attention.ipynb", date_time=(2026, 1, 1, 9, 0, 0))
        archive.writestr(older, json.dumps(partial))
        newer = zipfile.ZipInfo("01_attention (2).ipynb", date_time=(2026, 1, 1, 10, 0, 0))
        archive.writestr(newer, json.dumps(perfect(course, "01_attention")))
    write(folder / "notes.txt", "not a notebook")
    write(folder / "01_attention.ipynb", perfect(course, "01_attention"))  # whose?


# student -> {notebook: (score, max)} or "quarantined"
EXPECTED = {
    "perfect": {
        "01_attention": (4, 4),
        "02_causal_mask": (2, 2),
        "03_positions": (2, 2),
        "04_training": (2, 3),  # the written prediction (1 point) is graded by hand
        "05_heads": (2, 2),
        "06_stretch": (4, 4),
    },
    "untouched": {"01_attention": (0, 4), "04_training": (0, 3)},
    "partial": {"01_attention": (1, 4)},
    "colab": {"01_attention": (4, 4)},
    "stripped": {"01_attention": (4, 4)},
    "workshop": {"01_attention": (4, 4)},
    "duplicated": {"01_attention": (4, 4)},
    "deleted": {"01_attention": (1, 4)},
    "edited": {"01_attention": (1, 4)},
    "markdown": {"01_attention": (1, 4)},
    "skiptag": {"01_attention": (1, 4)},
    "badjson": {"01_attention": "quarantined"},
    "looping": {"01_attention": (1, 4)},
    "hog": {"01_attention": (1, 4)},
    "warns": {"01_attention": (4, 4)},
    "allclose": {"01_attention": (1, 4)},
    "alwayseq": {"01_attention": (1, 4)},
    "delegate": {"01_attention": (1, 4)},
    "copycat": {"01_attention": (4, 4)},
    "snoop": {"01_attention": (4, 4)},
    "erin": {"01_attention": (4, 4)},
}


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    folder = tmp_path_factory.mktemp("downloads")
    fabricate(course, folder)
    found = collect.collect(folder, course)
    outcomes = autograde(course, workers=2, cell_timeout=10, memory_gb=3, progress=False)
    return found, outcomes


def test_collect_sorts_downloads_and_says_what_it_skipped(graded):
    found, _ = graded
    notes = {f.source: f for f in found}
    assert notes["colab_Copy of 01_attention (1).ipynb"].student == "colab"
    assert "renamed" in notes["colab_Copy of 01_attention (1).ipynb"].note
    assert notes["erin/01_attention (2).ipynb"].student == "erin"
    assert "newer copy" in notes["erin/01_attention.ipynb"].note
    assert notes["notes.txt"].note.startswith("skipped: not a notebook")
    assert notes["01_attention.ipynb"].note.startswith("skipped: no student id")


def test_every_student_gets_exactly_the_expected_score(graded):
    _, outcomes = graded
    got = {}
    for o in outcomes:
        got.setdefault(o.student, {})[o.assignment] = (
            (o.score, o.max_score) if o.status == "graded" else o.status
        )
    assert got == EXPECTED


def test_nothing_is_a_silent_zero(graded):
    _, outcomes = graded
    by = {(o.student, o.assignment): o for o in outcomes}
    assert "not valid notebook JSON" in by["badjson", "01_attention"].reason
    assert any("grading metadata restored" in r for r in by["stripped", "01_attention"].repairs)
    assert any("duplicate" in r for r in by["duplicated", "01_attention"].repairs)
    assert any("check missing, restored" in r for r in by["deleted", "01_attention"].repairs)
    assert any("restored to code" in r for r in by["markdown", "01_attention"].repairs)
    assert any("skip" in r for r in by["skiptag", "01_attention"].repairs)


def test_delegation_fails_and_copies_and_torch_writes_are_flagged(graded, course):
    _, outcomes = graded
    by = {o.student: o for o in outcomes if o.assignment == "01_attention"}
    executed = course / "autograded" / "delegate" / "01_attention" / "01_attention.ipynb"
    assert "[ex1.uses_package_attention]" in executed.read_text()
    assert by["delegate"].flags == []  # an import of the package is no review matter
    assert any("matches the package's" in flag for flag in by["copycat"].flags)
    assert any("writes an attribute of torch" in flag for flag in by["allclose"].flags)
    assert by["perfect"].flags == []


def test_a_loop_or_a_hog_fails_its_own_cells_only(graded, course):
    nb = json.loads((course / "autograded/looping/01_attention/01_attention.ipynb").read_text())
    errors = [
        o["ename"]
        for c in nb["cells"]
        if c["cell_type"] == "code"
        for o in c["outputs"]
        if o["output_type"] == "error"
    ]
    assert "CellTimeoutError" in errors or "KeyboardInterrupt" in errors
    assert "CheckFailed" in json.dumps(
        json.loads((course / "autograded/hog/01_attention/01_attention.ipynb").read_text())
    )


def test_the_kernel_never_saw_the_course(graded, course):
    nb = json.loads((course / "autograded/snoop/01_attention/01_attention.ipynb").read_text())
    printed = json.dumps(cell_of(nb, "ex1_attention")["outputs"])
    assert "snoop reached nothing" in printed
    with sqlite3.connect(course / "gradebook.db") as db:  # still a gradebook, every grade there
        students = {s for (s,) in db.execute("select id from student")}
    assert set(EXPECTED) - {"badjson"} <= students


def test_export_and_feedback(graded, course):
    run = [sys.executable, "-m", "grader", "--course", str(course)]
    subprocess.run([*run, "export"], check=True, cwd=ROOT, capture_output=True)
    rows = list(csv.DictReader((course / "reports" / "grades.csv").open()))
    score = {(r["student_id"], r["assignment"]): float(r["score"]) for r in rows}
    assert score["perfect", "01_attention"] == 4 and score["partial", "01_attention"] == 1
    subprocess.run([*run, "feedback"], check=True, cwd=ROOT, capture_output=True)
    html = (course / "feedback/deleted/01_attention/01_attention.html").read_text()
    assert "exercise_1_hidden" not in html  # the hidden test's code
    assert "not divided by sqrt(d_k)" in html  # the diagnosis
    source = (course / "source/01_attention/01_attention.ipynb").read_text()
    assert "exercise_1_hidden" in source  # so the assertion above could fail


def test_regrading_changes_nothing(graded, course):
    _, first = graded
    again = autograde(course, workers=2, cell_timeout=10, memory_gb=3, progress=False)
    assert {o.status for o in again} <= {"unchanged", "quarantined"}
    assert [(o.student, o.assignment, o.score) for o in again] == [
        (o.student, o.assignment, o.score) for o in first
    ]


def test_a_changed_check_regrades(graded, course):
    checks = ROOT / "checkpoints" / "attention.py"
    original = checks.read_bytes()
    old, new = b"not divided by sqrt(d_k)", b"never divided by sqrt(d_k)"
    assert old in original
    try:
        checks.write_bytes(original.replace(old, new))
        (again,) = autograde(course, students=["deleted"], cell_timeout=10, progress=False)
    finally:
        checks.write_bytes(original)
    assert again.status == "graded" and again.score == 1
    graded_copy = course / "autograded" / "deleted" / "01_attention" / "01_attention.ipynb"
    assert new.decode() in graded_copy.read_text()


def test_preflight_quarantines_another_notebook(course):
    other = json.dumps(perfect(course, "02_causal_mask")).encode()
    result = preflight.preflight(other, release_notebook(course, "01_attention"))
    assert result.notebook is None and "does not look like this notebook" in result.quarantined


def test_class_report_counts_mistake_codes_without_names(graded, course):
    run = [sys.executable, "-m", "grader", "--course", str(course), "report"]
    subprocess.run(run, check=True, cwd=ROOT, capture_output=True)
    reports = course / "reports"
    text = (reports / "class.md").read_text()
    rows = list(csv.DictReader((reports / "class.csv").open()))
    count = {(r["check"], r["outcome"]): int(r["students"]) for r in rows}
    # deleted, edited, markdown, skiptag and allclose all hand in attention without 1/sqrt(d_k)
    assert count["ex1_check", "ex1.no_sqrt_dk"] == 5
    assert count["ex1_check", "ex1.not_done"] >= 1  # untouched and partial
    assert count["ex0_check", "passed"] >= 10
    assert "`ex1.no_sqrt_dk`" in text and "not divided by sqrt(d_k)" in text
    assert "| 01_attention | ex1_check |" in text
    assert not any(student in text for student in ("perfect", "erin", "alwayseq"))
    assert (reports / "class_pass_rate.png").stat().st_size > 0
    assert (reports / "class_mistakes.png").stat().st_size > 0
    subprocess.run([*run, "--names"], check=True, cwd=ROOT, capture_output=True)
    assert "allclose" in (reports / "class.md").read_text()  # asked for: names appear


def test_a_dask_cluster_grades_like_the_local_pool(graded, course):
    """Two single-threaded workers of a LocalCluster, the same notebooks, the same scores."""
    distributed = pytest.importorskip("distributed")
    _, first = graded
    students = ["deleted", "partial", "colab"]
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        again = autograde(
            course,
            students=students,
            cell_timeout=10,
            memory_gb=3,
            force=True,
            progress=False,
            scheduler=cluster.scheduler_address,
        )
    assert {o.status for o in again} == {"graded"}
    local = {(o.student, o.assignment): o.score for o in first if o.student in students}
    assert {(o.student, o.assignment): o.score for o in again} == local


def test_jobs_start_while_later_notebooks_are_still_being_sanitized(graded, course, monkeypatch):
    """The parent's serial work overlaps the jobs: the first job is submitted before the last
    notebook is sanitized (the jobs are stand-ins here: only the order is looked at)."""
    import concurrent.futures
    import contextlib

    from grader import autograde as grading

    events, prepare = [], grading.prepare

    def recording_prepare(*args):
        events.append("prepare")
        return prepare(*args)

    @contextlib.contextmanager
    def recording_pool(workers, scheduler=None):
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            submit = pool.submit
            pool.submit = lambda *args: events.append("job") or submit(*args)
            yield pool

    monkeypatch.setattr(grading, "prepare", recording_prepare)
    monkeypatch.setattr(grading, "job_pool", recording_pool)
    monkeypatch.setattr(grading, "run_job", lambda *args: {"error": "not run: a stand-in job"})
    outcomes = autograde(
        course, students=["deleted", "partial", "colab"], workers=1, force=True, progress=False
    )
    assert {o.status for o in outcomes} == {"failed"} and len(outcomes) == 3
    assert events == ["prepare", "job"] * 3
