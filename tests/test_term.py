"""A graded term: what students open holds no solution, hand grades stay done across reruns,
the formgrader cannot grade outside the sandbox, and the course folder lives out of the
checkout where the sandbox cannot see it. Everything is written under tmp_path."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import executing
from paths import ROOT

from grader import course as course_module
from grader.course import Layout, nbgrader_config
from grader.engine import sandbox
from grader.engine.options import EngineOptions
from grader.term import nbgrader_apps
from grader.term.course_open import Course
from grader.term.formgrader import MANUAL, SandboxOnly
from maintainer import notebook_build
from maintainer.fabricated_class import release

pytestmark = pytest.mark.heavy(order=15)
PUBLISH_URL = "github.com/acme/transformer-lab-2026/blob/main"
REGION = re.compile(r"^[ \t#]*### BEGIN SOLUTION.*?^[ \t#]*### END SOLUTION", re.M | re.S)


def _sources(nb: dict) -> str:
    return "\n".join(
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in nb["cells"]
    )


def _plain(line: str) -> str:
    """A line as it reads in a notebook cell: jupytext's '# ' of markdown lines set aside."""
    line = line.strip()
    return line[2:].strip() if line.startswith("# ") else line.lstrip("#").strip()


def solution_lines(path: Path) -> set[str]:
    """The lines only a solution region of solutions/NAME.py has (not its stubs, checks, or
    the text around them), long enough to mean something."""
    text = path.read_text(encoding="utf-8")
    inside = {_plain(line) for region in REGION.findall(text) for line in region.splitlines()}
    outside = {_plain(line) for line in REGION.sub("", text).splitlines()}
    return {line for line in inside - outside if len(line) >= 16 and "SOLUTION" not in line}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """`make release` twice, into two courses: with PUBLISH_URL and without."""
    courses = {}
    for label, url in (("published", PUBLISH_URL), ("bare", None)):
        course = tmp_path_factory.mktemp(label) / "course"
        release(course, publish_url=url)
        courses[label] = course
    return courses


def test_graded_notebooks_hold_no_solution_and_never_link_notebooks(built):
    names = [p.stem for p in notebook_build.sources()]
    assert len(names) == 6
    for course in built.values():
        given = [course / "release" / n / f"{n}.ipynb" for n in names]
        given += [course / "publish" / f"{n}.ipynb" for n in names]
        for path in given:
            text = _sources(json.loads(path.read_text(encoding="utf-8")))
            assert "notebooks/" not in text, path
            assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text, path
            assert "HIDDEN TESTS" not in text, path
            lines = {line.strip() for line in text.splitlines()}
            leaked = solution_lines(ROOT / "solutions" / f"{path.stem}.py") & lines
            assert not leaked, f"{path}: {sorted(leaked)[:3]}"
    # The check can fail: the nbgrader source has the solutions, and its own lines are found.
    course = built["bare"]
    source = _sources(json.loads((course / "source/01_attention/01_attention.ipynb").read_text()))
    lines = {line.strip() for line in source.splitlines()}
    assert solution_lines(ROOT / "solutions" / "01_attention.py") & lines


def test_the_badge_opens_the_published_copy_or_is_left_out(built):
    published = (built["published"] / "publish" / "04_training.ipynb").read_text()
    target = "https://colab.research.google.com/github/acme/transformer-lab-2026/blob/main/"
    assert f"{target}04_training.ipynb" in published
    bare = built["bare"] / "publish"
    assert "colab-badge" not in (bare / "04_training.ipynb").read_text()
    readme = (bare / "README.md").read_text()
    assert "PUBLISH_URL=github.com/ORG/REPO/blob/main" in readme and "Drive" in readme
    assert PUBLISH_URL in (built["published"] / "publish" / "README.md").read_text()
    # The workshop flavour is as it was: its badge still opens notebooks/ of the lab.
    workshop = (ROOT / "notebooks" / "04_training.ipynb").read_text()
    assert "/notebooks/04_training.ipynb" in workshop


def test_a_publish_url_that_is_not_a_github_folder_is_refused():
    with pytest.raises(ValueError, match="github.com/ORG/REPO/blob/BRANCH"):
        notebook_build.publish_colab_url("https://drive.google.com/drive/folders/x", "01")
    url = notebook_build.publish_colab_url("https://github.com/a/b/blob/main/", "01_attention")
    assert url == "https://colab.research.google.com/github/a/b/blob/main/01_attention.ipynb"


