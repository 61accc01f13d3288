import subprocess
import sys


def run(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "transformer_lab", *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def test_ngram_row():
    out = run("train", "--model", "trigram")
    header, row = out.strip().splitlines()
    assert header.split()[:2] == ["model", "params"]
    assert row.split()[0] == "trigram" and row.split()[2] == "counts"


def test_smoke_training_prints_a_results_row():
    out = run("train", "--model", "lstm", "--budget", "smoke", "--device", "cpu")
    lines = out.strip().splitlines()
    assert lines[0].startswith("# smoke budget on cpu (fp32)")
    fields = lines[-1].split()
    assert fields[:4] == ["lstm", "350,593", "30", "8"]
    assert 2.0 < float(fields[5]) < 4.5  # test nats: trained a little from ln 65 = 4.17
