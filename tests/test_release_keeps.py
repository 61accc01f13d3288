"""A release keeps the published notebook (maintainer/notebook_build.py, grader/term/settings.py):
the first release given a publish URL writes it into course.toml, and an errata released without
one (`make release NOTEBOOK=01_attention`) builds with it, so that the badge and the setup cell
stay as published; where publish/ carries badges and course.toml keeps no URL, it is refused in
one line. A release that would write what the course folder holds already writes nothing (bytes
and modification times alike) and regrades no one. solutions/ is a copy, the student wheel a
stand-in and jobs are stand-ins (conftest.executing), as tests/test_errata.py builds them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import executing, grader_cli
from test_errata import TRUSTED, solutions_with

from grader.course import GradingError, Layout
from grader.engine import autograde as engine
from grader.term import settings
from grader.term.course_open import Course
from grader.term.scores import autograde
from maintainer import notebook_build
from maintainer.fabricated_class import (
    WRONG_ATTENTION,
    colab_shaped,
    perfect,
    with_attention,
    write,
)

NB = "01_attention"
URL = "github.com/acme/transformer-lab-2026/blob/main"


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Path:
    """01 released with a publish URL, handed in by two and graded."""
    tmp = tmp_path_factory.mktemp("published")
    course = tmp / "class" / "course"
    with pytest.MonkeyPatch.context() as patch:
        solutions_with(tmp, patch)
        notebook_build.build(None, course, only=[NB], publish_url=URL, options=TRUSTED)
        for student, nb in (
            ("ann", perfect(course, NB)),
            ("bea", with_attention(course, WRONG_ATTENTION)),
        ):
            write(Layout(course).notebook("submitted", NB, student), colab_shaped(nb))
        patch.setattr(engine, "run_job", executing())
        autograde(Course.open(course), TRUSTED)
    return course


@pytest.fixture
def course(published, tmp_path, monkeypatch) -> Path:
    """A copy of the course, its release rebuilt from solutions/ as they were."""
    solutions_with(tmp_path, monkeypatch)
    return Path(shutil.copytree(published, tmp_path / "class" / "course", symlinks=True))


def stamps(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under `folder` with its bytes and its modification time."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    }


def test_an_errata_without_the_url_keeps_the_published_notebook_and_regrades_no_one(
    course, monkeypatch
):
    before = stamps(course.parent)
    said = notebook_build.build(None, course, only=[NB], options=TRUSTED)
    assert said == ["01_attention: unchanged since the last release; nothing written"]
    assert stamps(course.parent) == before  # the badge, the setup cell, the gradebook, the log
    assert settings.publish_url(Layout(course)) == URL  # the first release wrote it
    monkeypatch.setattr(engine, "run_job", lambda *_: pytest.fail("a job ran"))
    again = autograde(Course.open(course), TRUSTED)
    assert {(o.student, o.status) for o in again} == {("ann", "unchanged"), ("bea", "unchanged")}


def test_the_release_command_hands_the_build_over_and_writes_nothing_unchanged(released, tmp_path):
    """`python -m grader release`: the maintainer's build, in a process of its own, hands the
    notebooks and the wheel over; released as the first release built them, nothing is written."""
    course = Path(shutil.copytree(released, tmp_path / "class" / "course"))
    before = stamps(course.parent)
    done = grader_cli(course, "release", "--notebook", NB, "--no-sandbox")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"{NB}: unchanged since the last release; nothing written"
    assert stamps(course.parent) == before


def test_a_release_without_a_url_where_publish_carries_badges_is_refused_in_one_line(course):
    """A course released before course.toml kept the URL: its badges open a URL no file keeps."""
    Layout(course).settings.write_text(settings.starting_file(), encoding="utf-8")
    before = stamps(course.parent)
    with pytest.raises(GradingError) as refused:
        notebook_build.build(None, course, only=[NB], options=TRUSTED)
    said = str(refused.value)
    assert "\n" not in said and f"PUBLISH_URL={URL}`" in said
    assert said.startswith(
        f"release refused: the published notebooks' Colab badge opens {URL}, and no publish URL "
        "is given or kept in course.toml; give it once"
    )
    assert said.endswith("Nothing in the course folder was changed.")
    assert stamps(course.parent) == before


def test_a_url_given_again_is_kept_and_one_given_anew_replaces_it(course):
    toml = Layout(course).settings.read_text(encoding="utf-8")
    assert settings.with_publish_url(toml, URL) == toml
    other = "github.com/acme/transformer-lab-2027/blob/main/graded"
    replaced = settings.with_publish_url(toml, other)
    assert settings.read(replaced, (NB,)) == settings.read(toml, (NB,))
    assert replaced.replace(other, URL) == toml


@pytest.mark.parametrize(
    "text",
    [
        "",
        settings.starting_file(),
        'timezone = "Europe/Berlin"\n\n[late]\npenalty = "zero"\n',
        '# [due]\n# 01_attention = 2027-01-15T23:59:00+01:00\n[late]\npenalty = "zero"\n',
    ],
    ids=["empty", "as started", "a table", "a commented table first"],
)
def test_the_url_is_written_where_it_reads_back_and_every_other_setting_stays(text, tmp_path):
    layout = Layout(tmp_path)

    def kept(toml: str) -> str | None:
        layout.settings.write_text(toml, encoding="utf-8")
        return settings.publish_url(layout)

    written = settings.with_publish_url(text, URL)
    assert settings.read(written, (NB,)) == settings.read(text, (NB,))
    assert kept(written) == URL
    # a [due] table uncommented later does not take the key in
    assert kept(written.replace("# [due]\n# 01_attention", "[due]\n01_attention")) == URL


def test_a_publish_url_that_is_no_github_folder_stops_the_command_in_one_line():
    with pytest.raises(GradingError, match=r"^course\.toml: publish_url = ") as bad:
        settings.read('publish_url = "https://drive.google.com/drive/folders/x"', (NB,))
    assert "\n" not in str(bad.value)
