"""The student's pieces travel with them (transformer_lab/student.py, checkpoints/yours.py): a
passing checkpoint of 01, 02 or 03 keeps the function as source in my_transformer.py, beside the
notebook or, on Colab, in the student's Drive; the later notebooks load each piece, check it
again, say whose it is, and build the model from it: 02's and 03's leak tests run it, 04 trains
it. A piece that is missing, does not import or fails its checkpoint again is the course's, said
so; grading never reads or writes any of it."""

import math
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from student_pieces import causal_mask, embed_with_positions, scaled_dot_product_attention, unscaled

import transformer_lab as tl
from checkpoints import _core, leak, yours
from checkpoints import attention as attention_check
from checkpoints import causal_mask as mask_check
from checkpoints._core import CheckFailed
from transformer_lab import saving, student
from transformer_lab.student import MODULE

TINY = tl.GPTConfig(d_model=16, n_heads=2, n_layers=2, T_max=16)


def reads_ahead(Q, K, V, allowed=None):
    """Ignores the mask: every query reads the future."""
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)
    return A @ V, A


@pytest.fixture
def notebook_folder(tmp_path, monkeypatch):
    """A notebook's folder, off Colab, in a kernel that has answered nothing yet."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "google.colab", None)
    monkeypatch.setattr(saving, "_decision", None)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    return tmp_path


@pytest.fixture
def kernel(monkeypatch):
    """A notebook's kernel, as the checks see it (its user namespace holds USE_DRIVE), running
    its cell [7]."""
    shell = SimpleNamespace(
        user_ns={"USE_DRIVE": None}, history_manager=SimpleNamespace(input_hist_parsed=[""] * 8)
    )
    monkeypatch.setattr(_core, "notebook_shell", lambda: shell)
    return shell


def test_a_passing_checkpoint_keeps_the_function_as_readable_source(notebook_folder, kernel):
    _core.keep("attention", scaled_dot_product_attention, attention_check.exercise_1)
    _core.keep("mask", causal_mask, mask_check.exercise_2)
    text = (notebook_folder / MODULE).read_text()
    assert "torch.einsum(" in text and "def causal_mask(T):" in text
    compile(text, str(MODULE), "exec")  # a module the student can read and run
    _core.keep(
        "attention", unscaled, attention_check.exercise_1
    )  # the checkpoint passed again, on a newer version
    text = (notebook_folder / MODULE).read_text()
    assert "def unscaled(" in text and "torch.einsum(" not in text
    assert "scaled_dot_product_attention = unscaled" in text and "def causal_mask(T):" in text


def test_without_a_kernel_or_while_grading_nothing_is_kept(notebook_folder, kernel, monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    _core.keep("attention", scaled_dot_product_attention, attention_check.exercise_1)
    monkeypatch.delenv("NBGRADER_EXECUTION")
    monkeypatch.setattr(_core, "notebook_shell", lambda: None)  # a test, a script
    _core.keep("attention", scaled_dot_product_attention, attention_check.exercise_1)
    assert not (notebook_folder / MODULE).exists()


def test_without_anything_kept_each_piece_is_the_course_s_and_says_so(notebook_folder, capsys):
    pieces = yours.load()
    said = capsys.readouterr().out.splitlines()
    assert said == [
        "attention: the course's: no notebook 01 of yours was found beside this notebook",
        "mask: the course's: no notebook 02 of yours was found beside this notebook",
        "embedding: the course's: no notebook 03 of yours was found beside this notebook",
    ]
    assert not any(piece.yours for piece in pieces)
    assert pieces.names() == "the course's attention, the course's mask and the course's embedding"


def test_kept_pieces_are_loaded_checked_again_and_named(notebook_folder, kernel, capsys):
    _core.keep("attention", scaled_dot_product_attention, attention_check.exercise_1)
    _core.keep("mask", causal_mask, mask_check.exercise_2)
    capsys.readouterr()
    pieces = yours.load()
    said = capsys.readouterr().out.splitlines()
    assert said == [piece.line for piece in pieces]  # each piece says whose it is, and why
    assert [piece.yours for piece in pieces] == [True, True, False]
    assert pieces.attention.kept.cell == 7 and "cell [7]" in said[0]  # the kernel's cell run
    assert "holds no embed_with_positions" in pieces.embedding.why
    assert pieces.attention.fn.__code__.co_filename == str(MODULE)  # the module's, not ours
    assert "einsum" in pieces.attention.fn.__code__.co_names


def test_a_piece_that_fails_again_or_does_not_import_is_the_course_s(notebook_folder, capsys):
    student.write_module(
        MODULE,
        {
            "attention": student.source_of("attention", unscaled),
            "mask": "def causal_mask(T)\n    return None",  # edited into a syntax error
        },
    )
    pieces = yours.load()
    said = capsys.readouterr().out
    assert not pieces.attention.yours and not pieces.mask.yours
    assert pieces.attention.fn is tl.scaled_dot_product_attention
    assert said.splitlines() == [piece.line for piece in pieces]
    assert "[ex1.no_sqrt_dk]" in pieces.attention.why  # the checkpoint's code: it fails again
    assert "(SyntaxError" in pieces.mask.why  # it does not import


def test_while_grading_the_course_s_pieces_are_used_without_looking(notebook_folder, monkeypatch):
    student.write_module(MODULE, {"attention": student.source_of("attention", reads_ahead)})
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    pieces = yours.load()
    assert not any(piece.yours for piece in pieces)
    assert "while grading" in pieces.attention.line


def test_the_drive_carries_the_pieces_to_a_fresh_runtime(tmp_path, monkeypatch, capsys):
    storage, mountpoint = tmp_path / "google-drive", tmp_path / "content" / "drive"
    (storage / "MyDrive").mkdir(parents=True)

    def mount(path, **kwargs):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).symlink_to(storage, target_is_directory=True)

    drive = types.ModuleType("google.colab.drive")
    drive.mount = mount
    colab = types.ModuleType("google.colab")
    colab.drive = drive
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setitem(sys.modules, "google.colab.drive", drive)
    monkeypatch.setenv(saving.DRIVE_ENV, str(mountpoint))
    monkeypatch.setattr(saving, "_decision", None)  # a kernel whose setup cell has not run yet
    monkeypatch.setattr("builtins.input", lambda prompt="": pytest.fail("waited on input"))
    (tmp_path / "runtime-01").mkdir()
    monkeypatch.chdir(tmp_path / "runtime-01")
    tl.use_drive(False)  # notebook 01's setup cell, USE_DRIVE = False
    said = student.keep("attention", scaled_dot_product_attention)
    assert said == (
        "Kept your scaled_dot_product_attention in my_transformer.py beside this notebook, not in "
        "your Google Drive: USE_DRIVE is False. On Colab the later notebooks, each on a machine "
        "of its own, will use the course's instead."
    )
    assert MODULE.is_file()
    MODULE.unlink()

    tl.use_drive(True)  # notebook 01 again, another day: USE_DRIVE = True
    said = student.keep("attention", scaled_dot_product_attention)
    assert "MyDrive/transformer-lab/my_transformer.py" in said
    assert not MODULE.exists()  # not beside the notebook: that folder dies with the runtime

    mountpoint.unlink()  # notebook 02, on a machine of its own
    (tmp_path / "runtime-02").mkdir()
    monkeypatch.chdir(tmp_path / "runtime-02")
    tl.use_drive(True)
    pieces = yours.load()
    assert pieces.attention.yours
    said = capsys.readouterr().out
    assert pieces.attention.line in said.splitlines()
    assert "(kept in MyDrive/transformer-lab/my_transformer.py" in said


def test_04_trains_the_student_s_attention_at_every_step(notebook_folder, corpus):
    """A spy counts the calls of the student's function, the one loaded from their module, while
    train_lm runs; PyTorch's fused kernel is never called."""
    student.write_module(
        MODULE, {"attention": student.source_of("attention", scaled_dot_product_attention)}
    )
    pieces = yours.load()
    theirs = pieces.attention.fn.__code__
    calls = {"student": 0, "fused": 0}

    def spy(frame, event, arg):
        if event == "call" and frame.f_code is theirs:
            calls["student"] += 1
        elif event == "c_call" and getattr(arg, "__name__", "") == "scaled_dot_product_attention":
            calls["fused"] += 1

    budget = tl.BUDGETS["smoke"]
    model = pieces.model(TINY)
    sys.setprofile(spy)
    try:
        tl.train_lm(model, corpus, tl.Recipe.of(budget, lr=1e-3, T=TINY.T_max), progress=False)
    finally:
        sys.setprofile(None)
    assert calls["student"] >= budget.steps * TINY.n_layers
    assert calls["fused"] == 0
    course = student.course_pieces("").model(TINY)  # nothing of the student's: the fused kernel
    assert course.blocks[0].attn.attention is None and course.embed is None


