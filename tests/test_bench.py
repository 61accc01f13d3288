"""`make bench` end to end at one timed step: the tables' rows and columns, never the speeds."""

import json

import pytest
import torch

from maintainer.bench import (
    ATTENTION_LABELS,
    ATTENTIONS,
    native_low_precisions,
    plain_attention,
    reference_eval,
    run_bench,
)
from transformer_lab import CharLSTM, MiniGPT
from transformer_lab.data import VAL_END, Corpus
from transformer_lab.evaluate import evaluate_gpt, evaluate_lstm

pytestmark = pytest.mark.heavy(order=13)


def _table(text: str, heading: str) -> list[list[str]]:
    """The rows (header first) of the markdown table under the heading starting `heading`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"## {heading}"))
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def _numbers(cells: list[str]) -> list[float]:
    return [float(cell.replace(",", "")) for cell in cells]


@pytest.mark.slow  # about 10 s on 2 CPU cores: a dozen measurement processes
def test_bench_writes_the_tables(tmp_path, capsys):
    out = tmp_path / "bench" / "cpu.md"
    text = run_bench(
        steps=1,
        device="cpu",
        eval_chars=300,
        out=out,
        quick_steps=1,
        rounds=2,
        validation_batches=2,
    )
    assert out.read_text() == text
    assert capsys.readouterr().out.startswith(text)
    facts = ("- date: ", "- machine: ", f"torch {torch.__version__}", "commit ", "load average")
    flags = ("--quick-steps 1", "--rounds 2", "--validation-batches 2")
    assert all(flag in text for flag in flags)  # the run says how it ran
    assert all(fact in text for fact in facts)

    training = _table(text, "Training")
    assert training[0] == [
        "device",
        "model",
        "ours: precision",
        "reference tok/s",
        "ours tok/s",
        "ours / reference",
        "reference peak MiB",
        "ours peak MiB",
    ]
    assert [(r[0], r[1], r[2]) for r in training[1:]] == [
        ("cpu", "gpt", "fp32"),
        ("cpu", "lstm", "fp32"),
    ]
    evaluation = _table(text, "Evaluation")
    assert evaluation[0][2:5] == ["reference chars/s", "ours chars/s", "ours / reference"]
    assert [r[1] for r in evaluation[1:]] == ["gpt", "lstm"]
    attention = _table(text, "Attention")
    assert attention[0][1:5] == ["precision", "explicit tok/s", "SDPA tok/s", "SDPA / explicit"]
    assert [r[1] for r in attention[1:]] == ["fp32", *native_low_precisions(torch.device("cpu"))]
    for row in training[1:] + evaluation[1:] + attention[1:]:
        assert all(float(cell.rstrip("x").replace(",", "")) > 0 for cell in row[-5:])

    steps = _table(text, "Notebook 04's training step at the quick budget (batch 16 x T 128")
    assert steps[0][2:] == ["ms/step", "fastest round ms/step", "tok/s", "validation ms/batch"]
    assert [row[:2] for row in steps[1:]] == [["gpt", ATTENTION_LABELS[a]] for a in ATTENTIONS] + [
        ["lstm", "-"]
    ]
    for row in steps[1:]:
        ms, fastest, tok_s, validation = _numbers(row[2:])
        assert 0 < fastest <= ms and validation > 0
        assert tok_s == pytest.approx(16 * 128 / ms * 1000, rel=0.01)
    projected = _table(text, "Notebook 04 at the quick budget, 3 seeds, projected")
    assert [row[0] for row in projected[1:]] == [ATTENTION_LABELS[a] for a in ATTENTIONS]
    for row in projected[1:]:
        gpt, lstm, rest, wall, budget = _numbers(row[1:6])
        share = row[6]
        assert wall == pytest.approx(3 * (gpt + lstm) + rest, abs=3) and budget == 1230
        # of the unrounded wall time: the shown one is rounded to the second
        assert share in {f"{(wall + d) / budget:.0%}" for d in (-0.5, 0, 0.5)}


def test_the_projection_counts_each_seeds_steps_and_validation_and_the_recorded_rest(tmp_path):
    """At 100 ms a GPT step, 20 an LSTM step and 30 a validation batch, a quick seed is 1,500
    steps and 6 x 20 validation batches of each model; the rest is notebook 04's recorded
    seconds outside training."""
    import maintainer.bench as bench

    recorded = {"provenance": {"notebook_seconds": {"04_training": 800.0}, "seeds": [0, 1]}}
    recorded["provenance"] |= {"date": "2026-11-30T15:27:31+00:00", "git_commit": "19550958c0"}
    recorded["results"] = {
        "rows": {
            name: {"seeds": {"0": {"train_seconds": 190.0}, "1": {"train_seconds": 200.0}}}
            for name in ("gpt", "lstm")
        }
    }
    path = tmp_path / "baselines.json"
    path.write_text(json.dumps({"runs": {"quick/cpu": recorded}}))
    assert bench.recorded_rest(path) == (20.0, 2, "2026-11-30, commit 19550958c0")
    assert bench._seconds_a_seed(100.0, 30.0) == pytest.approx(150 + 6 * 20 * 0.03)
    assert bench.recorded_rest(tmp_path / "none.json") is None


def test_no_file_with_dash(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    import maintainer.bench as bench

    monkeypatch.setattr(bench, "DOCS", tmp_path / "docs")
    times = {row: [1.0] for row in bench.QUICK_ROWS}
    fake = bench.StepTimes(times, times)
    monkeypatch.setattr(
        bench, "measure", lambda job: fake if job.what == "steps" else bench.Figure(1.0, 1.0)
    )
    run_bench(steps=1, out="-")
    assert not (tmp_path / "docs").exists()
    run_bench(steps=1)  # default: docs/bench/<device class>.md
    assert (tmp_path / "docs" / "cpu.md").is_file()


@pytest.mark.parametrize("make", [MiniGPT, CharLSTM])
def test_the_reference_scores_what_ours_scores(corpus, make):
    """The plain evaluation loop is timed on the same characters and gives the same nats."""
    model = make().eval()
    reference = model if make is CharLSTM else MiniGPT().eval().use_attention(plain_attention)
    if make is MiniGPT:
        reference.load_state_dict(model.state_dict())
    prefix = Corpus(corpus.text, corpus.vocab, corpus.ids[: VAL_END + 500])
    ours = (evaluate_gpt if make is MiniGPT else evaluate_lstm)(model, prefix)
    assert reference_eval(reference, corpus.ids, VAL_END + 500, "cpu") == pytest.approx(
        ours.nats, abs=1e-4
    )


def test_cpu_precisions_follow_the_cpu_flags(monkeypatch):
    import maintainer.bench as bench

    for flags, expected in (
        (set(), []),
        ({"avx2", "avx512f"}, []),
        ({"avx512_bf16"}, ["bf16"]),
        ({"amx_bf16", "avx512_fp16"}, ["bf16", "fp16"]),
    ):
        monkeypatch.setattr(bench, "_cpu_flags", lambda f=flags: f)
        assert native_low_precisions(torch.device("cpu")) == expected


def test_cuda_precisions_follow_the_compute_capability(monkeypatch):
    """The CUDA branch, reached without a GPU: a T4 (7.5) only emulates bf16."""
    for capability, expected in (((7, 5), ["fp16"]), ((8, 0), ["bf16", "fp16"])):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None, c=capability: c)
        assert native_low_precisions(torch.device("cuda")) == expected
