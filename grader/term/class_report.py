"""The class report for the debrief: per exercise, how many passed, which mistakes, how many not
done, from the autograded notebooks.

    python -m grader class-report    (make class-report)

Each graded check cell of an autograded notebook ends in one of three ways: it passed (no error
output), the exercise was not done (a `NotDoneYet`, code `exN.not_done`), or a check failed with
a mistake code (`ex1.no_sqrt_dk`, declared in checkpoints/codes.py; other errors count as
`other.<ErrorName>`). The code is read from the result the failing check left in the notebook as
data (checkpoints/results.py), not from its message, so rewording a message changes nothing
here. It reads whatever has been graded so far, so it works on a partial run, of the notebooks
course.toml assigns (all released ones by default).

Each mistake is said with one student's diagnosis, whole. Below them, how many handed in the
wrong notebook for one (collect kept it and graded it as neither: collected.py).

Written to reports/: class.md, class.csv (one row per check and outcome), class_pass_rate.png
and class_mistakes.png. They carry no student names, so they can be shown in class; `--names`
writes class_names.md beside them, the same report with the students behind each mistake (the
id, and the name and login where the roster has them), for the instructor only.
"""

from __future__ import annotations

import csv
import json
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from checkpoints import results
from checkpoints.codes import REGISTRY

from . import collected
from .copies import pairs_report
from .course_open import Course
from .names import namer
from .nbgrader_apps import gradebook

PASSED = "passed"
TOP = 5  # mistakes per exercise in the figure


@dataclass
class Check:
    """One graded check cell across the class."""

    assignment: str
    grade_id: str
    outcomes: dict[str, str] = field(default_factory=dict)  # student -> outcome
    scores: list[float] = field(default_factory=list)
    max_score: float = 0.0
    seconds: list[float] = field(default_factory=list)  # job time of the notebook it sits in

    def count(self, outcome: str) -> int:
        return sum(o == outcome for o in self.outcomes.values())

    @property
    def not_done(self) -> int:
        return sum(o.endswith(".not_done") for o in self.outcomes.values())

    def mistakes(self) -> list[tuple[str, int]]:
        counted = Counter(
            o for o in self.outcomes.values() if o != PASSED and not o.endswith(".not_done")
        )
        return counted.most_common()


def outcome(cell) -> tuple[str, str]:
    """(outcome, its message) of one executed graded cell: its check's code, read from the
    result the failing check left as data."""
    errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
    if not errors:
        return PASSED, ""
    failed = [r for r in results.of_cell(cell) if not r.passed]
    if failed:
        return failed[0].code, failed[0].message
    return f"other.{errors[0].ename}", errors[0].evalue.strip()


def _scores(gb) -> dict[tuple[str, str, str], tuple[float, float]]:
    """(student, assignment, grade_id) -> (score, max) from the gradebook; {} without one."""
    found = {}
    for assignment in gb.assignments if gb is not None else []:
        for submission in gb.assignment_submissions(assignment.name):
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    key = (submission.student_id, assignment.name, grade.name)
                    found[key] = (grade.score, grade.max_score)
    return found


def read_checks(course: Course, gb) -> tuple[list[Check], dict[str, str]]:
    """Every graded check of every autograded notebook, and an example message per outcome;
    scores from `gb`, the command's gradebook session (None where the course has none)."""
    layout = course.layout
    scores = _scores(gb)
    checks: dict[tuple[str, str], Check] = {}
    messages: dict[str, str] = {}
    layout.assignments()  # nothing released: say so, and what to run
    counted = course.term.assigned
    for student, assignment, path in layout.students_notebooks("autograded"):
        if assignment not in counted:
            continue
        job = layout.job(student, assignment)
        seconds = json.loads(job.read_text()).get("seconds") if job.is_file() else None
        for cell in nbformat.read(path, 4).cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type != "code" or not meta.get("grade"):
                continue
            check = checks.setdefault(
                (assignment, meta["grade_id"]), Check(assignment, meta["grade_id"])
            )
            result, message = outcome(cell)
            check.outcomes[student] = result
            messages.setdefault(result, message)
            score, out_of = scores.get((student, assignment, meta["grade_id"]), (None, None))
            if score is not None:
                check.scores.append(score)
                check.max_score = max(check.max_score, out_of or 0.0)
            if seconds is not None:
                check.seconds.append(seconds)
    return [checks[key] for key in sorted(checks)], messages


def _median(values: list[float], form: str = "g") -> str:
    return format(statistics.median(values), form) if values else "–"


def diagnosis(code: str, message: str) -> str:
    """The check's message whole, on one line, less the exercise's title that opens it
    ("Exercise 1: "): cut anywhere else, a diagnosis is half a sentence."""
    exercise = REGISTRY.get(code.partition(".")[0])
    if exercise is not None:
        message = message.removeprefix(f"{exercise.title}: ")
    return " ".join(message.split())


