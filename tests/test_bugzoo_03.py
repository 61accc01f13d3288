"""Bug zoo of notebook 03: each usual mistake in embed_with_positions fails Exercise 3's
checkpoint with its diagnosis and its mistake code; each correct variant passes; the provided
checks of the notebook (order blindness, untrained loss) pass on good inputs and fail on bad
ones."""

import math

import pytest
import torch
from notebook_harness import run_exercise

import transformer_lab as tl
from checkpoints import CheckFailed, NotDoneYet
from checkpoints import positions as check

EX3 = ("03_positions", "ex3_embed", "ex3_check")

MUTANTS = {
    "positions concatenated": (
        """
        B, T = idx.shape
        positions = pos_emb(torch.arange(T)).expand(B, T, -1)
        return torch.cat([tok_emb(idx), positions], dim=-1)
        """,
        "concatenated",
        "ex3.positions_concatenated",
    ),
    "position table indexed by token id": (
        "return tok_emb(idx) + pos_emb(idx)",
        "indexed by the token ids",
        "ex3.positions_indexed_by_token",
    ),
    "off by one": (
        "return tok_emb(idx) + pos_emb(torch.arange(1, idx.shape[1] + 1))",
        "off by one",
        "ex3.positions_off_by_one",
    ),
    "positions left out": (
        "return tok_emb(idx)",
        "positions are left out",
        "ex3.positions_not_added",
    ),
    "tokens left out": (
        "return pos_emb(torch.arange(idx.shape[1])).expand(*idx.shape, -1)",
        "token embeddings are left out",
        "ex3.tokens_not_added",
    ),
    "positions over the batch axis": (
        "return tok_emb(idx) + pos_emb(torch.arange(idx.shape[0]))",
        "idx.shape[0] is the batch size",
        "ex3.positions_wrong_length",
    ),
    "the whole position table": (
        "return tok_emb(idx) + pos_emb.weight",
        "not the whole table",
        "ex3.positions_wrong_length",
    ),
    "one position for all": (
        "return tok_emb(idx) + pos_emb(torch.zeros_like(idx))",
        "every position gets p_0",
        "ex3.same_position_everywhere",
    ),
    "scaled by sqrt(d_model)": (
        "d_model = tok_emb.embedding_dim\n"
        "return tok_emb(idx) * d_model**0.5 + pos_emb(torch.arange(idx.shape[1]))",
        "sqrt(d_model)",
        "ex3.scaled_by_sqrt_d_model",
    ),
    "position table detached": (
        "return tok_emb(idx) + pos_emb.weight[: idx.shape[1]].detach()",
        "no gradient reaches the position table",
        "ex3.position_table_detached",
    ),
    "no gradient at all": (
        """
        with torch.no_grad():
            return tok_emb(idx) + pos_emb(torch.arange(idx.shape[1]))
        """,
        "carries no gradient",
        "ex3.no_gradient",
    ),
    "returns a list": (
        "return [tok_emb(idx) + pos_emb(torch.arange(idx.shape[1]))]",
        "should be a torch.Tensor",
        "ex3.not_a_tensor",
    ),
}

CORRECT = {
    "broadcasting on the device of idx": (
        "return tok_emb(idx) + pos_emb(torch.arange(idx.shape[-1], device=idx.device))"
    ),
    "explicit expand": """
        B, T = idx.shape
        return tok_emb(idx) + pos_emb(torch.arange(T)).unsqueeze(0).expand(B, T, -1)
        """,
    "rows of the weight": "return tok_emb(idx) + pos_emb.weight[: idx.shape[1]]",
    "positions as a (1, T) batch": (
        "return tok_emb(idx) + pos_emb(torch.arange(idx.shape[1])[None, :])"
    ),
}


@pytest.mark.parametrize("name", MUTANTS)
def test_mutant_fails_with_its_diagnosis_and_code(name, capsys):
    body, diagnosis, expected_code = MUTANTS[name]
    with pytest.raises(CheckFailed) as failure:
        run_exercise(*EX3, body)
    assert not isinstance(failure.value, NotDoneYet)
    assert diagnosis in str(failure.value), str(failure.value)
    assert failure.value.code == expected_code, str(failure.value)


@pytest.mark.parametrize("name", CORRECT)
def test_correct_variant_passes(name, capsys):
    run_exercise(*EX3, CORRECT[name])
    assert capsys.readouterr().out.count("✅") == 2  # visible checks and hidden tests


def test_solution_passes_and_stub_is_not_done(capsys):
    run_exercise(*EX3)
    assert capsys.readouterr().out.count("✅") == 2
    with pytest.raises(NotDoneYet, match="not done yet") as failure:
        run_exercise(*EX3, 'raise NotImplementedError("not done yet")')
    assert failure.value.code.endswith(".not_done"), failure.value.code


def test_order_blindness_passes_and_leaves_the_global_seed_alone(corpus, capsys):
    first = torch.tensor([corpus.vocab.encode("dog bites man")])
    second = torch.tensor([corpus.vocab.encode("bites dog man")])
    state = torch.get_rng_state()
    assert check.order_blindness(first, second) < 1e-5
    assert torch.equal(state, torch.get_rng_state())
    assert capsys.readouterr().out.startswith("✅")
    with pytest.raises(CheckFailed, match="same tokens in two orders") as failure:
        check.order_blindness(first, torch.tensor([corpus.vocab.encode("man bites dog")]))
    assert failure.value.code == "order.not_a_reordering"


SMALL = tl.GPTConfig(d_model=32, n_heads=2, n_layers=1, T_max=32)


def test_untrained_loss_near_ln_65(corpus, capsys):
    nats = check.untrained_loss(tl.MiniGPT(SMALL), corpus)
    assert abs(nats - math.log(65)) < 0.1
    assert capsys.readouterr().out.startswith("✅")


def test_untrained_loss_catches_large_logits(corpus):
    model = tl.MiniGPT(SMALL)
    with torch.no_grad():
        model.W_o.weight.mul_(100)
    with pytest.raises(CheckFailed, match="initialisation or the scale of the logits") as failure:
        check.untrained_loss(model, corpus)
    assert failure.value.code == "untrained.loss_far_from_ln_65"


def test_untrained_loss_reports_a_stub_as_not_done(corpus):
    def stub(idx, tok_emb, pos_emb):
        raise NotImplementedError("not done yet")

    with pytest.raises(NotDoneYet, match="not done yet"):
        check.untrained_loss(tl.MiniGPT(SMALL, embed=stub), corpus)
