import hashlib
import http.server
import threading

import pytest
import torch

from transformer_lab import data
from transformer_lab.data import (
    CorpusError,
    Vocab,
    draw_starts,
    load_corpus,
    sample_batch,
    windows_at,
)


def test_vocabulary_and_splits(corpus):
    assert len(corpus.vocab) == 65
    assert list(corpus.vocab.chars) == sorted(corpus.vocab.chars)
    assert (len(corpus.train), len(corpus.val), len(corpus.test)) == (1_000_000, 55_000, 60_394)
    assert corpus.vocab.decode(corpus.test[:20]) == corpus.text[1_055_000:1_055_020]
    line = "To be, or not"
    assert corpus.vocab.decode(corpus.vocab.encode(line)) == line


def test_unknown_characters_are_named():
    with pytest.raises(ValueError, match="'é'"):
        Vocab("abc ").encode("café")


def test_batches_are_shifted_windows_on_the_split_device(corpus):
    g = torch.Generator().manual_seed(0)
    x, y = sample_batch(corpus.val, 4, 32, g)
    assert x.shape == y.shape == (4, 32) and x.device == corpus.val.device
    assert torch.equal(x[:, 1:], y[:, :-1])
    text = corpus.vocab.decode(torch.cat([x[0], y[0, -1:]]))
    assert text in corpus.text[1_000_000:1_055_000]


class _Server:
    """A real HTTP server on 127.0.0.1 serving prepared bytes by path."""

    def __init__(self, routes: dict[str, bytes]):
        routes_ = routes

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = routes_.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # shutdown() waits for the server's next poll: half a second a test at the default
        serve, fast = self.httpd.serve_forever, {"poll_interval": 0.01}
        threading.Thread(target=serve, kwargs=fast, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(corpus):
    good = corpus.text.encode("utf-8")
    corrupted = bytearray(good)
    corrupted[500_000] ^= 1
    srv = _Server(
        {"/good.txt": good, "/truncated.txt": good[:400_000], "/bad.txt": bytes(corrupted)}
    )
    yield srv
    srv.close()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(data.CACHE_ENV, str(folder))
    return folder


def test_download_verifies_and_caches(server, cache, monkeypatch):
    monkeypatch.setenv(data.OVERRIDE_ENV, f"{server.url}/good.txt")
    path = data.corpus_path()
    assert path.parent == cache
    assert hashlib.sha256(path.read_bytes()).hexdigest() == data.CORPUS_SHA256
    server.close()  # a second call uses the cache and needs no network
    assert data.corpus_path() == path


@pytest.mark.parametrize("name", ["truncated.txt", "bad.txt"])
def test_bad_download_leaves_nothing_in_the_cache(server, cache, monkeypatch, name):
    monkeypatch.setenv(data.OVERRIDE_ENV, f"{server.url}/{name}")
    with pytest.raises(CorpusError, match="SHA-256 check.*Nothing was cached"):
        data.corpus_path()
    assert list(cache.iterdir()) == []


def test_no_network_says_what_to_do(server, cache, monkeypatch):
    url = f"{server.url}/good.txt"
    server.close()  # nothing listens on that port any more
    monkeypatch.setenv(data.OVERRIDE_ENV, url)
    with pytest.raises(CorpusError, match=f"Could not download.*{data.OVERRIDE_ENV}"):
        data.corpus_path()
    assert list(cache.iterdir()) == []


def test_http_error_is_reported(server, cache, monkeypatch):
    monkeypatch.setenv(data.OVERRIDE_ENV, f"{server.url}/missing.txt")
    with pytest.raises(CorpusError, match="404"):
        data.corpus_path()


def test_local_override_file_and_folder(corpus, tmp_path, monkeypatch):
    (tmp_path / "input.txt").write_text(corpus.text, encoding="utf-8")
    monkeypatch.setenv(data.OVERRIDE_ENV, str(tmp_path))
    assert data.corpus_path() == tmp_path / "input.txt"
    monkeypatch.setenv(data.OVERRIDE_ENV, str(tmp_path / "input.txt"))
    assert len(load_corpus().text) == 1_115_394


def test_local_override_with_wrong_hash(tmp_path, monkeypatch):
    bad = tmp_path / "tinyshakespeare.txt"
    bad.write_text("First Citizen:\n", encoding="utf-8")
    monkeypatch.setenv(data.OVERRIDE_ENV, str(bad))
    with pytest.raises(CorpusError, match="not the course corpus"):
        data.corpus_path()
    monkeypatch.setenv(data.OVERRIDE_ENV, str(tmp_path / "nowhere.txt"))
    with pytest.raises(CorpusError, match="does not exist"):
        data.corpus_path()
    monkeypatch.setenv(data.OVERRIDE_ENV, str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(CorpusError, match="folder without"):
        data.corpus_path()


def test_an_unreadable_override_says_what_to_do(tmp_path, monkeypatch):
    """A file this user may not read is a CorpusError (one line in every command), not the
    PermissionError's traceback. (Files are readable to root, so the refusal is simulated.)"""
    locked = tmp_path / "tinyshakespeare.txt"
    locked.write_text("First Citizen:\n", encoding="utf-8")

    def refused(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(data.Path, "read_bytes", refused)
    monkeypatch.setenv(data.OVERRIDE_ENV, str(locked))
    with pytest.raises(CorpusError, match="cannot be read .Permission denied.. Make the file"):
        data.corpus_path()


def test_the_windows_of_a_cpu_generator_are_the_cpu_draw_of_its_seed(corpus):
    """sample_batch draws its starts on the generator's device: for a CPU generator the same
    numbers as before it moved them, so windows recorded on a CPU (notebook 05's) stay valid."""
    starts = torch.randint(len(corpus.val) - 32, (4,), generator=torch.Generator().manual_seed(0))
    x, _ = sample_batch(corpus.val, 4, 32, torch.Generator().manual_seed(0))
    assert torch.equal(x, corpus.val[starts[:, None] + torch.arange(32)])


def test_a_runs_starts_drawn_at_once_are_its_batches_drawn_one_by_one(corpus):
    """train_lm draws a run's starts in one call before its first step: the same windows, in
    the same order, as one sample_batch a step from the same generator gave."""
    one_by_one = torch.Generator().manual_seed(3)
    batches = [sample_batch(corpus.train, 16, 128, one_by_one) for _ in range(50)]
    starts = draw_starts(corpus.train, 16, 128, 50, torch.Generator().manual_seed(3))
    assert starts.shape == (50, 16)
    for (x, y), batch_starts in zip(batches, starts, strict=True):
        at_x, at_y = windows_at(corpus.train, batch_starts, 128)
        assert torch.equal(at_x, x) and torch.equal(at_y, y)
    assert not torch.equal(starts[0], starts[1])
