"""Save a trained model with what it took to make it; load it back.

Notebook 04 saves the mini-GPT it trained beside itself (`mini_gpt.pt`) and, on Colab, copies it
into the student's Google Drive. On Colab every notebook gets a machine of its own, so the Drive
is the one place where 05 and 06 can find that model again (and where the student's code of 01-03
travels, transformer_lab/student.py). Each notebook decides once, in its setup cell, as its
`USE_DRIVE` says (`use_drive`: Google's consent appears there, before any exercise); every later
use of the Drive follows that decision and asks nothing. 05 and 06 look for the student's own
model there first, then beside the notebook (a local Jupyter, where every notebook shares the
folder), and only then take the model the course recorded beside data/baselines.json, at the full
budget where one is recorded, whatever budget the runtime's device would train at. Whichever it
is, they are told its budget (as its own file says) and the run it came from, so that what they
show beside it belongs to that run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
from pathlib import Path
from typing import NamedTuple

import torch

from .baselines import baselines_path, device_class, nearest_run
from .model import GPTConfig, MiniGPT
from .runtime import BUDGETS

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


# Why the Drive is not used, as a clause of the sentences that say so.
DECLINED = "USE_DRIVE is False"
GRADING = "the notebook is being graded"
# This kernel's decision, made once (the setup cell's use_drive): (folder, None) or (None, why).
_decision: tuple[Path | None, str | None] | None = None


def _mounted(drive) -> tuple[Path | None, str | None]:
    """The course's folder in the Drive, mounted first where it is not: the first mount of a
    runtime shows Google's consent (the account, then the access) under the running cell."""
    if not (drive_mount() / DRIVE_FOLDER.parts[0]).is_dir():
        try:
            drive.mount(str(drive_mount()))
        except Exception as error:  # a refused consent, a Drive that does not answer
            return None, f"your Google Drive could not be mounted ({error})"
    return drive_mount() / DRIVE_FOLDER, None


def _decide(wanted: bool) -> tuple[Path | None, str | None]:
    """Off Colab nothing; while grading nothing (nobody signs in to Google there, and the mount
    would wait for ever); else the mounted Drive if `wanted`. A run nobody attends on Colab (the
    pipeline) passes USE_DRIVE = False."""
    drive = _colab_drive()
    if drive is None:
        return None, OFF_COLAB
    if os.environ.get("NBGRADER_EXECUTION"):
        return None, GRADING
    if not wanted:
        return None, DECLINED
    return _mounted(drive)


def _said(folder: Path | None, why_not: str | None) -> str:
    """The setup cell's one line on Colab: where the code and model are kept, or why not."""
    if folder is not None:
        return (
            "Using your Google Drive: your code and your trained model are kept in "
            f"{DRIVE_FOLDER}/, where every notebook looks for them."
        )
    apart = (
        "your code and model from the other notebooks are not read (the course's stand in for "
        "them), and what you do here stays on this machine"
    )
    if why_not == DECLINED:
        return (
            f"Not using your Google Drive ({DECLINED}): {apart}. To use it, set USE_DRIVE = True "
            "in the cell above and run it, then this cell."
        )
    return (
        f"{why_not[0].upper()}{why_not[1:]}: {apart}. Run this cell again and allow the access in "
        "Google's window, or set USE_DRIVE = False in the cell above to go on without it."
    )


def use_drive(wanted: bool = True) -> None:
    """The setup cell's decision about the Drive, for the whole notebook: on Colab, mount it
    now if `wanted` (Google asks for consent here, not under a checkpoint), and say in one line
    where the code and model will be kept, or why not. Off Colab it does nothing."""
    global _decision
    _decision = _decide(wanted)
    if _decision[1] not in (OFF_COLAB, GRADING):  # no Drive to speak of; no student to read
        print(_said(*_decision))


def drive_folder(use_drive: bool | None, writing: bool):
    """(the course's folder in the mounted Drive, None) or (None, why there is none), as this
    kernel decided in its setup cell, for reading and `writing` alike. Never asks: where no
    setup cell ran, `use_drive` decides now (None: the notebooks' default, yes), once. A Drive
    that save_to_drive flushed and unmounted is mounted again."""
    global _decision
    if _decision is None:
        _decision = _decide(use_drive is not False)
    if _decision[0] is None:
        return _decision
    return _mounted(_colab_drive())


