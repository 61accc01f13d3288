"""The sandbox every grading job runs in: bubblewrap, with a list of what the job may see.

A student's notebook is hostile input. Its job starts in a new, empty root where only these are
mounted, read-only: the system's programs and libraries, a few files of /etc, the Python
installation and its packages, the course's own packages and data, and the corpus. The only
writable place is a private /tmp (a tmpfs of its own size), which is also HOME. Everything else,
the course folder (gradebook, source/, submitted/, autograded/, reports/), the instructor's home
and the submissions, is simply not there. The job has no network but a loopback of its own, its
own PID namespace (its last process dies with it), no capabilities, no way to make a user
namespace of its own, and it dies with the grader (`--die-with-parent`).

The list of what is allowed is the whole policy: nothing is mounted and then hidden, except the
course folder when it lies inside the checkout (grader/course, the default).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path

from ..course import ROOT

SCRATCH = "/tmp"  # inside the sandbox: the job's scratch folder, its HOME and its temp files
SCRATCH_MB = 1024
# Of the checkout, only what a grading job imports or reads: not solutions/, not submissions.
CHECKOUT = ("transformer_lab", "checkpoints", "grader", "data")
SYSTEM = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
ETC = (
    "alternatives",  # Debian's /usr/bin links go through here
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "ssl",
    "fonts",
    "mime.types",
)
FONT_CACHE = "/var/cache/fontconfig"  # so that matplotlib need not build one in every job
INSTALL = (
    "Grading runs every notebook in a bubblewrap sandbox, and `bwrap` {why_not}. Install it: "
    "`sudo apt-get install bubblewrap` (Debian, Ubuntu), `sudo dnf install bubblewrap` "
    "(Fedora), `sudo pacman -S bubblewrap` (Arch). On Ubuntu 24.04 and later the package's "
    "AppArmor profile lets it make its namespaces. To grade trusted notebooks without a "
    "sandbox, pass --no-sandbox (`make autograde NO_SANDBOX=1`); the report then says so."
)
NO_SANDBOX = "none (--no-sandbox): notebooks ran with the grader's own rights"


def _system_mounts() -> list[str]:
    args = []
    for name in SYSTEM:
        path = Path("/") / name
        if path.is_symlink():  # merged /usr: /bin -> usr/bin
            args += ["--symlink", str(path.readlink()), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for path in [*(f"/etc/{name}" for name in ETC), FONT_CACHE]:
        args += ["--ro-bind-try", path, path]
    return args


def _python_folders() -> list[Path]:
    """The interpreter, its standard library, the environment's packages, the course's own."""
    paths = {Path(p) for p in (sys.base_prefix, sys.prefix, sys.exec_prefix)}
    return sorted(paths | {ROOT / name for name in CHECKOUT})


def _cover(course: Path, mounted: list[Path]) -> list[str]:
    """An empty read-only tmpfs over the course folder where it lies inside a mounted one."""
    if not course.is_dir() or not any(course.is_relative_to(m) for m in mounted):
        return []
    return ["--tmpfs", str(course), "--remount-ro", str(course)]


def command(job: list[str], course: Path, corpus: Path) -> list[str]:
    """`job` wrapped in bubblewrap; `corpus` is the one file of data it may read besides the
    course's packages."""
    folders = _python_folders()
    python = [arg for path in folders for arg in ("--ro-bind", str(path), str(path))]
    return [
        "bwrap",
        "--unshare-all",  # user, PID, network (loopback only), IPC, UTS, cgroup
        # --unshare-all only tries a user namespace and runs on without one; insisting makes
        # bwrap fail instead, and --disable-userns below requires it.
        "--unshare-user",
        "--disable-userns",  # no nested user namespace to remount anything in
        "--die-with-parent",
        "--new-session",  # no TIOCSTI into the grader's terminal
        "--cap-drop",
        "ALL",
        "--dev",  # null, zero, urandom, tty...; read-only below, /dev/shm too
        "/dev",
        "--proc",
        "/proc",
        # The scratch tmpfs first: the checkout or the corpus may lie below /tmp (a CI clone).
        "--size",
        str(SCRATCH_MB * 2**20),
        "--tmpfs",
        SCRATCH,
        *_system_mounts(),
        *python,
        "--ro-bind",
        str(corpus),
        str(corpus),
        *_cover(Path(course).resolve(), folders),
        "--remount-ro",  # the new root itself: /tmp, mounted on it, stays writable
        "/",
        "--remount-ro",
        "/dev",
        "--chdir",
        SCRATCH,
        "--setenv",
        "HOME",
        SCRATCH,
        "--setenv",
        "TMPDIR",
        SCRATCH,
        "--setenv",
        "XDG_CACHE_HOME",
        f"{SCRATCH}/.cache",
        "--unsetenv",
        "TRANSFORMER_LAB_CACHE",
        "--setenv",
        "TRANSFORMER_LAB_DATA",
        str(corpus),
        "--",
        *job,
    ]


@functools.cache
def why_no_sandbox() -> str | None:
    """Why no sandbox can be built here, or None when bubblewrap works."""
    if shutil.which("bwrap") is None:
        return "is not installed"
    probe = subprocess.run(
        command(["true"], ROOT / "grader" / "course", Path(sys.executable).resolve()),
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return f"cannot make its namespaces here ({probe.stderr.strip()})"
    return None


@functools.cache
def describe() -> str:
    """The report's line on what was in force."""
    version = subprocess.run(["bwrap", "--version"], capture_output=True, text=True).stdout
    return (
        f"{version.strip() or 'bubblewrap'}: read-only system and course packages, nothing else "
        f"of the filesystem (no course folder, no home); writable: a private {SCRATCH} of "
        f"{SCRATCH_MB} MB only; no network but its own loopback; own PID namespace, every "
        "process ends with the job; no capabilities"
    )
