"""Every kind of error the package raises, in one process, one case per line: each SPEC §4
structural error (error_cases.py) through build() on every backend present (numpy, torch CPU,
torch CUDA) and through the reference, a structurally invalid StepIndexer step, and the
exceptions that come from C++ code rather than from the binding's own checks (an unknown
compress ratio from the library, a layer outside a step). Each case's name is printed and
flushed before it runs, so that if the interpreter crashes the last line names the case:

    PYTHONPATH=build/python python3 python/tests/error_probe.py   # exit 0: each raised as expected

test_crash_isolation.py runs it in a child interpreter, so that pytest survives a crash. For a
native backtrace where one happens (the H200 image has cuda-gdb, no gdb):
    cuda-gdb -batch -ex run -ex bt --args python3 python/tests/error_probe.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dsv4_indices  # noqa: E402
from dsv4_indices import reference  # noqa: E402
from error_cases import STRUCTURAL  # noqa: E402
from steps import begin_step_args, hand_case, random_step  # noqa: E402

HOST_COPIES = {"query_start_loc": "query_start_loc_cpu", "seq_lens": "seq_lens_cpu", "token_to_req": "token_to_req_cpu"}


def backends():
    names = ["numpy"]
    try:
        import torch
    except ImportError:
        return names
    names.append("torch-cpu")
    if dsv4_indices.cuda_compiled and torch.cuda.is_available() and dsv4_indices.cuda_available():
        names.append("cuda")
    return names


def on(backend, kwargs):
    if backend == "numpy":
        return dict(kwargs)
    import torch
    out = {}
    for k, v in kwargs.items():
        if isinstance(v, np.ndarray):
            out[k] = torch.from_numpy(np.ascontiguousarray(v)).to("cuda" if backend == "cuda" else "cpu")
            if backend == "cuda" and k in HOST_COPIES:
                out[HOST_COPIES[k]] = torch.from_numpy(np.ascontiguousarray(v))
        else:
            out[k] = v
    return out


def run(name, call, error, message):
    """One case: `call()` must raise `error` whose text contains `message`. True when it did."""
    print(f"case {name} ... ", end="", flush=True)
    try:
        call()
    except error as e:
        if message in str(e):
            print("ok", flush=True)
            return True
        print(f"WRONG MESSAGE: {e!r}", flush=True)
        return False
    except Exception as e:  # noqa: BLE001 (a probe reports whatever came)
        print(f"WRONG EXCEPTION: {e!r}", flush=True)
        return False
    print("DID NOT RAISE", flush=True)
    return False


def main():
    results = []
    kwargs = hand_case()[0]
    for backend in backends():
        for case_id, changes, optimized, oracle in STRUCTURAL:
            args = on(backend, dict(kwargs, **changes))
            results.append(run(f"{backend} build {case_id}", lambda: dsv4_indices.build(**args), ValueError, optimized))
            if backend != "cuda":
                results.append(run(f"{backend} reference {case_id}", lambda: reference.build(**args), ValueError,
                                   oracle))
        step = begin_step_args(random_step(np.random.default_rng(6), max_requests=3))
        bad = step["seq_lens"].copy()
        bad[-1] = 0
        indexer = dsv4_indices.StepIndexer([0, 4, 128])
        results.append(run(f"{backend} begin_step seq-len-below-query-length",
                           lambda: indexer.begin_step(**on(backend, dict(step, seq_lens=bad))), ValueError,
                           f"seq_lens[{len(bad) - 1}] = 0 is below its query length"))
    # Exceptions thrown as C++ standard exceptions (translated by the module's translator).
    results.append(run("library compress-ratio", lambda: dsv4_indices.StepIndexer([0, 3]), ValueError,
                       "compress_ratio = 3"))
    results.append(run("binding layer-outside-a-step", lambda: dsv4_indices.StepIndexer([0]).layer(0), RuntimeError,
                       "no step is open"))
    swa_only = dsv4_indices.StepIndexer([0])
    swa_only.begin_step(**begin_step_args(random_step(np.random.default_rng(6))))
    results.append(run("binding layer-out-of-range", lambda: swa_only.layer(1), IndexError, "layer 1 is out of range"))
    failed = results.count(False)
    print(f"{len(results) - failed} of {len(results)} cases raised as expected", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