def test_03_s_leak_test_names_the_student_s_piece_that_reads_the_future():
    pieces = student.course_pieces("none").using("attention", reads_ahead, "notebook 01")
    pieces = pieces.using("embedding", embed_with_positions, "this notebook")
    model = pieces.model(TINY, explicit=True).eval()
    with pytest.raises(CheckFailed) as failed:
        leak.model_leak_test(model, "the untrained model", pieces=pieces)
    assert failed.value.code == "leak.reads_the_future"
    blamed = failed.value.message.split("comes from")[1]
    assert "your attention" in blamed and "your embedding" not in blamed
    fine = pieces.using("attention", scaled_dot_product_attention, "notebook 01")
    assert leak.model_leak_test(fine.model(TINY, explicit=True).eval(), "it", pieces=fine) == 0.0


def test_02_s_leak_test_runs_the_mask_inside_the_student_s_attention(capsys):
    theirs = student.course_pieces("").using("attention", reads_ahead, "notebook 01").attention
    with pytest.raises(CheckFailed) as failed:
        mask_check.attention_leak_test(causal_mask, theirs)
    assert failed.value.code == "ex2.leak_above_diagonal"
    assert "inside your attention" in failed.value.message
    course = student.course_pieces("no notebook 01 of yours was found").attention
    assert mask_check.attention_leak_test(causal_mask, course) == 0.0
    assert "inside the course's attention" in capsys.readouterr().out


