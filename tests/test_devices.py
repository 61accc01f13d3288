"""A GPU session, tested without a GPU: `checkpoints._devices.other_device()` makes the CPU play
both a GPU (`DEVICE`, cpu:0) and the host, and refuses to mix them as CUDA does.

First what the stand-in does (each slip a T4 showed, refused here as there); then the package's
sampling, which draws the same windows and text whatever the device; then every notebook's
provided cells, run with their model on the stand-in GPU (heavy: each notebook at MODE grade)."""

import contextlib
import io
import json
import re

import matplotlib.pyplot as plt
import pytest
import torch
from notebook_harness import code_cells
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

import transformer_lab as tl
from checkpoints._devices import DEVICE, DeviceMismatch, on_host, other_device
from maintainer import notebook_build
from transformer_lab.baselines import baselines_path

pytestmark = pytest.mark.heavy(order=9)
SAME_DEVICE = "Expected all tensors to be on the same device"


def hint_without_device(A):
    """Exercise 5 as its first hint had it: the offsets made from torch.arange(T)."""
    positions = torch.arange(A.shape[-1])
    return (A * (positions[:, None] - positions[None, :])).sum(-1).mean(-1)


def test_the_hints_slip_fails_on_the_gpu_as_on_a_t4_though_a_cpu_passes_it():
    A = torch.softmax(torch.randn(2, 4, 6, 6), dim=-1)
    assert hint_without_device(A).shape == (2, 4)  # a CPU run: nothing to see
    with other_device(), pytest.raises(DeviceMismatch, match=SAME_DEVICE) as failure:
        hint_without_device(A)
    assert "cpu:0 and cpu" in str(failure.value)


def test_tensors_on_the_gpu_mix_only_with_cpu_scalars():
    with other_device():
        x = torch.ones(3, device=DEVICE)
        host = torch.ones(3)
        assert (x.device, host.device) == (DEVICE, torch.device("cpu"))
        assert (x * torch.tensor(2.0)).device == DEVICE  # a 0-d CPU tensor is a scalar
        assert torch.arange(3, device=x.device).device == DEVICE
        with pytest.raises(DeviceMismatch, match=SAME_DEVICE):
            x + host
        with pytest.raises(DeviceMismatch, match=SAME_DEVICE):
            torch.nn.Linear(3, 2)(x)  # a module never moved to the GPU
        layer = torch.nn.Linear(3, 2).to(DEVICE)
        assert layer(x).device == DEVICE and layer.weight.device == DEVICE


def test_copies_across_work_and_moving_copies():
    with other_device():
        host = torch.zeros(4)
        moved = host.to(DEVICE)
        assert moved.device == DEVICE and on_host(host)
        moved[1:3] = torch.ones(2)  # assignment copies across, as on CUDA
        assert moved.tolist() == [0.0, 1.0, 1.0, 0.0] and host.tolist() == [0.0] * 4
        back = moved.cpu()
        assert back.device == torch.device("cpu") and back.numpy().sum() == 2
        with pytest.raises(TypeError, match="Use Tensor.cpu"):
            moved.numpy()


def test_a_generator_draws_only_for_its_own_device_and_another_stream_there():
    with other_device():
        host = torch.Generator().manual_seed(0)
        gpu = torch.Generator(device=DEVICE).manual_seed(0)
        assert gpu.device == DEVICE and host.device == torch.device("cpu")
        with pytest.raises(DeviceMismatch, match="device type for generator"):
            torch.randint(100, (8,), generator=host, device=DEVICE)
        on_gpu = torch.randint(100, (8,), generator=gpu, device=DEVICE)
        on_cpu = torch.randint(100, (8,), generator=host)
    assert not torch.equal(on_gpu, on_cpu)  # as CUDA's and the CPU's generators differ
    assert torch.Generator is torch._C.Generator  # put back on leaving


def test_inside_itself_it_changes_nothing():
    with other_device():
        x = torch.ones(2, device=DEVICE)
        with other_device():
            assert x.device == DEVICE
            with pytest.raises(DeviceMismatch):
                x + torch.ones(2)


def test_batches_and_windows_do_not_depend_on_the_device(corpus):
    on_cpu, _ = tl.sample_batch(corpus.val, 16, 128, torch.Generator().manual_seed(0))
    with other_device():
        val = corpus.val.to(DEVICE)
        on_gpu, _ = tl.sample_batch(val, 16, 128, torch.Generator().manual_seed(0))
        assert on_gpu.device == DEVICE
        gpu_generator = torch.Generator(device=DEVICE).manual_seed(0)
        gpu_drawn, _ = tl.sample_batch(val, 16, 128, gpu_generator)
    assert torch.equal(on_gpu, on_cpu)
    assert not torch.equal(gpu_drawn, on_cpu)  # what notebook 05 drew on a T4 before


def test_a_seed_samples_the_same_text_on_every_device():
    torch.manual_seed(0)
    model = tl.MiniGPT(tl.GPTConfig(n_layers=1)).eval()
    on_cpu = tl.generate(model, [1, 2, 3], 30, temperature=0.8, seed=0)
    with other_device():
        on_gpu = tl.generate(model.to(DEVICE), [1, 2, 3], 30, temperature=0.8, seed=0)
    assert on_gpu.ids == on_cpu.ids


def test_scores_are_the_same_on_every_device(corpus):
    torch.manual_seed(0)
    gpt, lstm = tl.MiniGPT(tl.GPTConfig(n_layers=1)).eval(), tl.CharLSTM().eval()
    on_cpu = (tl.evaluate_gpt(gpt, corpus, characters=300).nats,)
    on_cpu += (tl.evaluate_lstm(lstm, corpus, characters=300).nats,)
    with other_device():
        on_gpu = (tl.evaluate_gpt(gpt.to(DEVICE), corpus, characters=300).nats,)
        on_gpu += (tl.evaluate_lstm(lstm.to(DEVICE), corpus, characters=300).nats,)
    assert on_gpu == pytest.approx(on_cpu, abs=1e-6)


