"""`make notebooks`: every notebook flavour, built from the single source in solutions/.

solutions/NN_topic.py (jupytext percent: nbgrader metadata in cell headers, nbgrader markers)
  -> COURSE/source/NN_topic/NN_topic.ipynb          nbgrader source: solutions and hidden tests
  -> notebooks/NN_topic.ipynb                       workshop: stubs, hints, checks, folded solutions
  -> COURSE/release/NN_topic/NN_topic.ipynb         graded release (`nbgrader generate_assignment`)
  -> COURSE/publish/NN_topic.ipynb                  the release, to publish for Colab (+ README)

The workshop flavour is made with nbgrader's own ClearSolutions and ClearHiddenTests, with the
stubs of grader/nbgrader_config.py, so it carries the same stubs and grade ids as the release
and either can be autograded.

    python -m maintainer.notebook_build                  # write everything (`make notebooks`)
    python -m maintainer.notebook_build --course C --no-workshop   # source and release only
    python -m maintainer.notebook_build --check          # fail if notebooks/ drifted
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
import tempfile
import tomllib
from pathlib import Path

from grader.course import COURSE, nbgrader_config, release

from . import ROOT

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
    setup = _setup(
        repo,
        ref,
        "# Setup. On Colab: fetch the course at its pinned ref, install its helper package\n"
        "# (Colab's own torch is kept) and work from its notebooks/ folder, where the recorded\n"
        "# baselines and model (../data/) are found. Elsewhere this cell does nothing.\n",
        'f"{course}/notebooks"',
    )
    return nbformat.v4.new_markdown_cell(badge), nbformat.v4.new_code_cell(setup)


def publish_colab_url(publish_url: str, name: str) -> str:
    """Colab's address of the published copy NAME.ipynb, from where the folder is pushed:
    github.com/ORG/REPO/blob/BRANCH[/FOLDER] (https:// optional)."""
    where = publish_url.strip().rstrip("/").removeprefix("https://").removeprefix("http://")
    if not where.startswith("github.com/") or "/blob/" not in where:
        raise ValueError(
            f"--publish-url {publish_url!r}: give the GitHub folder the published notebooks are "
            "pushed to, as github.com/ORG/REPO/blob/BRANCH (a Drive folder has no address to "
            "link: leave it out and share the notebooks from Drive)"
        )
    return f"{COLAB}/github/{where.removeprefix('github.com/')}/{name}.ipynb"


def _graded_header(name: str, config: dict, publish_url: str | None):
    """The graded flavour's header: the badge opens the instructor's published copy (none
    without a publish URL), and the setup cell installs the package without sending the
    student to the repository's notebooks/, whose solutions are folded one click away."""
    import nbformat

    note = (
        "_The graded notebook of this course. Work in it, then hand in the file "
        "(File > Download > Download .ipynb)._"
    )
    if publish_url:
        note = f"{_badge(publish_colab_url(publish_url, name))}\n\n{note}"
    setup = _setup(
        config["repository"].rstrip("/"),
        config["ref"],
        "# Setup. On Colab: fetch the course's helper package and recorded baselines at the\n"
        "# pinned ref, install the package (Colab's own torch is kept) and work from the top of\n"
        "# that copy, where the recorded baselines and model (data/) are found. Elsewhere this\n"
        "# cell does nothing.\n",
        "course",
    )
    return nbformat.v4.new_markdown_cell(note), nbformat.v4.new_code_cell(setup)


def _setup(repo: str, ref: str, comment: str, workdir: str) -> str:
    return (
        comment + "import sys\n\n"
        'if "google.colab" in sys.modules:\n'
        "    import os\n"
        "    import subprocess\n\n"
        '    course = os.path.expanduser("~/transformer-lab")\n'
        "    if not os.path.isdir(course):\n"
        f'        url, ref = "{repo}", "{ref}"\n'
        '        clone = ["git", "clone", "-q", "--depth", "1", "--branch", ref, url, course]\n'
        "        subprocess.run(clone, check=True)\n"
        '        pip = [sys.executable, "-m", "pip", "install", "-q", course]\n'
        "        subprocess.run(pip, check=True)\n"
        f"    os.chdir({workdir})"
    )


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
    not the workshop's.
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
    nb.metadata = nbformat.from_dict(
        {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        }
    )
    if path.stem in config.get("gpu", []):
        nb.metadata["accelerator"] = "GPU"
        nb.metadata["colab"] = {"gpuType": "T4", "provenance": []}
    for i, cell in enumerate(nb.cells):
        cell.metadata.pop("lines_to_next_cell", None)
        cell.id = f"{path.stem[:2]}-{i:03d}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    _fold_reading_afterwards(nb)
    return nb


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
    nb.metadata = nbformat.from_dict(
        {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
            "accelerator": "GPU",
            "colab": {"gpuType": "T4", "provenance": []},
        }
    )
    for i, cell in enumerate(nb.cells):
        cell.metadata.pop("lines_to_next_cell", None)
        cell.id = f"pipeline-{i:03d}"
    return nb


def _solution_fold(source: str, nbformat):
    code = SOLUTION_MARKERS.sub("", source).rstrip()
    return nbformat.v4.new_markdown_cell(
        f"<details><summary>Solution</summary>\n\n```python\n{code}\n```\n\n</details>"
    )


def workshop_notebook(source_nb):
    """Stubs and visible checks (nbgrader's preprocessors), a folded solution under each check."""
    import nbformat
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

    nb = copy.deepcopy(source_nb)
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


def write(nb, path: Path) -> None:
    import nbformat

    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.validate(nb)
    path.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")


PUBLISH_README = """# The course's graded notebooks, to publish

These are the notebooks students open and hand in: nbgrader's release (no solutions, no hidden
tests), one file each. Publish this folder where students can open it in Colab, and give them
the links; never send them to the lab repository's notebooks/, whose solutions are folded one
click below each exercise.

{where}

Rebuild with `make release` after a change to solutions/; the files here are overwritten.
"""
PUBLISH_WHERE = """Each notebook's "Open in Colab" badge opens {url}/NN_topic.ipynb: push
this folder's notebooks there (that folder of a repository of your own, on that branch)."""
NO_PUBLISH_URL = """The notebooks carry no "Open in Colab" badge, since no address was given. Either
push this folder to a GitHub repository of your own and rebuild with
`make release PUBLISH_URL=github.com/ORG/REPO/blob/main` (the badges then open that copy), or
upload the folder to Google Drive and share each notebook (Open with > Google Colaboratory)."""


def publish(names: list[str], course: Path, publish_url: str | None = None) -> Path:
    """COURSE/publish/: the released notebooks, flat, with a README on where they go."""
    folder = Path(course) / "publish"
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        released = Path(course) / "release" / name / f"{name}.ipynb"
        (folder / f"{name}.ipynb").write_bytes(released.read_bytes())
    url = publish_url.strip().rstrip("/") if publish_url else None
    where = PUBLISH_WHERE.format(url=url) if url else NO_PUBLISH_URL
    (folder / "README.md").write_text(PUBLISH_README.format(where=where), encoding="utf-8")
    return folder


def build(
    notebooks_dir: Path | None = NOTEBOOKS,
    course: Path = COURSE,
    with_release: bool = True,
    only: list[str] | None = None,
    publish_url: str | None = None,
) -> list[str]:
    """Write the nbgrader source of every notebook (or `only` these), the workshop notebooks
    and the Colab pipeline notebook (unless notebooks_dir is None), then nbgrader's release and
    its copy to publish (publish/)."""
    names = []
    for path in sources():
        if only and path.stem not in only:
            continue
        # The graded flavours' header differs from the workshop's: it never links notebooks/.
        graded = source_notebook(path, graded=True, publish_url=publish_url)
        write(graded, Path(course) / "source" / path.stem / f"{path.stem}.ipynb")
        if notebooks_dir is not None:
            workshop = workshop_notebook(source_notebook(path))
            write(workshop, Path(notebooks_dir) / f"{path.stem}.ipynb")
        names.append(path.stem)
    if notebooks_dir is not None:  # beside this file, in a checkout or in a drift check's copy
        colab = Path(notebooks_dir).parent / "maintainer" / f"{COLAB_PIPELINE.stem}.ipynb"
        write(colab_pipeline_notebook(), colab)
    if with_release:
        release(names, course)
        publish(names, course, publish_url)
    return names


def drift() -> list[str]:
    """Names of committed workshop notebooks that differ from a fresh build (or are missing)."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "notebooks"
        names = build(fresh, Path(tmp) / "course", with_release=False)
        expected = {f"{n}.ipynb" for n in names}
        committed = {p.name for p in NOTEBOOKS.glob("*.ipynb")}
        changed = [
            n
            for n in sorted(expected)
            if n not in committed or (fresh / n).read_text() != (NOTEBOOKS / n).read_text()
        ]
        return changed + sorted(committed - expected)


def main() -> None:
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
    args = parser.parse_args()
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
    built = build(notebooks_dir, args.course, not args.no_release, args.only, args.publish_url)
    for name in built:
        workshop = "" if args.no_workshop else f" and notebooks/{name}.ipynb"
        print(f"built {name} in {args.course}/{{source,release}}{workshop}")
    if not args.no_release:
        print(f"to publish for students: {args.course / 'publish'} (its README says where)")


if __name__ == "__main__":
    main()
