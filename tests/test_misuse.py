"""Misuse: every wrong call raises the documented exception type with a message that names the
problem (and, for a missing or wrong Triton, what to install). ``out=`` errors live with the
``out=`` feature."""

from __future__ import annotations

import contextlib
import math
import operator
from pathlib import Path

import pytest
import torch
from _ref import assert_close, assert_softmax_close, reference, reference_grad, run_python

import npu_softmax
from npu_softmax import checks, eager, launcher


@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.int64, torch.uint8,
                                   torch.bool])
def test_non_float_input_needs_dtype(device: str, dtype: torch.dtype) -> None:
    """Integer and bool tensors are rejected, with the fix (dtype=) in the message ..."""
    x = torch.ones(3, 4, dtype=dtype, device=device)
    with pytest.raises(TypeError, match=rf"got {dtype}; pass dtype=torch.float32"):
        npu_softmax.softmax(x)


@pytest.mark.parametrize("dtype", [torch.int32, torch.bool])
def test_non_float_input_with_dtype_works(device: str, dtype: torch.dtype) -> None:
    """... and with dtype= they are converted first, as torch.softmax does."""
    x = torch.randint(-3, 4, (5, 7), device=device).to(dtype)
    y = npu_softmax.softmax(x, 1, dtype=torch.float32)
    assert_softmax_close(y, reference(x, 1, dtype=torch.float32))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_input(device: str, dtype: torch.dtype) -> None:
    """Complex tensors are rejected with or without dtype=; the message names the dtype."""
    try:
        x = torch.ones(3, 4, dtype=dtype, device=device)
    except (RuntimeError, TypeError):
        pytest.skip(f"no {dtype} tensors on {device}")  # some NPUs have no complex128
    with pytest.raises(TypeError, match=rf"got {dtype}"):
        npu_softmax.softmax(x)
    with pytest.raises(TypeError, match=rf"complex tensors are not supported, got {dtype}"):
        npu_softmax.softmax(x, dtype=torch.float32)


@pytest.mark.parametrize(("shape", "dim"), [((3, 4), 2), ((3, 4), -3), ((5,), 1), ((), 1),
                                            ((), -2), ((2, 3, 4), 100)])
def test_dim_out_of_range(device: str, shape: tuple[int, ...], dim: int) -> None:
    """IndexError like torch, with torch's wording and the valid range."""
    x = torch.randn(shape, device=device)
    with pytest.raises(IndexError) as ours:
        npu_softmax.softmax(x, dim)
    with pytest.raises(IndexError) as theirs:
        torch.softmax(x, dim)
    assert "Dimension out of range" in str(ours.value)
    assert str(ours.value) in str(theirs.value)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_ops_take_negative_dims(device: str, log: bool) -> None:
    """The custom ops, which scripted code calls directly, take a negative dim as torch's ops
    do, and refuse one out of range with torch's IndexError, their fake kernels too. (A
    negative dim reached the kernels' addressing unwrapped: they wrote out of bounds, and the
    interpreter's process aborted.)"""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from npu_softmax import ops

    fwd, fwd_t, bwd, into, inplace = (
        (ops.log_softmax, ops.log_softmax_t, ops.log_softmax_backward, ops.log_softmax_out,
         ops.log_softmax_) if log else
        (ops.softmax, ops.softmax_t, ops.softmax_backward, ops.softmax_out, ops.softmax_))
    torch_fn = torch.log_softmax if log else torch.softmax
    x = torch.randn(3, 4, 5, device=device)
    dy = torch.randn(3, 4, 5, device=device)
    t = torch.tensor(0.5, dtype=torch.float64)
    for dim in (-1, -3):
        expected = reference(x, dim, log, 0.5)
        out, y = torch.full_like(x, math.nan), x.clone()
        into(x, dim, 0.5, None, out)
        inplace(y, dim, 0.5, None)
        for got in (fwd(x, dim, None, 0.5), fwd_t(x, dim, None, t), out, y):
            assert_close(got, expected, torch.float32)
        dx = bwd(dy, fwd(x, dim, None, 0.5), dim, torch.float32, 0.5)
        assert_close(dx, reference_grad(torch_fn, x, dy, dim, 0.5), torch.float32)
    with FakeTensorMode() as mode:
        fake = mode.from_tensor(x)
        assert fwd(fake, -1).shape == x.shape
    for tensor, context in ((x, contextlib.nullcontext()), (fake, mode)):
        for call in (lambda a: fwd(a, -4), lambda a: fwd(a, 3),
                     lambda a: bwd(a, a, -4, torch.float32),
                     lambda a: into(a, -4, 1.0, None, torch.empty_like(a)),
                     lambda a: inplace(a.clone(), 3, 1.0, None)):
            with pytest.raises(IndexError, match="Dimension out of range"), context:
                call(tensor)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_ops_refuse_tensors_of_other_shapes(device: str, log: bool) -> None:
    """Called directly, the backward op refuses a ``grad`` of another shape than ``output``
    (torch's ``_softmax_backward_data`` refuses it too) and the out= op an ``out`` of another
    shape than ``x``, their fake kernels too. (The kernels read and wrote them as the other
    tensor's shape: out of bounds, a result of garbage, or a recursion past Python's limit.)"""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from npu_softmax import ops

    fwd, bwd, into = ((ops.log_softmax, ops.log_softmax_backward, ops.log_softmax_out) if log
                      else (ops.softmax, ops.softmax_backward, ops.softmax_out))
    x = torch.randn(3, 5, device=device)
    y = fwd(x, 1)
    with FakeTensorMode() as mode:
        fakes = (mode.from_tensor(x), mode.from_tensor(y))
    for (a, b), context in (((x, y), contextlib.nullcontext()), (fakes, mode)):
        with context:
            for small, large in ((a[:2], b), (a, b[:2])):
                with pytest.raises(RuntimeError, match="grad has shape"):
                    bwd(small, large, 1, torch.float32)
                with pytest.raises(ValueError, match="out has shape"):
                    into(small, 1, 1.0, None, torch.empty_like(large))


