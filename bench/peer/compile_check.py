#!/usr/bin/env python3
"""Compiles the peer's kernel for a GPU target (default sm_90) for every specialization the
exported configs need, on a machine without a GPU: the Triton interpreter (run_peer.py
--device cpu) checks the kernel's logic but never lowers it, this lowers it to a cubin with
the ptxas bundled in triton.

usage: compile_check.py --inputs DIR [--filter REGEX] [--arch 90]

Each config's build() call is recorded instead of launched (CPU tensors), then compiled with
triton.compile(ASTSource(...)), integer arguments equal to 1 specialized as Triton's JIT does.
"""
import argparse
import os
import sys

try:
    import torch
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
except ImportError as e:
    print(f"SKIPPED: {e} (compile_check.py needs torch and triton)")
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_peer  # noqa: E402  (its loader and folder walk)
import triton_builder  # noqa: E402

DTYPES = {torch.int32: "*i32", torch.uint8: "*u8", torch.bool: "*i1"}


class Recorder:
    """Stands in for the kernel: kernel[grid](*args, **kwargs) records the call."""

    def __init__(self):
        self.calls = []

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.calls.append((args, kwargs))


def compile_call(fn, args, kwargs, target):
    signature, constexprs = {}, {}
    names = fn.arg_names
    for name, value in zip(names, args):
        if isinstance(value, torch.Tensor):
            signature[name] = DTYPES[value.dtype]
        elif value == 1:  # the JIT specializes integers equal to 1 as constants
            signature[name] = "constexpr"
            constexprs[name] = 1
        else:
            signature[name] = "i32"
    for name in names[len(args):]:
        signature[name] = "constexpr"
        constexprs[name] = kwargs[name]
    options = {"num_warps": kwargs["num_warps"]}
    return triton.compile(ASTSource(fn, signature, constexprs), target=target, options=options)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--filter", default="")
    ap.add_argument("--arch", type=int, default=90)
    args = ap.parse_args()
    peer = run_peer.Peer(torch, __import__("numpy"), triton_builder, "cpu")
    folders = [f for _, f in run_peer.kernel_folders(args.inputs, args.filter)]
    for step, folder in run_peer.step_folders(args.inputs, args.filter):
        folders += [os.path.join(folder, k["folder"]) for k in step["kinds"]]
    kernel = triton_builder._mixed_sparse_indices_kernel
    recorder = Recorder()
    triton_builder._mixed_sparse_indices_kernel = recorder
    for folder in folders:
        inputs, meta, _, _ = peer.load_build(folder)
        triton_builder.build(inputs, meta, peer.errors)
    triton_builder._mixed_sparse_indices_kernel = kernel
    target = GPUTarget("cuda", args.arch, 32)
    seen = {}
    for (a, kw), folder in zip(recorder.calls, folders):
        key = (tuple(("t", str(x.dtype)) if isinstance(x, torch.Tensor) else x == 1 for x in a),
               tuple(sorted(kw.items())))
        if key in seen:
            continue
        compiled = compile_call(kernel, a, kw, target)
        seen[key] = compiled
        flags = ", ".join(f"{k}={v}" for k, v in sorted(kw.items()))
        print(f"compile_check: sm_{args.arch} ok ({len(compiled.asm['cubin'])} B cubin) for "
              f"{os.path.relpath(folder, args.inputs)}: {flags}")
    print(f"compile_check: {len(seen)} specializations compiled for sm_{args.arch} "
          f"({len(folders)} configs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
