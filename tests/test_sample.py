import pytest
import torch

from transformer_lab import GPTConfig, MiniGPT, embed_with_positions, filter_probs, generate

LOGITS = torch.tensor([3.0, 2.0, 1.0, 0.0])


def approx(values, abs=1e-6):
    return pytest.approx(values, abs=abs)


def test_module3_temperature_numbers():
    """Module 3, section 12.1."""
    assert filter_probs(LOGITS).tolist() == approx([0.643914, 0.236883, 0.087144, 0.032059])
    assert filter_probs(LOGITS, 2.0).tolist() == approx([0.455054, 0.276004, 0.167405, 0.101536])


def test_module3_top_k_and_top_p_numbers():
    assert filter_probs(LOGITS, top_k=2).tolist() == approx([0.731059, 0.268941, 0, 0])
    assert filter_probs(LOGITS, top_p=0.9).tolist() == approx([0.665241, 0.244728, 0.090031, 0])


def test_top_p_is_measured_within_top_k():
    # Within the top 2, ID 0 holds 0.731 of the mass: p = 0.7 keeps it alone.
    assert filter_probs(LOGITS, top_k=2, top_p=0.7).tolist() == approx([1, 0, 0, 0])
    # Measured over all four IDs, p = 0.7 would keep two.
    assert filter_probs(LOGITS, top_p=0.7).tolist()[1] > 0


def test_ties_are_broken_by_id():
    tied = torch.tensor([1.0, 2.0, 2.0, 2.0])
    assert filter_probs(tied, top_k=2).tolist() == approx([0, 0.5, 0.5, 0])
    assert filter_probs(tied, top_p=0.2).tolist() == approx([0, 1, 0, 0])


def test_filters_work_on_batches():
    batch = torch.stack([LOGITS, LOGITS.flip(0)])
    out = filter_probs(batch, top_k=2)
    assert out[1].tolist() == approx([0, 0, 0.268941, 0.731059])


# 65 logits whose tail is far below float32's resolution next to 1: a float32 running sum
# reaches 1.0 about 35 candidates in.
STEEP = torch.linspace(30.0, 0.0, 65)
# A wide random spread, so that some candidates are lost in the rounding of a float32 sum too.
SPREAD = torch.randn(400, generator=torch.Generator().manual_seed(1)) * 8


def nucleus(logits, top_p):
    """The ids of the smallest prefix, by descending probability, whose mass reaches top_p."""
    probs = torch.softmax(logits.double(), dim=-1)
    order = torch.sort(probs, descending=True, stable=True).indices
    # The mass left after each prefix, summed from the small end so that tiny tails keep their
    # precision: a prefix reaches top_p when what it leaves out is at most 1 - top_p.
    left_out = probs[order].flip(0).cumsum(0).flip(0)[1:].tolist() + [0.0]
    size = next(n + 1 for n, rest in enumerate(left_out) if rest <= 1 - top_p)
    return set(order[:size].tolist())


def kept_ids(probs):
    return set(torch.nonzero(probs).flatten().tolist())


@pytest.mark.parametrize("logits", [STEEP, SPREAD], ids=["steep", "spread"])
def test_top_p_one_keeps_every_token(logits):
    # Failed before the fix: the steep logits kept 35 of 65.
    out = filter_probs(logits, top_p=1.0)
    assert kept_ids(out) == set(range(len(logits)))
    assert torch.equal(out, filter_probs(logits))


@pytest.mark.parametrize("top_p", [0.05, 0.3, 0.5, 0.9, 0.99, 1 - 1e-6, 1 - 1e-9, 1.0])
@pytest.mark.parametrize("logits", [STEEP, SPREAD, LOGITS], ids=["steep", "spread", "module3"])
def test_top_p_keeps_the_smallest_prefix_that_reaches_it(logits, top_p):
    assert kept_ids(filter_probs(logits, top_p=top_p)) == nucleus(logits, top_p)


@pytest.mark.parametrize(
    "kwargs", [{"temperature": 0}, {"top_k": 0}, {"top_p": 0.0}, {"top_p": 1.5}]
)
def test_bad_filter_settings(kwargs):
    with pytest.raises(ValueError):
        filter_probs(LOGITS, **kwargs)


@pytest.fixture(scope="module")
def tiny_model():
    torch.manual_seed(0)
    return MiniGPT(GPTConfig(d_model=32, n_heads=2, n_layers=2, T_max=16)).eval()


def test_generation_is_seeded_and_stops_at_length(tiny_model):
    a = generate(tiny_model, [1, 2, 3], 40, seed=7)
    b = generate(tiny_model, [1, 2, 3], 40, seed=7)
    assert a == b and len(a.ids) == 40 and a.stop_reason == "length"


def test_cache_and_recompute_sample_the_same_text(tiny_model):
    # 40 new tokens with T_max = 16: the window slides, and the cache must start afresh.
    cached = generate(tiny_model, [5], 40, seed=3, use_cache=True)
    recomputed = generate(tiny_model, [5], 40, seed=3, use_cache=False)
    assert cached == recomputed


def test_a_model_on_the_student_s_pieces_samples_the_same_text_with_a_cache(tiny_model):
    """Notebook 06 samples the trained model on the student's pieces: their mask and input step
    serve the first call, the package's the tokens decoded after it."""
    from transformer_lab import student

    def causal_mask(T):
        return torch.ones(T, T, dtype=torch.bool).tril()

    pieces = student.course_pieces("").using("mask", causal_mask, "notebook 02")
    pieces = pieces.using("embedding", embed_with_positions, "notebook 03")
    model = pieces.plug(MiniGPT(tiny_model.config).eval())
    model.load_state_dict(tiny_model.state_dict())
    cached = generate(model, [5], 40, seed=3, use_cache=True)
    assert cached == generate(model, [5], 40, seed=3, use_cache=False)
    assert cached == generate(tiny_model, [5], 40, seed=3)  # the same weights, the same text


def test_generation_stops_at_eos(tiny_model):
    out = generate(tiny_model, [1], 200, seed=0, eos_id=4, temperature=5.0)
    assert out.stop_reason == "eos" and out.ids[-1] == 4 and 4 not in out.ids[:-1]


def test_greedy_is_top_k_one(tiny_model):
    out = generate(tiny_model, [1, 2], 5, top_k=1)
    ids = [1, 2]
    for token in out.ids:
        with torch.no_grad():
            assert token == int(tiny_model(torch.tensor([ids]))[0, -1].argmax())
        ids.append(token)


def test_lstm_generation_carries_its_state():
    """Feeding each new token to the carried state samples what rereading the whole text
    from scratch at every step samples."""
    from transformer_lab import CharLSTM

    torch.manual_seed(0)
    model = CharLSTM().eval()
    out = generate(model, [1, 2], 20, seed=0)
    ids, generator = [1, 2], torch.Generator().manual_seed(0)
    with torch.no_grad():
        for _ in range(20):
            logits, _ = model.step(torch.tensor([ids]))  # the whole text, no carried state
            ids.append(int(torch.multinomial(filter_probs(logits[0, -1]), 1, generator=generator)))
    assert out.ids == ids[2:]
