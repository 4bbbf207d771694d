"""Every kernel variant on small shapes, against torch in float64.

Marked ``ascend_interp``: small enough for triton-ascend's interpreter (about 17x slower than
upstream's), which ``.ci/ascend`` runs with ``-m ascend_interp``.
"""

from __future__ import annotations

import pytest
import torch

from npu_softmax import softmax

pytestmark = pytest.mark.ascend_interp

TOL = {torch.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}


@pytest.mark.parametrize("variant", ["tile", "online", "split"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(3, 1), (7, 300), (2, 2500)])
def test_variant_matches_torch(kernel_device: str, variant: str, dtype: torch.dtype,
                               shape: tuple[int, int]) -> None:
    x = (torch.randn(shape, dtype=torch.float32) * 4).to(dtype).to(kernel_device)
    y = softmax(x, variant=variant)
    ref = torch.softmax(x.double(), -1)
    assert y.dtype == dtype and y.shape == x.shape
    torch.testing.assert_close(y.double(), ref, atol=TOL[dtype], rtol=TOL[dtype])


@pytest.mark.parametrize("variant", ["tile", "online", "split"])
def test_strided_view_and_inf_rows(kernel_device: str, variant: str) -> None:
    # dim 1 of a transposed 3-d view: rows neither contiguous nor equally spaced in memory.
    x = torch.randn(5, 9, 4, device=kernel_device).transpose(0, 2)
    x[0, :, 1] = float("-inf")  # a whole row of -inf: torch gives NaN
    x[1, 3, 2] = float("inf")
    y = softmax(x, dim=1, variant=variant)
    torch.testing.assert_close(y.double(), torch.softmax(x.double(), 1), equal_nan=True)