def wrong_notebooks(wrong: dict, who=None) -> list[str]:
    """The section on notebooks for which only another was handed in (`wrong`: (student,
    notebook) -> the Kept file, collected.Store.wrong): counted per notebook, or with `who`
    each student named. Empty where there are none."""
    if not wrong:
        return []
    lines = ["", "## Wrong notebook handed in", ""]
    lines += ["Kept by collect and graded as neither (reports/collect.md names the files).", ""]
    if who is not None:
        return lines + [f"- {collected.wrong_said(kept, who)}" for kept in wrong.values()]
    for notebook in sorted({nb for _, nb in wrong}):
        handed = Counter(kept.wrong for (_, nb), kept in wrong.items() if nb == notebook)
        said = ", ".join(f"{other} {n}" for other, n in sorted(handed.items()))
        lines.append(f"- wrong notebook for {notebook}: {handed.total()} ({said})")
    return lines


def markdown(checks: list[Check], messages: dict[str, str], who=None, wrong=None) -> str:
    """The report; `who` (student id -> how to name them) names the students behind each
    mistake, None names no one; `wrong`: (student, notebook) -> the other notebook's file,
    where only another was handed in for one (collected.Store.wrong)."""
    lines = [
        "# Class report" + " (with names: not for class)" * (who is not None),
        "",
        "Per graded check: students graded, pass rate, not done, median score and the median "
        "job time of its notebook; then the mistakes, most frequent first (codes from the "
        "checks' diagnoses).",
        "",
        "| notebook | check | students | passed | not done | median score | median job s |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for c in checks:
        n = len(c.outcomes)
        rate = f"{c.count(PASSED)} ({c.count(PASSED) / n:.0%})" if n else "–"
        score = f"{_median(c.scores)} / {c.max_score:g}" if c.scores else "–"
        lines.append(
            f"| {c.assignment} | {c.grade_id} | {n} | {rate} | {c.not_done} | {score} "
            f"| {_median(c.seconds, '.1f')} |"
        )
    for c in checks:
        mistakes = c.mistakes()
        if not mistakes:
            continue
        lines += ["", f"## {c.assignment} · {c.grade_id}", ""]
        for mistake, count in mistakes:
            named = ""
            if who is not None:
                hit = sorted(s for s, o in c.outcomes.items() if o == mistake)
                named = f" ({', '.join(map(who, hit))})"
            said = diagnosis(mistake, messages[mistake])
            lines.append(f"- **{count}** × `{mistake}`: {said}{named}")
    lines += wrong_notebooks(wrong or {}, who)
    return "\n".join(lines) + "\n"


def write_csv(checks: list[Check], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as file:
        out = csv.writer(file)
        out.writerow(["notebook", "check", "outcome", "students", "of"])
        for c in checks:
            for result, count in Counter(c.outcomes.values()).most_common():
                out.writerow([c.assignment, c.grade_id, result, count, len(c.outcomes)])


def figures(course: Course, checks: list[Check]) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{c.assignment[:2]} {c.grade_id}" for c in checks]
    rates = [c.count(PASSED) / len(c.outcomes) if c.outcomes else 0 for c in checks]
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(checks) + 1.2))
    ax.barh(labels[::-1], rates[::-1], color="tab:green")
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of students whose check passed")
    ax.set_title("Pass rate per check")
    fig.tight_layout()
    pass_rate = course.layout.report("class_pass_rate.png")
    fig.savefig(pass_rate, dpi=120)
    plt.close(fig)

    with_mistakes = [c for c in checks if c.mistakes()]
    fig, axes = plt.subplots(
        max(1, len(with_mistakes)), 1, figsize=(8, 1.6 * max(1, len(with_mistakes)) + 0.5)
    )
    axes = [axes] if not hasattr(axes, "__len__") else list(axes)
    for ax, c in zip(axes, with_mistakes, strict=False):
        top = c.mistakes()[:TOP]
        ax.barh([m for m, _ in top][::-1], [n for _, n in top][::-1], color="tab:red")
        ax.set_title(f"{c.assignment} · {c.grade_id}", fontsize=9)
        ax.xaxis.get_major_locator().set_params(integer=True)
    if not with_mistakes:
        axes[0].text(0.5, 0.5, "no mistakes recorded", ha="center", va="center")
        axes[0].set_axis_off()
    fig.suptitle("Most frequent mistakes (students)")
    fig.tight_layout()
    mistakes = course.layout.report("class_mistakes.png")
    fig.savefig(mistakes, dpi=120)
    plt.close(fig)
    return [pass_rate, mistakes]


NAMED = "class_names.md"  # the report with names, beside the one for class, never over it


def class_report(course: Course, names: bool = False) -> list[Path]:
    """Write reports/class.md, class.csv and the two figures (and, with `names`, class_names.md);
    return their paths."""
    with gradebook(course) as gb:
        checks, messages = read_checks(course, gb)
        who = namer(course, gb) if names else None
    wrong = collected.Store(course).wrong()
    wrong = {pair: kept for pair, kept in wrong.items() if pair[1] in course.term.assigned}
    report = course.layout.report
    report("class.md").parent.mkdir(parents=True, exist_ok=True)
    report("class.md").write_text(markdown(checks, messages, wrong=wrong), encoding="utf-8")
    named = [report(NAMED)] if names else []
    if names:
        report(NAMED).write_text(markdown(checks, messages, who, wrong), encoding="utf-8")
    write_csv(checks, report("class.csv"))
    pictures = figures(course, checks)
    # The copies report names students (for the instructor): reports/copies.md, copies/*.html.
    return [report("class.md"), *named, report("class.csv"), *pictures, *pairs_report(course)]
