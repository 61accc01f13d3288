"""The written answer graded by hand in a real browser: headless Chromium (Debian's `chromium`
and `chromium-driver`, driven by Selenium) opens the formgrader's Manual Grading page of
04_training on a course autograded here (its job standing in for a run of the solution), opens
the one submission, gives the written prediction its point, and `export` then counts it. The
server is rooted at the course folder and its log holds none of nbgrader's exchange or
configuration warnings. A prediction graded, then handed in again changed and autograded, is
flagged again: the formgrader's comment of the cell holds the answer graded below the grader's
own words (and reports/changed_answers.md both answers), Resolve clears the flag, and the score
stands. A screenshot of every page visited is kept in the test's temporary folder."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import executing, grader_cli

from grader.course import GRADER, Layout
from grader.engine import autograde as engine
from grader.engine.options import EngineOptions
from grader.term import collect
from grader.term.course_open import Course
from grader.term.formgrader import MANUAL, free_port, server_command, urls
from grader.term.nbgrader_apps import scripts_on_path
from grader.term.scores import autograde
from maintainer.fabricated_class import perfect, release, write

pytestmark = pytest.mark.heavy(order=11)
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
if not (CHROMIUM and DRIVER):
    pytest.skip(
        "no browser: install Debian's chromium and chromium-driver", allow_module_level=True
    )

PREDICTION = "The LSTM: fewer parameters and its recurrence suit characters at this small budget."
CHANGED = "The GPT: its attention sees the whole window at once."  # ada's answer handed in again
OWN = "Names the LSTM, and a reason from the parameter counts."  # the grader's comment
WRITTEN = "ex4_prediction"


def handed_in_and_graded(course: Path, downloads: Path, answer: str):
    """ada's 04 with `answer` as her prediction, collected from `downloads` and autograded: our
    own solution, every check passing, the job standing in for its run (the formgrader, not the
    execution, is the point here). The outcome."""
    nb = perfect(course, MANUAL)
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == WRITTEN:
            cell["source"] = answer
    write(downloads / "ada" / f"{MANUAL}.ipynb", nb)
    collect.collect(Course.open(course), downloads)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "run_job", executing())
        (outcome,) = autograde(Course.open(course), EngineOptions(progress=False, sandboxed=False))
    return outcome


@pytest.fixture(scope="module")
def graded_course(tmp_path_factory) -> Path:
    course = tmp_path_factory.mktemp("formgrader") / "course"
    release(course)
    outcome = handed_in_and_graded(course, tmp_path_factory.mktemp("downloads"), PREDICTION)
    assert outcome.needs_manual == 1
    return course


@pytest.fixture(scope="module")
def changed_course(tmp_path_factory) -> Path:
    """ada's prediction graded 1 with a comment (as the formgrader saves them), then handed in
    again, changed, and autograded: flagged again, the score kept."""
    from nbgrader.api import Gradebook

    course = tmp_path_factory.mktemp("changed") / "course"
    release(course)
    handed_in_and_graded(course, tmp_path_factory.mktemp("downloads"), PREDICTION)
    with Gradebook(Layout(course).db_url) as gb:
        grade = gb.find_grade(WRITTEN, MANUAL, MANUAL, "ada")
        grade.manual_score, grade.needs_manual_grade = 1, False
        gb.find_comment(WRITTEN, MANUAL, MANUAL, "ada").manual_comment = OWN
        gb.db.commit()
    time.sleep(1)  # the file handed in again is the newer by its time
    outcome = handed_in_and_graded(course, tmp_path_factory.mktemp("again"), CHANGED)
    assert (outcome.needs_manual, outcome.hand_asked) == (1, [WRITTEN])
    assert _grade(course) == (1, True)
    return course


# What nbgrader logged on every page before the course had an exchange and a configuration
# it can show (issue 26).
ALARMS = ("Unwritable directory", "not serializable", "exchange directory does not exist")


@contextmanager
def serving(course: Path, log: Path):
    """The formgrader on `course`, its output in `log`: its pages' addresses, and "log"."""
    port, token = free_port(), "formgrader-test-token"
    process = subprocess.Popen(
        server_command(Course.open(course), port, token),
        cwd=GRADER,
        env=scripts_on_path(dict(os.environ)),
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    pages = urls(port, token) | {"log": log}
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(pages["log in"], timeout=5) as answer:
                assert answer.status == 200
                break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                pytest.fail("the formgrader did not start within 90 s")
            time.sleep(1)
    try:
        yield pages
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def server(graded_course, tmp_path):
    with serving(graded_course, tmp_path / "server.log") as pages:
        yield pages


@pytest.fixture
def changed_server(changed_course, tmp_path):
    with serving(changed_course, tmp_path / "server.log") as pages:
        yield pages


@pytest.fixture
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=webdriver.ChromeService(DRIVER), options=options)
    yield driver
    driver.quit()


def _grade(course: Path) -> tuple[float | None, bool]:
    """ada's prediction in the gradebook: (its hand score, nbgrader's needs_manual_grade)."""
    from nbgrader.api import Gradebook

    with Gradebook(Layout(course).db_url) as gb:
        grade = gb.find_grade(WRITTEN, MANUAL, MANUAL, "ada")
        return grade.manual_score, bool(grade.needs_manual_grade)