def test_numpy_integer_dim(device: str) -> None:
    """An integer that is not a Python int but has ``__index__`` (numpy's) is a dim, as torch
    takes it, on the first call and on a repeat."""
    np = pytest.importorskip("numpy")
    x = torch.randn(3, 4, device=device)
    for dim in (np.int64(0), np.int32(-1), np.int64(0)):
        assert_softmax_close(npu_softmax.softmax(x, dim), reference(x, int(dim)))


class _UnhashableIndex:
    """An integer through ``__index__`` alone, which cannot be hashed (as a 0-d numpy array)."""

    __hash__ = None

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


def test_unhashable_integer_dim(device: str) -> None:
    """A dim with ``__index__`` that cannot be hashed works as the int it stands for, forward,
    out=, in place and under autograd, first and repeated calls: the kernels' path raised
    ``TypeError: unhashable type`` after its launch, keeping the call's signature."""
    np = pytest.importorskip("numpy")
    x = torch.randn(3, 4, device=device)
    for dim in (np.array(1), _UnhashableIndex(0), np.array(1)):
        d = operator.index(dim)
        ref = reference(x, d)
        assert_softmax_close(npu_softmax.softmax(x, dim), ref)
        out = torch.full_like(x, math.nan)
        assert_softmax_close(npu_softmax.softmax(x, dim, out=out), ref)
        assert_softmax_close(npu_softmax.softmax_(x.clone(), dim), ref)
        a = x.clone().requires_grad_()
        npu_softmax.log_softmax(a, dim).sum().backward()
        assert_close(a.grad, reference_grad(torch.log_softmax, x, torch.ones_like(x), d),
                     torch.float32)


@pytest.mark.parametrize("dim", [1.0, "1", None, True, (1,), torch.tensor(1)])
def test_dim_not_an_int(device: str, dim: object) -> None:
    """dim must be a plain int (bool is not one here, unlike in Python's number tower)."""
    with pytest.raises(TypeError, match=rf"dim must be an int, got {type(dim).__name__}"):
        npu_softmax.softmax(torch.randn(3, 4, device=device), dim)


@pytest.mark.parametrize("dtype", [torch.int32, torch.bool, torch.complex64, torch.float8_e4m3fn,
                                   "float32", float])
def test_dtype_argument_not_a_supported_float(device: str, dtype: object) -> None:
    """dtype= must be one of the supported float dtypes; the message lists them."""
    with pytest.raises(TypeError, match=r"dtype=.* is not supported .*use one of float16"):
        npu_softmax.softmax(torch.randn(3, 4, device=device), dtype=dtype)


def test_float64_only_where_triton_has_it(device: str) -> None:
    """float64 is accepted where the target has fp64 arithmetic, refused by name elsewhere."""
    x = torch.randn(3, 4, device=device)
    # Beside an NPU, CPU tensors take torch's softmax, which has float64.
    if torch.float64 in checks.supported_dtypes(torch.device(device)):
        assert_softmax_close(npu_softmax.softmax(x, dtype=torch.float64),
                             reference(x, -1, dtype=torch.float64))
    else:
        with pytest.raises(TypeError, match="float64 is not supported for"):
            npu_softmax.softmax(x, dtype=torch.float64)


