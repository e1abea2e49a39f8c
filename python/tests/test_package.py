"""The package ships its type stubs and documents every public function."""
import inspect
import os

import dsv4_indices
from dsv4_indices import _core, reference

PUBLIC = ["build", "StepIndexer", "reference_build", "reference_step_metadata", "deepseek_v4_flash",
          "deepseek_v4_pro", "cuda_available"]


def test_stubs_are_shipped():
    folder = os.path.dirname(_core.__file__)
    assert os.path.exists(os.path.join(folder, "py.typed"))
    with open(os.path.join(folder, "_core.pyi")) as f:
        stub = f.read()
    for name in PUBLIC:
        assert f"def {name}(" in stub or f"class {name}" in stub, name
    for method in ("begin_step", "layer", "content_errors", "end_step", "builder_calls", "cache_hits"):
        assert f"def {method}(" in stub, method
    assert "out: object | None = None) -> tuple:" in stub  # build(out=...), documented:
    assert "out: None, or a pair (sparse_indices, sparse_lens)" in stub


def test_every_public_function_has_a_docstring():
    objects = [getattr(_core, n) for n in PUBLIC] + [dsv4_indices, reference]
    objects += [getattr(dsv4_indices.StepIndexer, n) for n in dir(dsv4_indices.StepIndexer) if not n.startswith("_")]
    for obj in objects:
        assert inspect.getdoc(obj), obj
    assert reference.build is _core.reference_build and reference.step_metadata is _core.reference_step_metadata


def test_schedules():
    flash, pro = reference.deepseek_v4_flash(), reference.deepseek_v4_pro()
    assert len(flash["compress_ratios"]) == 43 and flash["c4a_topk"] == 512
    assert len(pro["compress_ratios"]) == 61 and pro["c4a_topk"] == 1024
    assert flash["compress_ratios"].count(4) == 21 and pro["compress_ratios"].count(128) == 31
