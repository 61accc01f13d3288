"""Every code a check can give, declared once.

An exercise has one name: the prefix of its codes (`ex6a.no_proj`), its grade id (`ex6a_check`)
and the `exercise` of its results; its title is only what a student reads ("Challenge A
(MyMultiHeadAttention)"). A check that grades no exercise (the leak test on a whole model, the
comparison with the trigram) has a name of its own and no grade id.

A mistake has one name wherever it is seen, and the prefix says where: the future-reading leak is
`reads_the_future` in Exercise 2's leak test, in Challenge A's layer, in Challenge B's blocks and
in the leak test on a whole model, so the class report counts one concept under one name. A check
that gives an undeclared code fails at once (CheckFailed refuses it), and tests/test_codes.py
holds every declared code to a test that shows it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from transformer_lab.catalogue import BY_NAME

# What any check may give: the failures of calling a student's function (a stub, an error and its
# usual causes, a changed profile hook) and of the shared comparisons (type, shape, inputs changed
# in place, NaN, values off).
SHARED = frozenset(
    (
        "not_done",
        "raised",
        "watch_disabled",
        "not_a_tensor",
        "wrong_shape",
        "modified_input",
        "not_finite",
        "wrong_values",
        # the usual causes of an error or a warning, told by its text (_core._RAISED)
        "mask_inverted",
        "tensor_as_condition",
        "math_on_tensor",
        "item_of_many",
        "number_not_tensor",
        "transpose_all_axes",
        "softmax_without_dim",
        "cross_entropy_not_flattened",
        "pair_not_unpacked",
        "shape_unpacked",
        "view_after_transpose",
        "shapes_do_not_match",
        "mask_not_bool",
        "overflows_in_half",
        "numpy_in_model",
        # a device named by hand that the runtime lacks, or two devices mixed (_core.device_failure)
        "device_mismatch",
    )
)


@dataclass(frozen=True)
class Codes:
    """The codes of one exercise of the catalogue (transformer_lab/catalogue.py), or of a check
    that grades none: its name, its title and the mistakes its checks may name."""

    name: str  # "ex1": the codes' prefix, and the grade id's ("ex1_check")
    title: str  # what a student reads: "Exercise 1"
    mistakes: frozenset[str]
    graded: bool = True

    def __str__(self) -> str:
        return self.title

    @property
    def grade_id(self) -> str | None:
        return f"{self.name}_check" if self.graded else None

    def at(self, case: str) -> Codes:
        """The same exercise, titled with the case being checked: "Exercise 1 (T = 1)"."""
        return replace(self, title=f"{self.title} ({case})")

    def titled(self, title: str) -> Codes:
        return replace(self, title=title)

    def code(self, mistake: str) -> str:
        found = f"{self.name}.{mistake}"
        if mistake not in self.mistakes and mistake not in SHARED:
            raise ValueError(f"{found} is not declared: add it under {self.name} in {__name__}")
        return found


def _exercise(name: str, *mistakes: str) -> Codes:
    """The codes of the catalogue's exercise `name`, named and titled as the catalogue says."""
    return Codes(name, BY_NAME[name].title, frozenset(mistakes))


def _check(name: str, title: str, *mistakes: str) -> Codes:
    """The codes of a check that grades no exercise."""
    return Codes(name, title, frozenset(mistakes), graded=False)


_PAIR = ("not_a_pair", "pair_swapped", "rows_do_not_sum_to_1", "wrong_weights", "wrong_v_bar")
_LAYER = ("not_a_module", "wrong_param_count", "wrong_param_names", "dropout_in_eval")

