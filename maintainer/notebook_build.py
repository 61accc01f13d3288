"""`make notebooks`: every notebook flavour, built from the single source in solutions/.

solutions/NN_topic.py (jupytext percent: nbgrader metadata in cell headers, nbgrader markers)
  -> COURSE/source/NN_topic/NN_topic.ipynb          nbgrader source: solutions and hidden tests
  -> notebooks/NN_topic.ipynb                       workshop: stubs, hints, checks, folded solutions
  -> COURSE/release/NN_topic/NN_topic.ipynb         graded release (`nbgrader generate_assignment`)
  -> COURSE/publish/NN_topic.ipynb                  the release, to publish for Colab (+ README)
  -> COURSE/publish/transformer_lab-V-py3-none-any.whl   what its setup cell installs on Colab

The workshop flavour is made with nbgrader's own ClearSolutions and ClearHiddenTests, with the
stubs of grader/nbgrader_config.py, so it carries the same stubs and grade ids as the release
and either can be autograded.

    python -m maintainer.notebook_build                  # write everything (`make notebooks`)
    python -m maintainer.notebook_build --course C --no-workshop   # source and release only
    python -m maintainer.notebook_build --check          # fail if notebooks/ drifted

A release into a course folder is built beside it and swapped in only once all of it succeeded
(grader/term/nbgrader_apps.staged): a failure leaves the course folder as it was. Against the
gradebook it says what changed for each notebook; a graded cell added or removed under
submissions is carried out by the kit, or refused with --errata refuse (grader/term/errata.py).
The first release writes a commented course.toml where there is none.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from grader.course import COURSE, GradingError, Layout, nbgrader_config
from grader.engine.autograde import isolation
from grader.term import errata
from grader.term.course_open import Course
from grader.term.nbgrader_apps import release, staged
from grader.term.settings import publish_url as kept_publish_url
from grader.term.settings import published_folder, starting_file, with_publish_url
from transformer_lab.hand_in import YOUR_ANSWER, YOUR_CODE

from . import ROOT
from .setup_cell import FORM, graded_setup, tags, workshop_setup
from .student_package import build_wheel, wheel_name

SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"
COLAB_PIPELINE = Path(__file__).with_name("regenerate_baselines_colab.py")

# Cells with this tag belong to the baselines pipeline (recording measurements, extra seeds):
# papermill runs them from solutions/, and no student flavour carries them.
MAINTAINER_TAG = "maintainer"
# A section a student reads after the lab: its heading's title starts so (core_minutes skips it).
READ_AFTERWARDS = re.compile(r"^(optional|after the lab)\b", re.IGNORECASE)
HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
SOLUTION_MARKERS = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*(\n|$)", re.MULTILINE)
COLAB = "https://colab.research.google.com"


def settings() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["transformer-lab"][
        "notebooks"
    ]


def sources() -> list[Path]:
    return sorted(SOLUTIONS.glob("[0-9][0-9]_*.py"))


def _badge(target: str) -> str:
    return f"[![Open In Colab]({COLAB}/assets/colab-badge.svg)]({target})"


def _header(name: str, config: dict):
    import nbformat

    repo, ref = config["repository"].rstrip("/"), config["ref"]
    github_path = repo.removeprefix("https://github.com/")
    badge = _badge(f"{COLAB}/github/{github_path}/blob/{ref}/notebooks/{name}.ipynb")
    setup = nbformat.v4.new_code_cell(workshop_setup(repo, ref), metadata=dict(FORM))
    return nbformat.v4.new_markdown_cell(badge), setup


def publish_colab_url(publish_url: str, name: str) -> str:
    """Colab's address of the published copy NAME.ipynb, from where the folder is pushed:
    github.com/ORG/REPO/blob/BRANCH[/FOLDER] (https:// optional)."""
    return f"{COLAB}/github/{_published_folder(publish_url)}/{name}.ipynb"


def _published_folder(publish_url: str) -> str:
    """ORG/REPO/blob/BRANCH[/FOLDER] of a publish URL, or ValueError saying what to give."""
    where = published_folder(publish_url)
    if where is None:
        raise ValueError(
            f"--publish-url {publish_url!r}: give the GitHub folder the published notebooks are "
            "pushed to, as github.com/ORG/REPO/blob/BRANCH (a Drive folder has no address to "
            "link: leave it out and share the notebooks from Drive)"
        )
    return where


def published_wheel(publish_url: str | None) -> str:
    """Where the graded setup cell installs the student wheel from: the published folder's raw
    file (GitHub's /raw/ address), or without a publish URL the bare file name, which the
    student uploads into the runtime's working folder."""
    if not publish_url:
        return wheel_name()
    raw = _published_folder(publish_url).replace("/blob/", "/raw/", 1)
    return f"https://github.com/{raw}/{wheel_name()}"


def _graded_header(name: str, config: dict, publish_url: str | None):
    """The graded flavour's header: the badge opens the instructor's published copy (none
    without a publish URL), and the setup cell installs the student wheel published beside it,
    never a clone of the course repository (whose solutions/ and notebooks/ hold the answers)."""
    import nbformat

    note = (
        "_The graded notebook of this course. Work in it; when you are done, run its last cell, "
        "**Before you hand in**, then hand in the file it names (File > Download > Download "
        ".ipynb)._"
    )
    if publish_url:
        note = f"{_badge(publish_colab_url(publish_url, name))}\n\n{note}"
    setup = graded_setup(published_wheel(publish_url), bool(publish_url))
    setup = nbformat.v4.new_code_cell(setup, metadata=dict(FORM))
    return nbformat.v4.new_markdown_cell(note), setup


HAND_IN_HEADING = """## Before you hand in

Run the next cell when you are done: it reads this notebook as the grader will read it, runs each
check again, and says whether the file is ready to hand in, or what to fix first."""
HAND_IN = """{title}
from checkpoints.hand_in import before_you_hand_in

# {about}: your code, your
# written answers and the checks (their code, as the grader runs it).
before_you_hand_in(
    "{name}",
    {{
{cells}
    }},{workshop}
)"""
# The workshop's (self-study) flavour ends with the same check, handing nothing in: it says
# whether every exercise is done and passes its check, the visible checks alone.
COMPLETE_HEADING = """## Is this notebook complete?

Run the next cell when you are done: it reads this notebook, runs each check again, and says
whether every exercise is done, or what to fix first."""
HAND_IN_TITLE = "#@title Before you hand in: run this cell last, then download the notebook"
HAND_IN_ABOUT = "The graded cells of this notebook as handed out, which the grader expects"
COMPLETE_TITLE = "#@title Is this notebook complete? Run this cell last"
COMPLETE_ABOUT = "The cells of this notebook's exercises, as the grader of the course expects"


def _hand_in_cells(nb, name: str, graded: bool = True) -> list:
    """The hand-in check, before the closing cell of a notebook: a heading of its own (a folded
    "After the lab" above never hides it), and its cell, with the graded cells it expects
    written into its call (checkpoints/hand_in.py): from this build, as the release is, the
    hidden tests cleared as nbgrader clears them. `graded` False: the workshop's, which hands
    nothing in."""
    import nbformat
    from nbgrader.preprocessors import ClearHiddenTests

    expected = {}
    for i, cell in enumerate(nb.cells):
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            expected[meta["grade_id"]] = YOUR_CODE if cell.cell_type == "code" else YOUR_ANSWER
        elif meta.get("grade"):  # a check: what the release shows of it, as nbgrader clears it
            shown, _ = ClearHiddenTests().preprocess_cell(copy.deepcopy(cell), {}, i)
            expected[meta["grade_id"]] = shown.source.strip()
    cells = "\n".join(
        f"        {json.dumps(grade_id)}: {json.dumps(what, ensure_ascii=False)},"
        for grade_id, what in expected.items()
    )
    if graded:
        heading, title, about, workshop = HAND_IN_HEADING, HAND_IN_TITLE, HAND_IN_ABOUT, ""
    else:
        heading, title, about = COMPLETE_HEADING, COMPLETE_TITLE, COMPLETE_ABOUT
        workshop = "\n    graded=False,"
    code = HAND_IN.format(title=title, about=about, name=name, cells=cells, workshop=workshop)
    return [
        nbformat.v4.new_markdown_cell(heading),
        nbformat.v4.new_code_cell(code, metadata=dict(FORM)),
    ]


def source_notebook(
    path: Path,
    maintainer: bool = False,
    config: dict | None = None,
    graded: bool = False,
    publish_url: str | None = None,
):
    """The solution file as a notebook, with badge and setup.

    maintainer: keep the pipeline's cells (tagged "maintainer"), as papermill runs them.
    config: the [tool.transformer-lab.notebooks] settings (repository, ref), default pyproject's.
    graded: the nbgrader source's header (the published copy's badge, if publish_url is given),
    not the workshop's, and the hand-in check before the closing cell.
    """
    import jupytext
    import nbformat

    nb = jupytext.read(path)
    if not maintainer:
        nb.cells = [c for c in nb.cells if MAINTAINER_TAG not in c.metadata.get("tags", [])]
    config = config or settings()
    if graded:
        badge, setup = _graded_header(path.stem, config, publish_url)
    else:
        badge, setup = _header(path.stem, config)
    nb.cells[1:1] = [badge, setup]  # after the title
    trains = path.stem in config.get("gpu", [])
    if graded:
        nb.cells += _hand_in_cells(nb, path.stem)
    nb.cells.append(nbformat.v4.new_markdown_cell(closing(trains)))
    nb.metadata = nbformat.from_dict(colab_metadata(trains))
    for i, cell in enumerate(nb.cells):
        cell.metadata.pop("lines_to_next_cell", None)
        cell.id = f"{path.stem[:2]}-{i:03d}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    _fold_reading_afterwards(nb)
    return nb


def colab_metadata(gpu: bool) -> dict:
    """The notebook's metadata as Colab writes it: a T4 runtime is `accelerator` GPU with
    `colab.gpuType` T4; a CPU runtime is the absence of both, which Colab opens as CPU."""
    metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "colab": {"provenance": []},
    }
    if gpu:
        metadata["accelerator"] = "GPU"
        metadata["colab"]["gpuType"] = "T4"
    return metadata


