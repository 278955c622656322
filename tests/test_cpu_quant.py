"""The CPU target's fixed-point requantization (`csrc` snippet "quant") against the reference.

`quant.rescale` is defined once, by `irc.targets.reference.quant` (TFLite's
MultiplyByQuantizedMultiplier, docs/design.md §2); the C kernels that native int8 code calls must
agree with it bit for bit. The snippet is compiled here behind small exported wrappers and
run on random values of both signs, exact ties of the rounding divisions, the saturating
corner (INT32_MIN x INT32_MIN), left and right shifts, per-tensor and per-channel
parameters, both rounding modes and every input/output storage type it is instantiated for.
The 8-lane forms (`irc_mbqm_q8`, `irc_mbqm1_q8`) must equal the scalar one, and the rescale
loops codegen emits with them (vector lanes, scalar tails, chunks split across threads) the
reference; a widening cast folded into the binary op that uses it must not change results.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from cpu_support import needs_compiler
from xdsl.parser import Parser

from irc.context import make_context
from irc.dialects import delegate
from irc.targets.cpu import csrc, toolchain
from irc.targets.cpu.lower import LowerCpuPass
from irc.targets.cpu.runtime import CpuRuntime
from irc.targets.reference.quant import (
    multiply_by_quantized_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)
from irc.targets.reference.target import ReferenceRuntime

# Every build goes to the test run's cache (conftest.py): probed and built once per run.
pytestmark = [needs_compiler, pytest.mark.private_cache]

_RNG = np.random.default_rng(20251122)

_TYPES = {"i8": (np.int8, "int8_t"), "u8": (np.uint8, "uint8_t"), "i32": (np.int32, "int32_t")}
_RESCALES = [("i32", "i8"), ("i32", "u8"), ("i32", "i32"), ("i8", "i8"), ("u8", "u8")]
_RESCALES += [("i8", "i32"), ("u8", "i32")]

_WRAPPERS = r"""
void t_srdhm(const int64_t *a, const int64_t *b, int64_t *o, long n) {
  for (long i = 0; i < n; ++i) o[i] = irc_srdhm(a[i], b[i]);
}
void t_rdbpot(const int64_t *x, const int32_t *e, int64_t *o, long n) {
  for (long i = 0; i < n; ++i) o[i] = irc_rdbpot(x[i], e[i]);
}
void t_mbqm(const int64_t *x, const int32_t *m, const int32_t *s, int64_t *o, long n,
            int single) {
  for (long i = 0; i < n; ++i) o[i] = irc_mbqm(x[i], m[i], s[i], single);
}
/* The 8-lane forms the generated rescale loops use, lanes prepared as codegen does. */
void t_mbqm_q8(const int64_t *x, const int32_t *m, const int32_t *s, int64_t *o, long n,
               int single) {
  for (long i = 0; i + 8 <= n; i += 8) {
    irc_q8 xv, mv, av, bv, r;
    for (int j = 0; j < 8; ++j) {
      const int64_t sj = s[i + j];
      xv[j] = x[i + j];
      mv[j] = m[i + j];
      av[j] = single ? (31 - sj > 0 ? (int64_t)1 << (30 - sj) : 0) : (sj > 0 ? sj : 0);
      bv[j] = single ? 31 - sj : (sj > 0 ? 0 : -sj);
    }
    r = single ? irc_mbqm1_q8(xv, mv, av, bv) : irc_mbqm_q8(xv, mv, av, bv);
    __builtin_memcpy(o + i, &r, sizeof r);
  }
}
"""


def _wrapper(tin: str, tout: str) -> str:
    cin, cout = _TYPES[tin][1], _TYPES[tout][1]
    return (
        f"IRC_RESCALE(irc_rescale_{tin}_{tout}, {cin}, {cout})\n"
        f"void t_rescale_{tin}_{tout}(const {cin} *x, {cout} *y, long outer, long C, long inner,"
        " const int32_t *m, const int32_t *s, int64_t zp_in, int64_t zp_out, int64_t lo,"
        " int64_t hi, int single) {\n"
        f"  irc_rescale_{tin}_{tout}(x, y, outer, C, inner, m, s, zp_in, zp_out, lo, hi, single);"
        "\n}\n"
    )


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    chain = toolchain.probe().toolchain
    assert chain is not None
    source = csrc.source_for({"quant"}) + _WRAPPERS
    source += "".join(_wrapper(tin, tout) for tin, tout in _RESCALES)
    return ctypes.CDLL(str(toolchain.build(source, chain).path))


def _ptr(array: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(array.ctypes.data)


def _int32(n: int) -> np.ndarray:
    return _RNG.integers(-(2**31), 2**31, size=n, dtype=np.int64)


def test_saturating_rounding_doubling_high_mul(lib: ctypes.CDLL) -> None:
    a, b = _int32(20000), _int32(20000)
    # Corners: the saturating case, products landing exactly on the rounding nudge.
    a[:6] = [-(2**31), -(2**31), 2**31 - 1, 1 << 30, -(1 << 30), 3]
    b[:6] = [-(2**31), 2**31 - 1, 2**31 - 1, 1, 1, -(1 << 29)]
    out = np.empty_like(a)
    lib.t_srdhm(_ptr(a), _ptr(b), _ptr(out), ctypes.c_long(a.size))
    np.testing.assert_array_equal(out, saturating_rounding_doubling_high_mul(a, b))


def test_rounding_divide_by_pot_ties(lib: ctypes.CDLL) -> None:
    exponent = _RNG.integers(0, 31, size=20000).astype(np.int32)
    x = _int32(20000)
    # Exact halves (ties round away from zero), both signs.
    half = np.int64(1) << np.maximum(exponent[:4000].astype(np.int64) - 1, 0)
    k = _RNG.integers(-1000, 1000, size=4000)
    x[:4000] = (2 * k + 1) * half
    out = np.empty_like(x)
    lib.t_rdbpot(_ptr(x), _ptr(exponent), _ptr(out), ctypes.c_long(x.size))
    np.testing.assert_array_equal(out, rounding_divide_by_pot(x, exponent.astype(np.int64)))


@pytest.mark.parametrize("rounding", ["double_round", "single_round"])
def test_multiply_by_quantized_multiplier(lib: ctypes.CDLL, rounding: str) -> None:
    n = 50000
    x = _RNG.integers(-(2**20), 2**20, size=n, dtype=np.int64)
    x[:1000] = _RNG.integers(-300, 300, size=1000)
    m = _RNG.integers(1 << 30, 2**31, size=n, dtype=np.int64).astype(np.int32)
    low = -12 if rounding == "single_round" else -31
    s = _RNG.integers(low, 8, size=n).astype(np.int32)
    # Ties: m = 2^30 (one half) and x * 2^s even multiples of the right shift's half.
    m[:2000] = 1 << 30
    s[:2000] = -_RNG.integers(0, 6, size=2000)
    out = np.empty_like(x)
    single = int(rounding == "single_round")
    lib.t_mbqm(_ptr(x), _ptr(m), _ptr(s), _ptr(out), ctypes.c_long(n), ctypes.c_int(single))
    expected = multiply_by_quantized_multiplier(x, m.astype(np.int64), s.astype(np.int64), rounding)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("rounding", ["double_round", "single_round"])
def test_vector_mbqm_matches_scalar(lib: ctypes.CDLL, rounding: str) -> None:
    """`irc_mbqm_q8` / `irc_mbqm1_q8` (the vectorised rescale loops) equal `irc_mbqm` bit for
    bit, saturating corners included: INT32_MIN x INT32_MIN, left shifts that saturate."""
    n = 80000
    single = int(rounding == "single_round")
    x = _RNG.integers(-(2**31), 2**31, size=n, dtype=np.int64)
    x[: n // 4] = _RNG.integers(-300, 300, size=n // 4)
    x[n // 4 : n // 4 + 64] = [-(2**31), 2**31 - 1, 0, -1] * 16
    m = _RNG.integers(-(2**31), 2**31, size=n, dtype=np.int64).astype(np.int32)
    m[n // 4 : n // 4 + 64 : 4] = -(2**31)
    m[-4000:] = 1 << 30
    s = _RNG.integers(-12 if single else -31, 8, size=n).astype(np.int32)
    args = (_ptr(m), _ptr(s))
    scalar, vector = np.empty_like(x), np.empty_like(x)
    lib.t_mbqm(_ptr(x), *args, _ptr(scalar), ctypes.c_long(n), ctypes.c_int(single))
    lib.t_mbqm_q8(_ptr(x), *args, _ptr(vector), ctypes.c_long(n), ctypes.c_int(single))
    np.testing.assert_array_equal(vector, scalar)


@pytest.mark.parametrize(("tin", "tout"), _RESCALES)
@pytest.mark.parametrize("per_channel", [False, True])
def test_rescale_kernel(lib: ctypes.CDLL, tin: str, tout: str, per_channel: bool) -> None:
    din, dout = _TYPES[tin][0], _TYPES[tout][0]
    info = np.iinfo(din)
    shape = (3, 5, 7)
    if din == np.int32:
        x = _RNG.integers(-(2**18), 2**18, size=shape).astype(din)
    else:
        x = _RNG.integers(info.min, int(info.max) + 1, size=shape).astype(din)
    channels = shape[1] if per_channel else 1
    m = _RNG.integers(1 << 30, 2**31, size=channels, dtype=np.int64).astype(np.int32)
    s = _RNG.integers(-12, 2, size=channels).astype(np.int32)
    zp_in = 0 if din == np.int32 else int(_RNG.integers(-5, 6)) + (128 if din == np.uint8 else 0)
    zp_out = 0 if dout == np.int32 else int(_RNG.integers(-5, 6)) + (128 if dout == np.uint8 else 0)
    lo, hi = int(np.iinfo(dout).min), int(np.iinfo(dout).max)
    for single in (0, 1):
        rounding = "single_round" if single else "double_round"
        y = np.empty(shape, dtype=dout)
        getattr(lib, f"t_rescale_{tin}_{tout}")(
            _ptr(x), _ptr(y), ctypes.c_long(shape[0]), ctypes.c_long(channels),
            ctypes.c_long(x.size // shape[0] // channels), _ptr(m), _ptr(s),
            ctypes.c_int64(zp_in), ctypes.c_int64(zp_out), ctypes.c_int64(lo),
            ctypes.c_int64(hi), ctypes.c_int(single),
        )  # fmt: skip
        param_shape = (1, channels, 1)
        scaled = multiply_by_quantized_multiplier(
            x.astype(np.int64) - zp_in,
            m.astype(np.int64).reshape(param_shape),
            s.astype(np.int64).reshape(param_shape),
            rounding,
        )
        expected = np.clip(scaled + zp_out, lo, hi).astype(dout)
        np.testing.assert_array_equal(y, expected)


# ---- Generated rescale loops (vector lanes, tails, chunks, threads) against the reference ----

_STORAGE = {"i32": ("i32", np.int32), "i8": ("i8", np.int8), "u8": ("ui8", np.uint8)}
_GENERATED = [
    ("i32", "i8", 0, -5),
    ("i8", "i8", 3, -7),
    ("i32", "u8", 0, 128),
    ("u8", "i32", 100, 0),
]
# Channels innermost with a tail (12), exactly vector lanes (8), only a tail (3); channels
# outer to a run of 300; per-tensor over more elements than one chunk (split across threads).
_SHAPES = [((3, 50, 12), 2), ((4, 9, 8), 2), ((5, 3), 1), ((2, 7, 300), 1), ((70001,), None)]


@pytest.mark.parametrize("rounding", ["double_round", "single_round"])
@pytest.mark.parametrize(("tin", "tout", "zp_in", "zp_out"), _GENERATED)
@pytest.mark.parametrize(("dims", "axis"), _SHAPES)
def test_generated_rescale_matches_reference(
    rounding: str,
    tin: str,
    tout: str,
    zp_in: int,
    zp_out: int,
    dims: tuple[int, ...],
    axis: int | None,
) -> None:
    channels = dims[axis] if axis is not None else 1
    m = [int(v) for v in _RNG.integers(1 << 30, 2**31, size=channels)]
    m[0] = 0 if channels > 1 else m[0]
    s = [int(v) for v in _RNG.integers(-12 if rounding == "single_round" else -20, 3, channels)]
    shape = "x".join(map(str, dims))
    (sin, np_in), (sout, _) = _STORAGE[tin], _STORAGE[tout]
    qout = f"!quant.uniform<{tout}:f32, 0.25:{zp_out}>"
    attrs = f"multiplier = {m} shift = {s}"
    attrs += f" axis = {axis}" if axis is not None else ""
    attrs += f' rounding = "{rounding}"'
    if tin == "i32":
        head = f"%q = quant.rescale %x {attrs} : tensor<{shape}xi32> to tensor<{shape}x{qout}>"
    else:
        qin = f"!quant.uniform<{tin}:f32, 0.5:{zp_in}>"
        head = (
            f"%xq = quant.scast %x : tensor<{shape}x{sin}> to tensor<{shape}x{qin}>\n"
            f"%q = quant.rescale %xq {attrs} : tensor<{shape}x{qin}> to tensor<{shape}x{qout}>"
        )
    text = f"""
    delegate.executable private @main_cpu_0 target("cpu") {{
      func.func @entry(%x: tensor<{shape}x{sin}>) -> tensor<{shape}x{sout}> {{
        {head}
        %r = quant.scast %q : tensor<{shape}x{qout}> to tensor<{shape}x{sout}>
        func.return %r : tensor<{shape}x{sout}>
      }}
    }}
    """
    module = Parser(make_context(), text, "t.mlir").parse_module()
    module.verify()
    executable = next(op for op in module.walk() if isinstance(op, delegate.ExecutableOp))
    info = np.iinfo(np_in)
    low, high = max(int(info.min), -(2**24)), min(int(info.max), 2**24)
    x = _RNG.integers(low, high + 1, size=dims).astype(np_in)
    (expected,) = ReferenceRuntime().load(executable).execute("entry", [x])
    LowerCpuPass().apply(make_context(), module)
    (actual,) = CpuRuntime().load(executable).execute("entry", [x])
    assert actual.dtype == expected.dtype
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("source", ["i8", "ui8", "i16"])
def test_widening_cast_folded_into_sub(source: str) -> None:
    """A widening `nn.cast` used once by an integer binary op is read through by that op (no
    loop of its own); a second use (here: returned) keeps it a real cast."""
    t_in, t_out = f"tensor<3x5x7x{source}>", "tensor<3x5x7xi32>"
    text = f"""
    delegate.executable private @main_cpu_0 target("cpu") {{
      func.func @entry(%x: {t_in}, %y: {t_in}, %z: tensor<7xi32>)
          -> ({t_out}, {t_out}, {t_out}) {{
        %a = nn.cast %x : {t_in} -> {t_out}
        %s = nn.sub %a, %z : {t_out}, tensor<7xi32> -> {t_out}
        %b = nn.cast %y : {t_in} -> {t_out}
        %t = nn.sub %z, %b : tensor<7xi32>, {t_out} -> {t_out}
        func.return %s, %t, %b : {t_out}, {t_out}, {t_out}
      }}
    }}
    """
    module = Parser(make_context(), text, "t.mlir").parse_module()
    module.verify()
    executable = next(op for op in module.walk() if isinstance(op, delegate.ExecutableOp))
    dtype = {"i8": np.int8, "ui8": np.uint8, "i16": np.int16}[source]
    info = np.iinfo(dtype)
    x, y = (_RNG.integers(info.min, int(info.max) + 1, size=(3, 5, 7)).astype(dtype) for _ in "xy")
    z = _RNG.integers(-(2**31), 2**31, size=7).astype(np.int32)
    expected = ReferenceRuntime().load(executable).execute("entry", [x, y, z])
    LowerCpuPass().apply(make_context(), module)
    source_text = next(op.source.data for op in module.walk() if hasattr(op, "source"))
    assert source_text.count("/* nn.cast") == 1
    actual = CpuRuntime().load(executable).execute("entry", [x, y, z])
    for a, e in zip(actual, expected, strict=True):
        assert a.dtype == e.dtype
        np.testing.assert_array_equal(a, e)
