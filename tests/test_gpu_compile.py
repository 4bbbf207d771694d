"""Kernels compiled for GPUs no machine here has, with no device: AMD's CDNA (gfx942, wavefronts
of 64 threads, 64 KB of LDS a workgroup) and NVIDIA's sm_86 (99 KB of shared memory a block).
Each variant's largest blocks, forward and backward, planned by ``CudaBackend`` for that target,
must compile within a block's limits there, so that no call fails at launch with Triton's
``OutOfResources``.

The compiles run in a subprocess with ``TRITON_INTERPRET=0`` (conftest.py turns the interpreter
on where no device is, and interpreted kernels cannot be compiled for a GPU).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from npu_softmax import launcher
from npu_softmax.backends import for_target
from npu_softmax.layout import row_layout

#: Plans each forced variant on ``CudaBackend(name, arch, warp_size=...)`` for the given rows,
#: forward or backward, compiles every step of the launch for that GPU, and prints, per step,
#: the kernel, its threads and its shared memory; exits 3 where this Triton lacks the target's
#: backend.
_COMPILE = """
import json, sys
import torch, triton
from triton.backends import backends
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from npu_softmax import launcher
from npu_softmax.backends import CudaBackend
from npu_softmax.layout import row_layout

name, arch, warp, cases = json.loads(sys.argv[1])
if ("amd" if name == "hip" else "nvidia") not in backends:
    sys.exit(3)
be = CudaBackend(name, arch, warp_size=warp)
launcher.backend = lambda: be
launcher.device_backend = lambda device_index: be
launcher.core_count = lambda device_index: 104
TYPES = {"float32": "fp32", "bfloat16": "bf16"}
found = []
for dtype, shape, dim, variant, backward in cases:
    dt = getattr(torch, dtype)
    strides = torch.empty(shape, device="meta").stride()
    layout = row_layout(shape, dim, strides, strides)
    device = torch.device("cuda", 0)
    if backward:
        launch = launcher.prepare_softmax_backward(dt, dt, dt, device, layout, variant)
    else:
        launch = launcher.prepare_softmax(dt, dt, device, layout, variant)
    # Operands: the tensors (x, y; or dy, y, dx), then the split kernels' float32 scratch.
    tensors = 3 if backward else 2
    for step in launch.steps:
        values = [("*" + TYPES[dtype]) if i < tensors else "*fp32" for i in step.operands]
        values += ["fp32" if isinstance(v, float) else "i32" for v in step.scalars]
        runtime = iter(values)
        signature = {p.name: "constexpr" if p.is_constexpr else next(runtime)
                     for p in step.kernel.params}
        options = {k: v for k, v in step.options.items() if k != "launch_pdl"}
        compiled = triton.compile(ASTSource(step.kernel, signature, constexprs=step.constexprs),
                                  target=GPUTarget(name, arch, warp), options=options)
        found.append([step.kernel.__name__, dtype, shape, variant, backward,
                      options["num_warps"] * warp, compiled.metadata.shared])
print(json.dumps(found))
"""

#: (dtype, shape, dim, variant): each variant's largest blocks (the row kernel's one block of
#: ``tile_elems``, the online kernel's chunks, the split kernels', the ``cols`` kernels' tiles),
#: rows not 16-byte aligned where that takes more shared memory; each forward and backward.
SHAPES = [
    ("float32", (2, 32768), 1, "tile"),
    ("bfloat16", (2, 16383), 1, "tile"),
    ("float32", (4, 200000), 1, "online"),
    ("bfloat16", (4, 200000), 1, "online"),
    ("float32", (1, 1 << 20), 1, "split"),
    ("bfloat16", (1, 1 << 20), 1, "split"),
    ("bfloat16", (1024, 64), 0, "cols"),
    ("float32", (65536, 33), 0, "cols"),
]
CASES = [(*shape, backward) for shape in SHAPES for backward in (False, True)]


@pytest.mark.parametrize("name,arch,warp,shared", [("hip", "gfx942", 64, 64 * 1024),
                                                   ("cuda", 86, 32, 99 * 1024)])
def test_largest_blocks_fit_other_gpus(name: str, arch: object, warp: int, shared: int) -> None:
    # 2-byte rows are held in blocks of at most 16384 where warps are 64 wide (``tile_elems``).
    cases = CASES + ([("bfloat16", (2, 16385), 1, "tile", False)] if warp == 32 else [])
    done = subprocess.run([sys.executable, "-c", _COMPILE, json.dumps([name, arch, warp, cases])],
                          capture_output=True, text=True,
                          env={**os.environ, "TRITON_INTERPRET": "0"})
    if done.returncode == 3:
        pytest.skip(f"this Triton has no {name} backend")
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert ({(f[1], tuple(f[2]), f[3], f[4]) for f in found}
            == {(c[0], c[1], c[3], c[4]) for c in cases})
    for kernel, dtype, shape, variant, backward, threads, used in found:
        assert threads <= 1024, (kernel, dtype, shape, variant, backward, threads)
        assert used <= shared, (kernel, dtype, shape, variant, backward, used)
    assert max(threads for *_, threads, _ in found) == 1024


def test_wide_two_byte_tiles_are_refused_where_warps_are_64_wide() -> None:
    """A block of 32768 2-byte elements took 128 KB of LDS compiled for gfx942 (rows of 16385
    not 16-byte aligned): a forced tile of such rows is refused before Triton is reached."""
    layout = row_layout((2, 16385), 1, (16385, 1), (16385, 1))
    with pytest.raises(ValueError, match="at most 16384"):
        launcher.plan(layout, 2, 104, for_target("hip", "gfx942", 64), "tile")
    # float32 rows there, and 2-byte rows on 32-wide warps, keep their one-program tiles.
    assert launcher.plan(layout, 4, 104, for_target("hip", "gfx942", 64), "tile").variant == "tile"
    assert launcher.plan(layout, 2, 104, for_target("cuda", "86", 32), "tile").variant == "tile"
