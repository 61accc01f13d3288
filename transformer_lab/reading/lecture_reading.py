"""The lecture's reading of its own table (Lab 5, "After the Lab"), point by point, held against
this course's recorded runs: notebook 04's closing section.

Each point is computed here as data (its numbers, which way each comparison falls, whether it
differs from the lecture); its words are in templates/lecture_reading.md.j2. The lecture's
measured figures are withheld from the course and not repeated: its reading is quoted in words,
and what it fixes (the architectures, hence the parameter ratio; the test split; the GPT's
scoring windows) is computed from the package.
"""

from __future__ import annotations

from ..baselines import RECORDED_MODES, recorded_budgets, recorded_rows, seed_nats
from ..train import LAB3_FORGET_GATE_BIAS, LAB3_RECIPE, training_summary
from .text import render
from .verdict import Gap

A_FEW_HUNDREDTHS = (0.01, 0.1)  # nats: one hundredth or more, less than a tenth
WIDE = A_FEW_HUNDREDTHS[1]  # a wide margin: a tenth of a nat or more, past "a few hundredths"
LECTURE_TABLE = "full"  # the budget of the lecture's table, which its reading is about
ABOUT_AN_ORDER_OF_MAGNITUDE = (5.0, 20.0)  # a ratio of times within a factor of two of ten
COUNTS = {"trigram": "trigram", "5gram": "5-gram"}  # the count-based rows (Lab 1)
NAMES = {"gpt": "GPT", "lstm": "LSTM"}
# The outcomes (`Gap.outcome`) that agree with what the lecture concludes about GPT against the
# retrained LSTM at each budget. At full it reads "a tie, not a ranking" from a single seed: no
# ranking, which a tie and "not settled" both keep to. At quick, the LSTM ahead, three seeds each.
LECTURE_AGREES = {"full": ("tie", "unsettled"), "quick": ("LSTM",)}


def _where(value: float, band: tuple[float, float]) -> str:
    return "below" if value < band[0] else "above" if value >= band[1] else "within"


def _seeds(entry: dict, run: dict) -> list[str]:
    """The seeds a row was measured with: its own, else those of its run."""
    return sorted(seed_nats(entry) or map(str, run["provenance"]["seeds"]), key=int)


def gap_of(run: dict) -> Gap:
    """GPT against LSTM in one run, each model's test loss per seed. A row recorded without
    seeds of its own counts as one measurement, at its run's first seed."""
    rows = recorded_rows(run)

    def per_seed(name: str) -> dict[str, float]:
        own = str(run["provenance"]["seeds"][0])
        return seed_nats(rows[name]) or {own: rows[name]["nats"]}

    return Gap(per_seed("gpt"), per_seed("lstm"))


def _seed_spread(run: dict) -> float:
    """The widest spread (max - min) of a neural model's seeds in a run: 0 with one seed."""
    spreads = [
        max(seeds) - min(seeds)
        for seeds in (list(seed_nats(recorded_rows(run)[name]).values()) for name in NAMES)
        if seeds
    ]
    return max(spreads, default=0.0)


def counts_margin(budget: str, key: str, run: dict) -> dict:
    rows = recorded_rows(run)
    point = {"kind": "counts", "budget": budget, "key": key, "differs": []}
    counts = {name: rows[name]["nats"] for name in COUNTS if name in rows}
    if not counts:
        return point | {"recorded": False}
    best = min(counts, key=counts.get)
    weaker = max(("gpt", "lstm"), key=lambda name: rows[name]["nats"])
    margin = counts[best] - rows[weaker]["nats"]
    # the lecture reads its table, at the full budget: no claim at another budget to differ from
    claimed = budget == LECTURE_TABLE
    return point | {
        "recorded": True,
        "claimed": claimed,
        "best": COUNTS[best],
        "best_nats": counts[best],
        "weaker": NAMES[weaker],
        "weaker_nats": rows[weaker]["nats"],
        "margin": margin,
        "wide": margin >= WIDE,
        "spread": _seed_spread(run),
        "differs": ["counts"] if claimed and margin < WIDE else [],
    }


