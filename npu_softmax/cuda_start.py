"""Direct starts of compiled Triton kernels on CUDA, through a small C extension.

Triton's C launch parses a tuple of twenty-odd arguments on every call, and the Python that
builds that tuple costs as much again: on the H100's host a kept launch's start took 7.9-8.2
µs that way, and 4.9-5.5 µs through this module's ``cuda_start.c`` (lab script, 4x128 float32,
2026-11-26). Everything a kept launch fixes (function handle, grid, block, shared memory,
launch attributes, the scalar parameters) is packed once; a call passes only the stream and
the data pointers.

The extension is compiled on first use with the C compiler Triton builds its own launchers
with, against Python's headers and the ``cuda.h`` Triton ships, and kept in Triton's cache. Where
that is not possible, ``starter`` returns None and the caller keeps Triton's launch.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re
import shutil
import struct
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import triton

SOURCE = Path(__file__).with_name("cuda_start.c")
MODULE = "npu_softmax_cuda_start"
#: Triton's argument types the starter packs, as ``struct`` formats (native sizes).
FORMATS = {"i32": "i", "u32": "I", "i64": "q", "u64": "Q", "fp32": "f", "fp64": "d"}
#: Bytes of each PTX parameter type.
PTX_SIZES = {"8": 1, "16": 2, "32": 4, "64": 8}


def _cuda_include() -> Path:
    """The folder of the ``cuda.h`` that upstream Triton's NVIDIA backend ships."""
    return Path(triton.__file__).parent / "backends" / "nvidia" / "include"


def _python_include() -> str:
    # Debian's own scheme moves the headers' folder (as Triton's build notes too).
    scheme = sysconfig.get_default_scheme()
    return sysconfig.get_paths(scheme="posix_prefix" if scheme == "posix_local" else scheme)[
        "include"]


def build(folder: str) -> str:
    """Compile ``cuda_start.c`` into ``folder``; return the shared object's path.

    Raises ``OSError`` (no compiler, no ``cuda.h``) or ``subprocess.CalledProcessError``.
    """
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise OSError("no C compiler (set CC)")
    if not (_cuda_include() / "cuda.h").is_file():
        raise OSError(f"no cuda.h in {_cuda_include()}")
    so = os.path.join(folder, MODULE + ".so")
    subprocess.run([cc, str(SOURCE), "-O2", "-shared", "-fPIC", "-o", so,
                    f"-I{_python_include()}", f"-I{_cuda_include()}", "-ldl"],
                   check=True, capture_output=True)
    return so


@functools.cache
def module() -> ModuleType | None:
    """The loaded extension, built once per source, Python and Triton and kept in Triton's
    cache; None where it cannot be built or loaded here (the caller keeps Triton's launch)."""
    from triton.runtime.cache import get_cache_manager

    try:
        key = hashlib.sha256(b"\0".join([
            SOURCE.read_bytes(), sys.version.encode(), triton.__version__.encode(),
            str(_cuda_include()).encode()])).hexdigest()
        cache = get_cache_manager(key)
        path = cache.get_file(MODULE + ".so")
        if path is None:
            with tempfile.TemporaryDirectory() as folder:
                path = cache.put(Path(build(folder)).read_bytes(), MODULE + ".so", binary=True)
        spec = importlib.util.spec_from_file_location(MODULE, path)
        loaded = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loaded)
    except (OSError, ImportError, subprocess.CalledProcessError):
        return None
    return loaded


def ptx_parameters(ptx: str) -> list[int]:
    """Byte sizes of the parameters of the one kernel entry in ``ptx``."""
    entry = re.search(r"\.entry\s+[\w$]+\s*\((.*?)\)", ptx, re.S)
    if entry is None:
        raise ValueError("no kernel entry in the PTX")
    sizes = []
    for declaration in re.findall(r"\.param\s+([^,]*)", entry.group(1)):
        bits = re.match(r"\.[a-z]+?(8|16|32|64)\s", declaration)
        if bits is None:  # an array or aligned struct parameter: not one of Triton's scalars
            raise ValueError(f"parameter {declaration!r} is not a scalar")
        sizes.append(PTX_SIZES[bits.group(1)])
    return sizes


