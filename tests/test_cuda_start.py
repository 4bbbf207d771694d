"""``cuda_start``: the C starter of kept CUDA launches, built here as on a GPU machine, and its
packing of a compiled kernel's parameters. Its launches run in the GPU suite
(``test_eager.py::test_kept_launch_starts_directly`` and every repeat call)."""

from __future__ import annotations

import ctypes
import json
import os
import struct
import subprocess
import sys
from types import SimpleNamespace

import pytest

from npu_softmax import cuda_start

#: Compiles the tile kernel (4 rows of 512 lanes, float32) for an sm_90 GPU (no GPU needed) as
#: the launcher does for contiguous rows, and prints Triton's types of its runtime arguments and
#: the byte sizes of the compiled kernel's parameters; exits 3 where this Triton has no NVIDIA
#: backend.
_PARAMETERS = """
import json, sys
from triton.backends import backends
if "nvidia" not in backends:
    sys.exit(3)
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from npu_softmax import cuda_start, kernels as K

fn = K.softmax_tile_kernel
runtime = {"y_ptr": "*fp32", "x_ptr": "*fp32", "n_rows": "i32", "n_cols": "i32",
           "n_inner": "i32", "x_outer_stride": "i64", "y_outer_stride": "i32", "scale": "fp32"}
fixed = {"x_inner_stride": 0, "x_col_stride": 1, "y_inner_stride": 0, "y_col_stride": 1,
         "INDEX_64": False, "LOG": False, "STORE_CACHE": "", "VEC": 4, "ALIGN": 1,
         "BLOCK_M": 4, "BLOCK_N": 512, "TAIL_N": 0}
signature = {n: runtime.get(n, "constexpr") for n in fn.arg_names}
src = ASTSource(fn, signature, constexprs=fixed,
                attrs={(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]})
ptx = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                     options={"num_warps": 4, "num_stages": 1}).asm["ptx"]
print(json.dumps({"types": [t for t in signature.values() if t != "constexpr"],
                  "sizes": cuda_start.ptx_parameters(ptx)}))
"""


def test_packing_matches_the_compiled_parameters() -> None:
    """The parameters ``pack`` lays out are the compiled kernel's, one for one (its runtime
    arguments: pointers, 32- and 64-bit integers, a float; then Triton's scratch pointers),
    each at an offset aligned to its size."""
    done = subprocess.run([sys.executable, "-c", _PARAMETERS], capture_output=True,
                          text=True, env={**os.environ, "TRITON_INTERPRET": "0"})
    if done.returncode == 3:
        pytest.skip("this Triton has no NVIDIA backend")
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    types, sizes = found["types"], found["sizes"]
    assert types[:2] == ["*fp32", "*fp32"] and "i64" in types and "fp32" in types
    assert len(types) <= len(sizes) <= len(types) + 2
    values = [0, 0] + [3 + i for i in range(len(types) - 2)]
    packed = cuda_start.pack(types, values, 2, sizes)
    assert packed is not None
    data, offsets, pointer_offsets = packed
    assert len(offsets) == len(sizes) and pointer_offsets == offsets[:2]
    assert all(at % size == 0 for at, size in zip(offsets, sizes))
    assert len(data) == offsets[-1] + sizes[-1]
    for i, t in enumerate(types[2:], 2):
        assert struct.unpack_from(cuda_start.FORMATS[t], data, offsets[i])[0] == values[i]
    # A pointer among the scalars, or sizes that disagree, are not packed.
    assert cuda_start.pack(types, values, 1, sizes) is None
    assert cuda_start.pack(types, values, 2, [4] * len(sizes)) is None


def test_ptx_parameters() -> None:
    ptx = """.visible .entry k(
        .param .u64 .ptr .global .align 1 k_param_0,
        .param .u32 k_param_1,
        .param .f32 k_param_2,
        .param .b64 k_param_3
    )"""
    assert cuda_start.ptx_parameters(ptx) == [8, 4, 4, 8]
    with pytest.raises(ValueError):
        cuda_start.ptx_parameters(".visible .entry k(.param .align 8 .b8 k_param_0[16])")


def test_the_starter_builds_and_checks_its_arguments() -> None:
    """The extension builds wherever Triton's NVIDIA backend is installed (a C compiler, Python's
    headers and Triton's ``cuda.h``), and a starter refuses what it cannot start: misaligned
    pointers (False, nothing launched), wrong arguments, parameters past the packed bytes."""
    if not (cuda_start._cuda_include() / "cuda.h").is_file():
        pytest.skip("this Triton has no NVIDIA backend")
    ext = cuda_start.module()
    assert ext is not None
    start = ext.make(0, 4, 128, 16, False, False, bytes(24), (0, 8, 16), (0, 8))
    assert start(0, 16, 33) is False and start(0, 8, 16) is False
    with pytest.raises(TypeError):
        start(0, 16)
    with pytest.raises(TypeError):
        start(0, "16", 32)
    with pytest.raises(ValueError):
        ext.make(0, 4, 128, 16, False, False, bytes(24), (0, 8, 24), (0, 8))
    with pytest.raises(ValueError):
        ext.make(0, 4, 128, 16, False, False, bytes(24), (0, 8), (0, 20))
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:  # no driver here: aligned pointers reach for it, and the start says so
        with pytest.raises(RuntimeError, match="libcuda"):
            start(0, 16, 32)


def test_kernels_with_scratch_keep_tritons_launch() -> None:
    """Neither the starter nor a direct call of Triton's C launch passes scratch memory: a
    launcher that asks for any, runs GSan, or does not say (an older or newer Triton) is
    declined, so its kernel starts through Triton."""
    plain = {"global_scratch_size": 0, "profile_scratch_size": 0}
    assert cuda_start.without_scratch(SimpleNamespace(**plain))
    assert cuda_start.without_scratch(SimpleNamespace(**plain, gsan_enabled=False))
    assert not cuda_start.without_scratch(SimpleNamespace(**plain, gsan_enabled=True))
    for name in plain:
        assert not cuda_start.without_scratch(SimpleNamespace(**{**plain, name: 256}))
        assert not cuda_start.without_scratch(
            SimpleNamespace(**{k: v for k, v in plain.items() if k != name}))
