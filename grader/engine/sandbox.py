"""The sandbox every grading job runs in: bubblewrap, with a list of what the job may see.

A student's notebook is hostile input. Its job starts in a new, empty root where only these are
mounted, read-only: the system's programs and libraries, a few files of /etc, the font caches,
the Python installation and its packages, the course's own packages and data, and the corpus.
The only writable place is a private /tmp (a tmpfs of its own size), which is also HOME.
Everything else, the course folder (gradebook, source/, submitted/, autograded/, reports/), the
instructor's home and the submissions, is simply not there. The job has no network but a
loopback of its own, its own PID namespace (its last process dies with it), no capabilities, no
way to make a user namespace of its own, and it dies with the grader (`--die-with-parent`). Its
processes and threads are capped (PROCESSES, or TRANSFORMER_LAB_MAX_PROCESSES): by a pids cgroup
of its own where the grader may make one (root, mostly), and by RLIMIT_NPROC, which Linux (5.14
on) counts per user namespace, so that in the job's own namespace it counts the job's tasks only.
Root is exempt from RLIMIT_NPROC, hence the cgroup.

The list of what is allowed is the whole policy: nothing is mounted and then hidden, except the
course folder when it lies inside the checkout (as a test's or a maintainer's may).
"""

from __future__ import annotations

import functools
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

from ..course import ROOT, GradingError

SCRATCH = "/tmp"  # inside the sandbox: the job's scratch folder, its HOME and its temp files
CACHE = f"{SCRATCH}/.cache"  # the job's XDG_CACHE_HOME
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
FONT_CACHE = "/var/cache/fontconfig"  # so that fontconfig need not build one in every job
INSTALL = (
    "Grading runs every notebook in a bubblewrap sandbox, and `bwrap` {why_not}. Install it: "
    "`sudo apt-get install bubblewrap` (Debian, Ubuntu), `sudo dnf install bubblewrap` "
    "(Fedora), `sudo pacman -S bubblewrap` (Arch). On Ubuntu 24.04 and later the package's "
    "AppArmor profile lets it make its namespaces. To grade trusted notebooks without a "
    "sandbox, pass --no-sandbox (`make autograde NO_SANDBOX=1`); the report then says so."
)
NO_SANDBOX = "none (--no-sandbox): notebooks ran with the grader's own rights"
# A job's processes and threads, bubblewrap's init inside included. A solved course notebook
# takes 22 (the job with nbclient's threads, the kernel with ipykernel's and torch's: the pids
# cgroup's peak, each of the six, on 2 cores); the rest is the student's to use.
PROCESSES = 128
PROCESSES_ENV = "TRANSFORMER_LAB_MAX_PROCESSES"
CAP_ENV = "TRANSFORMER_LAB_JOB_PROCESS_CAP"  # the job's cap, told it by the sandbox only
# Where the pids cgroups of jobs go, one per job, in a hierarchy with the pids controller.
CGROUP_ROOTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/pids"))  # v2, then v1
CGROUP_PARENT = "transformer-lab-jobs"
# Inside the sandbox: cap this process and all it starts, then become the job.
SET_NPROC = (
    "import os, resource, sys; n = int(sys.argv[1]); "
    "resource.setrlimit(resource.RLIMIT_NPROC, (n, n)); os.execvp(sys.argv[2], sys.argv[2:])"
)
# Outside: the job's own cgroup, named by this shell's pid (bubblewrap's, after exec). Empty
# cgroups of jobs that ended go first; one whose pid lives may be about to be joined.
JOIN_CGROUP = """for old in "$1"/job-*; do
    [ -e "/proc/${old##*-}" ] || rmdir "$old" 2>/dev/null
done
cg="$1/job-$$"
if ! { mkdir "$cg" && echo "$2" > "$cg/pids.max" && echo $$ > "$cg/cgroup.procs"; }; then
    echo "grading job: cannot make its pids cgroup in $1" >&2
    exit 125
fi
shift 2
exec "$@"
"""


def max_processes() -> int:
    """The cap on a job's processes and threads: PROCESSES, or the instructor's setting."""
    value = os.environ.get(PROCESSES_ENV, str(PROCESSES))
    if not value.isdigit() or int(value) < 32:
        raise GradingError(
            f"{PROCESSES_ENV}={value!r}: give a whole number of processes and threads a grading "
            f"job may have, at least 32 (a graded notebook takes 22; the default is {PROCESSES})"
        )
    return int(value)


