"""Stop (■) during notebook 04's training, as a student presses it: a real kernel runs 04 at the
smoke budget, the pipeline's own cells in their places with RESULTS set, and is interrupted
(`interrupt_kernel`, the SIGINT the Stop button sends) once the mini-GPT's bar shows a step
taken. The cell ends, keeping the model; every cell below runs on it and says "stopped at step
k of n"; the pipeline's cell refuses to record it; running the cell again starts over."""

from __future__ import annotations

import json
import os
import re
import time

import pytest
from jupyter_client.manager import KernelManager
from notebook_harness import cells
from paths import ROOT

from transformer_lab.runtime import BUDGETS
from transformer_lab.train import stopped_words

pytestmark = pytest.mark.heavy(order=19)

STEPS = BUDGETS["smoke"].steps
PARAMETERS = {"MODE": '"smoke"', "USE_DRIVE": "False"}
TRAINING = "gpt, gpt_history, gpt_row = train_and_score("  # the training cell holds this
TABLE = "display(Markdown(results_markdown(table)))"
# A step shown by the mini-GPT's bar: a widget's value (tqdm in a kernel), or a text bar's "2/30".
TEXT_BAR = re.compile(rf"gpt, seed 0:.*?\|\s*(\d+)/{STEPS}\b")


def notebook_cells(results) -> list[tuple[str, bool]]:
    """(source, the pipeline's own?) of each code cell of 04, as the pipeline runs it at the
    smoke budget (off Colab, without the Drive), with its results file `results`."""
    out = []
    for cell in cells("04_training"):
        if cell.cell_type != "code":
            continue
        tags, source = cell.metadata.get("tags", []), cell.source
        if "parameters" in tags:
            for name, value in PARAMETERS.items():
                source = re.sub(rf"^{name} = .*$", f"{name} = {value}", source, flags=re.M)
        source = source.replace("RESULTS = None", f"RESULTS = {str(results)!r}")
        out.append((source, "maintainer" in tags))
    return out


def first_step_shown(msg: dict) -> bool:
    """Whether an iopub message shows the bar past its first step and short of its last."""
    content = msg["content"]
    if msg["msg_type"] == "comm_msg":
        value = content.get("data", {}).get("state", {}).get("value")
        return isinstance(value, int | float) and 1 <= value < STEPS
    if msg["msg_type"] == "stream":
        return any(1 <= int(n) < STEPS for n in TEXT_BAR.findall(content["text"]))
    return False


class Kernel:
    """A kernel started as Jupyter starts one, its cells run one at a time."""

    def __init__(self, cwd, env):
        self.manager = KernelManager(kernel_name="python3")
        self.manager.start_kernel(cwd=str(cwd), env=env)
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)

    def run(self, source: str, stop_when=None) -> dict:
        """What the cell showed: its text, its Markdown, its error (or None), and when Stop was
        pressed, the first time `stop_when(message)` held."""
        shown = {"text": "", "markdown": "", "error": None, "stopped": None}
        msg_id = self.client.execute(source)
        while True:
            msg = self.client.get_iopub_msg(timeout=120)
            if stop_when and shown["stopped"] is None and stop_when(msg):
                self.manager.interrupt_kernel()
                shown["stopped"] = time.monotonic()
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                shown["text"] += content["text"]
            elif kind in ("display_data", "execute_result"):
                shown["markdown"] += content["data"].get("text/markdown", "")
                shown["text"] += content["data"].get("text/plain", "") + "\n"
            elif kind == "error":
                shown["error"] = f"{content['ename']}: {content['evalue']}"
            elif kind == "status" and content["execution_state"] == "idle":
                return shown

    def close(self):
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """04 run top to bottom, Stop pressed during the mini-GPT's training: each code cell's
    (source, pipeline's?, shown), the results file, the folder and the seconds from Stop to
    the end of the last cell."""
    folder = tmp_path_factory.mktemp("stop")
    results = folder / "results.json"
    env = os.environ | {"PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1"}
    env.pop("TRANSFORMER_LAB_DRIVE", None)
    kernel = Kernel(folder, env)
    ran, refused = [], False
    try:
        for source, pipeline in notebook_cells(results):
            if pipeline and refused:  # the pipeline stops at its first error
                continue
            stop_when = first_step_shown if TRAINING in source else None
            shown = kernel.run(source, stop_when)
            refused |= pipeline and shown["error"] is not None
            ran.append((source, pipeline, shown))
        seconds = time.monotonic() - next(s["stopped"] for *_, s in ran if s["stopped"])
        again = [
            kernel.run(source) for source, _, _ in ran if TRAINING in source or TABLE in source
        ]
    finally:
        kernel.close()
    return {"ran": ran, "results": results, "folder": folder, "seconds": seconds, "again": again}


