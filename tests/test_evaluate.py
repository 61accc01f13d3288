import math
from collections import Counter

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from transformer_lab import (
    CharLSTM,
    GPTConfig,
    NGramModel,
    evaluate_gpt,
    evaluate_lstm,
    evaluate_ngram,
)
from transformer_lab.data import CORPUS_CHARS, TEST_CHARS, VAL_END
from transformer_lab.evaluate import gpt_windows


def test_gpt_windows_score_every_test_character_once_with_65_to_128_of_context():
    scored = Counter()
    contexts = []
    for a, j0 in gpt_windows(VAL_END, CORPUS_CHARS, 128):
        assert a >= 0 and a + 128 + 1 <= CORPUS_CHARS
        for j in range(j0, 128):
            scored[a + 1 + j] += 1  # target of offset j
            contexts.append(j + 1)  # inputs a .. a + j
    assert sorted(scored) == list(range(VAL_END, CORPUS_CHARS))
    assert set(scored.values()) == {1}
    assert len(scored) == TEST_CHARS == 60_394
    assert min(contexts) == 65 and max(contexts) == 128


@pytest.mark.parametrize("start, end", [(65, 1000), (100, 229), (65, 130), (500, 777)])
def test_gpt_windows_cover_other_ranges(start, end):
    covered = [a + 1 + j for a, j0 in gpt_windows(start, end, 128) for j in range(j0, 128)]
    assert covered == list(range(start, end))


def test_lstm_scores_the_whole_test_split(corpus):
    """One pass over the test split with the state carried, against the chunked evaluator."""
    model = CharLSTM().eval()
    score = evaluate_lstm(model, corpus, chunk=10_000)
    assert score.n_chars == 60_394 == len(corpus.ids) - VAL_END
    with torch.no_grad():
        logits, _ = model.step(corpus.ids[None, VAL_END - 1 : -1])  # (1, 60394, vocab)
        reference = F.cross_entropy(logits[0].double(), corpus.ids[VAL_END:]).item()
    assert score.nats == pytest.approx(reference, abs=1e-4)
    assert abs(score.nats - math.log(65)) < 0.1  # untrained: close to uniform


def test_lstm_chunking_does_not_change_the_score(corpus):
    model, characters = CharLSTM(), 5_500  # five chunks and a part, against one
    a = evaluate_lstm(model, corpus, chunk=1000, characters=characters)
    b = evaluate_lstm(model, corpus, chunk=characters, characters=characters)
    assert a.nats == pytest.approx(b.nats, abs=1e-5)


def test_score_units():
    from transformer_lab import Score

    s = Score(nats=math.log(4), n_chars=10)
    assert s.perplexity == pytest.approx(4) and s.bits == pytest.approx(2)


def test_ngram_distribution_sums_to_one():
    rng = np.random.default_rng(0)
    train = rng.integers(0, 5, 2000)
    model = NGramModel(3, 0.5, vocab_size=5).fit(train)
    context = [1, 2]
    probs = [math.exp(model.log_probs(np.array([*context, c]), 2, 3)[0]) for c in range(5)]
    assert sum(probs) == pytest.approx(1.0)


def test_ngram_counts_by_hand():
    train = np.array([0, 1, 0, 1, 0, 0])  # bigrams: 01 01 10 10 00
    model = NGramModel(2, 1.0, vocab_size=2).fit(train)
    # P(1 | 0) = (count(0,1) + 1) / (count(0) + 2) = 3 / 5
    assert math.exp(model.log_probs(np.array([0, 1]), 1, 2)[0]) == pytest.approx(3 / 5)


def test_ngram_uses_only_the_training_split(corpus):
    ids = corpus.ids.numpy()
    model = NGramModel(3, 0.1).fit(corpus.train.numpy())
    assert model.ngram_counts.sum() == len(corpus.train) - 2
    assert len(model.log_probs(ids, VAL_END, len(ids))) == 60_394


def test_ngram_scoring_is_deterministic(corpus):
    first, second = evaluate_ngram(corpus, 5, 0.01), evaluate_ngram(corpus, 5, 0.01)
    assert first == second and first.n_chars == 60_394
    assert evaluate_ngram(corpus, 5, 0.01).nats < evaluate_ngram(corpus, 3, 0.1).nats


def test_ngram_rejects_bad_settings():
    with pytest.raises(ValueError, match="k > 0"):
        NGramModel(3, 0)
    with pytest.raises(ValueError, match="order"):
        NGramModel(0, 0.1)


def test_evaluation_restores_training_mode(corpus):
    model = CharLSTM().train()
    evaluate_lstm(model, corpus, characters=1000)
    assert model.training
    assert torch.is_grad_enabled()


class TokenOnly(torch.nn.Module):
    """Logits from the current character alone: every window predicts a character alike, so a
    score over any span can be computed directly."""

    def __init__(self):
        super().__init__()
        self.config = GPTConfig()
        self.table = torch.nn.Embedding(65, 65)

    def forward(self, idx):
        return self.table(idx)  # (B, T, vocab)


def _direct_nats(logits_of, corpus, characters: int) -> float:
    ids = corpus.ids[VAL_END - 1 : VAL_END + characters]
    with torch.no_grad():
        return F.cross_entropy(logits_of(ids[:-1]).double(), ids[1:]).item()


@pytest.mark.parametrize("characters", [1, 100, 4096, TEST_CHARS])
def test_each_evaluator_scores_the_first_characters_it_is_given(corpus, characters):
    torch.manual_seed(0)
    gpt = TokenOnly()
    score = evaluate_gpt(gpt, corpus, characters=characters)
    assert score.n_chars == characters
    assert score.nats == pytest.approx(_direct_nats(gpt.table, corpus, characters), abs=1e-5)

    lstm = CharLSTM().eval()
    score = evaluate_lstm(lstm, corpus, chunk=1000, characters=characters)
    assert score.n_chars == characters
    direct = _direct_nats(lambda ids: lstm.step(ids[None])[0][0], corpus, characters)
    assert score.nats == pytest.approx(direct, abs=1e-4)

    ids = corpus.ids.numpy()
    log_probs = NGramModel(3, 0.1).fit(corpus.train.numpy()).log_probs(ids, VAL_END, len(ids))
    score = evaluate_ngram(corpus, 3, 0.1, characters=characters)
    assert score.n_chars == characters
    assert score.nats == pytest.approx(-log_probs[:characters].mean())


@pytest.mark.parametrize("characters", [0, -5, TEST_CHARS + 1])
def test_a_span_outside_the_test_split_is_refused(corpus, characters):
    for evaluate in (
        lambda: evaluate_gpt(TokenOnly(), corpus, characters=characters),
        lambda: evaluate_lstm(CharLSTM(), corpus, characters=characters),
        lambda: evaluate_ngram(corpus, 3, 0.1, characters=characters),
    ):
        with pytest.raises(ValueError, match="characters must be 1 to 60,394"):
            evaluate()


def test_only_the_short_budgets_score_part_of_the_test_split():
    from transformer_lab import BUDGETS

    assert BUDGETS["full"].test_characters is None and BUDGETS["quick"].test_characters is None
    assert BUDGETS["smoke"].test_characters == BUDGETS["grade"].test_characters == 4096