def test_the_formgrader_autograde_button_refuses_and_touches_nothing(tmp_path):
    # By name: the formgrader shows the configuration as JSON, where a class cannot go.
    assert (
        nbgrader_config().Autograde.exporter_class
        == f"grader.term.formgrader.{SandboxOnly.__name__}"
    )
    course = tmp_path / "course"
    kept = {}
    for folder in ("submitted", "autograded"):
        path = course / folder / "ada" / MANUAL / f"{MANUAL}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text("{}")
        kept[path] = path.read_bytes()
    job = course / "autograded" / "ada" / MANUAL / "job.json"
    job.write_text('{"key": "k"}')
    kept[job] = job.read_bytes()
    # What the formgrader's AutogradeHandler calls, with the course's configuration.
    result = nbgrader_apps.api(Layout(course)).autograde(MANUAL, "ada")
    assert not result["success"]
    assert f"python -m grader autograde --student ada --notebook {MANUAL}" in result["error"]
    assert {p: p.read_bytes() for p in kept} == kept  # nothing deleted or rewritten
    assert not (course / "gradebook.db").exists()


def _default_course(env: dict) -> Path:
    probe = [sys.executable, "-c", "from grader.course import COURSE; print(COURSE)"]
    done = subprocess.run(probe, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return Path(done.stdout.strip())


def test_the_course_folder_defaults_outside_the_checkout(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != course_module.COURSE_ENV}
    home = tmp_path / "home"
    assert _default_course({**env, "HOME": str(home)}) == home / "transformer-lab-course"
    term = tmp_path / "term"
    assert _default_course({**env, course_module.COURSE_ENV: str(term)}) == term
    assert not course_module.COURSE.resolve().is_relative_to(ROOT)
    from grader.__main__ import build_parser

    args = build_parser().parse_args(["--course", str(tmp_path / "x"), "export"])
    assert args.course == tmp_path / "x"


def _mounted(argv: list[str]) -> list[Path]:
    """The host paths a bubblewrap command line binds into the sandbox."""
    binds = ("--ro-bind", "--ro-bind-try", "--bind", "--bind-try", "--dev-bind")
    return [Path(argv[i + 1]) for i, arg in enumerate(argv[:-2]) if arg in binds]


def test_the_sandbox_never_shows_the_course_wherever_it_lies(tmp_path):
    """The default course, under the home folder, is simply not mounted: no folder bound into
    the sandbox holds it. One that does lie inside a mounted folder gets an empty tmpfs."""
    course = course_module.COURSE.resolve()
    argv = sandbox.command(["true"], course, Path(sys.executable).resolve())
    assert not [m for m in _mounted(argv) if course.is_relative_to(m)]
    assert str(course) not in argv
    inside = tmp_path / "venv" / "course"
    inside.mkdir(parents=True)
    assert sandbox._cover(inside, [tmp_path / "venv"]) == [
        "--tmpfs",
        str(inside),
        "--remount-ro",
        str(inside),
    ]


needs_sandbox = pytest.mark.skipif(
    bool(sandbox.why_no_sandbox()) and not os.environ.get("CI"),
    reason=f"bubblewrap {sandbox.why_no_sandbox()}",
)
PREDICTION = "The LSTM: it is smaller and its recurrence suits characters at this budget."


def _grades(course: Path, student: str) -> dict[str, tuple]:
    from nbgrader.api import Gradebook

    with Gradebook(Layout(course).db_url) as gb:
        notebook = gb.find_submission_notebook(MANUAL, MANUAL, student)
        return {g.name: (g.manual_score, bool(g.needs_manual_grade)) for g in notebook.grades}


@needs_sandbox
def test_a_hand_grade_is_asked_for_again_when_the_answer_changes(tmp_path, monkeypatch):
    """The grade is kept, to be looked at again. (That it stays done over a rerun with the
    answer unchanged: test_whole_term.py.) The jobs stand in for a run of the solution."""
    from nbgrader.api import Gradebook

    from grader.engine import autograde as engine
    from grader.term.scores import autograde

    monkeypatch.setattr(engine, "run_job", executing())
    from maintainer.fabricated_class import cell_of, perfect, write

    course = tmp_path / "course"
    release(course)
    nb = perfect(course, MANUAL)
    cell_of(nb, "ex4_prediction")["source"] = PREDICTION
    submitted = course / "submitted" / "ada" / MANUAL / f"{MANUAL}.ipynb"
    write(submitted, nb)
    (first,) = autograde(Course.open(course), EngineOptions(progress=False, sandboxed=False))
    assert first.status == "graded" and first.needs_manual == 1

    with Gradebook(Layout(course).db_url) as gb:  # the formgrader's save, by nbgrader's API
        grade = gb.find_grade("ex4_prediction", MANUAL, MANUAL, "ada")
        grade.manual_score, grade.needs_manual_grade = 1, False
        gb.db.commit()
    assert _grades(course, "ada")["ex4_prediction"] == (1, False)

    cell_of(nb, "ex4_prediction")["source"] = PREDICTION + " Or the GPT, if it trains longer."
    write(submitted, nb)
    (changed,) = autograde(Course.open(course), EngineOptions(progress=False, sandboxed=False))
    assert changed.status == "graded" and changed.needs_manual == 1
    assert _grades(course, "ada")["ex4_prediction"] == (1, True)  # kept, to be looked at again
