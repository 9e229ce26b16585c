"""Running one built subtest on one runtime, and naming what happened.

The suite counts a run as passed when it exits 0 and writes nothing on stderr (infrastructure.py's
`passed`); anything else is one of the kinds below, with the line that says why.
"""

import os
import signal
import subprocess
import time
from dataclasses import dataclass

# The three runtimes every subtest runs on, in the columns' order.
RUNTIMES = ("libgomp", "shim", "shim+tool")

PASS = "pass"
FAIL = "fail"  # a non-zero exit status and no runtime message: the subtest's own check failed
WARN = "warn"  # exit 0 with something on stderr (the suite counts it failed)
ERROR = "error"  # the runtime stopped the program with an OpenACC error message
REFUSED = "refused"  # the shim's "... is not supported by accshim" line
CRASH = "crash"  # killed by a signal without a runtime error message
HANG = "hang"  # still running at the timeout
KINDS = (PASS, FAIL, WARN, ERROR, REFUSED, CRASH, HANG)

REFUSAL_MARK = "is not supported by accshim"
# The shim's "results dropped" check (src/dropped.rs): a warning, not an error.
DROP_CHECK_MARK = "results dropped"
RUNTIME_ERROR_MARKS = ("accshim: OpenACC runtime error", "libgomp: ")

# Variables of the caller's environment that would change what a runtime does: every run
# starts without them and gets only its runtime's own.
RUNTIME_VARIABLE_PREFIXES = ("ACC_", "ACCPROF_", "ACCSHIM_", "GOMP_", "OMP_", "NV_ACC", "PGI_ACC")


@dataclass
class Run:
    kind: str
    detail: str  # the line that says why (empty for a pass)
    seconds: float
    trace_bytes: int = -1  # shim+tool: the trace's size (0: none written); -1 elsewhere
    dropped: bool = False  # stderr held the shim's "results dropped" warning


def runtime_env(runtime, lib_dir, trace_dir, extra=None):
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "LD_PRELOAD" and not k.startswith(RUNTIME_VARIABLE_PREFIXES)
    }
    if runtime == "libgomp":
        return env
    shim = os.path.join(lib_dir, "libaccshim.so")
    # The emulated device always: these binaries hold no nvptx image, which the CUDA backend
    # refuses, and the comparison is of semantics on a discrete device, not of a GPU.
    env.update(ACCSHIM_QUIET="1", ACCSHIM_NO_CUDA="1", LD_PRELOAD=shim)
    if runtime == "shim+tool":
        # As `accprof run --runtime shim` starts a program (accprof-cli/src/commands/run.rs).
        tool = os.path.join(lib_dir, "libaccprof.so")
        env.update(
            LD_PRELOAD=f"{shim}:{tool}",
            ACC_PROFLIB=tool,
            ACCPROF_OUT=os.path.join(trace_dir, ""),
            ACCPROF_QUIET="1",
        )
    env.update(extra or {})
    return env


def first_line(text, marks=None):
    """The first non-empty line of `text` (or the first holding one of `marks`), shortened."""
    for line in text.splitlines():
        line = line.strip()
        if line and (marks is None or any(m in line for m in marks)):
            return line if len(line) <= 200 else line[:197] + "..."
    return ""


def classify(returncode, stderr, timed_out, timeout):
    if timed_out:
        return HANG, f"still running after {timeout:g} s"
    refusal = first_line(stderr, (REFUSAL_MARK,))
    if refusal:
        return REFUSED, refusal
    error = first_line(stderr, RUNTIME_ERROR_MARKS)
    if returncode < 0:
        name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else f"signal {-returncode}"
        if error:
            return ERROR, f"{error} ({name})"
        said = first_line(stderr)
        return CRASH, name + (f": {said}" if said else "")
    if error:
        return ERROR, f"{error} (exit {returncode})"
    if returncode != 0:
        said = first_line(stderr)
        return FAIL, f"exit {returncode}" + (f": {said}" if said else "")
    if stderr.strip():
        return WARN, first_line(stderr)
    return PASS, ""


def run(exe, runtime, lib_dir, work_dir, timeout, extra_env=None):
    """Runs `exe` once on `runtime` (with `extra_env` added) in `work_dir` (which keeps the
    trace, if any, under `trace/`), killing its whole process group at `timeout` seconds."""
    trace_dir = os.path.join(work_dir, "trace")
    if runtime == "shim+tool":
        os.makedirs(trace_dir, exist_ok=True)
        for old in os.listdir(trace_dir):
            os.unlink(os.path.join(trace_dir, old))
    started = time.monotonic()
    proc = subprocess.Popen(
        [exe],
        cwd=work_dir,
        env=runtime_env(runtime, lib_dir, trace_dir, extra_env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    timed_out = False
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
    seconds = time.monotonic() - started
    stderr = err.decode("utf-8", "replace")
    kind, detail = classify(proc.returncode, stderr, timed_out, timeout)
    result = Run(kind, detail, seconds, dropped=DROP_CHECK_MARK in stderr)
    if runtime == "shim+tool":
        result.trace_bytes = sum(os.path.getsize(os.path.join(trace_dir, t)) for t in os.listdir(trace_dir))
    return result