@pytest.mark.parametrize("x", [[1.0, 2.0], 3.0, None])
def test_not_a_tensor(x: object) -> None:
    with pytest.raises(TypeError, match=rf"expected a torch.Tensor, got {type(x).__name__}"):
        npu_softmax.softmax(x)


@pytest.mark.parametrize("variant", ["fast", "", "TILE", 1])
def test_bad_variant(device: str, variant: object) -> None:
    """A variant that is not one of the kernels: ValueError listing the valid ones."""
    with pytest.raises(ValueError, match=r"variant must be one of \('tile', 'online', "
                                         rf"'split', 'cols'\), got {variant!r}"):
        npu_softmax.softmax(torch.randn(3, 4, device=device), variant=variant)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("fn", [npu_softmax.softmax, npu_softmax.log_softmax])
def test_tile_refused_for_rows_past_the_tile(kernel_device: str, dtype: torch.dtype,
                                             fn: object) -> None:
    """A forced ``tile`` holds a row in one block: on rows longer than the target's tile it is
    a ValueError that names the other variants, not a failure inside Triton's compiler; the
    launcher's own choice serves the same rows (the H100 found this with 2 x 1048577)."""
    n_cols = launcher.backend().tile_elems(dtype.itemsize) + 1
    x = torch.randn(2, n_cols, device=kernel_device).to(dtype)
    with pytest.raises(ValueError, match=rf"variant='tile' .* rows of {n_cols} elements take "
                                         r"'online', 'split'"):
        fn(x, -1, variant="tile")
    assert_softmax_close(npu_softmax.softmax(x, -1), reference(x, -1))


def _sparse_coo(x: torch.Tensor) -> torch.Tensor:
    return x.to_sparse()


def _sparse_csr(x: torch.Tensor) -> torch.Tensor:
    return x.to_sparse_csr()


def _nested(x: torch.Tensor) -> torch.Tensor:
    return torch.nested.nested_tensor(list(x))


def _jagged(x: torch.Tensor) -> torch.Tensor:
    return torch.nested.nested_tensor(list(x), layout=torch.jagged)


def _quantized(x: torch.Tensor) -> torch.Tensor:
    return torch.quantize_per_tensor(x, 0.1, 0, torch.qint8)


NOT_DENSE = {
    _sparse_coo: r"the input has layout torch.sparse_coo; only dense \(strided\) tensors",
    _sparse_csr: r"the input has layout torch.sparse_csr; only dense \(strided\) tensors",
    _nested: r"the input is a nested tensor, which is not supported",
    _jagged: r"the input is a nested tensor, which is not supported",
    _quantized: r"the input is quantized \(torch.qint8\), which is not supported; call "
                r"\.dequantize\(\) first",
}


@pytest.mark.filterwarnings("ignore::UserWarning")  # nested tensors are a prototype feature
@pytest.mark.parametrize("make", list(NOT_DENSE), ids=lambda f: f.__name__.strip("_"))
def test_tensors_that_are_not_dense_are_refused(make: object) -> None:
    """Sparse, nested and quantized tensors have no strides the kernels could address: a
    TypeError that says what to do, from every entry point (torch.softmax itself fails on
    them deep inside its dispatcher). Built on the CPU: the check reads only metadata."""
    x = make(torch.randn(3, 5))
    message = NOT_DENSE[make].replace("the input", "(the input|out)")
    calls = [lambda: npu_softmax.softmax(x), lambda: npu_softmax.log_softmax(x, 0),
             lambda: npu_softmax.softmax_(x), lambda: npu_softmax.Softmax(-1)(x),
             lambda: npu_softmax.softmax(torch.randn(3, 5), out=x)]
    for call in calls:
        with pytest.raises(TypeError, match=message):
            call()


def test_sparse_input_never_takes_a_kept_launch(kernel_device: str) -> None:
    """A sparse COO tensor reports strides of 0, as an expanded dense tensor of its shape does:
    a call on one after the other's launch was kept is refused, not run on its indices."""
    expanded = torch.randn(1, 1, device=kernel_device).expand(3, 5)
    npu_softmax.softmax(expanded)
    assert eager.forward_signature(expanded, -1, None, None, None, False) in eager._calls
    try:
        sparse = torch.randn(3, 5, device=kernel_device).to_sparse()
    except (RuntimeError, NotImplementedError):
        pytest.skip(f"no sparse tensors on {kernel_device}")
    assert sparse.stride() == expanded.stride()
    with pytest.raises(TypeError, match="only dense"):
        npu_softmax.softmax(sparse)