def pack(types: Sequence[str], values: Sequence[Any], n_pointers: int,
         sizes: Sequence[int]) -> tuple[bytes, tuple[int, ...], tuple[int, ...]] | None:
    """Pack a kernel's parameters as it takes them.

    ``types`` are Triton's types of its runtime arguments in order (``"*fp32"``, ``"i32"``:
    constexprs left out), ``values`` their values, of which the first ``n_pointers`` are the
    pointers a call passes (their values are ignored); ``sizes`` are the byte sizes of the
    compiled kernel's parameters (``ptx_parameters``): these arguments', then Triton's
    scratch pointers, which are passed as null. Returns the packed bytes, each parameter's
    offset, and the offsets of the call's pointers; None where a type is not one packed here
    or the sizes disagree.
    """
    if len(types) != len(values) or len(sizes) < len(types):
        return None
    packed, offsets = bytearray(), []
    for i, size in enumerate(sizes):
        if i < len(types):
            if types[i].startswith("*"):
                if i >= n_pointers:
                    return None
                fmt, value = "Q", 0
            elif types[i] in FORMATS and i >= n_pointers:
                fmt, value = FORMATS[types[i]], values[i]
            else:
                return None
        else:
            fmt, value = "Q", 0  # a scratch pointer, unused
        if struct.calcsize(fmt) != size:
            return None
        packed += bytes(-len(packed) % size)
        offsets.append(len(packed))
        try:
            packed += struct.pack(fmt, value)
        except struct.error:  # a value the type does not hold
            return None
    return bytes(packed), tuple(offsets), tuple(offsets[:n_pointers])


def without_scratch(run: Any) -> bool:
    """Whether Triton's launcher ``run`` (a ``CompiledKernel.run``) says its kernel takes no
    global or profile scratch memory and no GSan instrumentation, the arguments that neither
    the starter nor a direct call of Triton's C ``launch`` provide. A Triton that does not say
    (an attribute missing) gets no: the launch keeps Triton's own path."""
    return (getattr(run, "global_scratch_size", None) == 0
            and getattr(run, "profile_scratch_size", None) == 0
            and not getattr(run, "gsan_enabled", False))


def starter(compiled: Any, programs: int, n_pointers: int,
            arguments: Sequence[Any]) -> Callable[..., bool] | None:
    """``start(stream, *pointers) -> bool`` for the kernel ``compiled`` (an upstream Triton
    ``CompiledKernel`` that has run once) on ``programs`` programs, its parameters the
    ``n_pointers`` data pointers a call passes, then ``arguments`` (every parameter after them
    in order, constexpr values included). The start returns False, launching nothing, when a
    pointer is not 16-byte aligned or the thread has no CUDA context, and raises
    ``RuntimeError`` where the driver refuses the launch.

    None where the extension is not available, or the kernel takes what the starter does not
    pack: thread-block clusters, scratch memory, oversized shared memory, other argument types.
    """
    run, metadata = getattr(compiled, "run", None), getattr(compiled, "metadata", None)
    signature = getattr(getattr(compiled, "src", None), "signature", None)
    if (run is None or metadata is None or not isinstance(signature, dict)
            or not without_scratch(run)
            or not hasattr(run, "launch_pdl") or not hasattr(run, "launch_cooperative_grid")
            or getattr(metadata, "num_ctas", 1) != 1 or metadata.shared > 228 * 1024
            or len(signature) != n_pointers + len(arguments)):
        return None
    ext = module()
    if ext is None:
        return None
    kept = [(t, v) for t, v in zip(signature.values(), (*([0] * n_pointers), *arguments))
            if t != "constexpr"]
    try:
        sizes = ptx_parameters(compiled.asm["ptx"])
    except (KeyError, ValueError):
        return None
    packed = pack([t for t, _ in kept], [v for _, v in kept], n_pointers, sizes)
    if packed is None:
        return None
    try:
        return ext.make(compiled.function, programs, 32 * metadata.num_warps, metadata.shared,
                        bool(run.launch_pdl), bool(run.launch_cooperative_grid), *packed)
    except ValueError:  # more parameters than the starter holds
        return None
