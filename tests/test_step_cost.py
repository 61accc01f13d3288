"""Before notebook 04 trains, what the student's pieces will cost is said (transformer_lab/
step_cost.py), and while it trains, what they print is held back and counted
(transformer_lab/student.py, `Printed`): the student reads one line, not thousands."""

import math
import sys
import time

import torch

import transformer_lab as tl
from checkpoints import yours
from checkpoints._core import error_text
from transformer_lab import saving, step_cost, student, train

TINY = tl.GPTConfig(d_model=16, n_heads=2, n_layers=2, T_max=16)


def attention(Q, K, V, allowed=None):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    A = torch.softmax(scores, dim=-1)
    return A @ V, A


def printing(Q, K, V, allowed=None):
    print(Q.shape)  # a debugging print, left in
    return attention(Q, K, V, allowed)


def slow(Q, K, V, allowed=None):
    time.sleep(0.05)  # a right answer that costs as a per-query loop does
    return attention(Q, K, V, allowed)


def test_what_the_pieces_print_is_held_back_and_said_in_one_line(capsys):
    model = student.course_pieces("").using("attention", printing, "notebook 01").model(TINY)
    with torch.no_grad():
        for _ in range(3):
            model(torch.zeros(2, 5, dtype=torch.long))
    assert capsys.readouterr().out == ""  # nothing reached the notebook meanwhile
    said = student.printed(model)
    assert said.startswith("Your attention printed 6 lines while the model ran, held back here")
    assert "the first: 'torch.Size([2, 2, 5, 8])'" in said
    assert student.printed(model) == ""  # counted afresh
    course = student.course_pieces("").model(TINY)
    course(torch.zeros(1, 3, dtype=torch.long))
    assert student.printed(course) == ""


def test_a_slow_piece_is_named_with_the_way_to_train_on_the_course_s(corpus, monkeypatch):
    """The clock is the model's: a step on the slow attention takes four times the course's (a
    real timing would depend on the machine's load), and the measure finds which piece it is."""

    def seconds_a_step(model, corpus, budget, *, lr, steps):
        theirs = getattr(model.blocks[0].attn.attention, "__wrapped__", None)
        return (0.4 if theirs is slow else 0.1), 0.03

    monkeypatch.setattr(step_cost, "seconds_a_step", seconds_a_step)
    pieces = student.course_pieces("").using("attention", slow, "notebook 01")
    pieces = pieces.using("mask", lambda T: torch.ones(T, T, dtype=torch.bool).tril(), "02")
    said = step_cost.measure(pieces, corpus, tl.BUDGETS["quick"]).said()
    first, advice = said.splitlines()
    assert first.startswith("Your pieces make each training step 4.0× as long as the course's")
    assert "one seed will take about 10 min, against 2.6 min with the course's." in first
    assert advice.startswith("Your attention costs the most.")
    assert 'set PIECES = "course" in the first cell' in advice


def test_the_timing_is_the_training_loop_s(corpus):
    windows = tl.GPTConfig(d_model=16, n_heads=2, n_layers=1, T_max=128)  # 04's T of 128
    step_s, val_s = train.seconds_a_step(
        tl.MiniGPT(windows), corpus, tl.BUDGETS["smoke"], lr=1e-3, steps=2
    )
    assert 0 < val_s < step_s < 5


def test_the_line_says_what_a_seed_takes_at_the_budget():
    budget = tl.BUDGETS["quick"]  # 1,500 steps, 6 estimates of 20 batches
    cost = step_cost.StepCost(budget, "cpu", (0.1, 0.03), (0.12, 0.04), "attention")
    assert cost.said() == (
        "Your pieces make each training step 1.2× as long as the course's (120 ms a step "
        "against 100 ms; quick budget on cpu, timed over 3 steps): one seed will take about "
        "3.1 min, against 2.6 min with the course's."
    )
    same = step_cost.StepCost(budget, "cpu", (0.1, 0.03), (0.09, 0.03), "attention")
    assert same.said().startswith("Your pieces train about as fast as the course's (90 ms a step")
    none = step_cost.StepCost(budget, "cuda", (0.01, 0.003), None)
    assert none.said() == (
        "One seed of the mini-GPT will take about 15 s here (quick budget on cuda, timed over "
        "3 steps)."
    )


def test_pieces_course_trains_on_the_course_s_and_says_why(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "google.colab", None)
    student.write_module(student.MODULE, {"attention": student.source_of("attention", attention)})
    assert yours.load(False).attention.yours
    pieces = yours.load(False, use="course")
    assert not any(piece.yours for piece in pieces)
    assert 'attention: the course\'s: PIECES = "course" in the first cell chose them' in (
        capsys.readouterr().out
    )
    assert saving.OFF_COLAB  # off Colab: nothing was asked


def test_an_error_s_own_words_are_never_empty():
    assert error_text(NameError("", name="softmax")) == "name 'softmax' is not defined"
    assert error_text(KeyError()) == "KeyError()"
    assert error_text(ValueError("no allowed key")) == "no allowed key"
