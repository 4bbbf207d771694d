"""Per-target rules that need no device."""

import pytest

from npu_softmax import _compat
from npu_softmax.backends import AscendBackend, CudaBackend, InterpreterBackend, for_target


@pytest.mark.parametrize("name,arch,hopper_or_later", [
    ("cuda", 90, True), ("cuda", "100", True), ("cuda", 80, False), ("cuda", "75", False),
    ("hip", "gfx942", False), ("hip", 90, False)])
def test_dependent_launch_only_on_cuda_from_hopper(name: str, arch: object,
                                                   hopper_or_later: bool) -> None:
    """The split variant's second kernel is a programmatic dependent launch on sm_90+ CUDA
    with a Triton that has it, nowhere else."""
    expected = hopper_or_later and _compat.HAS_DEPENDENT_LAUNCH
    assert for_target(name, arch).dependent_launch is expected
    assert CudaBackend(name, arch).dependent_launch is expected


def test_no_dependent_launch_off_cuda() -> None:
    assert AscendBackend("Ascend910B3").dependent_launch is False
    assert InterpreterBackend().dependent_launch is False
    assert for_target("cpu", "none").dependent_launch is False
