"""The CPU target's kernel library: the kernels compiled once per ISA profile, compiler and
flags, so a model's generated code is only the glue that calls them.

The library is a set of shared objects, each built through the CPU build cache
(`toolchain.build`: keyed by its source, the compiler, the ISA profile's flags and the
libraries it links; under a per-key lock; hash-checked right before it is loaded, a missing
or corrupted entry rebuilt), so every model, every region of a module and every process on
one cache shares one build of each:

* the **core** (`core_source`): the thread pool (kernels/common/pool.c) and the thread count,
  one of each per profile and process;
* one **part** per kernel family (`parts()`: float convolution, depthwise, the other float
  kernels, the transformer kernels, the dynamic int8 GEMM, the integer kernels, the fused
  int8 convolutions, depthwise convolutions and column-quad depthwise convolutions with all
  their instances, the fused int8 pad and add), linked against the core and calling its
  pool. A part is built the first time a model uses one of its kernels (the parts a model
  needs are built side by side, one compiler process each): a float CNN never pays for the
  int8 kernels, and the families compile in parallel.

Each part's entry points are listed in kernels/common/api/<part>.h as IRC_KERNEL(return type,
name, (parameters)) for the kernel irc_<name>, which the kernel sources define `static`; the
part exports each as the symbol `irclib_<name>` (an alias, which the compiler type-checks
against the listed parameters: `csrc.KERNEL_EXPORT`).

A model's translation unit (`glue_source`) is its entry functions, steps and outlined loop
tasks, the inline helpers they use (vector.h, scalar.h, the quantization helpers), small
kernels not in the library, and the declarations of the parts it calls, each under a
`PART_MARKER` comment that names the parts to build and link (`parts_of`). It has no pool of
its own (`csrc.GLUE_DEFINE`). `toolchain.build` of glue builds the core, then the parts, and
the glue, each linked against what it calls (`toolchain.Toolchain.link`: a
dependency recorded by file name, which is the library's soname, and found through
`$ORIGIN`, the same cache directory, so a cache directory moved between processes still
works); the runtime loads the core and the parts (the result's `needs`) before the glue.
Libraries are loaded locally (RTLD_LOCAL) and a dependency already loaded is
matched by soname, so each glue binds to the verified core and parts of its own profile:
two profiles in one process (tests build avx2 and avx512 side by side) are separate local
scopes whose identical symbols never meet, and each model runs on its own profile's pool.

`IRC_CPU_KERNEL_LIBRARY=0` (read when the code is generated) pastes the kernels into the
model's translation unit instead, as before the library: literal arguments then reach the
kernels' bodies (benchmarks/cpu_kernel_ab.py compares the two).
"""

from __future__ import annotations

import functools
import importlib
import os
import re
from collections.abc import Iterable

from irc.targets.cpu import csrc

ENV = "IRC_CPU_KERNEL_LIBRARY"
"""`0`: no kernel library; each model's translation unit holds the kernels it uses."""

CORE = "pool"
"""The core's api header (kernels/common/api/pool.h)."""

LIBRARY_ONLY = ("qconv_tile",)
"""Snippets that only the library's parts need (no entry point of their own)."""

GLUE_MARKER = "/* irc: generated code that calls the CPU kernel library (library.py). */\n"
"""The first line of a glue translation unit (`is_glue`)."""

PART_MARKER = "/* irc kernel library part: {} */"
"""The comment in front of a part's declarations in glue (`parts_of` reads them back)."""

_PART_LINE = re.compile(r"^/\* irc kernel library part: ([a-z0-9_]+) \*/$", re.MULTILINE)

_DEFINING_MODULES = (
    "irc.targets.cpu.quant_kernels",
    "irc.targets.cpu.dynamic_quant",
    "irc.targets.cpu.qmul",
    "irc.targets.cpu.lowerings.transformer",
)
"""Modules that define some of the library's snippets (`csrc.define_snippet`) on import."""


def enabled() -> bool:
    """Whether generated code calls the kernel library (`IRC_CPU_KERNEL_LIBRARY` not `0`)."""
    return os.environ.get(ENV, "1").strip() != "0"


