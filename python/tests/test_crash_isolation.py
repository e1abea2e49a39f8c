"""Nothing crashes the interpreter: error_probe.py raises every kind of error (each SPEC §4 check
on every backend present, the reference's, the C++ exceptions) in a child interpreter, so that a
crash fails this test with the case it happened in instead of ending the pytest run. Named to
run before test_cuda.py and test_errors.py, which raise the same errors in-process."""
import importlib.util
import os
import subprocess
import sys

PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "error_probe.py")


def test_every_error_raises_in_a_child_interpreter():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))  # this package
    child = subprocess.run([sys.executable, "-X", "faulthandler", PROBE], capture_output=True, text=True, env=env,
                           timeout=300)
    lines = child.stdout.splitlines()
    wrong = [line for line in lines if line.startswith("case ") and not line.endswith(" ok")]
    assert child.returncode == 0 and not wrong, (
        f"exit code {child.returncode} (negative: killed by that signal; the last case started is where)\n"
        + "\n".join(wrong) + "\n--- stderr ---\n" + child.stderr[-4000:])
    cases = [line for line in lines if line.startswith("case ")]
    assert lines[-1] == f"{len(cases)} of {len(cases)} cases raised as expected"
    # Every backend this interpreter has ran its cases (numpy always, torch CPU where installed).
    backends = {line.split()[1] for line in cases}
    assert {"numpy", "library", "binding"} <= backends
    if importlib.util.find_spec("torch") is not None:
        assert "torch-cpu" in backends
    assert len(cases) >= 50
