"""The written answer graded by hand in a real browser: headless Chromium (Debian's `chromium`
and `chromium-driver`, driven by Selenium) opens the formgrader's Manual Grading page of
04_training on a course autograded here (its job standing in for a run of the solution), opens
the one submission, gives the written prediction its point, and `export` then counts it. The
server is rooted at the course folder and its log holds none of nbgrader's exchange or
configuration warnings. A screenshot of every page visited is kept in the test's temporary
folder."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import executing, grader_cli

from grader.course import GRADER, Layout
from grader.engine import autograde as engine
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


@pytest.fixture(scope="module")
def graded_course(tmp_path_factory) -> Path:
    course = tmp_path_factory.mktemp("formgrader") / "course"
    release(course)
    downloads = tmp_path_factory.mktemp("downloads")
    nb = perfect(course, MANUAL)
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == "ex4_prediction":
            cell["source"] = PREDICTION
    write(downloads / "ada" / f"{MANUAL}.ipynb", nb)
    collect.collect(Course.open(course), downloads)
    # Our own solution, every check passing: the job stands in for its run (the formgrader,
    # not the execution, is the point here).
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "run_job", executing())
        (outcome,) = autograde(Course.open(course), progress=False, sandboxed=False)
    assert outcome.needs_manual == 1
    return course


# What nbgrader logged on every page before the course had an exchange and a configuration
# it can show (issue 26).
ALARMS = ("Unwritable directory", "not serializable", "exchange directory does not exist")


@pytest.fixture
def server(graded_course, tmp_path):
    port, token = free_port(), "formgrader-test-token"
    log = tmp_path / "server.log"
    process = subprocess.Popen(
        server_command(Course.open(graded_course), port, token),
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
    yield pages
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=webdriver.ChromeService(DRIVER), options=options)
    yield driver
    driver.quit()


def _manual_score(course: Path) -> float | None:
    from nbgrader.api import Gradebook

    with Gradebook(Layout(course).db_url) as gb:
        notebook = gb.find_submission_notebook(MANUAL, MANUAL, "ada")
        return notebook.grades[
            [g.name for g in notebook.grades].index("ex4_prediction")
        ].manual_score


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
    score = wait.until(seen.element_to_be_clickable((By.ID, "ex4_prediction")))
    assert PREDICTION in browser.page_source  # the answer being graded is on the page
    browser.save_screenshot(str(tmp_path / "2-submission.png"))
    score.clear()
    score.send_keys("1", Keys.TAB)  # leaving the field saves it
    deadline = time.monotonic() + 30
    while _manual_score(graded_course) != 1 and time.monotonic() < deadline:
        time.sleep(0.5)
    browser.save_screenshot(str(tmp_path / "3-scored.png"))
    assert _manual_score(graded_course) == 1

    browser.get(server["formgrader"])  # Manage Assignments: where the configuration was shown
    wait.until(seen.presence_of_element_located((By.PARTIAL_LINK_TEXT, MANUAL)))
    browser.save_screenshot(str(tmp_path / "4-manage-assignments.png"))
    log = server["log"].read_text()
    assert not [line for line in log.splitlines() if any(a in line for a in ALARMS)], log[-3000:]

    assert grader_cli(graded_course, "export").returncode == 0
    rows = list(csv.DictReader((graded_course / "reports" / "grades.csv").open()))
    (row,) = [r for r in rows if r["student_id"] == "ada" and r["assignment"] == MANUAL]
    assert float(row["score"]) == float(row["max_score"]) == 3  # 2 autograded + 1 by hand
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