def _shown(stopped, text: str) -> dict:
    (shown,) = [s for source, _, s in stopped["ran"] if text in source]
    return shown


def _progress(printed: str, model: str) -> str:
    """The last progress line of `model`'s training ("gpt, seed 0: ...")."""
    return [line for line in printed.splitlines() if line.startswith(f"{model}, seed 0:")][-1]


def stop_step(stopped) -> int:
    printed = _shown(stopped, TRAINING)["text"]
    found = re.findall(
        rf"Stopped at step (\d+) of {STEPS} \(gpt, seed 0\): the model keeps what it learned",
        printed,
    )
    assert len(found) == 1, printed
    return int(found[0])


def test_stop_ends_the_training_at_the_step_it_reached(stopped):
    training = _shown(stopped, TRAINING)
    assert training["stopped"] is not None, "the mini-GPT's bar never showed a step"
    assert training["error"] is None
    k = stop_step(stopped)
    assert 0 < k < STEPS
    assert stopped_words(k, STEPS) in _progress(training["text"], "gpt")
    assert "trained in" in _progress(training["text"], "lstm")  # the LSTM trains after it
    print(f"\n04 from Stop to the end of its last cell: {stopped['seconds']:.1f} s")


def test_no_cell_below_raises_and_each_says_stopped(stopped):
    errors = [(source[:60], s["error"]) for source, pipeline, s in stopped["ran"] if s["error"]]
    assert len(errors) == 1, errors  # the pipeline's record of the rows, and nothing else
    k = stop_step(stopped)
    table = _shown(stopped, TABLE)["markdown"]
    assert f"| {k} of {STEPS} × 8, stopped" in table and stopped_words(k, STEPS) in table
    shown = [s["text"] + s["markdown"] for source, _, s in stopped["ran"] if TRAINING not in source]
    # the table, the saving, the reading, the curves' line: each names where Stop ended it
    assert sum(stopped_words(k, STEPS) in said for said in shown) >= 4
    after = "".join(shown)
    assert "Your mini-GPT:" not in after and "Your LSTM:" in after
    saved = json.loads((stopped["folder"] / "mini_gpt_run.json").read_text())
    assert saved["rows"]["gpt"]["stopped_at"] == k and "stopped_at" not in saved["rows"]["lstm"]


def test_nothing_of_the_stopped_run_is_recorded(stopped):
    (refused,) = [s["error"] for _, pipeline, s in stopped["ran"] if pipeline and s["error"]]
    assert refused.startswith("ValueError") and "rows/gpt/" in refused  # the row Stop ended
    recorded = json.loads(stopped["results"].read_text())
    assert set(recorded) == {"rows"} and set(recorded["rows"]) == {"trigram", "5gram"}


def test_running_the_cell_again_starts_over(stopped):
    training, table = stopped["again"]
    assert training["error"] is None and table["error"] is None
    assert "trained in" in _progress(training["text"], "gpt") and "Stopped" not in training["text"]
    assert "stopped" not in table["markdown"] and f"| {STEPS} × 8 |" in table["markdown"]
