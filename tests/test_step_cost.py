"""Before notebook 04 trains, what the student's pieces will cost is said (transformer_lab/
step_cost.py), and while it trains, what they print is held back and counted
(transformer_lab/student.py, `Printed`): the student reads one line, not thousands."""

import math
import sys
import time

import pytest
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


def per_query(Q, K, V, allowed=None):
    """Right, and a Python loop over the queries: one row of A at a time."""
    rows = []
    for t in range(Q.shape[-2]):
        rows.append(attention(Q[..., t : t + 1, :], K, V, None if allowed is None else allowed[t]))
    return torch.cat([V_bar for V_bar, _ in rows], -2), torch.cat([A for _, A in rows], -2)


REFERENCE = student.course_pieces("").attention.fn  # the package's, Equations 3-4 as written
# The clock of a training step, by the attention the model runs (`measure` is timed by this
# stand-in: a real timing would depend on the machine's load). PyTorch's fused kernel (no
# attention plugged in) is the fastest; the course's functions plugged in as the student's are,
# and a right vectorised answer, pace alike; a loop over the queries is four times slower.
FUSED, PACE = 0.1, {REFERENCE: 0.25, attention: 0.3, per_query: 1.0}
LSTM_STEP = (0.05, 0.01)
SCORING = {"evaluate_gpt": 5.0, "evaluate_lstm": 2.0}


@pytest.fixture
def clock(monkeypatch) -> list:
    """measure's clocks, stood in for; the list gets (model, evaluation) of each scoring timed."""
    scored = []

    def seconds_a_step(model, corpus, budget, *, lr, steps):
        if isinstance(model, tl.CharLSTM):
            return LSTM_STEP
        plugged = model.blocks[0].attn.attention
        return (FUSED, 0.03) if plugged is None else (PACE[plugged.__wrapped__], 0.05)

    def seconds_to_score(model, evaluate, corpus, budget):
        scored.append((model, evaluate.__name__))
        return SCORING[evaluate.__name__]

    monkeypatch.setattr(step_cost, "seconds_a_step", seconds_a_step)
    monkeypatch.setattr(step_cost, "seconds_to_score", seconds_to_score)
    return scored


def test_what_the_pieces_print_is_held_back_and_said_in_one_line(capsys):
    model = student.course_pieces("").using("attention", printing, "notebook 01").model(TINY)
    with torch.no_grad():
        for _ in range(3):
            model(torch.zeros(2, 5, dtype=torch.long))
    assert capsys.readouterr().out == ""  # nothing reached the notebook meanwhile
    said = student.printed(model)
    assert said == (  # 3 calls of 2 prints, the first named; the words, tested here once
        "Your attention printed 6 lines while the model ran, held back here; the first: "
        "'torch.Size([2, 2, 5, 8])'. Remove the print from the notebook that wrote it and run its "
        "checkpoint again, once you no longer need it."
    )
    assert student.printed(model) == ""  # counted afresh
    course = student.course_pieces("").model(TINY)
    course(torch.zeros(1, 3, dtype=torch.long))
    assert student.printed(course) == ""


def test_a_right_vectorised_answer_is_not_slow_and_a_loop_over_the_queries_is(corpus, clock):
    """Slow is judged against the course's functions plugged into the model as the student's
    are, never against PyTorch's fused kernel, which no notebook's function can reach."""
    quick = tl.BUDGETS["quick"]
    pieces = student.course_pieces("").using("attention", attention, "notebook 01")
    vectorised = step_cost.measure(pieces, corpus, quick)
    assert vectorised.written == (0.25, 0.05) and vectorised.course == (FUSED, 0.03)
    assert vectorised.factor == pytest.approx(1.2) and not vectorised.slow
    pieces = pieces.using("mask", lambda T: torch.ones(T, T, dtype=torch.bool).tril(), "02")
    looped = step_cost.measure(pieces.using("attention", per_query, "notebook 01"), corpus, quick)
    assert looped.factor == pytest.approx(4.0) and looped.slow
    assert looped.slowest == "attention"  # of the two pieces of the student's, the costly one


def test_per_query_is_a_right_attention():
    Q, K, V = torch.randn(3, 2, 5, 4).unbind(0)
    allowed = torch.ones(5, 5, dtype=torch.bool).tril()
    for got, want in zip(per_query(Q, K, V, allowed), attention(Q, K, V, allowed), strict=True):
        torch.testing.assert_close(got, want)