# The settings of a recipe in the order the Lab 3 row's difference is told; the schedule's
# warm-up and final rate are told with the schedule.
RECIPE_SETTINGS = ("steps", "batch_size", "optimizer", "lr", "schedule", "betas", "weight_decay")
RECIPE_SETTINGS += ("dropout", "grad_clip", "T", "precision")


def recipe_contrast(one: dict, other: dict) -> list[dict]:
    """The settings in which two recorded recipes differ, in RECIPE_SETTINGS order: each as
    {"setting", "one", "other"} ("schedule" with the whole recipes, for its warm-up and decay)."""
    differing = []
    for setting in RECIPE_SETTINGS:
        a, b = one.get(setting), other.get(setting)
        if setting == "schedule":
            keys = ("schedule", "warmup_steps", "final_lr_ratio")
            if any(one.get(k) != other.get(k) for k in keys):
                differing.append({"setting": setting, "one": one, "other": other})
        elif a != b:
            differing.append({"setting": setting, "one": a, "other": b})
    return differing


def lstm_rows(budget: str, key: str, run: dict) -> dict:
    lstm, lab3 = recorded_rows(run)["lstm"], recorded_rows(run).get("lstm_lab3")
    point = {"kind": "lstm_rows", "budget": budget, "key": key, "differs": []}
    if lab3 is None:
        return point | {"recorded": False}
    moved = lab3["nats"] - lstm["nats"]  # above 0: the GPT's loop did better
    where = _where(abs(moved), A_FEW_HUNDREDTHS)
    lab3_recipe = lab3.get("recipe") or LAB3_RECIPE.as_dict()
    return point | {
        "recorded": True,
        "lab3": lab3,
        "lab3_training": training_summary(lab3_recipe),
        "lstm": lstm,
        "seeds": _seeds(lstm, run),
        "moved": moved,
        "where": where,
        "contrast": recipe_contrast(lab3_recipe, lstm["recipe"]) if lstm.get("recipe") else None,
        "forget_gate_bias": LAB3_FORGET_GATE_BIAS,
        "differs": [] if where == "within" else ["lstm_rows"],
    }


def _lower_seeds(gap: Gap) -> dict[str, list[str]]:
    """{"GPT": seeds where the GPT is lower, "LSTM": where the LSTM is}, on shared seeds."""
    differences = gap.differences.items()
    return {
        "GPT": [seed for seed, d in differences if d > 0],
        "LSTM": [seed for seed, d in differences if d < 0],
    }


def gpt_against_lstm(budget: str, key: str, run: dict) -> dict:
    gap = gap_of(run)
    agrees = gap.outcome in LECTURE_AGREES[budget]
    lower = _lower_seeds(gap)
    return {
        "kind": "verdict",
        "budget": budget,
        "key": key,
        "gap": gap,
        "outcome": gap.outcome,
        "lecture": LECTURE_AGREES[budget][0],
        "lower": lower,
        "flips": bool(lower["GPT"] and lower["LSTM"]),
        "differs": [] if agrees else ["verdict"],
    }


def _tokens(run: dict) -> int:
    p = run["provenance"]
    return p["batch_size"] * p["steps"]


def trend(found: dict[str, tuple[str, dict]]) -> dict:
    """The lecture's reading of its two budgets, "the transformer catches up given more",
    against the gap at the quick and at the full budget (LSTM minus GPT, so above 0 the GPT is
    lower): how much the GPT gains on the LSTM from one to the other."""
    (quick_key, quick), (full_key, full) = found["quick"], found["full"]
    before, after = gap_of(quick), gap_of(full)
    gained = after.gap - before.gap
    return {
        "kind": "trend",
        "quick_key": quick_key,
        "full_key": full_key,
        "before": before,
        "after": after,
        "gained": gained,
        "tokens": _tokens(full) / _tokens(quick),
        "quick": quick["provenance"],
        "full": full["provenance"],
        "differs": [] if gained > 0 else ["trend"],
    }


