"""The command-line entry points: `python -m transformer_lab` (results rows, one-line errors,
exit status 2), and a maintainer's commands (`python -m maintainer.X`) at their door: every one
answers --help with its usage and runs nothing, and every one that reads the corpus stops before
any work, in one line that says what to do, where the corpus is missing. Those are called here
as `python -m` calls them (their arguments in sys.argv), in this process, under a timer: a
command that starts its work instead (a benchmark of minutes) is stopped and named."""

import importlib
import os
import signal
import subprocess
import sys
from contextlib import contextmanager

import pytest
from paths import ROOT


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


# Every module of maintainer/ that runs as a command.
COMMANDS = sorted(
    path.stem
    for path in (ROOT / "maintainer").glob("*.py")
    if 'if __name__ == "__main__":' in path.read_text(encoding="utf-8")
)
# Those that read the corpus, with arguments that would start their work.
READ_THE_CORPUS = {
    "ablations": ["--seeds", "0", "--workers", "1"],
    "head_costs": ["--run", "full/cpu"],
    "pipeline": ["--mode", "smoke", "--out", "{tmp}/baselines.json"],
    "bench": ["--steps", "1", "--out", "-"],
    "bench_grading": [],
    "core_measurements": ["shown", "--out", "{tmp}/shown.json"],
    "fresh_runtime": [],
    "lms_lateness": [],
}
SECONDS = 10  # far more than parsing arguments takes, far less than any command's work


class RanOn(Exception):
    """The command was still running when its arguments should have been read long ago."""


@contextmanager
def within(seconds: float, command: str):
    def stop(signum, frame):
        raise RanOn(f"maintainer.{command} was still running after {seconds} s: it started work")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_command(command: str, args: list[str], monkeypatch) -> SystemExit | None:
    """`python -m maintainer.<command> <args>`, in this process: how it exited, if it did."""
    main = importlib.import_module(f"maintainer.{command}").main  # imported before the timer
    monkeypatch.setattr(sys, "argv", [f"maintainer/{command}.py", *args])
    with within(SECONDS, command):
        try:
            main()
        except SystemExit as exited:
            return exited
    return None


def test_the_scan_finds_the_commands():
    assert {"pipeline", "bench", "bench_grading", "fresh_runtime", "student_package"} <= set(
        COMMANDS
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_answers_help_and_runs_nothing(command, monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)  # whatever a command that ignored --help would write
    exited = run_command(command, ["--help"], monkeypatch)
    said = capsys.readouterr()
    assert exited is not None and exited.code in (0, None), said
    assert said.out.startswith("usage: ") and not said.err, said
    assert not list(tmp_path.iterdir()), "it wrote files"


@pytest.mark.parametrize("command", READ_THE_CORPUS)
def test_a_missing_corpus_stops_a_command_at_once_in_one_line(
    command, monkeypatch, tmp_path, capsys
):
    monkeypatch.setenv("TRANSFORMER_LAB_DATA", str(tmp_path / "nowhere" / "tiny.txt"))
    monkeypatch.chdir(tmp_path)
    args = [arg.format(tmp=tmp_path) for arg in READ_THE_CORPUS[command]]
    exited = run_command(command, args, monkeypatch)
    assert exited is not None and isinstance(exited.code, str), exited  # sys.exit's status 1
    assert "\n" not in exited.code and "does not exist. Point it at a copy" in exited.code
    assert not capsys.readouterr().out, "it started work before it looked for the corpus"
