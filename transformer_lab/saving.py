"""Save a trained model with what it took to make it; load it back (notebook 04 -> notebook 05)."""

from __future__ import annotations

import dataclasses
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
