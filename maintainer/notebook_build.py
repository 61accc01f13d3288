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

This builds; the term's release is grader/term/release.py's (`python -m grader release`, `make
release`): the graded source notebooks and publish/'s own files (the student wheel, its README)
are handed over to it, in this process (`build`), or in a folder for that command's process
(`--hand-over`). It stages the release beside the course folder, says what changed against the
gradebook, carries out or refuses an errata, and swaps it in only once all of it succeeded.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
import tempfile
import tomllib
from pathlib import Path

from grader.course import COURSE, GradingError, Layout, nbgrader_config
from grader.engine.options import EngineOptions
from grader.term import errata
from grader.term.course_open import Course
from grader.term.release import COLAB, Built, publish_url_for, release, unchanged
from grader.term.settings import published_folder
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


def published_files(publish_url: str | None) -> dict[str, bytes]:
    """publish/'s own files, beside the released notebooks the release puts there: the student
    wheel their setup cell installs, and a README on where they go."""
    with tempfile.TemporaryDirectory(prefix="tl-wheel-") as tmp:
        wheel = build_wheel(Path(tmp))
        files = {wheel.name: wheel.read_bytes()}
    url = publish_url.strip().rstrip("/") if publish_url else None
    if url:
        where = PUBLISH_WHERE.format(url=url, wheel_url=published_wheel(url))
    else:
        where = NO_PUBLISH_URL.format(wheel=wheel.name)
    readme = PUBLISH_README.format(where=where, wheel=wheel.name)
    return files | {"README.md": readme.encode("utf-8")}


def build(
    notebooks_dir: Path | None = NOTEBOOKS,
    course: Path = COURSE,
    with_release: bool = True,
    only: list[str] | None = None,
    publish_url: str | None = None,
    errata_route: str = errata.CARRY,
    options: EngineOptions | None = None,
) -> list[str]:
    """Write the workshop notebooks and the Colab pipeline notebook (unless notebooks_dir is
    None), and build the graded source of every notebook (or `only` these); then hand them over
    to the term's release (grader/term/release.py: `errata_route`, and `options`, the engine's,
    course.toml's where None), or without a release write them into the course's source/. What
    to print."""
    layout = Layout(Path(course))
    publish_url = publish_url_for(layout, publish_url)
    graded = graded_notebooks(notebooks_dir, only, publish_url)
    workshop = "" if notebooks_dir is None else " and notebooks/"
    said = [f"built {name} in {course}/{{source,release}}{workshop}" for name in graded]
    if not with_release:
        for name, nb in graded.items():
            write(nb, layout.notebook("source", name))
        return said
    opened = Course.open(layout.root)
    options = options or EngineOptions.build(opened.term.autograde, argparse.Namespace())
    built = Built(graded, published_files(publish_url), publish_url)
    done = release(opened, built, errata_route, options)
    return done if done == unchanged(graded) else said + done


def graded_notebooks(notebooks_dir: Path | None, only, publish_url: str | None) -> dict:
    """The graded source notebook of every notebook (or `only` these), name -> notebook; and,
    unless notebooks_dir is None, its workshop notebook and the Colab pipeline notebook
    written."""
    import nbformat

    known = [path.stem for path in sources()]
    unknown = sorted(set(only or ()) - set(known))
    if unknown:
        raise GradingError(f"no solutions/{unknown[0]}.py: the notebooks are {', '.join(known)}")
    graded = {}
    for path in sources():
        if only and path.stem not in only:
            continue
        # The graded flavours' header differs from the workshop's: it never links notebooks/.
        graded[path.stem] = source_notebook(path, graded=True, publish_url=publish_url)
        nbformat.validate(graded[path.stem])
        if notebooks_dir is not None:
            workshop = workshop_notebook(source_notebook(path), path.stem)
            write(workshop, Path(notebooks_dir) / f"{path.stem}.ipynb")
    if notebooks_dir is not None:  # beside this file, in a checkout or in a drift check's copy
        colab = Path(notebooks_dir).parent / "maintainer" / f"{COLAB_PIPELINE.stem}.ipynb"
        write(colab_pipeline_notebook(), colab)
    return graded


def hand_over(folder: Path, course: Path, only, publish_url: str | None) -> None:
    """`--hand-over FOLDER`, for `python -m grader release`: the graded source notebooks and
    publish/'s own files built into FOLDER (grader.term.release.Built), the course untouched."""
    publish_url = publish_url_for(Layout(Path(course)), publish_url)
    graded = graded_notebooks(None, only, publish_url)
    Built(graded, published_files(publish_url), publish_url).write(folder)


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
        "--hand-over",
        type=Path,
        metavar="FOLDER",
        help="build the graded notebooks and the wheel into FOLDER for `python -m grader "
        "release`, and release nothing",
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
        if args.hand_over:
            hand_over(args.hand_over, args.course, args.only, args.publish_url)
            return
        said = build(notebooks_dir, args.course, not args.no_release, args.only, args.publish_url)
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
