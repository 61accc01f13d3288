"""Save a trained model with what it took to make it; load it back.

Notebook 04 saves the mini-GPT it trained beside itself (`mini_gpt.pt`) and, on Colab, offers to
copy it into the student's Google Drive. On Colab every notebook gets a machine of its own, so the
Drive is the one place where 05 and 06 can find that model again (and where the student's code of
01-03 travels, transformer_lab/student.py). A notebook asks once, at its first use of the Drive;
`USE_DRIVE` answers in advance. They look for the student's own
model there first, then beside the notebook (a local Jupyter, where every notebook shares the
folder), and only then take the model the course recorded beside data/baselines.json. Whichever it
is, they are told which run it came from, so that what they show beside it belongs to that run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
from pathlib import Path
from typing import NamedTuple

import torch

from .model import GPTConfig, MiniGPT

TRAINED_GPT = Path("mini_gpt.pt")  # beside the notebook

# Colab mounts the Drive here; the variable lets tests mount a stand-in somewhere harmless.
DRIVE_ENV = "TRANSFORMER_LAB_DRIVE"
DRIVE_MOUNT = "/content/drive"
# Inside the Drive: one fixed folder, so that 04 writes where 05 and 06 read.
DRIVE_FOLDER = Path("MyDrive") / "transformer-lab"
OFF_COLAB = "not on Colab"  # why no Drive was used, where that needs no mention to the student


def save_gpt(model: MiniGPT, path: str | Path = TRAINED_GPT, **info) -> Path:
    """Write weights, configuration and `info` (budget, seed, scores...) to one file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    torch.save({"config": dataclasses.asdict(model.config), "state": state, "info": info}, path)
    return path


def load_gpt(path: str | Path = TRAINED_GPT, device="cpu") -> tuple[MiniGPT, dict]:
    """The saved model in eval mode, and its `info`. FileNotFoundError if there is none."""
    saved = torch.load(Path(path), map_location=device, weights_only=True)
    model = MiniGPT(GPTConfig(**saved["config"])).to(device)
    model.load_state_dict(saved["state"])
    return model.eval(), saved["info"]


def sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# --- Google Drive (Colab only) ------------------------------------------------------------------


def drive_mount() -> Path:
    return Path(os.environ.get(DRIVE_ENV, DRIVE_MOUNT))


def _colab_drive():
    """Colab's `drive` module, or None anywhere else: off Colab nothing here touches a Drive."""
    try:
        from google.colab import drive
    except ImportError:
        return None
    return drive


# One question a notebook, for every use of the Drive in it (the student's code and the model).
QUESTION = (
    f"Use your Google Drive ({DRIVE_FOLDER}) to keep your code and your trained model between "
    "notebooks? On Colab each notebook runs on a machine of its own."
)
_answers: dict[str, bool | None] = {}  # this kernel's answer, once given


def _agrees(question: str) -> bool | None:
    """The student's answer: True for yes, False for no, None where nobody can answer. There
    (papermill, nbgrader, the pipeline's runs on Colab) the kernel refuses input, and nothing is
    mounted: Google's sign-in would wait for a click that never comes."""
    try:
        answer = input(f"{question} [y/N] ")
    except (NotImplementedError, EOFError, OSError):  # IPython's StdinNotImplementedError is one
        return None
    return answer.strip().lower() in ("y", "yes")


def _asked_once() -> bool | None:
    """The student's answer to QUESTION, asked at the first use of the Drive in this kernel."""
    if "drive" not in _answers:
        _answers["drive"] = _agrees(QUESTION)
    return _answers["drive"]


def drive_folder(use_drive: bool | None, writing: bool):
    """(the course's folder in the mounted Drive, None) or (None, why there is none).

    use_drive: True mounts without asking, False never uses the Drive, None asks once a
    notebook. A Drive the student mounted already is read without asking, and written to only
    once they said yes.
    """
    drive = _colab_drive()
    if drive is None:
        return None, OFF_COLAB
    if use_drive is False:
        return None, "USE_DRIVE is False"
    mounted = (drive_mount() / DRIVE_FOLDER.parts[0]).is_dir()
    if use_drive is None and (writing or not mounted):
        answer = _asked_once()
        if answer is None:
            return None, "nobody was there to allow it (USE_DRIVE = True allows it in advance)"
        if not answer:
            return None, "you answered no (USE_DRIVE = True uses it without asking)"
    if not mounted:
        try:
            drive.mount(str(drive_mount()))
        except Exception as error:  # a refused sign-in, a Drive that does not answer
            return None, f"your Google Drive could not be mounted ({error})"
    return drive_mount() / DRIVE_FOLDER, None