# The closing cell: a heading of its own, so that a folded "After the lab" above never hides it.
CLOSING = """## When you are done

**Runtime → Disconnect and delete runtime** releases the machine{what}.{why}"""
CLOSING_GPU = (
    "\n\nA free account gets one GPU at a time: release this T4 before you open the next "
    "notebook, which runs on a CPU. Your model is in your Drive if you let this notebook copy it."
)


def closing(gpu: bool) -> str:
    """The lecture's last step, at the end of every notebook: each runs on a machine of its own."""
    return CLOSING.format(what=" (a T4 GPU here)" if gpu else "", why=CLOSING_GPU if gpu else "")


def _opens_afterwards(cell) -> bool:
    heading = HEADING.match(cell.source.partition("\n")[0])
    return bool(heading and READ_AFTERWARDS.match(heading.group(2)))


def _fold_reading_afterwards(nb) -> None:
    """The sections a student reads after the lab open folded (JupyterLab, classic Jupyter and
    Colab each keep that in their own metadata), so the core path is what shows."""
    folded = [cell for cell in nb.cells if cell.cell_type == "markdown" and _opens_afterwards(cell)]
    for cell in folded:
        cell.metadata["jp-MarkdownHeadingCollapsed"] = True
        cell.metadata["heading_collapsed"] = True
        cell.metadata["id"] = cell.id  # Colab names a cell by its metadata id
    if folded:
        colab = nb.metadata.setdefault("colab", {"provenance": []})
        colab["collapsed_sections"] = [cell.id for cell in folded]


