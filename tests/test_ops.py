"""Forward results of softmax / log_softmax, temperature, out= and in place, on every device."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import pytest
import torch
import triton
from _ref import (
    DTYPES,
    VARIANTS,
    assert_close,
    assert_softmax_close,
    autocast_or_skip,
    check_tile_refusal,
    reference,
    reference_grad,
)

import npu_softmax as ns
from npu_softmax import eager, launcher
from npu_softmax.checks import supported_dtypes
from npu_softmax.layout import row_layout

FUNCS = {"softmax": (ns.softmax, ns.softmax_, False),
         "log_softmax": (ns.log_softmax, ns.log_softmax_, True)}


def _supported(device: str, dtype: torch.dtype) -> None:
    if dtype == torch.float64 and launcher.target().backend == "npu" and device == "npu":
        pytest.skip("no float64 on Ascend")


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(37, 781), (3, 4099)])  # 4099: several chunks per row
def test_forward(device: str, name: str, variant: str | None, dtype: torch.dtype,
                 shape: tuple[int, int]) -> None:
    _supported(device, dtype)
    fn, _, log = FUNCS[name]
    x = (torch.randn(shape, dtype=torch.float64) * 4).to(dtype).to(device)
    y = fn(x, -1, variant=variant)
    assert y.dtype == dtype and y.shape == x.shape and y.is_contiguous()
    assert_close(y, reference(x, -1, log), dtype)


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("tail", [False, True], ids=["one_block", "head_tail"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(37, 300), (5, 4352), (3, 9000)])
def test_tile_head_and_tail(device: str, name: str, tail: bool, dtype: torch.dtype,
                            shape: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows that fit, held as one power-of-two block or as a head of half that block and a
    tail (``Backend.tail_block``), each forced whatever the target's rule; out= poisoned with
    NaN, so an element neither block writes fails. 300 = 256 + 64; 4352 = 4096 + 256 (several
    rows a tile under the interpreter, one on GPUs); 9000 = 8192 + 1024."""
    if not launcher.serves(torch.device(device)):
        pytest.skip("forces the kernels' plans: CPU tensors take torch's softmax here")
    fn, _, log = FUNCS[name]
    n_cols = shape[1]
    head = triton.next_power_of_2(n_cols) // 2
    tail_n = triton.next_power_of_2(n_cols - head) if tail else 0
    be = launcher.backend()
    # On the class: Backend.for_layout may hand the plan a sibling instance.
    monkeypatch.setattr(type(be), "tail_block",
                        lambda self, n, itemsize: tail_n if n == n_cols else 0)
    monkeypatch.setattr(eager, "_calls", {})  # no launch kept from the other form
    launcher._plan.cache_clear()
    try:
        x = (torch.randn(shape, dtype=torch.float64) * 4).to(dtype).to(device)
        out = torch.full(shape, math.nan, dtype=dtype, device=device)
        try:
            fn(x, -1, variant="tile", out=out)
        except ValueError as e:
            check_tile_refusal(e, n_cols)
            return
        y = fn(x, -1, variant="tile")
        layout = row_layout(shape, 1, x.stride(), y.stride())
        p = launcher.plan(layout, x.element_size(), launcher.core_count(0), be)
    finally:
        launcher._plan.cache_clear()
    assert (p.variant, p.tail_n, p.block_n) == ("tile", tail_n, head if tail else 2 * head)
    assert_close(out, reference(x, -1, log), dtype)
    assert_close(y, reference(x, -1, log), dtype)


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_strided_dims(device: str, name: str, variant: str | None) -> None:
    fn, _, log = FUNCS[name]
    base = torch.randn(6, 41, 13, device=device)
    for x, dim in ((base, 1), (base.transpose(0, 2), 0), (base[:, ::3], 2),
                   (base.permute(2, 0, 1)[None].expand(2, -1, -1, -1), 3)):
        assert_close(fn(x, dim, variant=variant), reference(x, dim, log), torch.float32)


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("temperature", [0.3, 1.0, 7.5])
def test_temperature(device: str, name: str, variant: str | None, temperature: float) -> None:
    fn, _, log = FUNCS[name]
    x = torch.randn(29, 317, device=device) * 3
    y = fn(x, -1, temperature=temperature, variant=variant)
    assert_close(y, reference(x, -1, log, temperature), torch.float32)


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_temperatures_whose_reciprocal_is_not_a_normal_float32(device: str, name: str,
                                                               variant: str | None) -> None:
    """1 / 1e-39 overflows float32 and 1 / 1e38 is subnormal: scaling by it would give NaN (0 * inf)
    or, flushed to 0, a uniform row. Such temperatures divide first, as a true division (torch's
    CUDA ``x / 1e-39`` gives NaN rows here): a zero row stays uniform, ties share the mass, and
    1e38-sized logits at 1e38 keep their shape; with out= and in place too, and the gradient at
    1e38."""
    fn, fn_, log = FUNCS[name]
    small = torch.randn(5, 70, device=device) * 1e-3  # / 1e-39: at most about 1e36
    small[1] = 0
    small[2, :7] = small[2].max()
    large = (torch.randn(5, 70, device=device) * 1e38).requires_grad_()
    # A float32 1e39 is inf and a float32 3e-45 is 4.2e-45: torch's x / t would round them so.
    tiny = torch.randn(5, 70, device=device) * 1e-8  # / 3e-45: at most about 2e37
    for x, t in ((small, 1e-39), (large, 1e38), (large, 1e39), (tiny, 3e-45)):
        expected = reference(x, -1, log, t)
        out = torch.full_like(x, math.nan, requires_grad=False)
        fn(x.detach(), -1, temperature=t, variant=variant, out=out)
        for y in (fn(x, -1, temperature=t, variant=variant), out,
                  fn_(x.detach().clone(), -1, temperature=t, variant=variant)):
            if not log:
                assert_softmax_close(y, expected, f"temperature {t}")
                continue
            # x / t rounds to float32 before the max is subtracted: log-probabilities near 0
            # keep an error of an ulp or two of the largest |x / t| (about 1e36 at 1e-39).
            atol = 2e-6 + 2**-22 * x.detach().abs().max().item() / t
            torch.testing.assert_close(y.detach().cpu().double(), expected, rtol=1e-5,
                                       atol=atol, equal_nan=True)
    dy = torch.randn(5, 70, device=device)
    (dx,) = torch.autograd.grad(fn(large, -1, temperature=1e38, variant=variant), large, dy)
    torch_fn = torch.log_softmax if log else torch.softmax
    assert_close(dx * 1e38, reference_grad(torch_fn, large, dy, -1, 1e38) * 1e38, torch.float32)


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("temperature", [1e-300, 1e-250, 1e100, 1e300])
def test_float64_temperatures_far_from_one(device: str, name: str, temperature: float) -> None:
    """float64 takes temperatures whose power of two is far beyond float32's range: logits of
    that scale keep their shape (forward, out=, in place, gradient)."""
    _supported(device, torch.float64)
    fn, fn_, log = FUNCS[name]
    x = (torch.randn(6, 50, dtype=torch.float64, device=device) * temperature).requires_grad_()
    expected = reference(x, -1, log, temperature)
    out = torch.full_like(x, math.nan, requires_grad=False)
    fn(x.detach(), -1, temperature=temperature, out=out)
    for y in (fn(x, -1, temperature=temperature), out,
              fn_(x.detach().clone(), -1, temperature=temperature)):
        assert_close(y, expected, torch.float64)
    dy = torch.randn(6, 50, dtype=torch.float64, device=device)
    (dx,) = torch.autograd.grad(fn(x, -1, temperature=temperature), x, dy)
    torch_fn = torch.log_softmax if log else torch.softmax
    assert_close(dx * temperature, reference_grad(torch_fn, x, dy, -1, temperature) * temperature,
                 torch.float64)