def _fused_conv_instances() -> tuple[str, ...]:
    pairs = ((8, 2), (8, 1), (1, 2))
    return tuple(csrc.fused_conv_kernel(mr, nv, mode) for mr, nv in pairs for mode in (0, 1))


def _fused_depthwise_instances() -> tuple[str, ...]:
    flags = (True, False)
    return tuple(
        csrc.fused_depthwise_kernel(signed, k3, mode)
        for signed in flags
        for k3 in flags
        for mode in (0, 1)
    )


def _fused_quads_instances() -> tuple[str, ...]:
    return tuple(csrc.fused_depthwise_quads_kernel(k3, m) for k3 in (True, False) for m in (0, 1))


@functools.cache
def parts() -> dict[str, tuple[str, ...]]:
    """Each part (named as its kernels/common/api/<part>.h) -> the snippets whose kernels it
    exports (their dependencies are compiled in too). The fused int8 instances are those of
    csrc's generators."""
    for module in _DEFINING_MODULES:
        importlib.import_module(module)
    return {
        "conv": ("conv2d", "pack_filter", "pad_nhwc"),
        "depthwise": ("depthwise",),
        "float_misc": ("pool2d", "batch_matmul", "softmax", "resize"),
        "transformer": ("transformer",),
        "qgemm_dynamic": ("qgemm_dynamic",),
        "int": ("conv_int", "pool_int", "resize_q", "qmul"),
        "qfused": ("qfused", "irc_qadd_s8", "irc_qadd_u8"),
        "qconv": _fused_conv_instances(),
        "qdw": _fused_depthwise_instances(),
        "qdwv": _fused_quads_instances(),
    }


@functools.cache
def _part_of() -> dict[str, str]:
    return {snippet: part for part, members in parts().items() for snippet in members}


@functools.cache
def library_snippets() -> frozenset[str]:
    """The snippets compiled into the library only (never into glue)."""
    return frozenset((*_part_of(), *LIBRARY_ONLY))


def core_source() -> str:
    """The core's translation unit: the common headers with the pool, exporting api/pool.h."""
    return csrc.common_source() + csrc.api_text(CORE, export=True)


@functools.cache
def part_source(part: str) -> str:
    """The translation unit of `part`: the common headers calling the core's pool, the part's
    snippets and their dependencies, then api/<part>.h exporting its entry points."""
    members = parts()[part]
    texts = [csrc.common_source(glue=True), *csrc.snippet_texts(members, leave_out=("common",))]
    return "\n".join([*texts, csrc.api_text(part, export=True)])


def needed_parts(snippets: Iterable[str]) -> list[str]:
    """The parts whose kernels the snippets `snippets` (a model's) or their dependencies
    provide, in `parts()` order."""
    owners = {_part_of().get(name) for name in csrc.snippet_closure(snippets)}
    return [part for part in parts() if part in owners]


def glue_source(snippets: Iterable[str]) -> str:
    """What a model's translation unit holds in front of its functions when it uses the
    snippets `snippets`: the common headers in their glue form, the declarations of each part
    it calls (under `PART_MARKER`) and the snippets not in the library (inline helpers
    generated loops use, small kernels), dependencies first."""
    names = list(snippets)
    texts = [GLUE_MARKER + csrc.common_source(glue=True)]
    for part in needed_parts(names):
        texts.append(PART_MARKER.format(part) + "\n" + csrc.api_text(part, export=False))
    texts += csrc.snippet_texts(names, leave_out=("common", *library_snippets()))
    return "\n".join(texts)


def is_glue(source: str) -> bool:
    """Whether a translation unit is glue that needs the kernel library."""
    return GLUE_MARKER in source


def parts_of(source: str) -> list[str]:
    """The parts a glue translation unit calls (its `PART_MARKER` lines). Raises ValueError
    for a part this irc does not have (code from another version)."""
    found = _PART_LINE.findall(source)
    known = parts()
    for part in found:
        if part not in known:
            raise ValueError(f"the code calls a kernel library part '{part}' unknown here")
    return found


def dependencies(source: str) -> tuple[str, list[str]]:
    """The C of the kernel library that the glue `source` links: the core's, and each part's
    it calls (`parts_of`), in that order (`toolchain.build` builds them). Raises ValueError
    for a part this irc does not have."""
    return core_source(), [part_source(part) for part in parts_of(source)]
