# %% [markdown]
# # Regenerate `data/baselines.json` on a Colab GPU
#
# For maintainers. This notebook clones the course at the ref below, runs
# `make regenerate-baselines` (papermill executes every solution notebook; `MODE=auto` picks the
# full budget on a GPU), and offers the new `baselines.json` for download. Commit the file with
# the code it was measured with: the provenance inside records the commit, device and versions.
#
# Before running: **Runtime → Change runtime type → T4 GPU**. A full run takes a few minutes per
# seed on a T4.

# %% tags=["parameters"]
REPOSITORY = "@REPOSITORY@"
REF = "@REF@"
SEEDS = "0"  # e.g. "0,1,2"
MODE = "auto"  # auto: full on a GPU

# %%
import subprocess
import sys
from pathlib import Path

clone = Path("/content/transformer-lab")
if not clone.exists():
    subprocess.run(["git", "clone", "--quiet", "--branch", REF, REPOSITORY, str(clone)], check=True)
# Colab's torch stays: the package asks only for torch>=2.1.
subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", f"{clone}[dev]"], check=True)

# %%
subprocess.run(
    [sys.executable, "-m", "transformer_lab.pipeline", "--mode", MODE, "--seeds", SEEDS],
    cwd=clone,
    check=True,
)

# %%
try:
    from google.colab import files

    files.download(str(clone / "data" / "baselines.json"))
except ImportError:
    print(f"Not on Colab: the new file is {clone / 'data' / 'baselines.json'}")