def _exported_score(course: Path) -> tuple[float, float]:
    """ada's 04 in `export`'s grades.csv: (score, max score)."""
    assert grader_cli(course, "export").returncode == 0
    rows = list(csv.DictReader((course / "reports" / "grades.csv").open()))
    (row,) = [r for r in rows if r["student_id"] == "ada" and r["assignment"] == MANUAL]
    return float(row["score"]), float(row["max_score"])


def test_the_written_answer_gets_its_point_in_the_formgrader(
    graded_course, server, browser, tmp_path
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 60)
    browser.get(server["log in"])  # the token sets the login cookie
    browser.get(server["manual grading"])
    link = wait.until(seen.element_to_be_clickable((By.CSS_SELECTOR, "a[href*='/submissions/']")))
    browser.save_screenshot(str(tmp_path / "1-manual-grading.png"))
    assert "Submission #1" in browser.page_source  # ada's, her name hidden as nbgrader does
    link.click()
    score = wait.until(seen.element_to_be_clickable((By.ID, WRITTEN)))
    assert PREDICTION in browser.page_source  # the answer being graded is on the page
    browser.save_screenshot(str(tmp_path / "2-submission.png"))
    score.clear()
    score.send_keys("1", Keys.TAB)  # leaving the field saves it
    deadline = time.monotonic() + 30
    while _grade(graded_course)[0] != 1 and time.monotonic() < deadline:
        time.sleep(0.5)
    browser.save_screenshot(str(tmp_path / "3-scored.png"))
    assert _grade(graded_course) == (1, False)

    browser.get(server["formgrader"])  # Manage Assignments: where the configuration was shown
    wait.until(seen.presence_of_element_located((By.PARTIAL_LINK_TEXT, MANUAL)))
    browser.save_screenshot(str(tmp_path / "4-manage-assignments.png"))
    log = server["log"].read_text()
    assert not [line for line in log.splitlines() if any(a in line for a in ALARMS)], log[-3000:]

    assert _exported_score(graded_course) == (3, 3)  # 2 autograded + 1 by hand
    assert sorted(p.name for p in tmp_path.glob("*.png")) == [
        "1-manual-grading.png",
        "2-submission.png",
        "3-scored.png",
        "4-manage-assignments.png",
    ]


def test_the_file_browser_shows_the_course_and_nothing_above_it(graded_course, server):
    contents = server["log in"].replace("/lab?", "/api/contents?")
    with urllib.request.urlopen(contents, timeout=30) as answer:
        top = {item["name"] for item in json.load(answer)["content"]}
    assert top == {p.name for p in graded_course.iterdir()}
    assert {"gradebook.db", "release", "submitted", "exchange"} <= top
    assert graded_course.name not in top  # the course's parent would list the course itself


RESOLVE = f"//input[@id='{WRITTEN}']/ancestor::div[contains(@class, 'nbgrader_cell')]"
RESOLVE += "//button[contains(@class, 'mark-graded')]"  # the cell's Resolve button


def test_a_changed_answer_shows_the_answer_graded_and_resolve_keeps_its_score(
    changed_course, changed_server, browser, tmp_path
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 60)
    browser.get(changed_server["log in"])
    browser.get(changed_server["manual grading"])
    wait.until(seen.element_to_be_clickable((By.CSS_SELECTOR, "a[href*='/submissions/']"))).click()
    wait.until(seen.element_to_be_clickable((By.ID, WRITTEN)))
    box = browser.find_element(By.ID, f"{WRITTEN}-comment")
    comment = wait.until(lambda _: box.get_property("value"))  # filled once the API answers
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", box)
    browser.save_screenshot(str(tmp_path / "1-flagged-again.png"))
    assert comment.startswith(OWN + "\n")  # the grader's own words first, kept
    assert f"\n> {PREDICTION}\n" in comment  # the answer graded, beside the new
    assert CHANGED in browser.page_source and CHANGED not in comment  # the new: the cell's
    page = Layout(changed_course).report("changed_answers.md").read_text(encoding="utf-8")
    assert f"\n> {PREDICTION}\n" in page and f"\n> {CHANGED}\n" in page

    wait.until(seen.element_to_be_clickable((By.XPATH, RESOLVE))).click()
    deadline = time.monotonic() + 30
    while _grade(changed_course)[1] and time.monotonic() < deadline:
        time.sleep(0.5)
    browser.save_screenshot(str(tmp_path / "2-resolved.png"))
    assert _grade(changed_course) == (1, False)  # the flag cleared, the score kept
    assert _exported_score(changed_course) == (3, 3)


def test_make_formgrader_names_the_page_of_changed_answers(changed_course, monkeypatch, capsys):
    from grader.term import formgrader

    monkeypatch.chdir(changed_course)  # main moves to grader/; put back after
    started = []
    monkeypatch.setattr(formgrader.os, "execve", lambda *args: started.append(args))
    formgrader.main(Course.open(changed_course), port=free_port())
    shown = dict(line.strip().split(": ", 1) for line in capsys.readouterr().out.splitlines()[:4])
    assert Path(shown["changed answers"]) == Layout(changed_course).report("changed_answers.md")
    assert len(started) == 1