EX0 = _exercise(
    "ex0",
    "count_not_int",
    "wrong_count",
    "count_without_positions",
    "count_without_embedding",
    "count_without_output_layer",
    "count_without_output_bias",
    "count_without_proj",
    "count_without_proj_bias",
    "count_without_layernorms",
    "count_without_block_layernorms",
    "count_without_final_layernorm",
    "count_without_ffn_biases",
    "count_with_qkv_biases",
    "count_full_width_heads",
    "count_ffn_width_d_model",
    "count_not_from_sizes",
)
EX1 = _exercise(
    "ex1",
    *_PAIR,
    "softmax_wrong_axis",
    "no_sqrt_dk",
    "divided_by_d_k",
    "scores_floor_divided",
    "sqrt_precedence",
    "d_k_wrong_axis",
    "mask_after_softmax",
    "mask_zeroes_scores",
    "uses_package_attention",
    "uses_torch_attention",
    "uses_nn_multihead_attention",
    "gradient_cut",
)
EX2 = _exercise(
    "ex2",
    "mask_negated",
    "diagonal_excluded",
    "extra_leading_dims",
    "fixed_size",
    "additive_mask",
    "wrong_dtype",
    "wrong_entries",
    "cached_constant",
    "uses_package_mask",
    "uses_torch_mask",
    # its leak test, on one attention step
    "leak_above_diagonal",
    "leak_mask_refused",
    "reads_the_future",
    "ignores_input",
)
EX3 = _exercise(
    "ex3",
    "positions_not_added",
    "tokens_not_added",
    "positions_indexed_by_token",
    "same_position_everywhere",
    "scaled_by_sqrt_d_model",
    "sinusoidal_positions",
    "positions_off_by_one",
    "positions_concatenated",
    "positions_wrong_length",
    "position_out_of_range",
    "no_gradient",
    "position_table_detached",
    "token_table_detached",
    "uses_package_embedding",
    "reads_the_future",
)
EX4 = _exercise(
    "ex4",
    "not_a_triple",
    "not_floats",
    "summed_over_positions",
    "summed_over_batch",
    "summed_over_everything",
    "mean_precedence",
    "sign_flipped",
    "raw_logits",
    "loss_in_bits",
    "bits_times_ln2",
    "bits_as_log2_of_nats",
    "bits_in_nats",
    "perplexity_of_bits",
    "perplexity_base_2",
)
EX5 = _exercise(
    "ex5",
    "wrong_sign",
    "mean_over_keys",
    "divided_by_allowed_cells",
    "divided_by_keys_per_query",
    "summed_over_queries",
    "unweighted_all_cells",
    "unweighted_allowed_keys",
    "unweighted_allowed_cells",
    "only_keys_reduced",
    "leading_axes_reduced",
    "integer_result",
    "dtype_not_kept",
    "result_not_on_device",
)
EX6A = _exercise(
    "ex6a",
    *_LAYER,
    "not_a_pair",
    "wrong_split_and_merge",
    "wrong_split",
    "merge_without_transpose",
    "interleaved_heads",
    "no_causal_mask",
    "scaled_by_d_model",
    "no_sqrt_dk",
    "no_proj",
    "no_dropout",
    "weights_averaged_over_heads",
    "wrong_weights_shape",
    "wrong_weights",
    "reads_the_future",
    "uses_package_layer",
    "uses_nn_multihead_attention",
)
EX6B = _exercise(
    "ex6b",
    *_LAYER,
    "attention_cell_not_run",
    "post_norm",
    "no_attn_residual",
    "no_ffn_residual",
    "no_residuals",
    "normed_stream",
    "normed_stream_attn",
    "normed_stream_ffn",
    "norm_after_sublayer",
    "swapped_norms",
    "ffn_reads_input",
    "ffn_residual_adds_input",
    "no_ln1",
    "no_ln2",
    "returns_tuple",
    "reads_the_future",
    "uses_package_block",
)
# Checks of no exercise: they count in the class report only where a graded cell calls them.
LEAK = _check("leak", "The leak test", "reads_the_future", "ignores_input")
ORDER = _check(
    "order",
    "Order blindness",
    "wrong_inputs",
    "not_a_reordering",
    "package_changed",
)
UNTRAINED = _check(
    "untrained",
    "The untrained model",
    "loss_not_finite",
    "loss_far_from_ln_65",
)
TRIGRAM = _check("trigram", "The comparison with the trigram", "not_well_below")
WHOLE = _check(
    "whole",
    "The model built from your blocks (Challenges A and B)",
    "wrong_logits_shape",
    "logits_differ",
)

REGISTRY: dict[str, Codes] = {
    e.name: e
    for e in (EX0, EX1, EX2, EX3, EX4, EX5, EX6A, EX6B, LEAK, ORDER, UNTRAINED, TRIGRAM, WHOLE)
}


def declared(code: str) -> bool:
    """Whether `code` ("ex1.no_sqrt_dk") names a declared exercise and one of its mistakes."""
    name, _, mistake = code.partition(".")
    entry = REGISTRY.get(name)
    return entry is not None and (mistake in entry.mistakes or mistake in SHARED)
