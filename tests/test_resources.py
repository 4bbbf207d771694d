"""Resources: compiles (the ``kernels`` dict everywhere, Triton's own cache on devices, the
compile options Triton's environment cannot change), threads racing on new keys, device memory
per call, and tensors of more than 2**31 elements."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading
import weakref
from pathlib import Path
from typing import Any

import pytest
import torch
import triton
from _ref import TOL, assert_close, assert_softmax_close, reference, reference_grad

import npu_softmax
from npu_softmax import eager, launcher
from npu_softmax import kernels as K
from npu_softmax.checks import supported_dtypes
from npu_softmax.layout import row_layout

KERNELS = [K.softmax_tile_kernel, K.softmax_online_kernel, K.softmax_split_stats_kernel,
           K.softmax_split_norm_kernel]


def _triton_cache_size() -> int:
    """Binaries in Triton's in-process caches of our kernels (0 under the interpreter).

    Upstream 3.6+ keeps them in ``JITFunction.device_caches[device][0]``; triton-ascend 3.2 in
    ``JITFunction.cache[device]``.
    """
    total = 0
    for fn in KERNELS:
        if hasattr(fn, "device_caches"):
            total += sum(len(entry[0]) for entry in fn.device_caches.values())
        else:
            total += sum(len(c) for c in getattr(fn, "cache", {}).values())
    return total


@pytest.fixture
def fresh_kernels(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """An empty ``launcher.kernels`` (and no kept eager calls) and a count of the launcher's
    first-use sizing (where a GPU compiles) per key, for this test only."""
    monkeypatch.setattr(launcher, "kernels", {})
    monkeypatch.setattr(eager, "_calls", {})
    be = launcher.backend()
    sized: list[tuple] = []
    real = be.max_programs

    def counting(kernel: Any, *args: Any, **kwargs: Any) -> int:
        sized.append(kernel)
        return real(kernel, *args, **kwargs)

    monkeypatch.setattr(be, "max_programs", counting)
    return {"sized": sized}


def _plan_of(shape: tuple[int, int], dtype: torch.dtype, device: str) -> launcher.Plan:
    layout = row_layout(shape, 1, (shape[1], 1), (shape[1], 1))
    index = torch.device(device).index or 0
    return launcher.plan(layout, dtype.itemsize, launcher.core_count(index),
                         launcher.device_backend(index))


def test_new_shapes_with_one_key_compile_once(kernel_device: str,
                                              fresh_kernels: dict[str, Any]) -> None:
    """Row counts and lengths that map to one plan reuse one ``kernels`` entry and, on a GPU,
    one Triton binary: n_rows/n_cols are runtime arguments. The lengths are odd so Triton's
    integer specialisation (== 1, % 16) is the same for all of them."""
    shapes = [(n, c) for n in (1100, 1537, 2049) for c in (769, 901, 999)]
    plans = {_plan_of(s, torch.float32, kernel_device) for s in shapes}
    assert len(plans) == 1, f"test shapes no longer share a plan: {plans}"
    triton_before = None
    for shape in shapes:
        x = torch.randn(shape, device=kernel_device)
        assert_softmax_close(npu_softmax.softmax(x, 1), reference(x, 1))
        if triton_before is None:
            triton_before = _triton_cache_size()
    assert len(launcher.kernels) == 1
    assert len(fresh_kernels["sized"]) == 1
    assert _triton_cache_size() == triton_before  # no compile after the first shape


# Every variant's kernels, forward and backward, on inputs saved by the test; outputs saved back.
_EVERY_VARIANT = """
    import sys, torch, npu_softmax
    x, dy = torch.load(sys.argv[1])
    outs = [npu_softmax.softmax(x, -1, variant=v) for v in ("tile", "online", "split")]
    outs.append(npu_softmax.softmax(x, 0))
    xg = x.clone().requires_grad_()
    outs += torch.autograd.grad(npu_softmax.softmax(xg, -1), xg, dy)
    torch.save([o.cpu() for o in outs], sys.argv[2])
