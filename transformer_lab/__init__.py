"""Helper package of the Transformer Lab notebooks: data, models, training, evaluation, sampling."""

from . import step_cost
from .attention import causal_mask, scaled_dot_product_attention
from .data import Corpus, CorpusError, Vocab, load_corpus, sample_batch
from .evaluate import Score, evaluate_gpt, evaluate_lstm, evaluate_ngram
from .heads import HeadCosts, head_ablation
from .lstm import CharLSTM
from .model import (
    Block,
    FeedForward,
    GPTConfig,
    MiniGPT,
    MultiHeadAttention,
    count_parameters,
    embed_with_positions,
)
from .ngram import NGramModel
from .runtime import (
    BUDGETS,
    Budget,
    budget_for,
    pick_device,
    precision_for,
    resolve_device,
    resolve_mode,
    set_seed,
    start_notebook,
)
from .sample import Generation, filter_probs, generate
from .saving import (
    TRAINED_GPT,
    TrainedGPT,
    load_gpt,
    load_trained_gpt,
    save_gpt,
    save_to_drive,
    use_drive,
)
from .student import Piece, Pieces, printed
from .train import (
    DEFAULT_LR,
    LAB3_FORGET_GATE_BIAS,
    LAB3_RECIPE,
    Recipe,
    TrainHistory,
    choose_lr,
    train_lm,
)

__all__ = [
    "BUDGETS",
    "DEFAULT_LR",
    "LAB3_FORGET_GATE_BIAS",
    "LAB3_RECIPE",
    "Recipe",
    "Block",
    "Budget",
    "CharLSTM",
    "Corpus",
    "CorpusError",
    "FeedForward",
    "GPTConfig",
    "Generation",
    "HeadCosts",
    "MiniGPT",
    "MultiHeadAttention",
    "NGramModel",
    "Piece",
    "Pieces",
    "Score",
    "TRAINED_GPT",
    "TrainHistory",
    "TrainedGPT",
    "Vocab",
    "budget_for",
    "causal_mask",
    "choose_lr",
    "count_parameters",
    "embed_with_positions",
    "evaluate_gpt",
    "evaluate_lstm",
    "evaluate_ngram",
    "filter_probs",
    "generate",
    "head_ablation",
    "load_corpus",
    "load_gpt",
    "load_trained_gpt",
    "pick_device",
    "printed",
    "precision_for",
    "resolve_device",
    "resolve_mode",
    "sample_batch",
    "save_gpt",
    "save_to_drive",
    "scaled_dot_product_attention",
    "set_seed",
    "step_cost",
    "start_notebook",
    "train_lm",
    "use_drive",
]