def save_to_drive(
    path: str | Path = TRAINED_GPT, use_drive: bool | None = None, also: tuple = ()
) -> str:
    """On Colab, copy the saved model `path`, and the files `also` saved beside it (notebook 04's
    run), into the student's Drive, as the setup cell decided (or `use_drive` says, where it did
    not); a sentence that says what happened and what 05 and 06 will use."""
    folder, why_not = drive_folder(use_drive, writing=True)
    if folder is None:
        if why_not == OFF_COLAB:
            return f"Notebooks 05 and 06 will find {Path(path).name} beside them, in this folder."
        return (
            f"Not saved to your Google Drive: {why_not}. In their own Colab runtimes notebooks 05 "
            "and 06 will use the course's recorded model instead of yours."
        )
    folder.mkdir(parents=True, exist_ok=True)
    for saved in (path, *also):
        shutil.copyfile(saved, folder / Path(saved).name)
    # Colab's Drive uploads in the background: flushing now lets the student free this GPU at
    # once (a free account gets one at a time), not a minute later. A later use mounts again.
    _colab_drive().flush_and_unmount()
    copies = " and ".join(str(DRIVE_FOLDER / Path(saved).name) for saved in (path, *also))
    return (
        f"Saved a copy to your Google Drive: {copies}, written through "
        "(notebooks 05 and 06 look there first): you may free this runtime when you are done."
    )


# --- Which trained model notebooks 05 and 06 look at -------------------------------------------


class TrainedGPT(NamedTuple):
    model: MiniGPT
    info: dict  # budget, seed, test loss... as saved with the model
    run: str | None  # the recorded run it comes from ("full/cpu"); None: the student's own
    origin: str  # which model this is, and why this one, as a phrase

    @property
    def budget(self) -> str | None:
        """The budget the model was trained at, as its own file says (save_gpt's `info`)."""
        return self.info.get("budget")


# The recorded model shown where the student's own is not found: the lecture's budget, whose
# heads have taken shape (a quick model's later layers still spread their weight almost evenly),
# whatever budget this runtime's device would train at.
SHOWN_BUDGET = "full"


def trained_at(info: dict) -> str:
    """'at the full budget (3,000 steps)': the budget a saved model's file names."""
    budget = BUDGETS.get(info.get("budget"))
    if budget is None:
        return "at a budget its file does not name"
    return f"at the {budget.name} budget ({budget.steps:,} steps)"


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


def load_trained_gpt(device="cpu", use_drive: bool | None = None) -> TrainedGPT:
    """The student's own mini-GPT from notebook 04 (their Google Drive on Colab, then beside the
    notebook), else the one the course recorded at the full budget (the quick one where no full
    one is recorded), of the student's device class or the nearest: with the run key it comes
    from and a phrase that says which model it is, at the budget its file names, and why."""
    path, where, why_not_own = _own_model(use_drive)
    if path is not None:
        model, info = load_gpt(path, device)
        origin = f"the mini-GPT you trained in notebook 04 {trained_at(info)}, {where}"
        if info.get("pieces"):
            origin += f"; it was built from {info['pieces']}"
        return TrainedGPT(model, info, None, origin)
    key, run, path = _recorded_model(device, why_not_own)
    model, info = load_gpt(path, device)
    return TrainedGPT(model, info, key, _recorded_origin(key, run, info, device, why_not_own))


def _recorded_model(device, why_not_own: str) -> tuple[str, dict, Path]:
    """(run key, run, model file) of the recorded model shown: SHOWN_BUDGET's where recorded."""
    found = nearest_run(SHOWN_BUDGET, device, has=lambda run: "model" in run["provenance"])
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
    return key, run, path


def _recorded_origin(key: str, run: dict, info: dict, device, why_not_own: str) -> str:
    """Which recorded model this is (its budget as its file says, where and when it was
    recorded) and why it is the one shown."""
    p = run["provenance"]
    machine = "a CPU" if p["device"] == "cpu" else p["device"]
    origin = (
        f"the course's mini-GPT trained {trained_at(info)}, recorded on {machine} at commit "
        f"{p['git_commit'][:10]} (run `{key}`, seed {info.get('seed')}, {p['date'][:10]}), "
        f"because {why_not_own}"
    )
    if info.get("budget") != SHOWN_BUDGET:
        origin += f"; no model is recorded at the {SHOWN_BUDGET} budget"
    own = device_class(device)
    if run["device_class"] != own:
        origin += f"; your device class, {own}, has no recorded model at this budget"
    return origin