def _float32_scale(launch: Callable[..., launcher.Launch]) -> Callable[..., launcher.Launch]:
    # ``launch`` (``launcher.launch_softmax`` or its backward) with its ``scale`` rounded to
    # float32, as compiled kernels take it.
    def run(*args: object, scale: float = 1.0, **kwargs: object) -> launcher.Launch:
        return launch(*args, scale=torch.tensor(scale, dtype=torch.float32).item(), **kwargs)
    return run


@pytest.mark.parametrize("name", FUNCS)
def test_float64_temperatures_never_reach_the_kernels_as_a_float32_scale(
        kernel_device: str, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compiled kernels take their ``scale`` (``1 / temperature``) as a float32 (Triton passes
    a Python float so), which would cost float64 results all but 7 digits; the interpreter
    keeps it float64. Here the launches get it rounded to float32 as a device would: float64
    results at temperature 1.7 still hold float64 accuracy (forward, out=, in place,
    gradient)."""
    _supported(kernel_device, torch.float64)
    fn, fn_, log = FUNCS[name]
    for launch in ("launch_softmax", "launch_softmax_backward"):
        monkeypatch.setattr(launcher, launch, _float32_scale(getattr(launcher, launch)))
    monkeypatch.setattr(eager, "_calls", {})
    x = (torch.randn(6, 50, dtype=torch.float64) * 3).to(kernel_device).requires_grad_()
    expected = reference(x, -1, log, 1.7)
    out = torch.full_like(x, math.nan, requires_grad=False)
    fn(x.detach(), -1, temperature=1.7, out=out)
    for y in (fn(x, -1, temperature=1.7), out, fn_(x.detach().clone(), -1, temperature=1.7)):
        assert_close(y, expected, torch.float64)
    dy = torch.randn(6, 50, dtype=torch.float64, device=kernel_device)
    (dx,) = torch.autograd.grad(fn(x, -1, temperature=1.7), x, dy)
    torch_fn = torch.log_softmax if log else torch.softmax
    assert_close(dx, reference_grad(torch_fn, x, dy, -1, 1.7), torch.float64)


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("bad", [0, -1.0, math.inf, math.nan, -0.0,
                                 pytest.param(10**400, id="int past float"),
                                 pytest.param(Fraction(10**400, 3), id="Fraction past float"),
                                 pytest.param(Fraction(1, 10**400), id="Fraction under float")])
def test_temperature_values_rejected(device: str, name: str, bad: float) -> None:
    """Also positive finite numbers whose float is not (an OverflowError, a
    ZeroDivisionError from the kernels' path, and NaN from the CPU fallback before)."""
    fn, _, _ = FUNCS[name]
    with pytest.raises(ValueError, match="temperature must be a positive finite float"):
        fn(torch.randn(2, 3, device=device), temperature=bad)


@pytest.mark.parametrize("bad", [True, "2", torch.tensor(2.0), 1j])
def test_temperature_types_rejected(device: str, bad: object) -> None:
    with pytest.raises(TypeError, match="temperature"):
        ns.softmax(torch.randn(2, 3, device=device), temperature=bad)


@pytest.mark.parametrize("name", FUNCS)
def test_temperature_of_any_real_number_type(device: str, name: str) -> None:
    """A temperature that is a real number of another type (numpy's float32, integers,
    ``Fraction``) is its value, on first and repeat calls; numpy's bool and NaN are refused."""
    np = pytest.importorskip("numpy")
    fn, _, log = FUNCS[name]
    x = torch.randn(6, 45, device=device) * 3
    for t in (np.float32(0.625), np.float64(0.625), Fraction(5, 8), np.int64(2), 2):
        for _ in range(2):  # the second call repeats the first's kept launch
            assert_close(fn(x, -1, temperature=t), reference(x, -1, log, float(t)),
                         torch.float32)
    with pytest.raises(TypeError, match="temperature"):
        fn(x, -1, temperature=np.bool_(True))
    with pytest.raises(ValueError, match="temperature"):
        fn(x, -1, temperature=np.float32("nan"))


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_special_values(device: str, name: str, variant: str | None) -> None:
    fn, _, log = FUNCS[name]
    inf, nan = math.inf, math.nan
    x = torch.randn(6, 37)
    x[0, 3] = -inf
    x[1] = -inf
    x[2, 5] = inf
    x[3, 0] = nan
    x[4, :36] = -inf
    torch_fn = torch.log_softmax if log else torch.softmax
    y = fn(x.to(device), -1, variant=variant)
    torch.testing.assert_close(y.cpu(), torch_fn(x, -1), equal_nan=True)


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("shape,dim", [((0, 5), 1), ((5, 0), 1), ((4, 0, 3), 2), ((), 0),
                                       ((), -1), ((1,), 0)])
def test_empty_and_0d(device: str, name: str, shape: tuple, dim: int) -> None:
    fn, _, log = FUNCS[name]
    x = torch.randn(shape)
    torch_fn = torch.log_softmax if log else torch.softmax
    y = fn(x.to(device), dim)
    assert y.shape == x.shape
    torch.testing.assert_close(y.cpu(), torch_fn(x, dim))


@pytest.mark.parametrize("name", FUNCS)
def test_float8_inputs_take_a_dtype(device: str, name: str) -> None:
    """float8 inputs with ``dtype=`` are cast first, as torch.softmax does them; without it
    they are refused, as torch refuses them (torch has no float8 softmax)."""
    fn, _, log = FUNCS[name]
    for fp8 in (torch.float8_e4m3fn, torch.float8_e5m2):
        try:
            x = (torch.randn(9, 70, device=device) * 3).to(fp8)
            x.to(torch.float32)  # what torch does with dtype=, too
        except (RuntimeError, TypeError):
            pytest.skip(f"no {fp8} casts on {device}")
        for dtype in supported_dtypes(torch.device(device)):
            assert_close(fn(x, -1, dtype=dtype), reference(x, -1, log, dtype=dtype), dtype)
        with pytest.raises(TypeError, match="not supported"):
            fn(x, -1)


@pytest.mark.parametrize("name", FUNCS)
def test_temperature_divides_before_a_narrowing_dtype(device: str, name: str) -> None:
    """``torch.softmax(x / t, dtype=dtype)`` divides, then casts: float32 logits past float16's
    range that the temperature brings into it are not cast to inf first, and the scaled logits
    are what the cast rounds (integers too); forward and out=."""
    fn, _, log = FUNCS[name]
    x = torch.randn(6, 40, device=device) * 3000 + 60000
    x[0, 0] = 70000  # inf in float16
    ints = torch.randint(-3000, 3000, (3, 50), device=device)
    for src, dtype, t in ((x, torch.float16, 1000.0), (x, torch.bfloat16, 700.0),
                          (ints, torch.float16, 7.0)):
        expected = reference(src, -1, log, t, dtype)
        out = torch.full(src.shape, math.nan, dtype=dtype, device=device)
        fn(src, -1, dtype, temperature=t, out=out)
        for y in (fn(src, -1, dtype, temperature=t), out):
            assert y.dtype == dtype
            if log:
                assert_close(y, expected, dtype)
            else:
                assert_softmax_close(y, expected, f"{src.dtype} -> {dtype}")


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("src", [torch.bfloat16, torch.float16])
def test_gradient_of_a_widening_dtype(device: str, name: str, src: torch.dtype) -> None:
    """A 2-byte input with ``dtype=`` float64 (float32 where float64 is not served): the
    gradient has the input's dtype, from the wider arithmetic, at a temperature too."""
    fn, _, log = FUNCS[name]
    torch_fn = torch.log_softmax if log else torch.softmax
    wide = (torch.float64 if torch.float64 in supported_dtypes(torch.device(device))
            else torch.float32)
    x = (torch.randn(5, 70, device=device) * 3).to(src).requires_grad_()
    dy = torch.randn(5, 70, device=device, dtype=wide)
    for t in (1.0, 0.7):
        (dx,) = torch.autograd.grad(fn(x, -1, wide, temperature=t), x, dy)
        assert dx.dtype == src
        assert_close(dx, reference_grad(torch_fn, x, dy, -1, t), src)


def test_dtype_argument(device: str) -> None:
    x = torch.randint(-5, 5, (7, 33), device=device)
    assert_close(ns.softmax(x, 1, dtype=torch.float32), reference(x, 1, False, dtype=torch.float32),
                 torch.float32)
    h = torch.randn(7, 33, device=device).to(torch.bfloat16)
    y = ns.log_softmax(h, 1, dtype=torch.float32)
    assert y.dtype == torch.float32
    assert_close(y, reference(h, 1, True, dtype=torch.float32), torch.float32)
    with pytest.raises(TypeError, match="pass dtype=torch.float32"):
        ns.softmax(x)
    with pytest.raises(TypeError, match="not a floating torch.dtype"):
        ns.softmax(h, dtype=torch.int32)


def test_argument_errors(device: str) -> None:
    x = torch.randn(3, 4, device=device)
    with pytest.raises(TypeError, match="expected a torch.Tensor"):
        ns.log_softmax([1.0, 2.0])
    with pytest.raises(TypeError, match="dim must be an int"):
        ns.softmax(x, 1.0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ns.log_softmax(x, 2)
    with pytest.raises(ValueError, match="variant must be one of"):
        ns.softmax(x, variant="fast")


def _poisoned(shape: tuple, dtype: torch.dtype, device: str, kind: str) -> torch.Tensor:
    """An out buffer full of NaN: contiguous, transposed, or a strided slice of a bigger one."""
    if kind == "contiguous":
        return torch.full(shape, math.nan, dtype=dtype, device=device)
    if kind == "transposed":
        return torch.full(shape[::-1], math.nan, dtype=dtype, device=device).t()
    big = torch.full((shape[0] * 2, shape[1] + 5), math.nan, dtype=dtype, device=device)
    return big[::2, 3:3 + shape[1]]


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("kind", ["contiguous", "transposed", "slice"])
def test_out(device: str, name: str, variant: str | None, kind: str) -> None:
    fn, _, log = FUNCS[name]
    x = torch.randn(23, 300, device=device)
    out = _poisoned((23, 300), torch.float32, device, kind)
    result = fn(x, 1, temperature=0.8, variant=variant, out=out)
    assert result is out
    assert_close(out, reference(x, 1, log, 0.8), torch.float32)


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_out_sharing_the_inputs_memory(device: str, name: str, variant: str | None) -> None:
    """An out= that shares the input's memory without being it (a window of one buffer
    shifted by a row and an element, interleaved columns, each row's columns shifted) gets the
    softmax of the input as it was before the call, as into a separate tensor; the buffer's
    elements that ``out`` does not cover keep their values."""
    fn, _, log = FUNCS[name]
    buf = torch.randn(8 * 333 + 1, device=device)
    grid = torch.randn(9, 2 * 300 + 2, device=device)
    rows = torch.randn(6, 512, device=device)
    cases = ((buf, buf[:7 * 333].view(7, 333), buf[333 + 1:].view(7, 333)),
             (grid, grid[:, 0:600:2], grid[:, 1:601:2]),
             (rows, rows[:, :300], rows[:, 150:450]))
    for whole, x, out in cases:
        before, expected = whole.clone(), reference(x, 1, log, 0.7)
        assert fn(x, 1, temperature=0.7, variant=variant, out=out) is out
        assert_close(out, expected, torch.float32)
        covered = torch.zeros(whole.numel(), dtype=torch.bool, device=device)
        covered.as_strided(out.shape, out.stride(), out.storage_offset()).fill_(True)
        assert torch.equal(whole.flatten()[~covered], before.flatten()[~covered])


@pytest.mark.parametrize("name", FUNCS)
def test_out_of_a_wrapper_subclass(device: str, name: str) -> None:
    """A plain input written into an ``out`` of a ``__torch_dispatch__`` wrapper subclass (no
    storage of its own, as DTensor's) goes through the custom op, which the subclass unwraps,
    as ``torch.softmax(x, out=...)`` does; it never reads the wrapper's storage."""
    from torch.testing._internal.two_tensor import TwoTensor

    fn, _, log = FUNCS[name]
    x = torch.randn(6, 45, device=device)
    out = TwoTensor(_poisoned((6, 45), torch.float32, device, "contiguous"),
                    _poisoned((6, 45), torch.float32, device, "contiguous"))
    assert fn(x, 1, temperature=0.7, out=out) is out
    assert_close(out.a, reference(x, 1, log, 0.7), torch.float32)
    assert_close(out.b, reference(x, 1, log, 0.7), torch.float32)


@pytest.mark.parametrize("name", FUNCS)
def test_out_and_in_place_bump_the_version(device: str, name: str) -> None:
    """A tensor written by out= or in place is marked modified, on a first and a repeated
    call, as torch's in-place ops mark it: autograd then refuses a gradient that saved its old
    contents instead of using the new ones. An inference tensor is written only inside
    ``torch.inference_mode()``, as torch allows."""
    fn, fn_, _ = FUNCS[name]
    for write in (lambda y: fn_(y, -1), lambda y: fn(torch.randn_like(y), -1, out=y)):
        a = torch.randn(3, 7, device=device, requires_grad=True)
        saved = a.exp()  # exp saves its output for the gradient
        for _ in range(2):
            before = saved._version
            with torch.no_grad():
                write(saved)
            assert saved._version > before
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            saved.sum().backward()
    with torch.inference_mode():
        frozen = torch.randn(3, 7, device=device)
    expected = reference(frozen, -1, FUNCS[name][2])
    for write in (lambda y: fn_(y, -1), lambda y: fn(y.clone(), -1, out=y)):
        with pytest.raises(RuntimeError, match="inference tensor"):
            write(frozen)
    with torch.inference_mode():
        fn_(frozen, -1)
    assert_close(frozen, expected, torch.float32)


@pytest.mark.parametrize("name", FUNCS)
def test_negated_views(device: str, name: str) -> None:
    """A view whose values are its memory negated (``z.conj().imag``, ``is_neg()``) is read and
    written as its values: as input, out=, in place, and as the upstream gradient."""
    fn, fn_, log = FUNCS[name]
    torch_fn = torch.log_softmax if log else torch.softmax

    def negated() -> torch.Tensor:
        z = torch.randn(4, 33, dtype=torch.complex64, device=device) * 3
        return z.conj().imag

    try:
        x = negated()
    except (RuntimeError, TypeError):
        pytest.skip(f"no complex64 tensors on {device}")
    assert x.is_neg()
    for _ in range(2):  # a first and a repeated call of one signature
        assert_close(fn(x, -1), reference(x.resolve_neg(), -1, log), torch.float32)
        out = negated()
        assert fn(x.resolve_neg(), 1, out=out) is out
        assert_close(out, reference(x.resolve_neg(), 1, log), torch.float32)
        y = negated()
        expected = reference(y.resolve_neg(), 0, log)
        assert_close(fn_(y, 0), expected, torch.float32)
    a = torch.randn(4, 33, device=device, requires_grad=True)
    dy = negated()
    (dx,) = torch.autograd.grad(fn(a, -1), a, dy)
    assert_close(dx, reference_grad(torch_fn, a, dy.resolve_neg(), -1), torch.float32)


@pytest.mark.parametrize("name", FUNCS)
def test_negated_views_never_repeat_a_plain_views_launch(device: str, name: str) -> None:
    """``z.conj().imag`` has the shape, strides and dtype of ``z.imag``: a launch kept for the
    plain view reads memory, and must not serve the negated one (as input, out= or in place)."""
    fn, fn_, log = FUNCS[name]

    def views() -> tuple[torch.Tensor, torch.Tensor]:
        z = torch.randn(4, 33, dtype=torch.complex64, device=device) * 3
        return z.imag, z.conj().imag

    try:
        plain, negated = views()
    except (RuntimeError, TypeError):
        pytest.skip(f"no complex64 tensors on {device}")
    assert not plain.is_neg() and negated.is_neg() and plain.stride() == negated.stride()
    for x in (plain, negated):
        assert_close(fn(x, -1), reference(x.resolve_neg(), -1, log), torch.float32)
    x = torch.randn(4, 33, device=device)
    for out in views():
        assert fn(x, -1, out=out) is out
        assert_close(out, reference(x, -1, log), torch.float32)
    for y in views():
        expected = reference(y.resolve_neg(), 0, log)
        assert_close(fn_(y, 0), expected, torch.float32)


def test_dtype_positionally(device: str) -> None:
    """``dtype`` is the third positional argument, as in ``torch.softmax(x, dim, dtype)``."""
    x = torch.randn(3, 8, device=device).to(torch.bfloat16)
    assert_close(ns.softmax(x, 1, torch.float32), reference(x, 1, dtype=torch.float32),
                 torch.float32)
    assert_close(ns.log_softmax(x, 0, torch.float32),
                 reference(x, 0, True, dtype=torch.float32), torch.float32)


def test_out_dtype(device: str) -> None:
    x = torch.randn(5, 70, device=device, dtype=torch.bfloat16)
    out = torch.full((5, 70), math.nan, device=device)
    ns.softmax(x, 1, dtype=torch.float32, out=out)
    assert_close(out, reference(x, 1, False, dtype=torch.float32), torch.float32)


def test_out_errors(device: str) -> None:
    x = torch.randn(4, 6, device=device)
    with pytest.raises(ValueError, match="out has shape"):
        ns.softmax(x, out=torch.empty(4, 5, device=device))
    with pytest.raises(TypeError, match="out has dtype"):
        ns.softmax(x, out=torch.empty(4, 6, device=device, dtype=torch.float16))
    with pytest.raises(TypeError, match="out must be a torch.Tensor"):
        ns.softmax(x, out=[0.0])
    with pytest.raises(RuntimeError, match="overlapping elements"):
        ns.softmax(x, out=torch.empty(1, 6, device=device).expand(4, 6))
    with pytest.raises(RuntimeError, match="do not support autograd"):
        ns.softmax(x.requires_grad_(), out=torch.empty(4, 6, device=device))
    if device != "cpu":
        with pytest.raises(RuntimeError, match="out is on"):
            ns.softmax(x.detach(), out=torch.empty(4, 6))


def test_out_errors_of_the_ops_called_directly(device: str) -> None:
    """The out= and in-place ops, called directly (as scripted code does), refuse an out that
    the public functions refuse, first call or repeat: up to commit a863bb6 the kernels wrote
    past an out of fewer elements (here a view of a bigger buffer, whose elements past it must
    keep a value no result takes), and raced on an expanded one."""
    x = torch.randn(4, 6, device=device)
    buf = torch.full((2, 4, 5), 7.0, device=device)
    for op in (torch.ops.npu_softmax.softmax_out, torch.ops.npu_softmax.log_softmax_out):
        for _ in range(2):
            with pytest.raises(ValueError, match="out has shape"):
                op(x, 1, 1.0, None, buf[0])
            with pytest.raises(RuntimeError, match="overlapping elements"):
                op(x, 1, 1.0, None, torch.empty(1, 6, device=device).expand(4, 6))
            if device != "cpu":
                with pytest.raises(RuntimeError, match="out is on"):
                    op(x, 1, 1.0, None, torch.empty(4, 6))
        assert buf.eq(7.0).all()
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        fake = mode.from_tensor(torch.randn(1, 6, device=device))
    for op in (torch.ops.npu_softmax.softmax_, torch.ops.npu_softmax.log_softmax_):
        with pytest.raises(RuntimeError, match="overlapping elements"):
            op(torch.randn(1, 6, device=device).expand(4, 6), 1, 1.0, None)
        with mode, pytest.raises(RuntimeError, match="overlapping elements"):  # a traced call
            op(fake.expand(4, 6), 1, 1.0, None)


@pytest.mark.parametrize("name", FUNCS)
def test_ops_called_directly_under_no_grad(device: str, name: str) -> None:
    """The out= and in-place ops called directly (as scripted code does) under
    ``torch.no_grad()``: they write tensors that require grad, as torch's out= functions do
    (only grad mode refuses them), and mark the written tensor modified, so that autograd
    refuses a gradient that saved its old contents. With grad mode on they refuse."""
    log = FUNCS[name][2]
    lib = torch.ops.npu_softmax
    out_op, inplace_op = ((lib.log_softmax_out, lib.log_softmax_) if log
                          else (lib.softmax_out, lib.softmax_))
    x = torch.randn(5, 9, device=device, requires_grad=True)
    for inplace in (False, True):
        a = torch.randn(5, 9, device=device, requires_grad=True)
        saved = a.exp()  # exp saves its output for the gradient
        expected = reference(saved.detach() if inplace else x.detach(), 1, log)
        before = saved._version
        with torch.no_grad():
            if inplace:
                inplace_op(saved, 1, 1.0, None)
            else:
                out_op(x, 1, 1.0, None, saved)
        assert saved._version > before
        assert_close(saved.detach(), expected, torch.float32)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            saved.sum().backward()
    # With grad mode on, autograd would have to record the write: refused, as the public
    # functions refuse it.
    with pytest.raises(RuntimeError, match="do not support autograd"):
        out_op(x, 1, 1.0, None, torch.empty(5, 9, device=device))
    with pytest.raises(RuntimeError, match="do not support autograd"):
        inplace_op(x.detach().clone().requires_grad_().mul(1), 1, 1.0, None)


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("shape", [(31, 257), (3, 4099)])
def test_in_place(device: str, name: str, variant: str | None, shape: tuple) -> None:
    fn, fn_, log = FUNCS[name]
    x = torch.randn(shape, device=device) * 3
    expected = reference(x, -1, log, 1.5)
    y = x.clone()
    assert fn_(y, -1, temperature=1.5, variant=variant) is y
    assert_close(y, expected, torch.float32)
    z = x.clone()
    assert fn(z, -1, temperature=1.5, variant=variant, out=z) is z
    assert_close(z, expected, torch.float32)


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_in_place_on_views(device: str, name: str, variant: str | None) -> None:
    _, fn_, log = FUNCS[name]
    base = torch.randn(40, 90, device=device)
    original = base.clone()
    view = base[5:30:2, 10:70]  # strided rows inside a bigger buffer
    fn_(view, 0, variant=variant)  # normalise down the columns: col_stride != 1
    expected = original.clone()
    expected[5:30:2, 10:70] = reference(original[5:30:2, 10:70], 0, log).float()
    assert_close(base, expected, torch.float32)
    permuted = torch.randn(3, 4, 5, 6, device=device).permute(0, 2, 1, 3)
    expected = reference(permuted, 3, log)
    fn_(permuted, 3, variant=variant)
    assert_close(permuted, expected, torch.float32)


def test_in_place_errors(device: str) -> None:
    with pytest.raises(TypeError, match="floating-point"):
        ns.softmax_(torch.arange(6, device=device))
    with pytest.raises(RuntimeError, match="do not support autograd"):
        ns.log_softmax_(torch.randn(3, 3, device=device, requires_grad=True))
    with pytest.raises(RuntimeError, match="overlapping elements"):
        ns.softmax_(torch.randn(1, 5, device=device).expand(3, 5))


@pytest.mark.parametrize("module,log", [(ns.Softmax, False), (ns.LogSoftmax, True)])
def test_modules(device: str, module: type, log: bool) -> None:
    m = module(dim=1, temperature=2.0)
    x = torch.randn(4, 9, 5, device=device)
    assert_close(m(x), reference(x, 1, log, 2.0), torch.float32)
    assert "dim=1" in repr(m)
    assert_close(module(0)(x), reference(x, 0, log), torch.float32)


@pytest.mark.parametrize("module,log", [(ns.Softmax, False), (ns.LogSoftmax, True)])
def test_modules_without_a_dim_pick_torchs(device: str, module: type, log: bool) -> None:
    """``dim=None`` (a ``torch.nn.Softmax()``'s dim, copied in a module swap) normalises over
    the dim that torch's module picks for each rank, and warns as it does."""
    torch_module = torch.nn.LogSoftmax if log else torch.nn.Softmax
    for shape in [(), (7,), (3, 5), (3, 4, 5), (2, 3, 4, 5)]:
        x = torch.randn(shape, device=device)
        with pytest.warns(UserWarning, match="dim=None"):
            y = module(dim=None)(x)
        with pytest.warns(UserWarning):  # torch's own deprecation warning
            want = torch_module(dim=None)(x.detach().cpu().double())
        assert y.shape == x.shape
        assert_close(y, want, torch.float32)


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("fast_dtype", [torch.float16, torch.bfloat16])
@pytest.mark.filterwarnings("ignore::UserWarning")  # autocast's "dtype not supported" notes
def test_autocast_output_dtype_as_torch(device: str, name: str,
                                        fast_dtype: torch.dtype) -> None:
    """Under ``torch.autocast`` each call returns the dtype torch's own function returns
    there (CUDA: float32 from float16/bfloat16/float32 inputs; CPU: the input's), with the
    values of that dtype, and the gradient in the input's dtype; a ``dtype=`` given is kept.
    A signature kept outside autocast does not leak in, nor one kept inside out."""
    _, _, log = FUNCS[name]
    fn = ns.log_softmax if log else ns.softmax
    torch_fn = torch.log_softmax if log else torch.softmax
    x = torch.randn(7, 301, device=device).to(fast_dtype).requires_grad_()
    assert fn(x.detach(), -1).dtype == fast_dtype  # kept outside autocast
    with autocast_or_skip(device, fast_dtype):
        expected_dtype = torch_fn(x.detach(), -1).dtype
        for _ in range(2):
            y = fn(x.detach(), -1)
            assert y.dtype == expected_dtype
            assert_close(y, reference(x, -1, log, dtype=expected_dtype), expected_dtype)
        assert fn(x.detach(), -1, dtype=torch.float16).dtype == torch.float16
        y = fn(x, -1)
    assert fn(x.detach(), -1).dtype == fast_dtype
    assert y.dtype == expected_dtype
    dy = torch.randn(7, 301, device=device)
    (dx,) = torch.autograd.grad(y, x, dy.to(y.dtype))
    assert dx.dtype == fast_dtype
    assert_close(dx, reference_grad(torch_fn, x.float(), dy.to(y.dtype), -1), fast_dtype,
                 scale=3)
