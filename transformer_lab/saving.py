"""Save a trained model with what it took to make it; load it back.

Notebook 04 saves the mini-GPT it trained beside itself (`mini_gpt.pt`). Notebooks 05 and 06
use that one when it is there (the same runtime), and otherwise the one the course recorded
beside data/baselines.json, so that no notebook needs another notebook's files.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import torch

from .model import GPTConfig, MiniGPT

TRAINED_GPT = Path("mini_gpt.pt")  # beside the notebook


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


def load_trained_gpt(mode: str, device="cpu") -> tuple[MiniGPT, dict, str]:
    """The mini-GPT trained in this runtime by notebook 04 if there is one, else the recorded one
    nearest to this mode and device class; with a sentence that says which it is."""
    from .baselines import baselines_path, nearest_run, run_key

    if TRAINED_GPT.is_file():
        model, info = load_gpt(TRAINED_GPT, device)
        return model, info, f"the mini-GPT you trained in notebook 04 ({info.get('budget')} budget)"
    found = nearest_run(mode, device, has=lambda run: "model" in run["provenance"])
    if found is None:
        raise FileNotFoundError(
            "No trained mini-GPT: neither mini_gpt.pt beside this notebook (run notebook 04 in "
            "this runtime) nor a recorded one in data/ (`make regenerate-baselines`)."
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
    origin = (
        f"the course's recorded mini-GPT (`{key}`: {p['device']}, {p['precision']}, seed "
        f"{info.get('seed')}, {p['date'][:10]}), as no mini_gpt.pt from notebook 04 is here"
    )
    if key != run_key(mode, device):
        origin += f"; nothing is recorded for your `{run_key(mode, device)}`"
    return model, info, origin
