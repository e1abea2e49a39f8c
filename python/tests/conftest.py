"""Shared markers: GPU tests skip, visibly and with the reason, where no CUDA device is usable."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # steps.py

import dsv4_indices  # noqa: E402


def _torch():
    try:
        import torch
        return torch
    except ImportError:
        return None


def cuda_skip_reason():
    torch = _torch()
    if torch is None:
        return "torch is not installed"
    if not dsv4_indices.cuda_compiled:
        return "dsv4_indices was built without CUDA (no nvcc at build time)"
    if not torch.cuda.is_available():
        return "no CUDA device (torch.cuda.is_available() is False)"
    if not dsv4_indices.cuda_available():
        return "the CUDA backend sees no device"
    return None


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device and torch; skipped (with the reason) elsewhere")


gpu = pytest.mark.skipif(cuda_skip_reason() is not None, reason=f"GPU test: {cuda_skip_reason()}")
needs_torch = pytest.mark.skipif(_torch() is None, reason="torch is not installed")