def save_to_drive(path: str | Path = TRAINED_GPT, use_drive: bool | None = None) -> str:
    """On Colab, copy the saved model `path` into the student's Drive, as the student allowed
    (asked once a notebook) or `use_drive` says; a sentence that says what happened and what 05
    and 06 will use."""
    folder, why_not = drive_folder(use_drive, writing=True)
    if folder is None:
        if why_not == OFF_COLAB:
            return f"Notebooks 05 and 06 will find {Path(path).name} beside them, in this folder."
        return (
            f"Not saved to your Google Drive: {why_not}. In their own Colab runtimes notebooks 05 "
            "and 06 will use the course's recorded model instead of yours."
        )
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / TRAINED_GPT.name
    shutil.copyfile(path, target)
    # Colab's Drive uploads in the background: flushing now lets the student free this GPU at
    # once (a free account gets one at a time), not a minute later. A later use mounts again.
    _colab_drive().flush_and_unmount()
    return (
        f"Saved a copy to your Google Drive: {DRIVE_FOLDER / TRAINED_GPT.name}, written through "
        "(notebooks 05 and 06 look there first): you may free this runtime when you are done."
    )


# --- Which trained model notebooks 05 and 06 look at -------------------------------------------


class TrainedGPT(NamedTuple):
    model: MiniGPT
    info: dict  # budget, seed, test loss... as saved with the model
    run: str | None  # the recorded run it comes from ("quick/cpu"); None: the student's own
    origin: str  # which model this is, and why this one, as a phrase


def _own_model(use_drive: bool | None) -> tuple[Path | None, str, str]:
    """(path, where it was found, '') of the student's own model, or (None, '', why none)."""
    folder, why_not = drive_folder(use_drive, writing=False)
    missing = []
    if folder is not None:
        if (folder / TRAINED_GPT.name).is_file():
            return folder / TRAINED_GPT.name, f"from your Google Drive ({DRIVE_FOLDER})", ""
        missing.append(f"your Google Drive has no {DRIVE_FOLDER / TRAINED_GPT.name}")
    elif why_not != OFF_COLAB:
        missing.append(f"your Google Drive was not searched: {why_not}")
    if TRAINED_GPT.is_file():
        return TRAINED_GPT, f"saved beside this notebook ({TRAINED_GPT})", ""
    missing.append(f"no {TRAINED_GPT} from notebook 04 is beside this notebook")
    return None, "", "; ".join(missing)


def load_trained_gpt(mode: str, device="cpu", use_drive: bool | None = None) -> TrainedGPT:
    """The student's own mini-GPT from notebook 04 (their Google Drive on Colab, then beside the
    notebook), else the recorded one nearest to this mode and device class, with the run key it
    comes from and a phrase that says which model it is and why."""
    from .baselines import baselines_path, load_baselines, nearest_reason, nearest_run, run_key

    path, where, why_not_own = _own_model(use_drive)
    if path is not None:
        model, info = load_gpt(path, device)
        origin = f"the mini-GPT you trained in notebook 04 ({info.get('budget')} budget), {where}"
        if info.get("pieces"):
            origin += f"; it was built from {info['pieces']}"
        return TrainedGPT(model, info, None, origin)
    baselines = load_baselines()

    def has_model(run):
        return "model" in run["provenance"]

    found = nearest_run(mode, device, has=has_model, baselines=baselines)
    if found is None:
        raise FileNotFoundError(
            f"No trained mini-GPT: {why_not_own}, and none is recorded in data/ "
            "(`make regenerate-baselines`). Run notebook 04 first."
        )
    key, run = found
    recorded = run["provenance"]["model"]
    path = baselines_path().parent / recorded["file"]
    if not path.is_file() or sha256(path) != recorded["sha256"]:
        raise FileNotFoundError(
            f"{path} is missing or is not the file recorded for `{key}` (SHA-256 differs): "
            "fetch the course again."
        )
    model, info = load_gpt(path, device)
    p = run["provenance"]
    reason = nearest_reason(key, run_key(mode, device), "a saved model", baselines)
    origin = (
        f"the course's recorded mini-GPT of run `{key}` ({p['device']}, {p['precision']}, seed "
        f"{info.get('seed')}, {p['date'][:10]}), because {why_not_own}; {reason}"
    )
    return TrainedGPT(model, info, key, origin)