def test_meta_tensors_get_shape_and_dtype() -> None:
    """A meta tensor has no data: as with torch.softmax, the result is a meta tensor of the
    right shape and dtype (shape inference, models built on the meta device), through the
    checks every call gets, out= and in place included, and its gradient too."""
    x = torch.randn(2, 3, 5, device="meta", requires_grad=True)
    for y, expected in ((npu_softmax.softmax(x, 1), torch.softmax(x, 1)),
                        (npu_softmax.log_softmax(x, dtype=torch.float64),
                         torch.log_softmax(x, -1, dtype=torch.float64)),
                        (npu_softmax.Softmax(0)(x), torch.softmax(x, 0))):
        assert (y.device, y.shape, y.dtype) == (expected.device, expected.shape, expected.dtype)
    (dx,) = torch.autograd.grad(npu_softmax.softmax(x, 1).sum(), x)
    assert (dx.device, dx.shape, dx.dtype) == (x.device, x.shape, x.dtype)
    z = x.detach().half()
    out = torch.empty_like(z)
    assert npu_softmax.softmax(z, out=out) is out and npu_softmax.softmax_(z) is z
    with pytest.raises(IndexError, match="Dimension out of range"):
        npu_softmax.softmax(x, 3)
    with pytest.raises(TypeError, match="pass dtype=torch.float32"):
        npu_softmax.softmax(torch.ones(3, dtype=torch.int64, device="meta"))
    with pytest.raises(RuntimeError, match="out is on cpu but the input is on meta"):
        npu_softmax.softmax(z, out=torch.empty(2, 3, 5, dtype=torch.half))


@pytest.mark.parametrize("log", [False, True])
def test_backward_of_tensors_on_two_devices_is_refused(log: bool) -> None:
    """A backward whose gradient and output are on different devices is refused, as torch's
    own, first call or repeat of a kept signature alike: the launch is planned and run on the
    gradient's device, so it would read and write the other device's memory (two GPUs; here
    the CPU and ``meta``, which need none, through the body of the backward op and of aten's
    routed backward: the dispatcher sends a call on a meta tensor to the fake kernel)."""
    grad = torch.randn(4, 8)
    output = torch.softmax(torch.randn(4, 8), 1)

    def backward(output: torch.Tensor) -> torch.Tensor:
        return npu_softmax.ops.backward(grad, output, 1, torch.float32, 1.0, log, None)

    for _ in range(2):  # a first call, then a repeat of the signature kept by the good call
        with pytest.raises(RuntimeError, match="grad is on cpu but the output is on meta"):
            backward(output.to("meta"))
        assert backward(output).device == grad.device


@pytest.mark.parametrize("log", [False, True])
def test_backward_of_tensors_of_two_shapes_is_refused(device: str, log: bool) -> None:
    """A backward whose gradient and output differ in shape (a direct call of the backward op,
    or of aten's routed backward, say) is refused, as torch's own: the kernels would read the
    tensor that is smaller past its end, or a gradient of only some of the output's rows. A
    first call and a repeat of a signature kept by a good call alike; the smaller tensors here
    are views of bigger ones of the same strides, whose launch would otherwise fit them."""
    torch_fn = torch.log_softmax if log else torch.softmax
    x, grad = torch.randn(4, 8, device=device), torch.randn(4, 8, device=device)
    output = torch_fn(x, 1)

    def backward(grad: torch.Tensor, output: torch.Tensor) -> torch.Tensor:
        return npu_softmax.ops.backward(grad, output, 1, torch.float32, 1.0, log, None)

    for _ in range(2):  # a first call, then a repeat of the signature kept by the good call
        with pytest.raises(RuntimeError, match=r"grad has shape \(4, 8\) but the output has "
                                               r"shape \(2, 8\)"):
            backward(grad, output[:2])
        with pytest.raises(RuntimeError, match=r"grad has shape \(2, 8\) but the output has "
                                               r"shape \(4, 8\)"):
            backward(grad[:2], output)
        assert_close(backward(grad, output), reference_grad(torch_fn, x, grad, 1), torch.float32)