def _lecture_parameters() -> tuple[int, int]:
    """The parameters of the lecture's mini-GPT and LSTM, counted on the package's models."""
    from ..lstm import CharLSTM
    from ..model import MiniGPT, count_parameters

    return count_parameters(MiniGPT()), count_parameters(CharLSTM())


def _times(budget: str, key: str, run: dict) -> dict | None:
    gpt, lstm, p = recorded_rows(run)["gpt"], recorded_rows(run)["lstm"], run["provenance"]
    if not gpt.get("train_seconds") or not lstm.get("train_seconds"):
        return None
    return {
        "budget": budget,
        "key": key,
        "device": p["device"],
        "precision": p["precision"],
        "gpt": gpt["train_seconds"],
        "lstm": lstm["train_seconds"],
        "ratio": gpt["train_seconds"] / lstm["train_seconds"],
        "mean": len(_seeds(gpt, run)) > 1,
        "cpu": run.get("device_class", key.split("/")[1]) == "cpu",
    }


def stated_budget(found: dict[str, tuple[str, dict]]) -> dict:
    lecture_gpt, lecture_lstm = _lecture_parameters()
    key, run = next(iter(found.values()))
    gpt, lstm = recorded_rows(run)["gpt"]["parameters"], recorded_rows(run)["lstm"]["parameters"]
    times = [t for t in (_times(b, *found[b]) for b in found) if t]
    full = next((t for t in times if t["budget"] == "full"), None)
    where = _where(full["ratio"], ABOUT_AN_ORDER_OF_MAGNITUDE) if full else "within"
    differs = ["parameters"] if f"{gpt / lstm:.1f}" != f"{lecture_gpt / lecture_lstm:.1f}" else []
    return {
        "kind": "stated_budget",
        "lecture_gpt": lecture_gpt,
        "lecture_lstm": lecture_lstm,
        "key": key,
        "gpt": gpt,
        "lstm": lstm,
        "times": times,
        "full": full,
        "full_where": where,
        "differs": differs + ([] if where == "within" else ["time"]),
    }


def same_characters() -> dict:
    from ..data import CORPUS_CHARS, TEST_CHARS, VAL_END
    from ..evaluate import gpt_windows
    from ..model import GPTConfig

    T_max = GPTConfig().T_max
    first = min(j0 for _, j0 in gpt_windows(VAL_END, CORPUS_CHARS, T_max))
    return {
        "kind": "context",
        "test_characters": TEST_CHARS,
        "T_max": T_max,
        "shift": T_max // 2,
        "first": first + 1,
        "differs": [],
    }


def points(found: dict[str, tuple[str, dict]]) -> list[dict]:
    """The lecture's points in its order, each as the data its sentence is written from."""
    result = [counts_margin(b, *found[b]) for b in found]
    if "full" in found:
        result.append(lstm_rows("full", *found["full"]))
    result += [gpt_against_lstm(b, *found[b]) for b in found]
    if set(RECORDED_MODES) <= set(found):
        result.append(trend(found))
    return result + [stated_budget(found), same_characters()]


def reading(found: dict[str, tuple[str, dict]]) -> str:
    """Markdown: every point against the runs `found` ({budget: (key, run)}), then where the
    course differs from the lecture."""
    read = points(found) if found else []
    return render(
        "lecture_reading.md.j2",
        missing=[budget for budget in RECORDED_MODES if budget not in found],
        points=read,
        differences=[(clause, point) for point in read for clause in point["differs"]],
    )


def lecture_comparison(device, baselines: dict | None = None) -> str:
    """Markdown: each point of the lecture's reading of its own table set against this course's
    recorded runs (the full and the quick budget, on the student's device class or the nearest
    recorded one), computed from data/baselines.json, and in the end where the two differ."""
    return reading(recorded_budgets(device, baselines))