def _nproc_per_namespace() -> bool:
    """Whether RLIMIT_NPROC counts per user namespace (Linux 5.14 on): before, it counts every
    process of the grader's user, and a cap meant for one job would stop the instructor's."""
    version = re.match(r"(\d+)\.(\d+)", platform.release())
    return bool(version) and tuple(map(int, version.groups())) >= (5, 14)


def _has_pids(root: Path) -> bool:
    controllers = root / "cgroup.controllers"  # v2: one hierarchy, its controllers listed
    if controllers.is_file():
        return "pids" in controllers.read_text().split()
    return root.name == "pids" and (root / "tasks").is_file()  # v1: the pids hierarchy


@functools.cache
def pids_cgroups() -> Path | None:
    """The folder this process may make jobs' pids cgroups in, or None where it may not: tried
    once, with a probe cgroup made, capped and removed."""
    for root in CGROUP_ROOTS:
        parent = root / CGROUP_PARENT
        try:
            if not _has_pids(root):
                continue
            parent.mkdir(exist_ok=True)
            if (root / "cgroup.controllers").is_file():  # v2: the children get the controller
                (parent / "cgroup.subtree_control").write_text("+pids")
            probe = parent / f"job-probe-{os.getpid()}"
            probe.mkdir()
            (probe / "pids.max").write_text("1")
            probe.rmdir()
            return parent
        except OSError:
            continue
    return None


def _rlimit_caps() -> bool:
    """Whether RLIMIT_NPROC caps a job here: counted per user namespace, and the kernel exempts
    root from it."""
    return _nproc_per_namespace() and os.geteuid() != 0


def process_caps(processes: int) -> str:
    """What caps a job's processes here, for the report."""
    ways = ["a pids cgroup of its own"] if pids_cgroups() else []
    ways += ["RLIMIT_NPROC in its own user namespace"] if _rlimit_caps() else []
    if ways:
        return f"at most {processes} processes and threads ({' and '.join(ways)})"
    why = (
        "root is exempt from RLIMIT_NPROC and no pids cgroup can be made here"
        if os.geteuid() == 0
        else "Linux before 5.14 counts RLIMIT_NPROC per user, not per job"
    )
    return (
        f"NO process cap ({why}: grade as an ordinary user on Linux 5.14 or later, or give the "
        "grading container a pids limit, e.g. `docker run --pids-limit`)"
    )


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


def _capped(job: list[str], processes: int) -> list[str]:
    """`job` under RLIMIT_NPROC where it caps a job, and told its cap where anything does."""
    told = ["--setenv", CAP_ENV, str(processes)]  # for the job's note that it reached it
    if _rlimit_caps():
        return [*told, "--", sys.executable, "-I", "-S", "-c", SET_NPROC, str(processes), *job]
    return [*told, "--", *job] if pids_cgroups() else ["--", *job]


def _in_cgroup(processes: int) -> list[str]:
    """What puts the job in a pids cgroup of its own, where one can be made: its `processes`,
    and bubblewrap's monitor outside the job's namespaces."""
    parent = pids_cgroups()
    return (
        [] if parent is None else ["sh", "-c", JOIN_CGROUP, "sh", str(parent), str(processes + 1)]
    )


@functools.cache
def _matplotlib_font_list() -> list[str]:
    """matplotlib's list of the system's fonts (made here if it is not yet), read-only where the
    job's matplotlib looks for it: else the first plot of every job lists them again, about
    half a CPU second. The folder around it stays the job's own, so matplotlib may write there."""
    try:
        import matplotlib
        from matplotlib.font_manager import FontManager
    except ImportError:  # a grader without matplotlib grades notebooks without it
        return []
    name = f"fontlist-v{FontManager.__version__}.json"  # as matplotlib names it
    made = Path(matplotlib.get_cachedir(), name)
    return ["--ro-bind-try", str(made), f"{CACHE}/matplotlib/{name}"]


def command(job: list[str], course: Path, corpus: Path, processes: int | None = None) -> list[str]:
    """`job` wrapped in bubblewrap; `corpus` is the one file of data it may read besides the
    course's packages; at most `processes` processes and threads (max_processes())."""
    processes = processes or max_processes()
    folders = _python_folders()
    python = [arg for path in folders for arg in ("--ro-bind", str(path), str(path))]
    return [
        *_in_cgroup(processes),
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
        *_matplotlib_font_list(),
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
        CACHE,
        "--unsetenv",
        "TRANSFORMER_LAB_CACHE",
        "--setenv",
        "TRANSFORMER_LAB_DATA",
        str(corpus),
        *_capped(job, processes),
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
        f"process ends with the job; {process_caps(max_processes())}; no capabilities"
    )
