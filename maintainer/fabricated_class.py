"""A fabricated class: the notebooks that the grading tests and the grading bench hand in (every
exercise solved, untouched, partial, reshaped by Colab, stripped of metadata, looping, hogging
memory, tampering with the checks, delegating, copying...), built from a real release; and the
LMS downloads that carry them, zipped as Canvas and Moodle zip them (canvas_zip, moodle_zip)."""

from __future__ import annotations

import atexit
import copy
import fcntl
import hashlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from datetime import datetime
from pathlib import Path

from grader.course import Layout
from maintainer import ROOT
from maintainer.notebook_build import SOLUTION_MARKERS
from transformer_lab import attention as tl_attention
from transformer_lab.catalogue import NOTEBOOKS

RELEASE = [sys.executable, "-m", "maintainer.notebook_build", "--no-workshop", "--course"]


_BUILT: dict[str | None, Path] = {}  # one release per process and publish URL, copied on ask
# A folder that several processes share their builds in (a test run's workers): the first to
# ask builds, under a lock, and the others copy.
SHARED_BUILDS_ENV = "TRANSFORMER_LAB_RELEASE_BUILDS"


def release(course: Path, publish_url: str | None = None) -> None:
    """`make release [PUBLISH_URL=...]` into `course`: nbgrader's source, release and the copy
    to publish, built from solutions/ once per process, or once for every process that shares
    SHARED_BUILDS_ENV (a build takes seconds; a copy, milliseconds)."""
    if publish_url not in _BUILT:
        _BUILT[publish_url] = _built(publish_url)
    shutil.copytree(_BUILT[publish_url], course, dirs_exist_ok=True)


def _built(publish_url: str | None) -> Path:
    def build(target: Path) -> None:
        publish = ["--publish-url", publish_url] if publish_url else []
        subprocess.run([*RELEASE, str(target), *publish], check=True, cwd=ROOT, capture_output=True)

    shared = os.environ.get(SHARED_BUILDS_ENV)
    if not shared:
        built = Path(tempfile.mkdtemp(prefix="tl-release-")) / "course"
        atexit.register(shutil.rmtree, built.parent, True)
        build(built)
        return built
    built = Path(shared) / hashlib.sha256(repr(publish_url).encode()).hexdigest()[:12] / "course"
    with open(Path(shared) / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or its process ends
        if not built.is_dir():
            partial = built.with_name("building")
            built.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(partial, ignore_errors=True)  # left by a build that was killed
            build(partial)
            partial.rename(built)
    return built


WRONG_ATTENTION = """def scaled_dot_product_attention(Q, K, V, allowed=None):
    scores = Q @ K.transpose(-2, -1)  # not divided by sqrt(d_k)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    A = torch.softmax(scores, dim=-1)
    return A @ V, A
"""
# Never returns when the checkpoint calls it; later cells get a wrong answer at once, so the
# notebook pays one cell timeout, not one per cell that calls attention. The loop waits rather
# than spins: the kernel is interrupted the same way, and the CPU is left to the other jobs.
LOOPING_ATTENTION = """import time

looped = []


def scaled_dot_product_attention(Q, K, V, allowed=None):
    if not looped:
        looped.append(True)
        while True:
            time.sleep(0.1)
    return V, V
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


def _text(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def perfect(course: Path, name: str) -> dict:
    """The release with every exercise cell filled in with the solution."""
    release = json.loads(Layout(course).notebook("release", name).read_text())
    source = json.loads(Layout(course).notebook("source", name).read_text())
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
    return json.loads(Layout(course).notebook("release", name).read_text())


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
    for name in NOTEBOOKS:
        write(folder / "perfect" / f"{name}.ipynb", perfect(course, name))
    write(folder / "untouched" / "01_attention.ipynb", untouched(course, "01_attention"))
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

    _tampered_and_hostile(course, folder)
    with zipfile.ZipFile(folder / "erin.zip", "w") as archive:  # a zip per student
        older = zipfile.ZipInfo("01_attention.ipynb", date_time=(2026, 1, 1, 9, 0, 0))
        archive.writestr(older, json.dumps(partial))
        newer = zipfile.ZipInfo("01_attention (2).ipynb", date_time=(2026, 1, 1, 10, 0, 0))
        archive.writestr(newer, json.dumps(perfect(course, "01_attention")))
    write(folder / "notes.txt", "not a notebook")
    write(folder / "01_attention.ipynb", perfect(course, "01_attention"))  # whose?


def _tampered_and_hostile(course: Path, folder: Path) -> None:
    """Students whose check cells were edited away, and code that loops, hogs, patches torch,
    fakes equality, delegates or copies the package. Attacks on the machine and the course are
    test_sandbox.py's."""
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
    write(folder / "allclose" / "01_attention.ipynb", with_attention(course, PATCHED_ALLCLOSE))
    write(folder / "alwayseq" / "01_attention.ipynb", with_attention(course, ALWAYS_EQUAL))
    write(folder / "delegate" / "01_attention.ipynb", with_attention(course, DELEGATED_ATTENTION))
    write(folder / "copycat" / "01_attention.ipynb", with_attention(course, COPIED_ATTENTION))


def canvas_name(sortable: str, user_id: int, attachment_id: int, file: str, late=False) -> str:
    """A file's name in Canvas's submissions zip (lib/content_zipper.rb, get_filename and
    add_upload_submission): the sortable name lower-cased with all but word characters removed
    ("Archer, Alice" -> "archeralice"), LATE where Canvas deems the submission late, the user
    id, then the attachment's id and display name."""
    who = re.sub(r"[^\w]", "", sortable.lower())
    return "_".join([who, *["LATE"] * late, str(user_id), str(attachment_id), file])


def canvas_zip(path: Path, files: list[tuple[str, bytes]], built: datetime) -> Path:
    """Canvas's "Download Submissions" zip as ContentZipper#zip_assignment writes it: each file
    through rubyzip's get_output_stream(name) with no time, so every entry carries
    Zip::DOSTime.now, the moment the zip was built (the server's local time, no zone, no
    extended timestamp), deflated; in the order of the submissions query, which is none."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        stamp = built.timetuple()[:6]
        for name, raw in files:
            archive.writestr(zipfile.ZipInfo(name, date_time=stamp), raw)
    return path


def moodle_name(full_name: str, participant: int, file: str) -> str:
    """A file's name in Moodle's "Download all submissions" (mod/assign/locallib.php,
    download_submissions): full name, the participant id Moodle draws per assignment, the
    plugin ("assignsubmission_file"), the file's own name."""
    return f"{full_name}_{participant}_assignsubmission_file_{file}"


def moodle_zip(path: Path, files: list[tuple[str, bytes, datetime]]) -> Path:
    """Moodle's zip as zip_packer::archive_to_pathname writes it: PHP's ZipArchive::addFile of
    each file's content in the file pool (stored_file::archive_file), so an entry carries the
    pool file's modification time, when Moodle first stored those bytes (local, no zone)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, raw, pooled in files:
            archive.writestr(zipfile.ZipInfo(name, date_time=pooled.timetuple()[:6]), raw)
    return path
