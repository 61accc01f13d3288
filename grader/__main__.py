"""`python -m grader COMMAND`: the instructor's grading workflow on top of nbgrader.

    python -m grader roster students.csv     the class (nbgrader's, Canvas's or Moodle's CSV)
    python -m grader collect SUBMISSIONS     a folder or zip of downloads -> submitted/
    python -m grader collect-pin ID NB HASH  choose which kept file of a notebook counts
    python -m grader autograde               preflight, execute, score -> gradebook; lateness
    python -m grader release                 build from solutions/, release, carry an errata
    python -m grader feedback                HTML per student, hidden tests left out
    python -m grader export                  reports/grades.csv, gradesheet.csv, canvas_import.csv
    python -m grader class-report            reports/class.md: pass rates and common mistakes
    python -m grader formgrader              nbgrader's formgrader: grade the written answer
    python -m grader override keep|clear ID NB GRADE_ID   an override set aside: count it again,
                                             or let the autograde stand

feedback and export leave a notebook whose written answer is not graded by hand yet without a
score, and say whose; --partial writes its partial score, marked so.

Every command takes --course (default $TRANSFORMER_LAB_COURSE, else ~/transformer-lab-course),
opens it once (its course.toml read and checked: grader/term/course_open.py) and writes what it
did to reports/: collect's table, autograde's scores table, the class report. autograde and
release grade by one EngineOptions (grader/engine/options.py): course.toml's [autograde] table,
the command line's options winning. release builds the notebooks from solutions/ by the
maintainer's build (maintainer/notebook_build.py) and releases them (grader/term/release.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .course import COURSE, COURSE_ENV, MEMORY_GB, GradingError
from .engine import autograde as engine
from .engine.options import NOTEBOOK_TIMEOUT, EngineOptions
from .term import canvas, errata, gradesheet, hand_grading, nbgrader_apps, overrides, scores
from .term import collect as collecting
from .term.bundles import bundle_feedback
from .term.collected import pin_command
from .term.course_open import Course
from .term.export import export
from .term.formgrader import main as formgrader
from .term.names import namer
from .term.release import build_and_release
from .term.roster import dropped, import_roster


def add_engine_options(command) -> None:
    """The engine's options (EngineOptions), for every command that grades: each left None
    where not given, so that course.toml's [autograde] table and then the defaults apply."""
    command.add_argument(
        "--workers", type=int, help="jobs at a time (default: course.toml, else the cores)"
    )
    command.add_argument(
        "--cell-timeout", type=int, help="seconds (default: course.toml, else nbgrader_config.py)"
    )
    command.add_argument(
        "--notebook-timeout",
        type=int,
        help=f"seconds (default: course.toml, else {NOTEBOOK_TIMEOUT})",
    )
    command.add_argument(
        "--memory-gb",
        type=float,
        help=f"a job's memory cap (default: course.toml, else {MEMORY_GB:g})",
    )
    command.add_argument(
        "--scheduler", help="run the jobs on a Dask cluster: its scheduler, tcp://HOST:PORT"
    )
    command.add_argument(
        "--sandbox",
        action=argparse.BooleanOptionalAction,
        help="--no-sandbox: run notebooks without bubblewrap, with your own rights (trusted "
        "notebooks only); --sandbox: with it, whatever course.toml says",
    )


def add_autograde(commands) -> None:
    """`autograde`'s options: the engine's, and which submissions."""
    auto = commands.add_parser(
        "autograde", help="grade everything in submitted/, then settle lateness"
    )
    add_engine_options(auto)
    auto.add_argument(
        "--force", action="store_true", default=None, help="regrade unchanged submissions too"
    )
    auto.add_argument("--student", nargs="+", help="only these students")
    auto.add_argument("--notebook", nargs="+", help="only these notebooks (NN_topic)")
    # nbgrader's word for a notebook, for hands used to `nbgrader autograde --assignment`.
    auto.add_argument("--assignment", nargs="+", dest="notebook", help=argparse.SUPPRESS)


def add_release(commands) -> None:
    """`release`'s options: which notebooks, an errata's route, the publish URL, and the
    engine's, for an errata's regrade."""
    release = commands.add_parser(
        "release",
        help="build the notebooks from solutions/ and release them (source/, release/, "
        "publish/), staged and swapped in once all of it succeeded; an errata regraded",
    )
    release.add_argument("--notebook", nargs="+", help="only these notebooks (NN_topic)")
    release.add_argument(
        "--errata",
        choices=(errata.CARRY, errata.REFUSE),
        default=errata.CARRY,
        help="a graded cell added or removed in a notebook with submissions: carry it out "
        "(hand grades saved, the notebook rebuilt in the gradebook and regraded, each hand grade "
        "of an unchanged answer put back; the default) or refuse the release",
    )
    release.add_argument(
        "--publish-url",
        help="where COURSE/publish/ is pushed, github.com/ORG/REPO/blob/BRANCH: the graded "
        "notebooks' Colab badge opens it (default: the one course.toml keeps; none without)",
    )
    add_engine_options(release)