def test_the_student_s_mask_is_the_one_the_model_calls():
    calls = []

    def counted(T):
        calls.append(T)
        return causal_mask(T)

    pieces = student.course_pieces("").using("mask", counted, "notebook 02")
    model = pieces.model(TINY).eval()
    with torch.no_grad():
        model(torch.zeros(1, 5, dtype=torch.long))
    assert calls == [5] * TINY.n_layers


def test_a_mask_built_on_the_host_reaches_the_gpu_once_not_at_every_step():
    """On a T4 the student's causal_mask(T) (torch.arange without device=) is the host's: the
    model copies it over once and reuses the copy while the mask it calls stays the same."""
    from checkpoints._devices import DEVICE, other_device

    calls = []

    def counted(T):
        calls.append(T)
        return causal_mask(T)

    pieces = student.course_pieces("").using("mask", counted, "notebook 02")
    idx = torch.zeros(2, 8, dtype=torch.long)
    with other_device(), torch.no_grad():
        model = pieces.model(TINY).to(DEVICE).eval()
        model(idx.to(DEVICE))
        copies = [block.attn._mask_copy[1] for block in model.blocks]
        model(idx.to(DEVICE))
        again = [block.attn._mask_copy[1] for block in model.blocks]
        assert all(a is b for a, b in zip(again, copies, strict=True))  # the same copy
        model(idx[:, :5].to(DEVICE))  # another T: another mask, copied again
        assert model.blocks[0].attn._mask_copy[1].shape == (5, 5)
    assert calls == [8] * TINY.n_layers * 2 + [5] * TINY.n_layers  # called at every step


def test_a_piece_that_fails_again_says_why_in_the_error_s_own_words(notebook_folder, capsys):
    """The kept attention calls a helper that did not travel: the line names the error's own
    text and the line of my_transformer.py to open, not an empty message."""
    lost = (
        "def scaled_dot_product_attention(Q, K, V, allowed=None):\n"
        "    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])\n"
        "    A = softmax_rows(scores)\n"
        "    return A @ V, A"
    )
    student.write_module(MODULE, {"attention": lost})
    yours.load()
    said = capsys.readouterr().out.splitlines()[0]
    assert said.startswith("attention: the course's:")
    line = MODULE.read_text().splitlines().index("    A = softmax_rows(scores)") + 1
    assert (
        f"raised NameError: name 'softmax_rows' is not defined (line {line} of "
        "my_transformer.py: `A = softmax_rows(scores)`)."
    ) in said
    assert "The traceback above" not in said  # a later notebook shows no traceback


def test_one_re_check_of_a_kept_copy_serves_01_to_03_and_the_later_notebooks(capsys):
    """check_again: the kept piece at its exercise's checkpoint, quietly; the checkpoint is the
    one the catalogue names unless the keeping check hands its own."""
    right = student.course_pieces("").using("attention", scaled_dot_product_attention, "01")
    wrong = right.using("attention", unscaled, "01")
    assert _core.check_again(right.attention) is None
    assert _core.check_again(wrong.attention).code == "ex1.no_sqrt_dk"
    assert _core.check_again(wrong.attention, attention_check.exercise_1).code == "ex1.no_sqrt_dk"
    assert capsys.readouterr().out == ""  # no ticks, no keeping
    assert (
        _core.kept_copy_trouble(wrong.attention, attention_check.exercise_1).count(
            "[ex1.no_sqrt_dk]"
        )
        == 1
    )
    assert yours.checked(wrong).attention.fn is tl.scaled_dot_product_attention