def colab_pipeline_notebook():
    """The maintainers' Colab notebook that runs the baselines pipeline on a GPU."""
    import jupytext
    import nbformat

    config = settings()
    text = COLAB_PIPELINE.read_text(encoding="utf-8")
    text = text.replace("@REPOSITORY@", config["repository"]).replace("@REF@", config["ref"])
    nb = jupytext.reads(text, fmt="py:percent")
    nb.metadata = nbformat.from_dict(colab_metadata(gpu=True))
    for i, cell in enumerate(nb.cells):
        cell.metadata.pop("lines_to_next_cell", None)
        cell.id = f"pipeline-{i:03d}"
    return nb


def _solution_fold(source: str, nbformat):
    code = SOLUTION_MARKERS.sub("", source).rstrip()
    return nbformat.v4.new_markdown_cell(
        f"<details><summary>Solution</summary>\n\n```python\n{code}\n```\n\n</details>"
    )


def workshop_notebook(source_nb, name: str | None = None):
    """Stubs and visible checks (nbgrader's preprocessors), a folded solution under each check,
    and before the closing cell the check of whether the notebook is complete. `name`: the
    notebook's (NN_topic), else found from its cells' ids."""
    import nbformat
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

    nb = copy.deepcopy(source_nb)
    name = name or _name_of(nb)
    complete = _hand_in_cells(nb, name, graded=False)
    for i, cell in enumerate(complete):
        cell.id = f"{name[:2]}-complete{i}"
    nb.cells[-1:-1] = complete  # before the closing cell
    solutions = {
        cell.id: cell.source
        for cell in nb.cells
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution")
    }
    resources = {"language": "python"}
    nb, _ = ClearSolutions(config=nbgrader_config()).preprocess(nb, resources)
    nb, _ = ClearHiddenTests().preprocess(nb, resources)
    cells, pending = [], []
    for cell in nb.cells:
        cells.append(cell)
        if cell.id in solutions:
            pending.append(solutions[cell.id])
        elif cell.metadata.get("nbgrader", {}).get("grade") and pending:
            for i, solution in enumerate(pending):
                fold = _solution_fold(solution, nbformat)
                fold.id = f"{cell.id}-solution{i}"
                cells.append(fold)
            pending = []
    if pending:
        raise ValueError("a solution cell has no checkpoint cell after it")
    nb.cells = cells
    return nb


