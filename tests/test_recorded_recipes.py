"""The committed record says how each run trained (each trained row's `recipe`, as train_lm read
it), and what the row labels say about training agrees with it."""

import copy

from transformer_lab.baselines import load_baselines
from transformer_lab.train import LAB3_RECIPE, training_summary

# Runs recorded before rows carried their recipe, each with the commit that measured it: one
# that is measured again must carry recipes (then take it out of this set).
RECORDED_WITHOUT_RECIPES: dict[str, str] = {}
SAME_LOOP = "retrained with the GPT's loop and budget"


def _trained_rows(run: dict):
    for name, row in run["results"]["rows"].items():
        if row["steps"] is not None:
            yield name, row
            for seed, seed_row in (row.get("seeds") or {}).items():
                yield f"{name} seed {seed}", seed_row


def disagreements(key: str, run: dict) -> list[str]:
    """Where a run's record says nothing of how a row trained, or its label says otherwise."""
    found = []
    rows = run["results"]["rows"]
    for name, row in _trained_rows(run):
        recipe = row.get("recipe")
        if not recipe:
            found.append(f"{key} {name}: no recipe recorded")
        elif (recipe["steps"], recipe["batch_size"]) != (row["steps"], row["batch_size"]):
            found.append(f"{key} {name}: the row's steps × batch are not its recipe's")
    lab3 = rows.get("lstm_lab3")
    if lab3 and lab3.get("recipe"):
        if f"({training_summary(lab3['recipe'])})" not in lab3["model"]:
            found.append(f"{key} lstm_lab3: the label says other than its recipe")
        wanted = {k: getattr(LAB3_RECIPE, k) for k in ("optimizer", "schedule", "lr")}
        if {k: lab3["recipe"][k] for k in wanted} != wanted:
            found.append(f"{key} lstm_lab3: not trained with Lab 3's recipe")
    gpt, lstm = rows["gpt"].get("recipe"), rows["lstm"].get("recipe")
    if gpt and lstm and SAME_LOOP in rows["lstm"]["model"]:
        loop = {k: v for k, v in gpt.items() if k not in ("lr", "dropout")}
        if loop != {k: v for k, v in lstm.items() if k not in ("lr", "dropout")}:
            found.append(f"{key} lstm: says '{SAME_LOOP}' but trained otherwise")
    return found


def _at_fault(key: str, run: dict) -> list[str]:
    """The rows (and seeds) `disagreements` finds, without what it says of each."""
    return [found.partition(":")[0] for found in disagreements(key, run)]


def test_every_run_says_how_each_row_trained_and_its_labels_agree():
    for key, run in load_baselines()["runs"].items():
        if RECORDED_WITHOUT_RECIPES.get(key) == run["provenance"]["git_commit"]:
            continue
        assert not disagreements(key, run)


def test_a_label_that_disagrees_with_its_recipe_is_found():
    key, run = next(
        (k, r) for k, r in load_baselines()["runs"].items() if k not in RECORDED_WITHOUT_RECIPES
    )
    wrong = copy.deepcopy(run)
    gpt_recipe = wrong["results"]["rows"]["gpt"]["recipe"]
    wrong["results"]["rows"]["lstm"]["recipe"] = gpt_recipe | {"schedule": "constant"}
    assert _at_fault(key, wrong) == [f"{key} lstm"]
    del wrong["results"]["rows"]["gpt"]["seeds"]["0"]["recipe"]
    assert f"{key} gpt seed 0" in _at_fault(key, wrong)
    wrong["results"]["rows"]["lstm_lab3"] = {
        "model": "LSTM, d_h 256, Lab 3's recipe (Adam, constant rate)",
        "steps": 2000,
        "batch_size": 64,
        "recipe": gpt_recipe | {"steps": 2000, "batch_size": 64},
    }
    assert f"{key} lstm_lab3" in _at_fault(key, wrong)