def test_training_draws_the_same_batches_on_every_device(corpus):
    budget = tl.Budget("tiny", batch_size=2, steps=2, eval_every=2, eval_batches=1)
    config = tl.GPTConfig(d_model=16, n_heads=2, n_layers=1, T_max=16)

    def losses(device) -> list:
        torch.manual_seed(0)
        model = tl.MiniGPT(config).to(device)
        recipe = tl.Recipe.of(budget, lr=1e-3, T=16)
        history = tl.train_lm(model, corpus.to(device), recipe, progress=False)
        return [loss for _, loss in history.train_loss + history.val_loss]

    on_cpu = losses("cpu")
    with other_device():
        on_gpu = losses(DEVICE)
    assert on_gpu == pytest.approx(on_cpu)


STEMS = [path.stem for path in notebook_build.sources()]


def run_on_the_gpu(stem: str, folder) -> tuple[dict, dict[str, str], str]:
    """Every cell of a solved notebook but the pipeline's own, its model on the stand-in GPU
    (MODE grade), in `folder` (04 saves its model beside the notebook): its namespace, what
    each checkpoint cell printed, and everything it printed."""
    namespace, printed, everything = {"__name__": "__notebook__"}, {}, []
    with contextlib.chdir(folder), other_device():
        for cell in code_cells(stem, MODE='"grade"', DEVICE=f'"{DEVICE}"'):
            with contextlib.redirect_stdout(io.StringIO()) as out:
                exec(compile(cell.source, f"<{stem}>", "exec"), namespace)
            plt.close("all")
            everything.append(out.getvalue())
            if cell.metadata.get("nbgrader", {}).get("grade"):
                printed[cell.metadata.nbgrader.grade_id] = out.getvalue()
    return namespace, printed, "".join(everything)


@pytest.fixture(scope="module")
def on_the_gpu(tmp_path_factory):
    """Each notebook run once on the stand-in GPU, in a folder of its own, for every test that
    reads it."""
    runs: dict[str, tuple] = {}

    def run(stem: str) -> tuple[dict, dict[str, str], str]:
        if stem not in runs:
            runs[stem] = run_on_the_gpu(stem, tmp_path_factory.mktemp(stem))
        return runs[stem]

    return run


@pytest.mark.parametrize("stem", STEMS)
def test_every_provided_cell_runs_with_the_model_on_a_gpu(stem, on_the_gpu):
    namespace, printed, _ = on_the_gpu(stem)
    assert namespace["DEVICE"] == DEVICE
    assert printed and all("✅" in text for text in printed.values()), printed


def test_notebook_05_on_a_gpu_shows_the_distances_recorded_for_its_model(on_the_gpu):
    """05 says the recorded distances "should match yours apart from rounding": on a GPU too,
    because the windows are drawn on the CPU. No model of the student's beside it: the recorded
    one is loaded."""
    namespace, _, out = on_the_gpu("05_heads")
    run = json.loads(baselines_path().read_text())["runs"][namespace["run"]]
    recorded = torch.tensor(run["results"]["mean_attention_distance"])
    distances = namespace["distances"]
    assert not on_host(namespace["windows"])  # drawn on the CPU, read on the GPU
    # the recorded distances, a line a layer of numbers (the cost summary's lines name heads)
    shown = re.findall(r"^\s*layer \d: ((?:\s*\d+\.\d)+)\s*$", out, re.MULTILINE)
    assert shown and [row.split() for row in shown] == [
        [f"{d:.1f}" for d in row] for row in recorded
    ]
    assert torch.allclose(distances, recorded, atol=0.01), (distances, recorded)


class _HostToDevice(TorchFunctionMode):
    """Counts what crosses from the host to the stand-in GPU, as a pageable copy that waits for
    the GPU's queued work would on CUDA: a move, a copy_ into a tensor there, host indices."""

    def __init__(self):
        super().__init__()
        self.copies = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is torch.Tensor.to and on_host(args[0]) and not on_host(out):
            self.copies += 1
        elif func in self.ACROSS and not on_host(args[0]) and self._from_host(args[1:]):
            self.copies += 1
        return out

    ACROSS = (torch.Tensor.copy_, torch.Tensor.__getitem__, torch.Tensor.__setitem__)

    @staticmethod
    def _from_host(args) -> bool:
        tensors = [t for t in tree_flatten(args)[0] if isinstance(t, torch.Tensor)]
        return any(on_host(t) and t.dim() > 0 for t in tensors)


def test_training_copies_nothing_to_the_gpu_per_step_or_per_validation(corpus):
    """The run's batch starts and validation windows are drawn on the CPU and moved once: six
    steps with six validations copy no more to the GPU than two steps with two."""
    config = tl.GPTConfig(d_model=16, n_heads=2, n_layers=1, T_max=16)

    def copies(steps: int) -> int:
        budget = tl.Budget("tiny", batch_size=2, steps=steps, eval_every=1, eval_batches=2)
        with other_device():
            model, on_gpu = tl.MiniGPT(config).to(DEVICE), corpus.to(DEVICE)
            with _HostToDevice() as spy:
                recipe = tl.Recipe.of(budget, lr=1e-3, T=16)
                history = tl.train_lm(model, on_gpu, recipe, progress=False)
        assert len(history.val_loss) == steps
        return spy.copies

    few, many = copies(2), copies(6)
    assert few == many and few <= 2  # the run's starts and its validation starts
