"""``samedevice run`` and signals (issue 29): the program gets them and cleans up, ``run`` waits
for it, a death by signal N is 128+N, and no process outlives ``run``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")]

WAITS_FOR_SIGNAL = """\
import os, sys, time, pathlib
marker = pathlib.Path(sys.argv[1])
try:
    marker.write_text(f"started {os.getpid()}")  # inside the try: the signal may follow at once
    while True:
        time.sleep(0.05)
except KeyboardInterrupt:
    marker.write_text("cleaned up")
    sys.exit(3)
"""


def _start(tmp_path: Path, source: str, *extra: str) -> tuple[subprocess.Popen, Path]:
    program, marker = tmp_path / "prog.py", tmp_path / "marker"
    program.write_text(source)
    # a session of its own: the test's signal reaches `run` alone, as `kill PID` would
    proc = subprocess.Popen([sys.executable, "-m", "samedevice", "run", "--allow-cpu", *extra, str(program),
                             str(marker)], start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (marker.exists() and marker.read_text().startswith("started")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the program never started"
        time.sleep(0.05)
    return proc, marker


def _session(sid: int) -> str:
    """pid, state, kernel wait and command line of each process left in the session ``sid``."""
    rows = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            fields = stat[stat.rfind(")") + 2:].split()
            if int(fields[3]) != sid:
                continue
            status = dict(line.split(":", 1) for line in Path(f"/proc/{name}/status").read_text().splitlines())
            rows.append(f"{name} {fields[0]} wchan={Path(f'/proc/{name}/wchan').read_text()} "
                        f"SigCgt={status['SigCgt'].strip()} SigIgn={status['SigIgn'].strip()} "
                        f"{Path(f'/proc/{name}/cmdline').read_text().replace(chr(0), ' ')}")
        except (OSError, ValueError, IndexError, KeyError):
            continue
    return "\n".join(rows)


def _communicate(proc: subprocess.Popen) -> str:
    """The stderr of ``proc``; past a minute, a failure that says what each process was doing."""
    try:
        return proc.communicate(timeout=60)[1]
    except subprocess.TimeoutExpired:
        left = _session(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"run did not end a minute after the signal; its session:\n{left}")


def test_sigint_to_run_reaches_the_programs_keyboardinterrupt_cleanup(tmp_path):
    proc, marker = _start(tmp_path, WAITS_FOR_SIGNAL)
    os.kill(proc.pid, signal.SIGINT)
    err = _communicate(proc)
    assert (proc.returncode, marker.read_text()) == (3, "cleaned up"), err  # it was SIGKILLed


def test_sigterm_to_run_ends_the_program_and_reports_128_plus_n(tmp_path):
    proc, marker = _start(tmp_path, WAITS_FOR_SIGNAL)
    child = int(marker.read_text().split()[1])
    os.kill(proc.pid, signal.SIGTERM)
    _communicate(proc)
    assert proc.returncode == 128 + signal.SIGTERM
    with pytest.raises(ProcessLookupError):  # it was left running as an orphan
        os.kill(child, 0)


def test_a_signal_to_run_while_it_starts_the_program_is_forwarded_once_it_has(tmp_path, monkeypatch):
    from samedevice.sim import _child

    real_popen = _child.subprocess.Popen
    reached_the_caller = []

    def popen_after_a_sigterm(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)  # arrives between the call and the child's start
        return real_popen(*args, **kwargs)

    monkeypatch.setattr(_child.subprocess, "Popen", popen_after_a_sigterm)
    previous = signal.signal(signal.SIGTERM, lambda *_: reached_the_caller.append(True))
    try:
        status = _child.run([sys.executable, "-c", "import time; time.sleep(30)"], dict(os.environ))
    finally:
        signal.signal(signal.SIGTERM, previous)
    # before, the handlers came after the child's start: the signal ended `run` (here, reached
    # this test's handler) and the program ran on as an orphan
    assert (status, reached_the_caller) == (128 + signal.SIGTERM, [])


def test_a_program_killed_by_a_signal_exits_128_plus_n(tmp_path):
    program = tmp_path / "prog.py"
    program.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-m", "samedevice", "run", "--allow-cpu", str(program)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 128 + signal.SIGKILL  # it was 256 - 9


def test_junk_in_a_usage_file_counts_as_use_and_is_no_traceback(tmp_path):
    program = tmp_path / "prog.py"
    program.write_text("import os\nopen(os.path.join(os.environ['SAMEDEVICE_USAGE_DIR'], 'usage-1'), 'w')"
                       ".write('junk')\n")
    proc = subprocess.run([sys.executable, "-m", "samedevice", "run", str(program)],
                          capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr) == (0, "")  # ValueError: invalid literal for int()


LEAVES_PROCESSES = """\
import subprocess, sys
out = sys.argv[1]
# finishes on its own just after the program, as multiprocessing's resource tracker does
subprocess.Popen(["sh", "-c", f"sleep 0.3; echo finished > {out}.late"])
# an orphan that would run on for a minute: its parent (sh) exits at once
subprocess.Popen(["sh", "-c", f"sleep 60 & echo $! > {out}.pid"]).wait()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a child subreaper is Linux's")
def test_no_process_the_program_started_outlives_run(tmp_path):
    program, out = tmp_path / "prog.py", tmp_path / "out"
    program.write_text(LEAVES_PROCESSES)
    proc = subprocess.run([sys.executable, "-m", "samedevice", "run", "--allow-cpu", str(program), str(out)],
                          capture_output=True, text=True, timeout=120)
    orphan = int(Path(f"{out}.pid").read_text())
    assert proc.returncode == 0, proc.stderr
    with pytest.raises(ProcessLookupError):  # it ran on after `run` had returned
        os.kill(orphan, 0)
    assert f"samedevice run: stopped 1 process(es) the program left running (pid {orphan})" in proc.stderr
    # the one that ended by itself was given the time to
    assert Path(f"{out}.late").read_text() == "finished\n"
