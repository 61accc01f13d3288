import os
from pathlib import Path

import pytest
import torch

from transformer_lab.data import OVERRIDE_ENV, load_corpus

SHARED_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "tinyshakespeare.txt"

# Tests never download: they read the course's copy beside the checkout unless told otherwise.
if not os.environ.get(OVERRIDE_ENV) and SHARED_CORPUS.is_file():
    os.environ[OVERRIDE_ENV] = str(SHARED_CORPUS)


@pytest.fixture(scope="session")
def corpus():
    return load_corpus("cpu")


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
