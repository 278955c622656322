"""The C kernel library of the CPU target: its snippets, compiled once per ISA profile into
the kernel library's core and parts (library.py: `common_source`, `api_text`,
`snippet_texts`), or put in front of the generated entry functions (`source_for`;
`IRC_CPU_KERNEL_LIBRARY=0`, and the helpers generated loops use inline).

Each snippet is C99 with GNU vector extensions (gcc and clang); a translation unit contains
only the snippets its functions use (`source_for`), so small executables compile quickly.
Kernels take sizes as arguments; the generated code passes literal constants. The kernel
text lives in C files where it has been moved (package data, `kernels/`: common/ for every
ISA, x86_64_avx512/, x86_64_avx2/ and generic/ for what differs, read with
importlib.resources; `per_isa` puts each ISA's file under its preprocessor condition), the
rest still in this module's strings. Which ISA's code the compiler keeps, and the register
tiles, are the ISA profile's (`isa.py`: `-march`, `IRC_PORTABLE`, `IRC_<FAMILY>_MR/NR`), chosen
when the library is built, so a lowered executable runs with any profile.

The hot float kernels follow PERF_NOTES.md: NHWC with channels innermost, weights packed
at compile time as ``[G][OCg/NB][KH][KW][Cg][NB]`` (NB = 16 or 32 output channels), an MR
pixel x NR channel accumulator tile of the ISA's native vectors (`irc_vf`, IRC_VL lanes:
AVX-512 8 x 32 in zmm, AVX2 6 x 16 in ymm, generic 4 x 8) with the bias, activation and
residual epilogue applied there (masked loads/stores for a partial channel block), a
packed block wider than the tile walked in tile-wide slices, and the op's pixel chunks (and
output-channel block ranges for small images) split over the threads only when the op is
big enough (IRC_PARALLEL_CONV_WORK, IRC_PARALLEL_DW_WORK).
Depthwise convolutions run IRC_VL-channel vectors for any C >= IRC_VL (the last block
overlaps its neighbour), borders included.

Integer kernels (snippets "quant", "conv_int", "pool_int") run the `lower-quantized` form
with the reference's exact integer semantics; `irc_mbqm` is TFLite's
MultiplyByQuantizedMultiplier as targets/reference/quant.py defines it. The fused int8
kernels ("qfused" and its instances `fused_conv_kernel`, `fused_depthwise_quads_kernel` and
`fused_depthwise_kernel`) run a whole conv -> rescale -> clamp chain: AVX512-VNNI vpdpbusd
when the compiler targets it (depthwise: on input columns gathered into quads of 4 kernel
rows), AVX-512 requantization; on AVX2 without VNNI exact int16 pair sums (vpmaddwd) and a
vectorised mode-0 requantization; portable C paths for all (the generic profile, tested).
The float kernels of the library (conv2d, depthwise, pool2d, pad, resize, batch_matmul, the
transformer kernels), the fused int8 kernels and irc_qpad split over the threads with the
library's own pool (`irc_parallel`, kernels/common/pool.c, in the "common" snippet: whoever
runs claims the next range of tasks, the caller never waits for a worker the OS has not
scheduled), not OpenMP, on the library's thread count, and so do the loop nests generated
inline that a lowering marks parallel (`outline`: tasks of the same pool); `IRC_PARFOR`
(OpenMP) is left to a marked loop sharing its block with other statements; the int32 convs
of conv_int.c, IRC_QDW, the dynamic int8 GEMM (qgemm_dynamic.c) and the quantized resizes
(quant_kernels.py) use the pool too.

Float semantics follow the reference kernels: NaN propagates through max/min/relu/clip like
numpy's `maximum`/`minimum`, fused activations are TFLite's.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from importlib import resources

ACTIVATION_CODES = {"none": 0, "relu": 1, "relu6": 2, "relu_n1_to_1": 3, "tanh": 4}
"""`activation` property values -> the `IRC_ACT_*` codes of the C library."""


_SNIPPETS: dict[str, tuple[tuple[str, ...], str]] = {}
"""name -> (dependencies, C text)."""


def _snippet(name: str, text: str, deps: tuple[str, ...] = ()) -> None:
    _SNIPPETS[name] = (deps, text.strip("\n") + "\n")


KERNELS = "kernels"
"""The package directory of the kernel sources: common/ (every ISA), and one directory per
vector ISA (x86_64_avx512, x86_64_avx2, generic) with what differs (vector.h)."""

ISA_DIRECTORIES = (
    ("defined(__AVX512F__) && !defined(IRC_PORTABLE)", "x86_64_avx512"),
    ("defined(__AVX2__) && !defined(IRC_PORTABLE)", "x86_64_avx2"),
    ("1", "generic"),
)
"""(preprocessor condition, directory) of each ISA's sources, first match wins: the ISA
profile's `-march` decides which one the compiler keeps."""