def _name_of(source_nb) -> str:
    """The solutions file a source notebook was built from, by its cells' ids (NN-000)."""
    number = source_nb.cells[0].id.partition("-")[0]
    (name,) = [path.stem for path in sources() if path.stem[:2] == number]
    return name


def write(nb, path: Path) -> None:
    import nbformat

    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.validate(nb)
    path.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")


PUBLISH_README = """# The course's graded notebooks, to publish

These are the notebooks students open and hand in: nbgrader's release (no solutions, no hidden
tests), one file each, and {wheel}, the one package their setup cell installs on
Colab (the helper package, the checks and the recorded data; no solutions, no workshop
notebook). Publish this folder, the wheel with the notebooks, where students can open it in
Colab, and give them the links; never send them to the lab repository's notebooks/, whose
solutions are folded one click below each exercise.

{where}

Rebuild with `make release` after a change to solutions/; the files here are overwritten.
"""
PUBLISH_WHERE = """Each notebook's "Open in Colab" badge opens {url}/NN_topic.ipynb: push
this folder's notebooks there (that folder of a repository of your own, on that branch), and
the wheel beside them: their setup cell installs it from {wheel_url}."""
NO_PUBLISH_URL = """The notebooks carry no "Open in Colab" badge, since no address was given. Either
push this folder to a GitHub repository of your own and rebuild with
`make release PUBLISH_URL=github.com/ORG/REPO/blob/main` (the badges then open that copy), or
upload the folder to Google Drive and share each notebook (Open with > Google Colaboratory).
Without an address the setup cell installs {wheel} from the runtime's working folder: give
students the wheel with the notebook, and they upload it there (its message says how)."""


