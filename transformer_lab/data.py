"""Tiny Shakespeare: fetch, verify, cache; the vocabulary; the course splits; batches.

The split is the course protocol and every number the lab shows depends on it:
train = the first 1,000,000 characters, validation = the next 55,000, test = the last 60,394.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import torch

CORPUS_URL = (
    "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
)
CORPUS_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
CORPUS_FILENAME = "tinyshakespeare.txt"
CORPUS_CHARS = 1_115_394

# A local file, a folder holding tinyshakespeare.txt (or input.txt), or an http(s) mirror URL.
OVERRIDE_ENV = "TRANSFORMER_LAB_DATA"
CACHE_ENV = "TRANSFORMER_LAB_CACHE"

TRAIN_END = 1_000_000
VAL_END = 1_055_000
TEST_CHARS = CORPUS_CHARS - VAL_END  # 60,394


class CorpusError(RuntimeError):
    """The corpus could not be fetched or failed its checksum; the message says what to do."""


def cache_dir() -> Path:
    """Where the verified corpus is kept between sessions."""
    import pooch

    return Path(os.environ.get(CACHE_ENV) or pooch.os_cache("transformer_lab"))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _local_override(location: str) -> Path:
    path = Path(location).expanduser()
    if path.is_dir():
        for name in (CORPUS_FILENAME, "input.txt"):
            if (path / name).is_file():
                return path / name
        raise CorpusError(
            f"{OVERRIDE_ENV}={location} is a folder without {CORPUS_FILENAME} or input.txt. "
            "Put the corpus file there or point the variable at the file itself."
        )
    if not path.is_file():
        raise CorpusError(
            f"{OVERRIDE_ENV}={location} does not exist. Point it at a copy of Tiny Shakespeare, "
            f"a folder holding one, or a mirror URL; or unset it to download from {CORPUS_URL}."
        )
    try:
        digest = _sha256(path)
    except OSError as err:
        raise CorpusError(
            f"{OVERRIDE_ENV}={location} cannot be read ({err.strerror or err}). Make the file "
            "readable, or point the variable at another copy of Tiny Shakespeare."
        ) from err
    if digest != CORPUS_SHA256:
        raise CorpusError(
            f"{path} is not the course corpus: SHA-256 {digest}, expected {CORPUS_SHA256}. "
            "The file is truncated, edited or a different text; download it again."
        )
    return path


def _download(url: str, folder: Path) -> Path:
    import pooch
    import requests

    try:
        # pooch writes to a temporary file and moves it into place only after the hash matches,
        # so a failed or corrupted download never leaves a partial file in the cache.
        return Path(
            pooch.retrieve(
                url,
                known_hash=f"sha256:{CORPUS_SHA256}",
                fname=CORPUS_FILENAME,
                path=folder,
                progressbar=False,
            )
        )
    except ValueError as err:  # pooch's hash mismatch
        raise CorpusError(
            f"The file downloaded from {url} failed its SHA-256 check (truncated or corrupted "
            "transfer, or a different file). Nothing was cached; run again, or download the "
            f"file by hand and set {OVERRIDE_ENV} to its path."
        ) from err
    except (requests.RequestException, OSError) as err:
        raise CorpusError(
            f"Could not download Tiny Shakespeare from {url} ({type(err).__name__}: {err}). "
            f"Check the network, or download the file by hand and set {OVERRIDE_ENV} to its path "
            "(or to a folder or mirror URL holding it)."
        ) from err


def corpus_path() -> Path:
    """Path of a verified copy of the corpus: the override if set, else the cache (downloading)."""
    override = os.environ.get(OVERRIDE_ENV)
    if override and not override.startswith(("http://", "https://")):
        return _local_override(override)
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    return _download(override or CORPUS_URL, folder)


class Vocab:
    """The sorted distinct characters of the corpus; ids are positions in that order."""

    def __init__(self, chars: str):
        self.chars = "".join(sorted(set(chars)))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        unknown = sorted(set(text) - self.index.keys())
        if unknown:
            raise ValueError(
                f"characters not in the vocabulary: {unknown!r}; the model knows only the "
                f"{len(self)} characters of the corpus"
            )
        return [self.index[c] for c in text]

    def decode(self, ids) -> str:
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else ids
        return "".join(self.chars[i] for i in ids)


@dataclass(frozen=True)
class Corpus:
    """The encoded corpus and its three splits, as views of one tensor on one device."""

    text: str
    vocab: Vocab
    ids: torch.Tensor  # (CORPUS_CHARS,) long

    @property
    def train(self) -> torch.Tensor:
        return self.ids[:TRAIN_END]

    @property
    def val(self) -> torch.Tensor:
        return self.ids[TRAIN_END:VAL_END]

    @property
    def test(self) -> torch.Tensor:
        return self.ids[VAL_END:]

    @property
    def device(self) -> torch.device:
        return self.ids.device

    def to(self, device) -> Corpus:
        return Corpus(self.text, self.vocab, self.ids.to(device))


def load_corpus(device: torch.device | str = "cpu") -> Corpus:
    """Read the verified corpus and encode it once, on `device`."""
    text = corpus_path().read_text(encoding="utf-8")
    if len(text) != CORPUS_CHARS:
        raise CorpusError(f"expected {CORPUS_CHARS:,} characters, read {len(text):,}")
    vocab = Vocab(text)
    ids = torch.tensor(vocab.encode(text), dtype=torch.long, device=device)
    return Corpus(text, vocab, ids)


def draw_starts(
    split: torch.Tensor,
    batch_size: int,
    T: int,
    batches: int = 1,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """The starts of `batches` batches of windows of length T from one split: (batches, B), on
    the split's own device.

    They are drawn on the generator's device (the CPU's default generator when None), so a CPU
    generator with a given seed picks the same windows wherever the split lives: CUDA's
    generator draws other numbers than the CPU's for the same seed. A run's starts are drawn in
    one call and moved in one copy; they are the numbers `batches` draws of one batch would give.
    """
    if len(split) <= T:
        raise ValueError(f"a split of {len(split)} characters has no window of T={T}")
    drawn_on = generator.device if generator is not None else torch.device("cpu")
    starts = torch.randint(
        len(split) - T, (batches, batch_size), device=drawn_on, generator=generator
    )
    return starts.to(split.device)  # (batches, B)


def windows_at(
    split: torch.Tensor, starts: torch.Tensor, T: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The windows (x, y) of length T at `starts` (B,), both on the split's device.

    y is x shifted by one character: y[b, t] is the character after x[b, t].
    """
    windows = split[starts[:, None] + torch.arange(T + 1, device=split.device)]  # (B, T+1)
    return windows[:, :-1], windows[:, 1:]


def sample_batch(
    split: torch.Tensor, batch_size: int, T: int, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows (x, y) of length T from one split, on the split's own device: one batch
    of `draw_starts`, the same windows for the same generator on every device."""
    return windows_at(split, draw_starts(split, batch_size, T, 1, generator)[0], T)