def test_unserved_device_message_says_what_to_install() -> None:
    """A cuda tensor in a process whose Triton target is not cuda (say triton-ascend is the
    installed Triton) is told which Triton build serves it. Built from the message helper,
    since this machine may not be able to create such a tensor."""
    device = torch.device("cuda")
    if launcher.serves(device):
        pytest.skip("cuda tensors are served in this process")
    message = checks.device_message("softmax", device)
    assert "'cuda'" in message and "upstream triton for 'cuda'" in message
    assert "triton-ascend + torch_npu for 'npu'" in message


def test_meta_tensors_without_interpreter() -> None:
    """The same with Triton's real drivers (TRITON_INTERPRET=0), whatever the target."""
    done = run_python("""
        import torch, npu_softmax
        y = npu_softmax.softmax(torch.randn(3, 4, device="meta"), dtype=torch.bfloat16)
        print(y.device, tuple(y.shape), y.dtype)
    """, env={"TRITON_INTERPRET": "0"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["meta", "(3,", "4)", "torch.bfloat16"]


FAKE_TRITONS = {
    # triton missing: the import itself fails.
    "missing": ("triton.py", "raise ImportError('No module named triton')\n",
                "needs Triton, which is not importable"),
    # an empty package named triton (some other project's, a stub): not a Triton build.
    "foreign": ("triton/__init__.py", "", "is not a Triton build"),
    # a Triton too old for the kernels.
    "old": ("triton/__init__.py", "__version__ = '2.1.0'\ndef jit(fn=None, **kw):\n    return fn\n",
            "needs Triton >= 3.2, found triton 2.1.0"),
}


def test_import_beside_both_tritons_warns(tmp_path: Path) -> None:
    """Where upstream triton and triton-ascend are both installed (a plain ``pip install`` of
    this package beside triton-ascend does that), ``import npu_softmax`` warns, naming both and
    how to keep one. The missing one is stood in for by its install record alone."""
    from npu_softmax import _requirements

    installed = [found.split()[0] for found in _requirements.installed_tritons()]
    if len(installed) != 1:
        pytest.skip(f"needs exactly one Triton distribution installed, found {installed}")
    other = next(n for n in _requirements.TRITON_DISTRIBUTIONS if n not in installed)
    record = tmp_path / f"{other.replace('-', '_')}-3.2.0.dist-info"
    record.mkdir()
    (record / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {other}\nVersion: 3.2.0\n")
    done = run_python("import npu_softmax", path=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "RuntimeWarning: npu_softmax: " in done.stderr and f"{other} 3.2.0" in done.stderr
    assert "pip uninstall -y triton triton-ascend" in done.stderr
    assert "RuntimeWarning" not in run_python("import npu_softmax").stderr


@pytest.mark.parametrize("case", list(FAKE_TRITONS))
def test_import_without_usable_triton_says_what_to_install(tmp_path: Path, case: str) -> None:
    """``import npu_softmax`` with a missing, foreign or old ``triton`` first on sys.path fails
    with an ImportError that names the problem and the packages to install."""
    name, body, problem = FAKE_TRITONS[case]
    target = tmp_path / name
    target.parent.mkdir(exist_ok=True)
    target.write_text(body)
    done = run_python("import npu_softmax", path=tmp_path)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: npu_softmax needs Triton"), done.stderr
    assert problem in last
    assert "pip install 'triton>=3.6'" in last and "triton-ascend==3.2.0" in last


@pytest.mark.parametrize(("triton_version", "numpy_version", "interpret", "refused"), [
    ("3.6.0", "2.4.0", "1", True), ("3.2.0", "2.5.1", "true", True),
    ("3.7.0", "2.4.0", "1", False), ("3.6.0", "2.3.5", "1", False),
    ("3.6.0", "2.4.0", "0", False)])
def test_old_interpreter_with_numpy_2_4_says_what_to_install(
        triton_version: str, numpy_version: str, interpret: str, refused: bool) -> None:
    """Triton's interpreter before 3.7 fails on numpy 2.4+ in every kernel (an ``int()`` of a
    one-element array, triton-lang/triton#9171): under ``TRITON_INTERPRET`` such a pair is
    refused at ``import npu_softmax``, naming both fixes; anything else imports. This
    Triton and numpy report the versions given."""
    done = run_python(f"""
        import numpy, triton
        triton.__version__, numpy.__version__ = {triton_version!r}, {numpy_version!r}
        import npu_softmax
    """, env={"TRITON_INTERPRET": interpret})
    if not refused:
        assert done.returncode == 0, done.stderr
        return
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ImportError: Triton {triton_version}'s CPU interpreter"), done.stderr
    assert f"numpy {numpy_version}" in last and "pip install 'numpy<2.4'" in last
    assert "Triton >= 3.7" in last
