"""Command line: train and score one model.

python -m transformer_lab train --model gpt --budget quick
python -m transformer_lab train --model trigram

Expected failures (no corpus, a corrupt download, a bad argument) print one line and exit with
status 2. (The benchmark is a maintainer tool: `python -m maintainer.bench`.)
"""

from __future__ import annotations

import argparse
import time

from .data import CorpusError, load_corpus
from .evaluate import Score, evaluate_gpt, evaluate_lstm, evaluate_ngram
from .lstm import CharLSTM
from .model import MiniGPT, count_parameters
from .runtime import (
    BUDGETS,
    budget_for,
    configure_cpu_threads,
    device_name,
    resolve_device,
    set_seed,
)
from .train import DEFAULT_LR, Recipe, choose_lr, train_lm

LR_CANDIDATES = {"gpt": (1e-3, 2e-3, 4e-3, 8e-3), "lstm": (4e-3, 8e-3, 1.6e-2, 3.2e-2, 6.4e-2)}
NGRAMS = {"trigram": (3, 0.1), "5gram": (5, 0.01)}
HEADER = (
    f"{'model':<8} {'params':>9} {'steps':>6} {'batch':>5} {'train s':>8} "
    f"{'test nats':>9} {'ppl':>7} {'bits':>6}"
)


def row(name: str, params: int | None, steps, batch, seconds, score: Score) -> str:
    params = f"{params:,}" if params else "-"
    seconds = f"{seconds:.1f}" if seconds is not None else "-"
    return (
        f"{name:<8} {params:>9} {steps!s:>6} {batch!s:>5} {seconds:>8} "
        f"{score.nats:>9.4f} {score.perplexity:>7.3f} {score.bits:>6.4f}"
    )


def train_command(args: argparse.Namespace) -> None:
    if args.model in NGRAMS:
        order, k = NGRAMS[args.model]
        start = time.perf_counter()
        score = evaluate_ngram(load_corpus(), order, k)
        print(HEADER)
        print(row(args.model, None, "counts", "-", time.perf_counter() - start, score))
        return
    device = resolve_device(args.device)
    corpus = load_corpus(device)
    budget = budget_for(args.budget, device)

    def make_model():
        set_seed(args.seed)
        return MiniGPT() if args.model == "gpt" else CharLSTM()

    lr = DEFAULT_LR[args.model] if args.lr is None else args.lr
    if args.lr == "auto":
        lr, losses = choose_lr(
            make_model, corpus, budget, LR_CANDIDATES[args.model], steps=300, seed=args.seed
        )
        for candidate, loss in losses.items():
            print(f"lr {candidate:g}: validation loss {loss:.4f}")
    model = make_model()
    recipe = Recipe.of(budget, lr=float(lr))
    history = train_lm(model, corpus, recipe, seed=args.seed, desc=args.model)
    evaluate = evaluate_gpt if args.model == "gpt" else evaluate_lstm
    score = evaluate(model, corpus, characters=budget.test_characters)
    print(
        f"# {budget.name} budget on {device_name(device)} ({history.precision}), lr {float(lr):g}, "
        f"seed {args.seed}, {history.tokens_per_s:,.0f} training tokens/s; "
        f"test: {score.n_chars:,} characters"
    )
    print(HEADER)
    print(
        row(
            args.model,
            count_parameters(model),
            budget.steps,
            budget.batch_size,
            history.wall_time_s,
            score,
        )
    )


def lr_arg(text: str):
    return text if text == "auto" else float(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m transformer_lab",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser("train", help="train and score one model on the test split")
    train.add_argument("--model", choices=["gpt", "lstm", *NGRAMS], default="gpt")
    train.add_argument("--budget", choices=["auto", *BUDGETS], default="auto")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument(
        "--lr",
        type=lr_arg,
        default=None,
        help="learning rate, or 'auto' to choose one on the validation split",
    )
    train.add_argument("--device", default="auto", help="auto, cpu, cuda or mps")
    args = parser.parse_args(argv)  # a bad argument: argparse's one line, status 2
    configure_cpu_threads()
    try:
        train_command(args)
    except (CorpusError, ValueError) as err:
        parser.exit(2, f"{parser.prog} {args.command}: {err}\n")


if __name__ == "__main__":
    main()