def add_collect(commands) -> None:
    """`collect`'s options: whose the files are, when and what for they were handed in."""
    collect = commands.add_parser("collect", help="sort downloaded notebooks into submitted/")
    collect.add_argument("submissions", type=Path, help="a folder or a zip file")
    collect.add_argument(
        "--pattern",
        help="a regular expression whose (?P<student>...) group names the student in a file "
        "name (default: course.toml's [collect] pattern)",
    )
    collect.add_argument(
        "--student", help="whose every file is (an emailed notebook): id, SIS login or email"
    )
    collect.add_argument(
        "--submitted-at",
        metavar="TIME",
        help="when every file was handed in, ISO 8601 (2027-01-15T14:00, in course.toml's "
        "timezone unless it has an offset); wins over any time a name, zip or file gives",
    )
    collect.add_argument(
        "--times",
        type=Path,
        metavar="CSV",
        help="the LMS's own hand-in times: Canvas's submissions API as CSV (user_id, "
        "assignment_id or assignment, submitted_at[, attachment_ids]); with attachment_ids, "
        "also what each upload was handed in for, as --notebook",
    )
    collect.add_argument(
        "--notebook",
        metavar="NN_topic",
        help="what every file was handed in for (Canvas's zip of one assignment): a file that "
        "is another notebook is kept as the wrong notebook, graded as neither",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--course",
        type=Path,
        default=COURSE,
        help=f"the nbgrader course folder (default: ${COURSE_ENV}, else {COURSE})",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    add_collect(commands)
    pin = commands.add_parser(
        "collect-pin", help="choose which kept file of a notebook counts, or list them"
    )
    pin.add_argument("student")
    pin.add_argument("notebook")
    pin.add_argument("hash", nargs="?", help="(a prefix of) its SHA-256; none: list the files")
    pin.add_argument("--unpin", action="store_true", help="back to the rule: the newest counts")
    roster = commands.add_parser("roster", help="load the class list into the gradebook")
    roster.add_argument("csv", type=Path, help="nbgrader's student CSV, or Canvas's or Moodle's")
    add_autograde(commands)
    add_release(commands)
    form = commands.add_parser("formgrader", help="nbgrader's formgrader on the course")
    form.add_argument("--port", type=int, help="default: a free port")
    override = commands.add_parser(
        "override",
        help="an override set aside because its answer changed: keep it (it counts again) or "
        "clear it (the autograde stands); both stay on record in hand_grades.jsonl",
    )
    override.add_argument("action", choices=overrides.ACTIONS)
    override.add_argument("student")
    override.add_argument("notebook", help="NN_topic")
    override.add_argument("grade_id", help="the check's grade id, as the report names it")
    add_reports(commands)
    return parser


PARTIAL_HELP = (
    "write the partial score of a notebook whose written answer is not graded by hand yet "
    "(it counts 0), marked so; default: no score until it is"
)


def add_reports(commands) -> None:
    """What goes back to students, the LMS and the class: feedback, export, class-report."""
    feedback = commands.add_parser(
        "feedback", help="HTML feedback in feedback/, hidden tests left out"
    )
    feedback.add_argument("--partial", action="store_true", help=PARTIAL_HELP)
    export = commands.add_parser("export", help="the gradebook as CSV")
    export.add_argument("--to", type=Path, help="default: COURSE/reports/grades.csv")
    export.add_argument("--partial", action="store_true", help=PARTIAL_HELP)
    export.add_argument(
        "--canvas-export",
        type=Path,
        metavar="CSV",
        help='Canvas\'s gradebook export: its columns of our notebooks, "01_attention (7001)", '
        "head canvas_import.csv from now on, so that it updates those assignments",
    )
    export.add_argument(
        "--dropped",
        choices=gradesheet.DROPPED_CHOICES,
        default=gradesheet.LEAVE_OUT,
        help="students no longer on the class list (make roster): left out of the files "
        "(default), or kept",
    )
    report = commands.add_parser("class-report", help="the class report of common mistakes")
    report.add_argument(
        "--names",
        action="store_true",
        help="also reports/class_names.md, naming the students behind each mistake (not for "
        "class; class.md stays without names)",
    )


def collect_command(args: argparse.Namespace, course: Course) -> None:
    found = collecting.collect(
        course,
        args.submissions,
        pattern=args.pattern,
        student=args.student,
        submitted_at=args.submitted_at,
        times=args.times,
        notebook=args.notebook,
    )
    print(found.summary)


def collect_pin_command(args: argparse.Namespace, course: Course) -> None:
    print(pin_command(course, args.student, args.notebook, args.hash, args.unpin))


def roster_command(args: argparse.Namespace, course: Course) -> None:
    rows, new = import_roster(course, args.csv)
    canvas.keep_columns_of_roster(course, args.csv)
    print(f"{rows} students on the roster ({new} new) in {course.layout.gradebook}")
    kept = course.layout.roster.name
    print(f"collect now files notebooks only under them; the list is kept as {kept}")
    left = dropped(course)
    if left:
        with nbgrader_apps.gradebook(course) as gb:
            named = ", ".join(map(namer(course, gb), left))
        print(
            f"no longer on the class list, {len(left)} (their work stays in the gradebook and the "
            f"course folder; export leaves them out unless --dropped keep): {named}"
        )


def autograde_command(args: argparse.Namespace, course: Course) -> None:
    options = EngineOptions.build(course.term.autograde, args)
    outcomes = scores.autograde(course, options, args.student, args.notebook)
    print(scores.summary(outcomes))
    with nbgrader_apps.gradebook(course) as gb:
        said = hand_grading.regraded(outcomes, namer(course, gb))
    if said:
        print(said)
    print(f"report: {course.layout.report('autograde.md')}")


def release_command(args: argparse.Namespace, course: Course) -> None:
    options = EngineOptions.build(course.term.autograde, args)
    for line in build_and_release(course, args.notebook, args.publish_url, args.errata, options):
        print(line)
    print(f"to publish for students: {course.layout.step('publish')} (its README says where)")


def feedback_command(args: argparse.Namespace, course: Course) -> None:
    with hand_grading.notes_aside(course):  # a grader's note on a changed answer: not theirs
        nbgrader_apps.feedback(course)
    print(f"feedback in {course.layout.step('feedback')}")
    with nbgrader_apps.gradebook(course) as gb:  # after nbgrader's feedback: its one session
        pending = hand_grading.waiting(gb, course.term.assigned)
        written = hand_grading.written_answers(gb, course.term.assigned)
        who = namer(course, gb)
    bundles = bundle_feedback(course, pending, args.partial)  # a dropped student's page too
    print(f"{len(bundles)} feedback bundles in {course.layout.report('feedback_bundles')}")
    gone = set(dropped(course))  # no hand grade to ask for: they left the class list
    pending = {key: ids for key, ids in pending.items() if key[0] not in gone}
    said = hand_grading.summary(pending, args.partial, who, written)
    if said:
        print(said)


def class_report_command(args: argparse.Namespace, course: Course) -> None:
    # Here, not at the top: it reads the checks' results, and importing checkpoints imports
    # torch, a second of start-up no other command needs.
    from .term.class_report import class_report

    for path in class_report(course, names=args.names):
        print(f"wrote {path}")


def formgrader_command(args: argparse.Namespace, course: Course) -> None:
    formgrader(course, args.port)


def override_command(args: argparse.Namespace, course: Course) -> None:
    print(overrides.override(course, args.action, args.student, args.notebook, args.grade_id))


def export_command(args: argparse.Namespace, course: Course) -> None:
    target = (args.to or course.layout.report("grades.csv")).resolve()
    for line in export(course, target, args.partial, args.canvas_export, args.dropped):
        print(line)


COMMANDS = {
    "collect": collect_command,
    "collect-pin": collect_pin_command,
    "roster": roster_command,
    "autograde": autograde_command,
    "release": release_command,
    "feedback": feedback_command,
    "class-report": class_report_command,
    "formgrader": formgrader_command,
    "override": override_command,
    "export": export_command,
}


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        # Opened once: every step of the command goes by this course.toml, even if it changes.
        COMMANDS[args.command](args, Course.open(args.course.resolve()))
    except engine.Interrupted as stop:
        # Ctrl-C is expected here: one line on what was kept, no traceback, the shell's 128 + 2.
        print(f"grader {args.command}: {stop}", file=sys.stderr)
        sys.exit(130)
    except GradingError as err:
        sys.exit(f"grader {args.command}: {err}")


if __name__ == "__main__":
    main()
