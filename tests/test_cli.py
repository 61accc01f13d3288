import os
import subprocess
import sys

import pytest


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


@pytest.mark.parametrize(
    "args, env, says",
    [
        (
            ["train", "--model", "trigram"],
            {"TRANSFORMER_LAB_DATA": "/nowhere/tiny.txt"},
            "does not exist",
        ),
        (
            ["train", "--model", "trigram"],
            {"TRANSFORMER_LAB_DATA": "http://127.0.0.1:9/t.txt"},
            "Could not download",
        ),
        (["train", "--budget", "huge"], {}, "invalid choice"),
    ],
    ids=["missing corpus", "no network", "bad argument"],
)
def test_expected_errors_are_one_line_and_status_2(args, env, says, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "transformer_lab", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "TRANSFORMER_LAB_CACHE": str(tmp_path), **env},
    )
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert "Traceback" not in done.stderr and says in last  # the reason, on one line