def publish(names: list[str], course: Path, publish_url: str | None = None) -> Path:
    """COURSE/publish/: the released notebooks, flat, the student wheel their setup cell installs,
    and a README on where they go."""
    layout = Layout(Path(course))
    folder = layout.step("publish")
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        released = layout.notebook("release", name)
        layout.published(f"{name}.ipynb").write_bytes(released.read_bytes())
    wheel = build_wheel(folder).name
    url = publish_url.strip().rstrip("/") if publish_url else None
    if url:
        where = PUBLISH_WHERE.format(url=url, wheel_url=published_wheel(url))
    else:
        where = NO_PUBLISH_URL.format(wheel=wheel)
    readme = PUBLISH_README.format(where=where, wheel=wheel)
    layout.published("README.md").write_text(readme, encoding="utf-8")
    return folder


def build(
    notebooks_dir: Path | None = NOTEBOOKS,
    course: Path = COURSE,
    with_release: bool = True,
    only: list[str] | None = None,
    publish_url: str | None = None,
    **release_options,
) -> list[str]:
    """Write the nbgrader source of every notebook (or `only` these), the workshop notebooks
    and the Colab pipeline notebook (unless notebooks_dir is None), then nbgrader's release and
    its copy to publish (publish/): release_course, which takes `release_options`. What to
    print."""
    known = [path.stem for path in sources()]
    unknown = sorted(set(only or ()) - set(known))
    if unknown:
        raise GradingError(f"no solutions/{unknown[0]}.py: the notebooks are {', '.join(known)}")
    publish_url = publish_url_for(Layout(Path(course)), publish_url)
    graded = {}
    for path in sources():
        if only and path.stem not in only:
            continue
        # The graded flavours' header differs from the workshop's: it never links notebooks/.
        graded[path.stem] = source_notebook(path, graded=True, publish_url=publish_url)
        if notebooks_dir is not None:
            workshop = workshop_notebook(source_notebook(path), path.stem)
            write(workshop, Path(notebooks_dir) / f"{path.stem}.ipynb")
    if notebooks_dir is not None:  # beside this file, in a checkout or in a drift check's copy
        colab = Path(notebooks_dir).parent / "maintainer" / f"{COLAB_PIPELINE.stem}.ipynb"
        write(colab_pipeline_notebook(), colab)
    workshop = "" if notebooks_dir is None else " and notebooks/"
    said = [f"built {name} in {course}/{{source,release}}{workshop}" for name in graded]
    if not with_release:
        for name, nb in graded.items():
            write(nb, Layout(Path(course)).notebook("source", name))
        return said
    done = release_course(Layout(Path(course)), graded, publish_url, **release_options)
    return done if done == unchanged(graded) else said + done


def publish_url_for(layout: Layout, given: str | None) -> str | None:
    """The publish URL a release builds with: the one given, else the one course.toml keeps
    (written by the first release given one), so that a release never changes the published
    notebooks' badge and setup cell by leaving it out. Where none was ever kept and publish/
    carries badges (built before course.toml kept it), refused in one line."""
    if given:
        return given
    kept = kept_publish_url(layout)
    if kept:
        return kept
    badge = _badge_opens(layout)
    if badge:
        raise GradingError(
            f"release refused: the published notebooks' Colab badge opens {badge}, and no "
            "publish URL is given or kept in course.toml; give it once, `make release "
            f"PUBLISH_URL={badge}`, and course.toml keeps it for every later release (to publish "
            f"without a badge, remove {layout.step('publish')} first). {UNCHANGED}"
        )
    return None


