"""The oracle (reference/ in C++: SPEC §3 in plain C++17 + Eigen, CPU only, no caching) and the
per-step metadata and model schedules it owns. Host arrays (numpy, torch CPU) only; outputs come
back in the inputs' framework. Use it to check the optimized path in your own tests::

    from dsv4_indices import build, reference
    got = build(**kwargs)
    want = reference.build(**kwargs)   # same keyword arguments, host arrays
"""
from ._core import deepseek_v4_flash, deepseek_v4_pro
from ._core import reference_build as build
from ._core import reference_step_metadata as step_metadata

__all__ = ["build", "step_metadata", "deepseek_v4_flash", "deepseek_v4_pro"]