@functools.cache
def kernel_file(path: str) -> str:
    """The text of `kernels/<path>` (package data, read with importlib.resources)."""
    assert __package__ is not None  # a module of the irc.targets.cpu package
    return resources.files(__package__).joinpath(KERNELS, path).read_text()


def per_isa(name: str) -> str:
    """`<isa>/<name>` of every ISA directory, each under its condition (#if / #elif); an ISA
    directory without the file takes generic's (it has nothing of its own there)."""
    assert __package__ is not None  # a module of the irc.targets.cpu package
    parts = []
    for i, (condition, directory) in enumerate(ISA_DIRECTORIES):
        keyword = "#if" if i == 0 else "#elif"
        if not resources.files(__package__).joinpath(KERNELS, directory, name).is_file():
            directory = "generic"
        parts += [f"{keyword} {condition}", kernel_file(f"{directory}/{name}").rstrip("\n")]
    return "\n".join([*parts, "#endif"]) + "\n"


GLUE_DEFINE = "#define IRC_GLUE 1\n"
"""Defined in code that calls the kernel library (`common_source(glue=True)`): prelude.h then
leaves the thread count to the library, as the pool (pool.c is left out)."""

KERNEL_DECLARATION = '#define IRC_KERNEL(R, N, P) R irc_##N P __asm__("irclib_" #N);\n'
"""IRC_KERNEL of kernels/common/api/*.h where the kernels are called from another library:
irc_<name> is the symbol irclib_<name>."""

KERNEL_EXPORT = (
    "#define IRC_KERNEL(R, N, P) extern R irclib_##N P; "
    'extern __typeof__(irc_##N) irclib_##N __attribute__((alias("irc_" #N)));\n'
)
"""IRC_KERNEL of kernels/common/api/*.h in the library that defines the kernels: irclib_<name>
is an alias of the static irc_<name> (the compiler rejects a declared type that differs from
the definition's)."""


def api_text(part: str, export: bool) -> str:
    """kernels/common/api/<part>.h, declaring (`KERNEL_DECLARATION`) or exporting
    (`KERNEL_EXPORT`) its entry points."""
    macro = KERNEL_EXPORT if export else KERNEL_DECLARATION
    return macro + kernel_file(f"common/api/{part}.h") + "#undef IRC_KERNEL\n"


def common_source(glue: bool = False) -> str:
    """The "common" snippet: prelude.h, pool.h and pool.c (the thread pool), types.h,
    vector.h and scalar.h. `glue`: in the form for code that calls the kernel library
    (`GLUE_DEFINE`: no pool or thread count of its own, the pool's entry points declared by
    kernels/common/api/pool.h)."""
    return "".join(
        (
            GLUE_DEFINE if glue else "",
            kernel_file("common/prelude.h"),
            kernel_file("common/pool.h"),
            "" if glue else kernel_file("common/pool.c"),
            kernel_file("common/types.h"),
            api_text("pool", export=False) if glue else "",
            per_isa("vector.h"),
            kernel_file("common/vector.h"),
            kernel_file("common/scalar.h"),
        )
    )


def _snippet_file(name: str, deps: tuple[str, ...] = ()) -> None:
    """The snippet `name` from kernels/common/<name>.c."""
    _snippet(name, kernel_file(f"common/{name}.c"), deps)


def define_snippet(name: str, text: str, deps: tuple[str, ...] = ()) -> None:
    """Add a snippet whose C text lives with its lowering in another module
    (`quant_kernels`); it must be defined before a translation unit names it."""
    if name in _SNIPPETS:
        raise ValueError(f"snippet '{name}' is already defined")
    _snippet(name, text, deps)


def source_for(names: Iterable[str]) -> str:
    """The C text of the snippets `names` and their dependencies, dependencies first."""
    return "\n".join(_SNIPPETS[name][1] for name in _closure(names))


def snippet_names() -> frozenset[str]:
    return frozenset(_SNIPPETS)


def _closure(names: Iterable[str]) -> list[str]:
    """`names` and their dependencies, dependencies first (the order of `source_for`)."""
    ordered: list[str] = []

    def visit(name: str) -> None:
        if name in ordered:
            return
        for dep in _SNIPPETS[name][0]:
            visit(dep)
        ordered.append(name)

    for name in sorted(set(names)):
        visit(name)
    return ordered


def snippet_texts(names: Iterable[str], leave_out: Iterable[str] = ()) -> list[str]:
    """The C texts of the snippets `names` and their dependencies, dependencies first, less
    those in `leave_out` (their dependencies still come)."""
    skip = set(leave_out)
    return [_SNIPPETS[name][1] for name in _closure(names) if name not in skip]


def snippet_closure(names: Iterable[str]) -> list[str]:
    """`names` and their dependencies, dependencies first."""
    return _closure(names)


# ---- Common -------------------------------------------------------------------------------------

_snippet("common", common_source())

# ---- Convolution as an implicit GEMM ------------------------------------------------------------

_snippet_file("pad_nhwc", ("common",))

_snippet_file("pack_filter")

_snippet_file("conv2d", ("common",))