def test_the_estimate_is_the_whole_cell_s(corpus, clock):
    """Both trainings and both scorings: the mini-GPT on the pieces it trains on, the LSTM timed
    as it is, each scored as the cell scores it."""
    quick = tl.BUDGETS["quick"]  # 1,500 steps, 6 estimates of 20 batches
    pieces = student.course_pieces("").using("attention", attention, "notebook 01")
    cost = step_cost.measure(pieces, corpus, quick)
    assert cost.lstm == LSTM_STEP and cost.scoring == (5.0, 2.0)
    assert cost.cell() == pytest.approx((1500 * 0.3 + 120 * 0.05, 1500 * 0.05 + 120 * 0.01, 7.0))
    assert cost.cell().total == pytest.approx(456 + 76.2 + 7)
    (gpt, gpt_scoring), (lstm, lstm_scoring) = clock
    assert (gpt_scoring, lstm_scoring) == ("evaluate_gpt", "evaluate_lstm")
    assert gpt.blocks[0].attn.attention.__wrapped__ is attention  # scored on the student's
    assert isinstance(lstm, tl.CharLSTM)
    course = step_cost.measure(student.course_pieces(""), corpus, quick)
    assert course.yours is None and course.written is None
    assert course.cell().gpt == pytest.approx(1500 * FUSED + 120 * 0.03)


def test_the_scoring_is_timed_on_a_few_characters_and_scaled_to_the_budget_s(corpus):
    asked = []

    def evaluate(model, corpus, characters):
        asked.append(characters)
        time.sleep(0.02)

    whole = step_cost.seconds_to_score(tl.CharLSTM(), evaluate, corpus, tl.BUDGETS["quick"])
    assert asked == [step_cost.SCORED] * 2  # a warm-up, then the timed run
    assert whole >= 0.02 * len(corpus.test) / step_cost.SCORED  # all 60,394 characters
    asked.clear()
    smoke = step_cost.seconds_to_score(tl.CharLSTM(), evaluate, corpus, tl.BUDGETS["smoke"])
    assert asked == [4096, 4096] and 0.02 <= smoke < 1  # the smoke budget scores 4,096


def test_the_timing_is_the_training_loop_s(corpus):
    windows = tl.GPTConfig(d_model=16, n_heads=2, n_layers=1, T_max=128)  # 04's T of 128
    step_s, val_s = train.seconds_a_step(
        tl.MiniGPT(windows), corpus, tl.BUDGETS["smoke"], lr=1e-3, steps=2
    )
    assert 0 < val_s < step_s < 5


def test_the_line_says_what_the_cell_takes_how_to_train_faster_and_how_to_stop():
    quick = tl.BUDGETS["quick"]  # 1,500 steps, 6 estimates of 20 batches
    slow = step_cost.StepCost(
        quick, "cpu", (0.1, 0.03), (0.05, 0.01), (5.0, 2.0), (0.6, 0.05), (0.25, 0.05), "attention"
    )
    assert slow.said().splitlines() == [
        "This cell will take about 16 min here: the mini-GPT 15 min, the LSTM 76 s, scoring both "
        "7 s (quick budget on cpu, timed over 3 steps).",
        "Your pieces make each step of the mini-GPT 2.4× as long as the course's plugged in the "
        "same way (600 ms a step against 250 ms).",
        "Your attention costs the most. On the course's pieces the mini-GPT would take about 2.6 "
        'min: set PIECES = "course" in the parameters cell (the one that sets MODE), run it and '
        'the "Imports, the device, …" cell under it again, then this cell; the results table '
        "says whose pieces trained.",
        "■ Stop ends a training early; the model keeps what it learned.",
    ]
    same = step_cost.StepCost(
        quick, "cpu", (0.1, 0.03), (0.05, 0.01), (5.0, 2.0), (0.26, 0.05), (0.25, 0.05), "mask"
    )
    assert same.said().splitlines()[1] == (
        "Your pieces train about as fast as the course's plugged in the same way (260 ms a step "
        "against 250 ms)."
    )
    course = step_cost.StepCost(quick, "cuda", (0.01, 0.003), (0.004, 0.001), (0.5, 0.2))
    assert len(course.said().splitlines()) == 2  # the cell's cost, and how to stop


def test_pieces_course_trains_on_the_course_s_and_says_why(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "google.colab", None)
    student.write_module(student.MODULE, {"attention": student.source_of("attention", attention)})
    assert yours.load(False).attention.yours
    pieces = yours.load(False, use="course")
    assert not any(piece.yours for piece in pieces)
    assert 'PIECES = "course"' in pieces.attention.why  # why the course's, in its line
    assert pieces.attention.line in capsys.readouterr().out
    assert saving.OFF_COLAB  # off Colab: nothing was asked


def test_an_error_s_own_words_are_never_empty():
    assert error_text(NameError("", name="softmax")) == "name 'softmax' is not defined"
    assert error_text(KeyError()) == "KeyError()"
    assert error_text(ValueError("no allowed key")) == "no allowed key"
