"""The array frameworks the tests call build() with: numpy and torch CPU (host backend), torch
CUDA (CUDA backend, with the host copies of SPEC §4's structural three). Arrays keep their
layout (strides, offsets) when converted, so layout errors are tested on every framework."""
import numpy as np
import pytest

from conftest import cuda_skip_reason, needs_torch

HOST_COPIES = {"query_start_loc": "query_start_loc_cpu", "seq_lens": "seq_lens_cpu", "token_to_req": "token_to_req_cpu"}

# pytest parameters: "cuda" skips, with the reason, where no device (or torch) is usable.
BACKENDS = [
    pytest.param("numpy", id="numpy"),
    pytest.param("torch-cpu", id="torch-cpu", marks=needs_torch),
    pytest.param("cuda", id="cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(
        cuda_skip_reason() is not None, reason=f"GPU test: {cuda_skip_reason()}")]),
]


def tensor(a, device):
    """A torch tensor on `device` with a's shape, element strides and offset (torch CPU: a view
    of a's memory; CUDA: of a device copy of the memory a spans)."""
    import torch
    t = torch.from_numpy(a)  # a's layout (torch has no negative strides: those raise)
    if device == "cpu":
        return t
    storage = t.untyped_storage().to(device=device)
    return torch.empty(0, dtype=t.dtype, device=device).set_(storage, t.storage_offset(), t.shape, t.stride())


def convert(kwargs, backend):
    """build() keyword arguments on `backend`: numpy arrays become torch tensors (torch-cpu,
    cuda); cuda adds the host copies query_start_loc_cpu, seq_lens_cpu, token_to_req_cpu."""
    if backend == "numpy":
        return dict(kwargs)
    device = "cuda" if backend == "cuda" else "cpu"
    out = {}
    for k, v in kwargs.items():
        if isinstance(v, np.ndarray):
            out[k] = tensor(v, device)
            if backend == "cuda" and k in HOST_COPIES:
                out[HOST_COPIES[k]] = tensor(v, "cpu")
        else:
            out[k] = v
    return out


def to_numpy(a):
    """Host numpy copy of a numpy array or a torch tensor (any device)."""
    return a if isinstance(a, np.ndarray) else a.cpu().numpy()