"""


def test_fp_fusion_is_not_left_to_tritons_default(kernel_device: str, tmp_path: Path) -> None:
    """On CUDA every kernel asks for floating-point fusion itself: processes whose
    ``TRITON_DEFAULT_FP_FUSION`` is unset, 0 or 1 (each with its own Triton cache) compute
    bit-identical outputs of every variant, forward and backward, and none prints Triton 3.9's
    warning about that default (3.10 turns it off)."""
    if kernel_device != "cuda":
        pytest.skip("the fusion default is upstream Triton's, for GPU binaries")
    x, dy = torch.randn(61, 3001).mul(4), torch.randn(61, 3001)
    torch.save([x.to(kernel_device), dy.to(kernel_device)], tmp_path / "inputs.pt")
    outputs = {}
    for default in ("unset", "0", "1"):
        env = {k: v for k, v in os.environ.items() if k != "TRITON_DEFAULT_FP_FUSION"}
        env["TRITON_CACHE_DIR"] = str(tmp_path / f"cache-{default}")
        if default != "unset":
            env["TRITON_DEFAULT_FP_FUSION"] = default
        out = tmp_path / f"outputs-{default}.pt"
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(_EVERY_VARIANT),
                               str(tmp_path / "inputs.pt"), str(out)], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "FP_FUSION" not in done.stderr, done.stderr[-3000:]
        outputs[default] = torch.load(out)
    *rows, cols, grad = outputs["unset"]
    for y in rows:
        assert_softmax_close(y, reference(x, -1))
    assert_softmax_close(cols, reference(x, 0))
    # Rounded from y, dy and dx.
    assert_close(grad, reference_grad(torch.softmax, x, dy, -1), torch.float32, scale=3)
    for default in ("0", "1"):
        for i, (a, b) in enumerate(zip(outputs["unset"], outputs[default])):
            assert torch.equal(a, b), f"output {i} differs with TRITON_DEFAULT_FP_FUSION={default}"


def test_threads_racing_on_new_keys(kernel_device: str, fresh_kernels: dict[str, Any]) -> None:
    """Threads start together on keys nobody has used (three per key): every result is right,
    ``kernels`` ends with one entry per key, each sized once, and Triton compiles each
    specialisation once."""
    jobs = [(dtype, variant, seed) for dtype in (torch.float32, torch.float16, torch.bfloat16)
            for variant in ("tile", "online", "split") for seed in range(3)]
    barrier = threading.Barrier(len(jobs))
    results: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    errors: list[BaseException] = []
    compiled: list[tuple] = []
    knobs = getattr(triton, "knobs", None)  # compile hooks: upstream 3.6+ only
    hook_owner = getattr(knobs, "runtime", None)
    if hook_owner is not None and hasattr(hook_owner, "jit_post_compile_hook"):
        previous = hook_owner.jit_post_compile_hook

        def on_compile(*args: Any, **kwargs: Any) -> None:
            compiled.append((kwargs["fn"].name, str(kwargs["key"])))

        hook_owner.jit_post_compile_hook = on_compile

    def work(i: int, dtype: torch.dtype, variant: str) -> None:
        try:
            x = torch.randn(6, 3000, device=kernel_device).to(dtype)
            barrier.wait()
            results[i] = (x, npu_softmax.softmax(x, -1, variant=variant))
        except BaseException as e:  # reported below, with the thread's case
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i, d, v)) for i, (d, v, _) in enumerate(jobs)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        if hook_owner is not None and hasattr(hook_owner, "jit_post_compile_hook"):
            hook_owner.jit_post_compile_hook = previous
    assert not errors, errors
    for i, (x, y) in results.items():
        assert_softmax_close(y, reference(x, -1), f"job {jobs[i]}")
    # One entry per (dtype, variant) key; split has two kernels, so two entries.
    assert len(launcher.kernels) == 3 * (1 + 1 + 2)
    assert len(fresh_kernels["sized"]) == len(launcher.kernels)
    assert len(compiled) == len(set(compiled)), "a specialisation compiled twice"


#: Row matrices of a server's steps: batch sizes and row lengths that change from call to call
#: (rows of 1, odd, past a power of two, over the interpreter's programs and chunks).
_SERVER_SHAPES = [(1, 1), (3, 257), (7, 1000), (9, 31), (2, 3, 65), (5, 2049), (13, 100)]


def _server_call(device: str, gen: torch.Generator, dtypes: list[torch.dtype]) -> None:
    """One call of a server's step, its kind, shape, dtype, dim and temperature drawn from
    ``gen``, on fresh inputs, checked against float64: a forward, an out= (NaN-poisoned), an
    in-place call or a gradient."""
    def pick(options: list) -> Any:
        return options[int(torch.randint(len(options), (), generator=gen))]

    shape, dtype, log = pick(_SERVER_SHAPES), pick(dtypes), pick([False, True])
    dim, temperature = pick([-1, 0]), pick([None, 0.7, 2.0])
    kind = pick(["forward", "out", "in place", "grad"])
    t = temperature or 1.0
    x = torch.randn(shape, generator=gen).mul(4).to(dtype).to(device)
    fn, torch_fn = ((npu_softmax.log_softmax, torch.log_softmax) if log
                    else (npu_softmax.softmax, torch.softmax))
    case = f"{kind} {tuple(shape)} {dtype} dim={dim} log={log} temperature={temperature}"
    if kind == "grad":
        xg = x.clone().requires_grad_()
        dy = torch.randn(shape, generator=gen).to(dtype).to(device)
        (dx,) = torch.autograd.grad(fn(xg, dim, temperature=temperature), xg, dy)
        # The backward sums a row of dy in float32 (float64): beside the dtype's tolerance, allow
        # that sum's rounding, eps times the row's sum of |dy| over the temperature. torch's own
        # float32 backward needs it too (a log-softmax row of 1000 at temperature 0.7 missed the
        # dtype's tolerance alone by 3x, bit for bit as the kernels' result).
        eps = torch.finfo(torch.promote_types(dtype, torch.float32)).eps
        slack = eps * dy.double().abs().sum(dim).max().item() / t
        atol, rtol = TOL[dtype]
        torch.testing.assert_close(dx.double().cpu(), reference_grad(torch_fn, x, dy, dim, t),
                                   atol=2 * atol + slack, rtol=2 * rtol,
                                   msg=lambda m: f"{m}\n{case}")
        return
    if kind == "forward":
        y = fn(x, dim, temperature=temperature)
    elif kind == "out":
        y = torch.full_like(x, float("nan"))
        fn(x, dim, temperature=temperature, out=y)
    else:
        y = x.clone()
        (npu_softmax.log_softmax_ if log else npu_softmax.softmax_)(y, dim,
                                                                   temperature=temperature)
    expected = reference(x, dim, log, temperature=t)
    if log:
        assert_close(y, expected, dtype)
    else:
        assert_softmax_close(y, expected, case)


def test_threads_serving_mixed_calls(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight threads of a server, started together, each making a stream of calls whose kind,
    shape, dtype, dim and temperature change at every call (forward, out=, in place,
    gradients), on fresh inputs: every result matches float64. Kept calls are bounded low, so
    the threads also fill and clear the kept calls while others repeat them."""
    monkeypatch.setattr(eager, "_calls", {})
    monkeypatch.setattr(eager, "MAX_SIGNATURES", 6)
    dtypes = [d for d in (torch.float32, torch.float16, torch.bfloat16, torch.float64)
              if d in supported_dtypes(torch.device(device))]
    n_threads = 8
    calls = 10 if launcher.target().interpreter else 100
    seeds = torch.randint(2**31, (n_threads,)).tolist()  # from the test's printed seed
    barrier = threading.Barrier(n_threads)
    errors: list[tuple[int, BaseException]] = []

    def work(i: int) -> None:
        gen = torch.Generator().manual_seed(seeds[i])
        try:
            barrier.wait()
            for _ in range(calls):
                _server_call(device, gen, dtypes)
        except BaseException as e:  # reported below, with the thread's seed
            errors.append((seeds[i], e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(eager._calls) <= 6


def test_changing_shapes_keep_caches_bounded_and_no_tensors(
        device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server's calls over batch sizes and row lengths that keep changing, twice over: the
    kept calls never pass ``MAX_SIGNATURES``, the second pass adds no ``kernels`` entry and no
    plan, and no input, output or gradient outlives its call (a weak reference to each is dead
    once collected), so no cache holds a tensor or its memory."""
    monkeypatch.setattr(launcher, "kernels", {})
    monkeypatch.setattr(eager, "_calls", {})
    monkeypatch.setattr(eager, "MAX_SIGNATURES", 5)
    shapes = [(b, c) for b in (1, 3, 8) for c in (7, 333, 2049)]
    refs: list[weakref.ref] = []

    def step(shape: tuple[int, int]) -> None:
        x = torch.randn(shape, device=device).mul(4)
        dy = torch.randn(shape, device=device)
        xg = x.clone().requires_grad_()
        y = npu_softmax.softmax(xg, -1, temperature=0.9)
        (dx,) = torch.autograd.grad(y, xg, dy)
        out = torch.full_like(x, float("nan"))
        npu_softmax.log_softmax(x, 0, out=out)
        assert_softmax_close(y, reference(x, -1, temperature=0.9))
        assert_close(dx, reference_grad(torch.softmax, x, dy, -1, 0.9), torch.float32)
        assert_close(out, reference(x, 0, log=True), torch.float32)
        assert len(eager._calls) <= 5
        refs.extend(weakref.ref(t) for t in (x, dy, xg, y, dx, out))

    for shape in shapes:
        step(shape)
    keys, plans = len(launcher.kernels), launcher._plan.cache_info()
    for shape in shapes:
        step(shape)
    assert len(launcher.kernels) == keys
    assert launcher._plan.cache_info().misses == plans.misses
    gc.collect()
    assert not [r() for r in refs if r() is not None]


def _memory_module(device: str) -> Any:
    module = getattr(torch, device, None)
    if module is None or not hasattr(module, "max_memory_allocated"):
        pytest.skip(f"no allocator statistics for {device}")
    return module


def _block(nbytes: int, device: str) -> int:
    # The caching allocators count whole blocks: multiples of 512 bytes, and a block over 1 MiB
    # taken from a cached segment is not split when less than 1 MiB would be left, so it can
    # count up to 1 MiB more than asked (a 6.1 MB output counted 6.6 MB on the H100). torch_npu's
    # allocator adds 32 bytes to each request before it rounds (``round_size``).
    size = -(-(nbytes + (32 if device == "npu" else 0)) // 512) * 512
    return size + (1 << 20) if size > 1 << 20 else size


def _strided_inputs(device: str) -> dict[str, tuple[torch.Tensor, int]]:
    base = torch.randn(1024, 3001, device=device)
    return {
        "contiguous": (base, -1),
        "transposed": (base.t(), -1),
        "transposed, other dim": (base.t(), 0),
        "sliced with steps": (base[1::3, 5::2], -1),
        "expanded": (base[:1].expand(512, 3001), -1),
        "3-d permuted": (base.reshape(4, 256, 3001).permute(2, 0, 1), 1),
    }


@pytest.mark.parametrize("variant", [None, "tile", "online", "split"])
def test_strided_inputs_allocate_only_the_output(kernel_device: str, variant: str | None) -> None:
    """Inputs the kernels address by stride: the peak device memory of a call is the output
    (and the split variant's partial max/sum), no copy of the input."""
    if kernel_device == "cpu":
        pytest.skip("peak memory is measured by the cuda/npu caching allocator")
    mem = _memory_module(kernel_device)
    for name, (x, dim) in _strided_inputs(kernel_device).items():
        npu_softmax.softmax(x, dim, variant=variant)  # compile outside the measurement
        mem.synchronize()
        mem.reset_peak_memory_stats()
        start = mem.memory_allocated()
        y = npu_softmax.softmax(x, dim, variant=variant)
        mem.synchronize()
        peak = mem.max_memory_allocated() - start
        allowed = _block(y.numel() * y.element_size(), kernel_device)
        n_rows = x.numel() // x.shape[dim]
        layout = row_layout(list(x.shape), dim % x.dim(), list(x.stride()), list(y.stride()))
        assert layout is not None, name
        index = x.device.index or 0
        p = launcher.plan(layout, 4, launcher.core_count(index), launcher.device_backend(index),
                          variant)
        if p.variant == "split":
            allowed += _block(2 * n_rows * p.n_splits * 4, kernel_device)
        assert peak <= allowed, f"{name}: {peak} bytes at peak, {allowed} allowed ({p})"
        assert_softmax_close(y, reference(x, dim), name)


def test_permuted_4d_copies_the_input_once(kernel_device: str) -> None:
    """The documented exception (docs/accuracy.md, Memory): three non-normalised dims in an
    order no (outer, inner) stride pair describes. The call copies the input once."""
    if kernel_device == "cpu":
        pytest.skip("peak memory is measured by the cuda/npu caching allocator")
    mem = _memory_module(kernel_device)
    x = torch.randn(8, 16, 32, 64, device=kernel_device).permute(2, 0, 3, 1)
    assert row_layout(list(x.shape), 3, list(x.stride()), list(x.contiguous().stride())) is None
    npu_softmax.softmax(x, 3)
    mem.synchronize()
    mem.reset_peak_memory_stats()
    start = mem.memory_allocated()
    y = npu_softmax.softmax(x, 3)
    mem.synchronize()
    peak = mem.max_memory_allocated() - start
    nbytes = _block(x.numel() * x.element_size(), kernel_device)
    assert peak == 2 * nbytes, f"{peak} bytes at peak: expected output + one input copy"
    assert_softmax_close(y, reference(x, 3))


HUGE = (65537, 32775)  # 2_147_975_175 elements > 2**31


def _free_bytes(device: str) -> int:
    module = getattr(torch, device)
    return module.mem_get_info()[0] if hasattr(module, "mem_get_info") else 0


@pytest.mark.parametrize("transposed", [False, True], ids=["contiguous", "transposed"])
def test_more_than_2_31_elements(kernel_device: str, transposed: bool) -> None:
    """A float16 tensor of more than 2**31 elements (and its transposed view, whose rows are
    65537 elements apart): the last rows, past 2**31, are right. Needs ~9 GB free."""
    if kernel_device == "cpu":
        pytest.skip("interpreting 2**31 elements takes hours; run on cuda/npu")
    need = 2 * HUGE[0] * HUGE[1] * 2 + (1 << 30)
    if _free_bytes(kernel_device) < need:
        pytest.skip(f"needs {need / 1e9:.1f} GB free on {kernel_device}")
    rows, cols = HUGE
    if transposed:
        x = torch.randn(cols, rows, device=kernel_device, dtype=torch.float16).t()
    else:
        x = torch.randn(rows, cols, device=kernel_device, dtype=torch.float16)
    y = npu_softmax.softmax(x, -1)
    for index in (slice(0, 2), slice(rows // 2, rows // 2 + 2), slice(rows - 3, rows)):
        assert_softmax_close(y[index], reference(x[index], -1), f"rows {index}")
    assert any(k[0].index_64 for k in launcher.kernels if k[1] == torch.float16)
