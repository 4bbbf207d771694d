"""Triton's CPU interpreter without its repeated language patching, for the test suite only.

A launch under ``TRITON_INTERPRET=1`` patches ``triton.language`` (each builtin wrapped for numpy)
before it runs the grid, and then every call of a ``@triton.jit`` helper inside the kernel patches
it again, the same way (upstream Triton 3.2-3.9: ``InterpretedFunction.__call__``). The kernels call
helpers inside their row loops, so this repeat was about half the CPU time of an interpreted call
(cProfile, 2026-11-28: ``_patch_builtin`` 0.85 of 1.86 s for ten calls of 64x1000), and the suite is
mostly interpreted calls.

``skip_repeated_patching`` makes a patch that finds the modules already patched by the running
launch a no-op. Every operation still runs in Triton's interpreter as before; only the second and
later identical patches of one launch are skipped. Where an interpreter lacks the pieces this
relies on, nothing is changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def skip_repeated_patching() -> bool:
    """Install the skip in ``triton.runtime.interpreter``; False where that interpreter differs."""
    import triton.language as tl
    from triton.runtime import interpreter

    patch_lang = getattr(interpreter, "_patch_lang", None)
    executor = getattr(interpreter, "GridExecutor", None)
    if patch_lang is None or executor is None or getattr(patch_lang, "skips_repeats", False):
        return False
    # Launches in progress, and the modules (by id) that the outermost one has patched.
    running = {"depth": 0, "patched": set()}
    # 3.9's patch returns a scope that the launch restores; 3.2's returns nothing.
    no_op_scope = getattr(interpreter, "_LangPatchScope", lambda: None)
    launch = executor.__call__

    def patch_once(fn: Any) -> Any:
        langs = {id(v) for v in fn.__globals__.values() if v is tl or v is tl.core}
        if running["depth"] and langs <= running["patched"]:
            return no_op_scope()
        scope = patch_lang(fn)
        if running["depth"]:
            running["patched"] |= langs
        return scope

    def run_grid(self: Any, *args: Any, **kwargs: Any) -> Any:
        running["depth"] += 1
        try:
            return launch(self, *args, **kwargs)
        finally:
            running["depth"] -= 1
            if not running["depth"]:
                running["patched"] = set()

    patch_once.skips_repeats = True
    patch_once.upstream = (patch_lang, launch)
    interpreter._patch_lang = patch_once
    executor.__call__ = run_grid
    return True


@contextmanager
def upstream_patching() -> Iterator[None]:
    """Inside the block, the interpreter patches as upstream's does (for the tests of the skip)."""
    from triton.runtime import interpreter

    patch_once, run_grid = interpreter._patch_lang, interpreter.GridExecutor.__call__
    interpreter._patch_lang, interpreter.GridExecutor.__call__ = patch_once.upstream
    try:
        yield
    finally:
        interpreter._patch_lang, interpreter.GridExecutor.__call__ = patch_once, run_grid
