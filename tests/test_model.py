import math

import pytest
import torch

from transformer_lab import (
    CharLSTM,
    GPTConfig,
    MiniGPT,
    count_parameters,
    embed_with_positions,
    evaluate_gpt,
    scaled_dot_product_attention,
)

SMALL = GPTConfig(d_model=32, n_heads=4, n_layers=2, T_max=16)


def test_parameter_counts_of_the_lab_models():
    assert count_parameters(MiniGPT(GPTConfig())) == 824_897
    assert count_parameters(CharLSTM()) == 350_593


def test_more_heads_same_parameters():
    assert count_parameters(MiniGPT(GPTConfig(n_heads=16))) == 824_897


def unmasked(Q, K, V, allowed):
    """An attention that ignores the mask: the control that shows the leak test can fail."""
    return scaled_dot_product_attention(Q, K, V)


@pytest.mark.parametrize("attention", [None, scaled_dot_product_attention])
def test_leak_test_on_logits(attention):
    model = MiniGPT(GPTConfig(), attention=attention).eval()
    idx = torch.randint(0, 65, (2, 128))
    t0 = 70
    changed = idx.clone()
    changed[:, t0] = (changed[:, t0] + 1) % 65
    with torch.no_grad():
        before, after = model(idx), model(changed)
    assert torch.equal(before[:, :t0], after[:, :t0]), "logits before t0 moved: a future leak"
    assert not torch.equal(before[:, t0:], after[:, t0:])

    model.use_attention(unmasked)
    with torch.no_grad():
        leaky_before, leaky_after = model(idx), model(changed)
    assert not torch.equal(leaky_before[:, :t0], leaky_after[:, :t0])


def test_untrained_loss_is_close_to_ln_65(corpus):
    score = evaluate_gpt(MiniGPT(), corpus, characters=8192)  # a tenth of the test split: enough
    assert abs(score.nats - math.log(65)) < 0.1


def test_pluggable_attention_and_embedding_give_the_same_logits():
    torch.manual_seed(1)
    model = MiniGPT(SMALL).eval()
    idx = torch.randint(0, 65, (3, 16))
    with torch.no_grad():
        fused = model(idx)
        model.use_attention(scaled_dot_product_attention)
        model.embed = embed_with_positions
        explicit = model(idx)
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-5)


def student_mask(T):
    """A student's causal_mask(T): square, built on the CPU."""
    return torch.arange(T)[None, :] <= torch.arange(T)[:, None]


def test_a_plugged_mask_is_called_in_every_layer_and_gives_the_same_logits():
    torch.manual_seed(1)
    model = MiniGPT(SMALL).eval()
    idx = torch.randint(0, 65, (3, 16))
    calls = []

    def counted(T):
        calls.append(T)
        return student_mask(T)

    with torch.no_grad():
        fused = model(idx)
        explicit = model.use_mask(counted)(idx)
        model.use_mask(lambda T: student_mask(T).T)  # the upper triangle: reads the future
        upper = model(idx)
    assert calls == [16] * SMALL.n_layers  # the fused kernel would never call it
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(fused[:, :-1], upper[:, :-1], atol=1e-3)


def test_decoding_with_a_cache_takes_the_package_s_mask_past_the_first_call():
    """The student's mask is square (T, T); queries decoded after a cache's first call sit at
    offset + t, where the package's mask covers them."""
    torch.manual_seed(2)
    model = MiniGPT(SMALL, mask=student_mask, embed=embed_with_positions).eval()
    idx = torch.randint(0, 65, (1, 10))
    with torch.no_grad():
        full = model(idx)
        cache = model.new_cache()
        stepwise = torch.cat([model(idx[:, t : t + 1], cache=cache) for t in range(10)], dim=1)
    torch.testing.assert_close(full, stepwise, atol=1e-5, rtol=1e-5)


def test_attention_weights_per_head():
    model = MiniGPT(SMALL).eval()
    with torch.no_grad():
        logits, A = model(torch.randint(0, 65, (2, 10)), return_attention=True)
    assert logits.shape == (2, 10, 65)
    assert A.shape == (2, 2, 4, 10, 10)  # (n_layers, B, n_heads, T, T)
    torch.testing.assert_close(A.sum(-1), torch.ones(2, 2, 4, 10))
    assert (A.triu(diagonal=1) == 0).all()


def test_kv_cache_gives_the_same_logits_as_recomputing():
    model = MiniGPT(SMALL).eval()
    idx = torch.randint(0, 65, (2, 16))
    cache = model.new_cache()
    with torch.no_grad():
        full = model(idx)
        prefix = model(idx[:, :5], cache=cache)
        steps = [model(idx[:, t : t + 1], cache=cache) for t in range(5, 16)]
    torch.testing.assert_close(torch.cat([prefix, *steps], dim=1), full, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="T_max"):
        model(idx[:, :1], cache=cache)


def test_dropout_only_in_training():
    model = MiniGPT(SMALL)
    idx = torch.randint(0, 65, (1, 16))
    model.eval()
    assert torch.equal(model(idx), model(idx))
    model.train()
    assert not torch.equal(model(idx), model(idx))


def test_position_table_limits_the_context():
    with pytest.raises(ValueError, match="T_max"):
        MiniGPT(SMALL)(torch.zeros(1, 17, dtype=torch.long))


def test_lstm_state_is_carried_across_calls():
    model = CharLSTM().eval()
    idx = torch.randint(0, 65, (1, 50))
    with torch.no_grad():
        whole, _ = model.step(idx)
        first, state = model.step(idx[:, :20])
        second, _ = model.step(idx[:, 20:], state)
        fresh, _ = model.step(idx[:, 20:])
    torch.testing.assert_close(torch.cat([first, second], dim=1), whole)
    assert not torch.allclose(fresh, whole[:, 20:])


def test_lstm_forget_gate_bias():
    model = CharLSTM(forget_gate_bias=1.0)
    total = model.lstm.bias_ih_l0 + model.lstm.bias_hh_l0
    torch.testing.assert_close(total[256:512], torch.ones(256))


def test_save_and_load_round_trip(tmp_path):
    from transformer_lab.saving import load_gpt, save_gpt

    model = MiniGPT(SMALL).eval()
    path = save_gpt(model, tmp_path / "m.pt", budget="smoke", nats=3.5)
    loaded, info = load_gpt(path)
    idx = torch.randint(0, 65, (1, 16))
    with torch.no_grad():
        assert torch.equal(model(idx), loaded(idx))
    assert info == {"budget": "smoke", "nats": 3.5} and loaded.config == SMALL
