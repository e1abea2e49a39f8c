"""dsv4_indices: DeepSeek-V4 mixed sparse indices (SPEC §3) and the per-step layer-kind cache
(SPEC §5), called in-process from Python.

Tensors cross by DLPack without copies: numpy arrays and torch CPU tensors run on the host
backend, torch CUDA tensors on the CUDA backend, on the caller's stream. Outputs come back in the
inputs' framework (numpy in -> numpy out, torch in -> torch out) and are views of the builder's
workspace, kept valid for as long as Python references them.

- build(...): one build (keyword arguments named as in SPEC §3).
- StepIndexer: begin_step(...), layer(i, c4a_topk=None), end_step(); builder_calls, cache_hits.
- reference: the Eigen oracle (reference.build), the per-step metadata of SPEC §6 and the
  DeepSeek-V4-Flash / -Pro schedules, for users' own differential tests.
"""
from . import reference
from ._core import StepIndexer, build, cuda_available, cuda_compiled

__all__ = ["StepIndexer", "build", "cuda_available", "cuda_compiled", "reference"]
__version__ = "0.1.0"
