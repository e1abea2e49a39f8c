"""The binding benchmark runs where its README says it does: numpy on the host backend always,
torch cases only where torch is installed (skipped with a note otherwise). A few calls each:
this checks that every case runs and is reported, not how fast (numbers belong to the
benchmark's own runs)."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import bench_binding  # noqa: E402

BENCH = os.path.join(os.path.dirname(__file__), "..", "bench", "bench_binding.py")
CASES = {"build", "build out=", "layer hit", "layer build", "Flash step cached", "Flash step uncached"}
# torch's own calls on the same host, beside the binding's: the floor a torch user pays anyway
FLOOR_CASES = {"torch fill_", "torch empty x2"}
# The cases that launch a kernel on CUDA (build(): 0-token builds included, which launch none)
GATED_CASES = {"build", "build out=", "torch fill_"}


def test_every_case_runs_on_numpy_and_is_written(tmp_path):
    out = tmp_path / "binding.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    run = subprocess.run([sys.executable, BENCH, "--calls", "20", "--repeats", "2", "--json", str(out)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(out.read_text())
    numpy_rows = [r for r in report["results"] if r["framework"] == "numpy"]
    for shape in ("0 tokens", "1 decode", "64 decodes"):
        assert {r["case"] for r in numpy_rows if r["shape"] == shape} == CASES, shape
    assert all(r["backend"] == "host" and r["us_median"] > 0 for r in numpy_rows)
    try:
        import torch  # noqa: F401
    except ImportError:
        assert "torch is not installed: torch cases skipped" in report["notes"]
        assert all(r["framework"] == "numpy" for r in report["results"])
        return
    torch_rows = [r for r in report["results"] if r["framework"] == "torch"]
    for backend in {r["backend"] for r in torch_rows}:  # host (torch CPU), cuda where a device is
        rows = [r for r in torch_rows if r["backend"] == backend]
        for shape in ("0 tokens", "1 decode", "64 decodes"):
            assert {r["case"] for r in rows if r["shape"] == shape} == CASES, (backend, shape)
        assert {r["case"] for r in rows if r["shape"] == "floor"} == FLOOR_CASES, backend
        assert all(r["us_median"] > 0 for r in rows)
        # CUDA: the launching cases again with the GPU held (host time alone) and the queued
        # work's device time; nothing of the kind on the host backend.
        held = {(r["case"], r["shape"]) for r in rows if r.get("gated_us_median") is not None}
        if backend == "cuda":
            launching = {(r["case"], r["shape"]) for r in rows if r["case"] in GATED_CASES}
            assert held == launching and launching, held
            # (a 0-token build launches nothing: its device time may read 0)
            assert all(r["gated_us_median"] > 0 and r["gpu_us_median"] >= 0 for r in rows if r["case"] in GATED_CASES)
        else:
            assert not held, held


def test_rounds_of_all_cases_are_interleaved_and_reversed_every_other_round():
    log = []

    def case(name, us):
        def run():
            log.append(name)
            return us, us / 2
        return bench_binding.Case(dict(case=name, calls=10), run)

    made = [case("a", 1.0), case("b", 2.0), case("c", 3.0)]
    syncs = []
    bench_binding.measure(made, 3, sync=lambda: syncs.append(len(log)))
    # a warm-up round each, then rounds in the given order, reversed every other round
    assert log == list("abc") + list("abc") + list("cba") + list("abc")
    assert syncs == list(range(len(log)))  # the GPU drained before every round
    results = [c.result() for c in made]
    assert [r["us_median"] for r in results] == [1.0, 2.0, 3.0]
    assert [r["cpu_us_min"] for r in results] == [0.5, 1.0, 1.5]
    assert all("gated_us_median" not in r for r in results)


def test_builds_of_a_torch_framework_are_reported_over_torchs_own_fill():
    row = dict(framework="torch", backend="cuda", us_median=7.0, gated_us_median=6.5)
    results = [dict(row, case="torch fill_", us_median=6.0, gated_us_median=5.75),
               dict(row, case="build"), dict(row, case="build out=", gated_us_median=None),
               dict(row, case="layer hit"), dict(row, case="build", backend="host")]
    bench_binding.add_over_fill(results)
    fill, build, out, hit, host = results
    assert build["over_fill_us"] == 1.0 and build["over_fill_held_us"] == 0.75
    assert out["over_fill_us"] == 1.0 and "over_fill_held_us" not in out
    assert "over_fill_us" not in hit and "over_fill_us" not in fill
    assert "over_fill_us" not in host  # no fill_ row of torch on the host backend in this list
