"""Describe a softmax over one dim of a strided tensor as the kernels' strided row matrix."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class RowLayout:
    """``n_rows`` rows of ``n_cols`` elements; row ``r`` of a tensor starts at
    ``(r // n_inner) * strides[0] + (r % n_inner) * strides[1]`` and its elements are
    ``strides[2]`` apart. ``x_strides`` address the input, ``y_strides`` the output."""

    n_rows: int
    n_cols: int
    n_inner: int
    x_strides: tuple[int, int, int]
    y_strides: tuple[int, int, int]

    def row_align(self, itemsize: int) -> int:
        """The most elements, a power of two up to a 16-byte vector of ``itemsize``-byte
        elements, that divide the row length and the row strides of both tensors, where row
        elements are contiguous; else 1. Every row is then whole runs of that many elements, a
        whole number of them from its tensor's start.

        Triton proves rows aligned by itself only where those numbers divide by 16 (the
        integers it specialises on); the kernels' ``ALIGN`` tells it the rest: whole vectors in
        rows of 200 float32 or 1000 bfloat16 elements, say, and 8-byte runs in rows of 100
        bfloat16 or 50 float32 elements.
        """
        if self.strided_rows():
            return 1
        counts = (self.n_cols, *self.x_strides[:2], *self.y_strides[:2])
        align = max(1, 16 // itemsize)
        while align > 1 and any(c % align for c in counts):
            align //= 2
        return align

    def strided_rows(self) -> bool:
        """Whether the elements of a row are apart (a column stride other than 1) in either
        tensor, as in ``x[:, ::2]`` or a softmax over a dim that is not the last: no kernel reads
        such rows as vectors."""
        return self.x_strides[2] != 1 or self.y_strides[2] != 1

    def word_rows(self) -> bool:
        """Whether every input row is contiguous whole pairs of elements from its tensor's
        start (an even row length and even row strides): of 2-byte elements, 4-byte words,
        aligned wherever the tensor itself is 4-byte aligned."""
        return (self.x_strides[2] == 1 and self.n_cols % 2 == 0
                and all(s % 2 == 0 for s in self.x_strides[:2]))

    def vector_rows(self, itemsize: int) -> bool:
        """Whether every row of both tensors is 16-byte aligned whole vectors (``row_align``)."""
        vec = 16 // itemsize
        return vec > 1 and self.row_align(itemsize) == vec

    def columns(self) -> RowLayout:
        """The same rows with their one group as the inner one: a layout whose rows fold into
        a single group (``n_inner`` 1, e.g. the rows of a transposed matrix) is restated with
        ``n_inner`` = ``n_rows`` and the group's strides as inner strides (outer strides 0).
        The column kernels (``kernels_cols``) take a row's neighbours from the inner group."""
        if self.n_inner > 1 or self.n_rows <= 1:
            return self
        (xo, _, xc), (yo, _, yc) = self.x_strides, self.y_strides
        return RowLayout(self.n_rows, self.n_cols, self.n_rows, (0, xo, xc), (0, yo, yc))

    def interleaved(self, output: bool = False) -> bool:
        """Whether the rows of the input (of the output with ``output``) are interleaved: their
        elements apart, and neighbouring rows next to each other (an inner stride of 1 in
        ``columns()``), as for a softmax over any dim but the last of a contiguous tensor."""
        cols = self.columns()
        _, inner, col = cols.y_strides if output else cols.x_strides
        return cols.n_inner > 1 and inner == 1 and col != 1 and self.n_cols > 1

    def max_offset(self) -> int:
        """The largest element offset either tensor reaches (to choose 32- or 64-bit indexing)."""
        n_outer = self.n_rows // max(1, self.n_inner)
        return max(
            (n_outer - 1) * s[0] + (self.n_inner - 1) * s[1] + (self.n_cols - 1) * s[2]
            for s in (self.x_strides, self.y_strides)
        )


def row_layout(shape: Sequence[int], dim: int, x_strides: Sequence[int],
               y_strides: Sequence[int]) -> RowLayout | None:
    """The row matrix of a softmax over ``dim``, or None when the other dims of the two tensors
    cannot be folded into two (outer, inner) strides; the caller then copies the input.

    Dims of size 1 are dropped; neighbouring dims merge when both tensors have them nested
    (``stride[i] == size[i + 1] * stride[i + 1]``), so any contiguous tensor folds.
    """
    groups: list[list[int]] = []  # [size, x_stride, y_stride], outermost first
    for d, size in enumerate(shape):
        if d == dim or size == 1:
            continue
        pairs = ((1, x_strides), (2, y_strides))
        if groups and all(groups[-1][k] == size * s[d] for k, s in pairs):
            groups[-1] = [groups[-1][0] * size, x_strides[d], y_strides[d]]
        else:
            groups.append([size, x_strides[d], y_strides[d]])
    if len(groups) > 2:
        return None
    while len(groups) < 2:
        groups.append([1, 0, 0])
    (n_outer, xo, yo), (n_inner, xi, yi) = groups
    return RowLayout(
        n_rows=n_outer * n_inner,
        n_cols=shape[dim],
        n_inner=n_inner,
        x_strides=(xo, xi, x_strides[dim]),
        y_strides=(yo, yi, y_strides[dim]),
    )
