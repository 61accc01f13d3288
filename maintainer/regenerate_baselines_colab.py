# %% [markdown]
# # Regenerate `data/baselines.json` on a Colab GPU
#
# For maintainers. This notebook clones the course at the ref below, runs
# `make regenerate-baselines` (papermill executes every solution notebook; `MODE=auto` picks the
# full budget on a GPU), and offers the new `baselines.json` and the trained model beside it
# for download. Commit the file with
# the code it was measured with: the provenance inside records the commit, device and versions.
#
# Before running: **Runtime → Change runtime type → T4 GPU**. A full run takes a few minutes per
# seed on a T4.

# %% tags=["parameters"]
REPOSITORY = "@REPOSITORY@"
REF = "@REF@"
SEEDS = ""  # "": the seeds recorded for this mode and GPU again; or e.g. "0,1,2"
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

# %% [markdown]
# The pipeline prints each notebook's lines as they come, the training bars among them (model,
# step, loss, time left): this cell shows them while it runs.

# %%
seeds = ["--seeds", SEEDS] if SEEDS else []
command = [sys.executable, "-u", "-m", "maintainer.pipeline", "--mode", MODE, *seeds]
with subprocess.Popen(
    command, cwd=clone, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
) as pipeline:
    for line in pipeline.stdout:
        print(line, end="", flush=True)
if pipeline.returncode:
    raise SystemExit(f"The pipeline stopped with exit status {pipeline.returncode}: see above.")

# %%
new = [clone / "data" / "baselines.json", *sorted((clone / "data").glob("mini_gpt-*.pt"))]
try:
    from google.colab import files

    for path in new:
        files.download(str(path))
except ImportError:
    print("Not on Colab: the new files are", ", ".join(map(str, new)))