def _badge_opens(layout: Layout) -> str | None:
    """The publish URL that a published notebook's Colab badge opens (github.com/ORG/REPO/blob/
    BRANCH[/FOLDER]); None where publish/ holds no badge."""
    opens = re.compile(rf"\({re.escape(COLAB)}/github/(\S+)/[^/\s]+\.ipynb\)")
    for path in sorted(layout.step("publish").glob("*.ipynb")):
        found = opens.search(path.read_text(encoding="utf-8"))
        if found:
            return f"github.com/{found[1]}"
    return None


def release_course(
    layout: Layout,
    graded: dict,
    publish_url: str | None = None,
    errata_route: str = errata.CARRY,
    sandboxed: bool = True,
) -> list[str]:
    """The nbgrader source, release and publish/ of the `graded` notebooks (name -> source
    notebook), built beside the course folder and swapped in only when all of it succeeded;
    what changed against the gradebook, each notebook nbgrader cannot change in place carried
    out (grader/term/errata.py) unless `errata_route` is "refuse"; a commented course.toml where
    there is none. What to print."""
    try:
        with staged(layout) as staging:
            done = _release_staged(staging, graded, publish_url, errata_route, sandboxed)
            if _changes_nothing(staging, graded, done[0]):
                raise _Unchanged  # leaves the staging folder, swapping nothing in
    except _Unchanged:
        return unchanged(graded)
    except KeyboardInterrupt:
        raise GradingError(f"release interrupted (Ctrl-C). {UNCHANGED}") from None
    except GradingError as err:
        said = str(err)
        after = "\n" if "\n" in said else " "  # a one-line refusal stays one line
        raise GradingError(f"{said}{after}{UNCHANGED}") from None
    try:
        course = Course.open(layout.root)
    except GradingError as err:  # course.toml: the release is in place, its report waits
        return [f"released; not reported, nor logged: {err}"]
    return errata.report(course, *done)


UNCHANGED = "Nothing in the course folder was changed."


def unchanged(names) -> list[str]:
    """What a release that changes nothing says."""
    return [f"{name}: unchanged since the last release; nothing written" for name in names]


class _Unchanged(Exception):
    """A release that would write what the course folder holds already: nothing is swapped in."""


def _changes_nothing(staging, graded: dict, changes: list) -> bool:
    """Whether the staged release is the course's, file for file and byte for byte (the
    gradebook aside, which nbgrader writes again either way), and the gradebook knows each
    notebook with its graded cells as they are."""
    known = {c.notebook for c in changes if not c.graded}
    if known != set(graded):
        return False
    parts = [(mine, staged) for mine, staged in staging.parts if mine != staging.course.gradebook]
    return all(_files(mine) == _files(staged) for mine, staged in parts)


def _files(path: Path) -> dict[str, bytes] | None:
    """A file's bytes, or a folder's files by their path in it; None where there is nothing."""
    if path.is_file():
        return {"": path.read_bytes()}
    if not path.is_dir():
        return None
    return {str(f.relative_to(path)): f.read_bytes() for f in path.rglob("*") if f.is_file()}


def _release_staged(staging, graded: dict, publish_url, errata_route: str, sandboxed: bool):
    """release_course's work in the staging folder: (the changes, the regrade's outcomes, the
    hand grades carried, its seconds, the sandbox it ran in)."""
    stage, names = staging.layout, list(graded)
    changes = errata.plan(stage, graded)
    refused = errata.refusal(changes) if errata_route == errata.REFUSE else ""
    if refused:
        raise GradingError(refused)
    for name, nb in graded.items():
        write(nb, stage.notebook("source", name))
    rebuilt = [change for change in changes if change.rebuilds]
    isolated = isolation(sandboxed) if rebuilt else ""  # no sandbox: stops here, said why
    for change in rebuilt:
        staging.take_notebook(change.notebook, change.submissions)
    carried = errata.set_aside(stage, rebuilt)
    release(stage, names)
    errata.keep_history(staging, names)
    publish(names, stage.root, publish_url)
    started = time.monotonic()
    outcomes = errata.regrade(stage, rebuilt, carried, sandboxed=sandboxed)
    seconds = time.monotonic() - started
    _keep_settings(stage, publish_url)
    return changes, outcomes, carried, seconds, isolated