_snippet_file("depthwise", ("common",))

# ---- Pooling ------------------------------------------------------------------------------------

_snippet_file("pool2d", ("common",))

# ---- Batched matrix multiply --------------------------------------------------------------------

_snippet_file("batch_matmul", ("common",))

# ---- Softmax ------------------------------------------------------------------------------------

_snippet_file("softmax", ("common",))

# ---- Resize -------------------------------------------------------------------------------------

_snippet_file("resize", ("common",))

# ---- Fixed-point requantization (quant.rescale) -------------------------------------------------

_snippet_file("quant", ("common",))

# ---- Integer kernels of the lower-quantized form ------------------------------------------------

_snippet_file("conv_int", ("quant",))

_snippet_file("pool_int", ("quant",))

# ---- Fused int8 convolution (VNNI) and depthwise ------------------------------------------------

_PASTED_INCLUDE = re.compile(
    r'^#include "((?:common|generic|x86_64_avx2|x86_64_avx512)/[A-Za-z0-9_]+\.h)"$', re.MULTILINE
)
"""An `#include` of another kernels/ file in a kernel source that `_pasted` replaces by it."""


def _pasted(text: str) -> str:
    """`text` with each `#include "<dir>/<file>.h"` line (a kernels/ file) replaced by that
    file's text: a translation unit is compiled from one string, with no include path."""
    return _PASTED_INCLUDE.sub(lambda m: kernel_file(m.group(1)), text)


_snippet("qfused", _pasted(kernel_file("common/qfused.c")), ("quant",))

_snippet_file("profile", ("common",))


_snippet(
    "qconv_tile",
    per_isa("qconv_tile.h") + kernel_file("common/qconv.c") + kernel_file("common/qdwv.c"),
    ("qfused",),
)


def fused_conv_kernel(mr: int, nv: int, mode: int) -> str:
    """The fused int8 conv kernel for an MR x 16*NV register tile (`mr`, `nv` in (8, 2),
    (8, 1), (1, 2)); `mode` 0 (double rounding, no left shift: the common case) gets an
    instance with the requantization branches removed. Its name is also its snippet's."""
    return f"irc_qconv_m{mr}n{nv}" + ("_m0" if mode == 0 else "")


def fused_depthwise_kernel(signed: bool, kernel_3x3: bool, mode: int) -> str:
    """The fused int8 depthwise kernel (int8 or uint8 input; 3x3 taps unrolled or any
    size); `mode` as `fused_conv_kernel`. Its name is also its snippet's."""
    size = "3x3" if kernel_3x3 else ""
    return f"irc_qdepthwise{size}_{'s8' if signed else 'u8'}" + ("_m0" if mode == 0 else "")


def fused_depthwise_quads_kernel(kernel_3x3: bool, mode: int) -> str:
    """The fused int8 depthwise kernel on column quads (vpdpbusd over 4 kernel rows; int8 or
    uint8 input: the lowering passes the XOR that makes it unsigned); `kernel_3x3` and
    `mode` as `fused_depthwise_kernel`. Its name is also its snippet's."""
    size = "3x3" if kernel_3x3 else ""
    return f"irc_qdepthwise_quads{size}" + ("_m0" if mode == 0 else "")


DEPTHWISE_QUADS_CHUNK = 64
"""Output pixels per chunk of the column-quad kernel (IRC_DWQ_CHUNK in its C text)."""


for _mr, _nv in ((8, 2), (8, 1), (1, 2)):
    for _mode in (0, 1):
        _name = fused_conv_kernel(_mr, _nv, _mode)
        _modec = 0 if _mode == 0 else -1
        _snippet(_name, f"IRC_QCONV({_name}, {_mr}, {_nv}, {_modec})", ("qfused", "qconv_tile"))
for _signed in (True, False):
    for _k3 in (True, False):
        for _mode in (0, 1):
            _name = fused_depthwise_kernel(_signed, _k3, _mode)
            _t = ("int8_t", "irc_vsb16") if _signed else ("uint8_t", "irc_vub16")
            _k = 3 if _k3 else 0
            _modec = 0 if _mode == 0 else -1
            _snippet(
                _name, f"IRC_QDW({_name}, {_t[0]}, {_t[1]}, {_k}, {_k}, {_modec})", ("qfused",)
            )

for _k3 in (True, False):
    for _mode in (0, 1):
        _name = fused_depthwise_quads_kernel(_k3, _mode)
        _k = 3 if _k3 else 0
        _modec = 0 if _mode == 0 else -1
        _snippet(_name, f"IRC_QDWV({_name}, {_k}, {_k}, {_modec})", ("qfused", "qconv_tile"))

_snippet("irc_qadd_s8", "IRC_QADD(irc_qadd_s8, int8_t, _mm512_cvtepi8_epi32)", ("qfused",))
_snippet("irc_qadd_u8", "IRC_QADD(irc_qadd_u8, uint8_t, _mm512_cvtepu8_epi32)", ("qfused",))
