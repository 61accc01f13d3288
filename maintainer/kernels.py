"""How the baselines pipeline runs a notebook's kernel, and what of it a maintainer sees.

Quiet where nothing is wrong: the kernel listens on Unix sockets (ZeroMQ's IPC transport) in
Jupyter's runtime folder, readable by this user only, rather than on TCP ports of localhost
that every local user can reach. ipykernel warns, rightly, that an unencrypted TCP kernel can be
overheard; an IPC kernel on one machine cannot be, and prints no warning. (Windows has no IPC
transport: there the kernel stays on TCP and its warning stands.)

Nor, when a notebook is done, does the kernel log "KeyboardInterrupt caught in kernel" as an
ERROR: jupyter_client interrupts a kernel before it asks it to shut down, in case a cell still
runs; papermill shuts it down once the last cell has run, and an idle ipykernel logs the
interrupt it did not need. The pipeline's kernels are asked to shut down without it (and killed
if they do not).

Talkative where it is slow: the notebook's printed lines, and the training loop's tqdm bar
(step, loss, tokens per second, time left), reach the terminal as lines prefixed with the run
and the notebook. In a kernel tqdm.auto would draw a widget, which papermill never sees; the
pipeline's kernels draw tqdm's text bar instead, and of its redraws (one per logged step) a
line every PROGRESS_SECONDS is shown. A notebook silent for HEARTBEAT_SECONDS (a long cell with
no bar) prints how long it has run.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from jupyter_core.paths import jupyter_runtime_dir
from traitlets import default

PROGRESS_SECONDS = 20  # between two redraws of a training bar: a line every 20 s or so
HEARTBEAT_SECONDS = 60  # the longest a running notebook stays silent
# Run in the kernel before the notebook: the text bar, so that its redraws are stream output.
TEXT_PROGRESS = "import tqdm.auto, tqdm.std; tqdm.auto.tqdm = tqdm.std.tqdm"


class PipelineKernelManager(AsyncKernelManager):
    """A kernel on IPC sockets (where the platform has them), drawing text progress bars."""

    @default("transport")
    def _transport_default(self) -> str:
        return "ipc" if os.name == "posix" else "tcp"

    @default("ip")
    def _ip_default(self) -> str:
        # For IPC, jupyter_client's default is "kernel-ipc", a path relative to whichever folder
        # each side runs in; the pipeline's sockets go to the runtime folder, by full path.
        if self.transport != "ipc":
            return super()._ip_default()
        runtime = Path(jupyter_runtime_dir())
        runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
        return str(runtime / f"pipeline-{uuid.uuid4().hex[:12]}-ipc")

    async def start_kernel(self, **kw) -> None:
        kw["extra_arguments"] = [
            *kw.get("extra_arguments", []),
            f"--IPKernelApp.exec_lines={TEXT_PROGRESS}",
        ]
        await super().start_kernel(**kw)

    async def _async_interrupt_kernel(self) -> None:
        # The one jupyter_client calls on its way to shut down (`_async_shutdown_kernel`), after
        # setting `shutting_down`. Should it be renamed, the interrupt and its log line return.
        if not self.shutting_down:
            await super()._async_interrupt_kernel()


class Relay:
    """A file-like sink for one notebook's stream output (papermill's stdout_file and
    stderr_file): each printed line shown with `prefix`; of a progress bar's redraws (text after
    a carriage return), the first, then one every `every` seconds, and the last when the bar is
    cleared or a line is printed; and a heartbeat line whenever the notebook has been silent for
    `quiet` seconds."""

    def __init__(
        self,
        prefix: str,
        print_line: Callable[[str], None] | None = None,
        every: float = PROGRESS_SECONDS,
        quiet: float = HEARTBEAT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.prefix, self.every, self.quiet, self.clock = prefix, every, quiet, clock
        self.print_line = print_line or (lambda line: print(line, file=sys.stdout, flush=True))
        self.started = self.last = clock()
        self.last_redraw: float | None = None  # None: no redraw shown since the last line
        self.pending: str | None = None  # a redraw not shown (yet)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, daemon=True)

    def write(self, text: str) -> None:
        for line in text.split("\n"):
            frames = line.split("\r")  # a bar redraws itself after a carriage return
            shown = next((frame.rstrip() for frame in reversed(frames) if frame.strip()), "")
            if len(frames) == 1 or not shown:  # a printed line, or a bar cleared at its end
                self._show_pending()
                if shown:
                    self._say(shown)
                self.last_redraw = None
            elif self.last_redraw is None or self.clock() - self.last_redraw >= self.every:
                self._say(shown)
                self.last_redraw, self.pending = self.last, None
            else:
                self.pending = shown

    def _show_pending(self) -> None:
        """The bar's last redraw, where it was not shown: how far it got when it ended."""
        if self.pending:
            self._say(self.pending)
            self.pending = None

    def flush(self) -> None:
        pass

    def _say(self, line: str) -> None:
        with self._lock:
            self.last = self.clock()
            self.print_line(f"{self.prefix} {line}")

    def _heartbeat(self) -> None:
        while not self._stop.wait(min(self.quiet, 5.0)):
            if self.clock() - self.last >= self.quiet:
                self._say(f"still running, {_minutes(self.clock() - self.started)} so far")

    def __enter__(self) -> Relay:
        self._beat.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._beat.join()
        self._show_pending()


def _minutes(seconds: float) -> str:
    minutes, seconds = divmod(round(seconds), 60)
    return f"{minutes} min {seconds:02d} s" if minutes else f"{seconds} s"
