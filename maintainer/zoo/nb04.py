"""Bug zoo of notebook 04 (training): Exercise 4, the metrics (loss in nats, perplexity, bits per
character). Also the F.cross_entropy mistakes students bring from other courses."""

from maintainer.zoo import Mistake, Right
from transformer_lab.catalogue import BY_NAME

EX4 = BY_NAME["ex4"]

PICKED = """
log_probs = torch.log_softmax(logits, dim=-1)
picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
"""

MISTAKES = {
    "summed over positions": Mistake(
        EX4,
        PICKED + "nats = -picked.sum(-1).mean().item()\n"
        "return nats, math.exp(nats), nats / math.log(2)",
        "ex4.summed_over_positions",
        "summed over the positions",
    ),
    "log base 2 for nats": Mistake(
        EX4,
        PICKED + "nats = -(picked / math.log(2)).mean().item()\n"
        "return nats, 2 ** nats, nats / math.log(2)",
        "ex4.loss_in_bits",
        "in bits (log base 2)",
    ),
    "bits as nats * ln 2": Mistake(
        EX4,
        PICKED + "nats = -picked.mean().item()\nreturn nats, math.exp(nats), nats * math.log(2)",
        "ex4.bits_times_ln2",
        "nats * ln 2",
    ),
    "perplexity as 2 ** nats": Mistake(
        EX4,
        PICKED + "nats = -picked.mean().item()\nreturn nats, 2 ** nats, nats / math.log(2)",
        "ex4.perplexity_base_2",
        "2 ** nats",
    ),
    "sign flipped": Mistake(
        EX4,
        PICKED + "nats = picked.mean().item()\nreturn nats, math.exp(nats), nats / math.log(2)",
        "ex4.sign_flipped",
        "sign is flipped",
    ),
    "raw logits": Mistake(
        EX4,
        "nats = -logits.gather(-1, targets.unsqueeze(-1)).mean().item()\n"
        "return nats, math.exp(nats), nats / math.log(2)",
        "ex4.raw_logits",
        "raw logits",
    ),
    "tensors returned": Mistake(
        EX4,
        PICKED + "nats = -picked.mean()\nreturn nats, nats.exp(), nats / math.log(2)",
        "ex4.not_floats",
        "Python floats",
    ),
    "bits as log2(nats)": Mistake(
        EX4,
        PICKED + "nats = -picked.mean().item()\nreturn nats, math.exp(nats), math.log2(nats)",
        "ex4.bits_as_log2_of_nats",
        "log2(nats)",
    ),
    "bits as ln(perplexity)": Mistake(
        EX4,
        PICKED + "nats = -picked.mean().item()\nppl = math.exp(nats)\n"
        "return nats, ppl, math.log(ppl)",
        "ex4.bits_in_nats",
        "math.log2(perplexity)",
    ),
    "perplexity as exp(bits)": Mistake(
        EX4,
        PICKED + "nats = -picked.mean().item()\nbits = nats / math.log(2)\n"
        "return nats, math.exp(bits), bits",
        "ex4.perplexity_of_bits",
        "2 ** bits",
    ),
    "/ B * T": Mistake(
        EX4,
        PICKED + "B, T = targets.shape\nnats = -picked.sum().item() / B * T\n"
        "return nats, math.exp(min(nats, 700)), nats / math.log(2)",
        "ex4.mean_precedence",
        "/ (B * T)",
    ),
    # The slips of a first-time PyTorch user.
    "math.log of the probabilities": Mistake(
        EX4,
        "probs = torch.softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1))\n"
        "nats = -math.log(probs).mean()\nreturn nats, math.exp(nats), nats / math.log(2)",
        "ex4.math_on_tensor",
        "torch.log",
    ),
    "torch.log_softmax without dim": Mistake(
        EX4,
        PICKED.replace(", dim=-1", "") + "nats = -picked.mean().item()\n"
        "return nats, math.exp(nats), nats / math.log(2)",
        "ex4.softmax_without_dim",
        "dim=-1",
    ),
    ".item() before the mean": Mistake(
        EX4,
        PICKED + "nats = -picked.item()\nreturn nats, math.exp(nats), nats / math.log(2)",
        "ex4.item_of_many",
        "reduce it first",
    ),
    "logits normalised in place": Mistake(
        EX4,
        "logits -= logits.logsumexp(-1, keepdim=True)\n"
        "nats = -logits.gather(-1, targets.unsqueeze(-1)).mean().item()\n"
        "return nats, math.exp(nats), nats / math.log(2)",
        "ex4.modified_input",
        "in place",
    ),
    # One case for each code the cases above do not reach.
    "Ex4: perplexity off by one": Mistake(
        EX4,
        "nats = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())"
        ".item()\nreturn nats, math.exp(nats) + 1, nats / math.log(2)",
        "ex4.wrong_values",
    ),
    "Ex4: a pair": Mistake(
        EX4,
        "nats = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())"
        ".item()\nreturn nats, math.exp(nats)",
        "ex4.not_a_triple",
    ),
    "Ex4: summed over the batch": Mistake(
        EX4,
        "log_probs = torch.log_softmax(logits, dim=-1)\n"
        "picked = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)\n"
        "nats = -picked.sum(0).mean().item()\n"
        "return nats, math.exp(nats), nats / math.log(2)",
        "ex4.summed_over_batch",
    ),
    # Mistakes students bring from other courses.
    "Ex4: F.cross_entropy on unflattened logits": Mistake(
        EX4,
        "nats = torch.nn.functional.cross_entropy(logits, targets).item()\n"
        "return nats, math.exp(nats), nats / math.log(2)",
        "ex4.cross_entropy_not_flattened",
    ),
    "Ex4: reduction='sum'": Mistake(
        EX4,
        "nats = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), "
        "reduction='sum').item()\nreturn nats, math.exp(min(nats, 700)), nats / math.log(2)",
        "ex4.summed_over_everything",
    ),
}

RIGHT = {
    "cross_entropy flattened": Right(
        EX4,
        "nats = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten()).item()"
        "\nreturn nats, math.exp(nats), nats / math.log(2)",
    ),
    "cross_entropy on axis 1": Right(
        EX4,
        "nats = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets).item()\n"
        "return nats, math.exp(nats), math.log2(math.exp(nats))",
    ),
}

EXERCISES = (EX4,)