def _keep_settings(stage: Layout, publish_url: str | None) -> None:
    """A commented course.toml where there is none; the publish URL built with kept in it, so
    that a later release without one rebuilds the same published notebooks. A course.toml that
    keeps it already is left byte for byte as it is."""
    path = stage.settings
    text = path.read_text(encoding="utf-8") if path.is_file() else starting_file()
    kept = with_publish_url(text, publish_url) if publish_url else text
    if kept != text or not path.is_file():
        path.write_text(kept, encoding="utf-8")


def drift() -> list[str]:
    """Names of committed workshop notebooks that differ from a fresh build (or are missing)."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "notebooks"
        build(fresh, Path(tmp) / "course", with_release=False)
        names = [path.stem for path in sources()]
        expected = {f"{n}.ipynb" for n in names}
        committed = {p.name for p in NOTEBOOKS.glob("*.ipynb")}
        changed = [
            n
            for n in sorted(expected)
            if n not in committed or (fresh / n).read_text() != (NOTEBOOKS / n).read_text()
        ]
        return changed + sorted(committed - expected)


def command_line() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report drift; exit 1 if any")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="build these notebooks only")
    parser.add_argument("--no-release", action="store_true", help="skip nbgrader's release")
    parser.add_argument("--course", type=Path, default=COURSE, help="the nbgrader course folder")
    parser.add_argument(
        "--no-workshop", action="store_true", help="only the nbgrader source and release"
    )
    parser.add_argument(
        "--publish-url",
        help="where COURSE/publish/ is pushed, github.com/ORG/REPO/blob/BRANCH: the graded "
        "notebooks' Colab badge opens it (none without)",
    )
    parser.add_argument(
        "--errata",
        choices=(errata.CARRY, errata.REFUSE),
        default=errata.CARRY,
        help="a graded cell added or removed in a notebook with submissions: carry it out "
        "(hand grades saved, the notebook rebuilt in the gradebook and regraded, each hand grade "
        "of an unchanged answer put back; the default) or refuse the release",
    )
    parser.add_argument(
        "--no-sandbox",
        action="store_true",
        help="regrade an errata's submissions without bubblewrap (trusted notebooks only)",
    )
    return parser


def main() -> None:
    args = command_line().parse_args()
    if args.publish_url:
        try:
            publish_colab_url(args.publish_url, "check")
        except ValueError as err:
            sys.exit(str(err))
    if args.check:
        changed = drift()
        if changed:
            sys.exit(
                f"notebooks/ is out of date with solutions/: {', '.join(changed)}. "
                "Run `make notebooks` and commit the result."
            )
        print("notebooks/ matches solutions/")
        return
    notebooks_dir = None if args.no_workshop else NOTEBOOKS
    try:
        said = build(
            notebooks_dir,
            args.course,
            not args.no_release,
            args.only,
            args.publish_url,
            errata_route=args.errata,
            sandboxed=not args.no_sandbox,
        )
    except GradingError as err:
        sys.exit(str(err))
    print("\n".join(said))
    if not args.no_release:
        publish = Layout(args.course).step("publish")
        print(f"to publish for students: {publish} (its README says where)")
    ref = settings()["ref"]
    if notebooks_dir is not None and ref not in tags():  # the workshop's setup cell clones it
        print(
            f"warning: the notebooks' ref {ref} names no tag of this repository, so the workshop "
            f"setup cell cannot clone it: `git tag {ref}` the release commit and push the tag",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
