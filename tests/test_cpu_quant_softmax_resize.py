"""Quantized softmax, log_softmax and resize on the CPU target (`quant_kernels.py`),
bit-exact with the reference target (TFLite's reference kernels).

All op cases go into ONE `cpu` executable (the C compiles once) and each result must equal
the reference target's: softmax and log_softmax over int8 and uint8 with many scales, zero
points, betas and axes (scales large enough for the input-radius cut-off, the longest rows
admitted, rows split across threads); resize nearest (int8, uint8, int16, every coordinate
and rounding mode, scales, NCHW) and bilinear int8 (fixed point) and uint8 (float32) in
every TFLite coordinate mode, up and down, NHWC and NCHW. The C ports of GetReciprocal and of
the logarithm are compared with the reference's over many sums, the uint8 bilinear kernel
over millions of float32 weights (no FMA contraction), and the shared small_cnn_int8 model
must run its softmax and resize inside a CPU dispatch. Refusals say why.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from cpu_support import (
    SHARED_MODELS,
    needs_compiler,
    one_op_per_argument,
    qtype,
    run_lowered_and_reference,
)
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block

from irc.dialects import delegate, nn
from irc.dialects.quant import UniformQuantizedType
from irc.targets.cpu import csrc, quant_kernels, toolchain
from irc.targets.cpu.target import CpuTarget
from irc.targets.reference.quant_nn import (
    get_reciprocal,
    log_x_for_x_greater_than_or_equal_to_1,
)

pytestmark = [needs_compiler, pytest.mark.private_cache]

rng = np.random.default_rng(20251125)

MODELS = SHARED_MODELS


SOFTMAX_RESULTS = {"int8": (1 / 256, -128), "uint8": (1 / 256, 0)}
"""The softmax result parameters TFLite fixes per storage type."""
LOG_SOFTMAX_RESULTS = {"int8": (16 / 256, 127), "uint8": (16 / 256, 255)}
"""The same for log_softmax."""


@dataclass
class Case:
    id: str
    op: type[nn.NNOp]
    dtype: str
    source: tuple[float, int]
    shape: tuple[int, ...]
    result: tuple[float, int] | None = None
    props: dict[str, object] = field(default_factory=dict)
    spread: int = 0
    """Inputs are drawn from [max - spread, max] (0: the whole storage range)."""

    def result_type(self) -> UniformQuantizedType:
        if self.result is None:
            fixed = {nn.SoftmaxOp: SOFTMAX_RESULTS, nn.LogSoftmaxOp: LOG_SOFTMAX_RESULTS}
            params = fixed[self.op][self.dtype] if self.op in fixed else self.source
        else:
            params = self.result
        return qtype(self.dtype, *params)


def softmax(
    case_id: str, dtype: str, source: tuple[float, int], shape: tuple[int, ...], **kw: object
) -> Case:
    props = {k: kw.pop(k) for k in ("axis", "beta") if k in kw}
    return Case(case_id, nn.SoftmaxOp, dtype, source, shape, props=props, **kw)  # type: ignore[arg-type]


def log_softmax(
    case_id: str, dtype: str, source: tuple[float, int], shape: tuple[int, ...], **kw: object
) -> Case:
    props = {k: kw.pop(k) for k in ("axis",) if k in kw}
    return Case(case_id, nn.LogSoftmaxOp, dtype, source, shape, props=props, **kw)  # type: ignore[arg-type]


def resize(case_id: str, dtype: str, shape: tuple[int, ...], **props: object) -> Case:
    result = props.pop("result", None)
    props.setdefault("layout", "NHWC")
    return Case(case_id, nn.ResizeOp, dtype, (0.05, 3), shape, result=result, props=props)  # type: ignore[arg-type]


CASES = [
    # small_cnn_int8's softmax, then scales, zero points, betas and axes.
    softmax("sm_model", "int8", (0.03492800518870354, 59), (1, 10)),
    softmax("sm_u8", "uint8", (0.1, 128), (3, 7, 13)),
    softmax("sm_axis0", "int8", (0.05, 0), (5, 6, 7), axis=0),
    softmax("sm_axis1", "uint8", (0.04, 130), (2, 9, 3, 4), axis=1),
    softmax("sm_axis_neg2", "int8", (0.08, -20), (3, 11, 5), axis=-2),
    softmax("sm_beta_half", "int8", (0.06, 10), (7, 19), beta=0.5),
    softmax("sm_beta_3", "uint8", (0.01, 0), (4, 25), beta=3.0),
    softmax("sm_tiny_scale", "int8", (0.0004, 0), (6, 40)),
    # A large scale: differences beyond the input radius are cut off (exp 0).
    softmax("sm_cutoff", "int8", (0.5, 0), (8, 64)),
    softmax("sm_cutoff_u8", "uint8", (0.9, 3), (8, 31), beta=1.7),
    softmax("sm_row_1", "int8", (0.1, 0), (9, 1)),
    # Near-equal inputs: the largest sums; the longest admitted row.
    softmax("sm_flat", "int8", (0.02, 0), (3, 300), spread=2),
    softmax("sm_longest", "int8", (0.01, 0), (2, quant_kernels.SOFTMAX_MAX_ROW), spread=3),
    # Rows split across threads.
    softmax("sm_parallel", "int8", (0.05, -3), (1100, 130)),
    # log_softmax: the same scales, zero points and axes; the row cut-off; the longest row.
    log_softmax("ls_i8", "int8", (0.05, -3), (4, 10)),
    log_softmax("ls_u8", "uint8", (0.1, 128), (3, 7, 13)),
    log_softmax("ls_axis0", "int8", (0.02, 5), (6, 5, 4), axis=0),
    log_softmax("ls_axis1_u8", "uint8", (0.2, 100), (2, 9, 3), axis=1),
    log_softmax("ls_cutoff", "int8", (0.5, 0), (8, 64)),
    log_softmax("ls_cutoff_u8", "uint8", (0.9, 3), (8, 31)),
    log_softmax("ls_tiny_scale", "int8", (0.0004, 0), (5, 40)),
    log_softmax("ls_row_1", "uint8", (0.1, 0), (9, 1)),
    log_softmax("ls_flat", "int8", (0.01, 0), (3, 300), spread=2),
    log_softmax("ls_longest", "int8", (0.03, 0), (2, quant_kernels.LOG_SOFTMAX_MAX_ROW), spread=3),
    log_softmax("ls_parallel", "uint8", (0.07, 120), (1000, 140)),
    # Nearest: a gather of stored values with the float path's tables.
    resize("nn_i8", "int8", (1, 5, 7, 3), size=[10, 14]),
    resize("nn_u8_down", "uint8", (2, 9, 8, 5), size=[4, 3], coordinate_mode="asymmetric"),
    resize(
        "nn_i8_tf_half",
        "int8",
        (1, 6, 6, 4),
        size=[11, 9],
        coordinate_mode="tf_half_pixel_for_nn",
        nearest_mode="floor",
    ),
    resize(
        "nn_u8_align",
        "uint8",
        (1, 4, 5, 2),
        size=[7, 9],
        coordinate_mode="align_corners",
        nearest_mode="round_prefer_ceil",
    ),
    resize("nn_i8_nchw", "int8", (2, 3, 5, 4), size=[8, 7], layout="NCHW", nearest_mode="ceil"),
    resize("nn_i16", "int16", (1, 4, 4, 3), size=[8, 8]),
    resize("nn_i8_scales", "int8", (1, 4, 6, 2), size=[6, 9], scales=[1.5, 1.5]),
    # Bilinear int8 (ResizeBilinearInteger) and uint8 (float32), every coordinate mode.
    resize("bl_i8_model", "int8", (1, 8, 8, 32), size=[16, 16], mode="bilinear"),
    resize(
        "bl_i8_align",
        "int8",
        (2, 5, 7, 3),
        size=[9, 4],
        mode="bilinear",
        coordinate_mode="align_corners",
    ),
    resize(
        "bl_i8_asym",
        "int8",
        (1, 6, 5, 17),
        size=[13, 11],
        mode="bilinear",
        coordinate_mode="asymmetric",
    ),
    resize("bl_i8_down", "int8", (1, 13, 11, 6), size=[4, 5], mode="bilinear"),
    resize(
        "bl_i8_one",
        "int8",
        (1, 4, 4, 3),
        size=[1, 1],
        mode="bilinear",
        coordinate_mode="align_corners",
    ),
    resize("bl_i8_nchw", "int8", (2, 3, 5, 6), size=[11, 7], mode="bilinear", layout="NCHW"),
    resize("bl_u8", "uint8", (1, 8, 8, 16), size=[16, 16], mode="bilinear"),
    resize(
        "bl_u8_align",
        "uint8",
        (2, 5, 7, 3),
        size=[9, 4],
        mode="bilinear",
        coordinate_mode="align_corners",
    ),
    resize(
        "bl_u8_asym",
        "uint8",
        (1, 6, 5, 9),
        size=[17, 3],
        mode="bilinear",
        coordinate_mode="asymmetric",
    ),
    resize("bl_u8_down", "uint8", (1, 13, 11, 6), size=[5, 4], mode="bilinear"),
    resize("bl_u8_nchw", "uint8", (1, 4, 6, 5), size=[12, 13], mode="bilinear", layout="NCHW"),
    resize("bl_i8_parallel", "int8", (1, 64, 64, 32), size=[128, 128], mode="bilinear"),
    # Many float32 roundings: an FMA instead of a product and a sum changes some results.
    resize("bl_u8_many", "uint8", (2, 17, 19, 16), size=[41, 45], mode="bilinear"),
    resize(
        "bl_u8_many_asym",
        "uint8",
        (1, 23, 13, 24),
        size=[37, 29],
        mode="bilinear",
        coordinate_mode="asymmetric",
    ),
]


def feed(case: Case) -> np.ndarray:
    info = np.iinfo(case.dtype)
    low = int(info.min) if not case.spread else int(info.max) - case.spread
    return rng.integers(low, int(info.max) + 1, size=case.shape).astype(case.dtype)


def build_op(case: Case, source: object) -> nn.NNOp:
    return case.op.make(source, result_elements=case.result_type(), **case.props)


def executable() -> tuple[ModuleOp, delegate.ExecutableOp, list[np.ndarray]]:
    types = [TensorType(qtype(c.dtype, *c.source), list(c.shape)) for c in CASES]
    module, exe = one_op_per_argument(
        "test_cpu_quant_softmax_resize", types, lambda i, arg: build_op(CASES[i], arg)
    )
    return module, exe, [feed(c) for c in CASES]


@pytest.fixture(scope="module")
def results() -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], str]:
    actual, expected, source = run_lowered_and_reference(*executable())
    pairs = {c.id: (a, e) for c, a, e in zip(CASES, actual, expected, strict=True)}
    return pairs, source


@pytest.mark.parametrize("case_id", [c.id for c in CASES])
def test_bit_exact(
    results: tuple[dict[str, tuple[np.ndarray, np.ndarray]], str], case_id: str
) -> None:
    actual, expected = results[0][case_id]
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)


def test_cases_exercise_the_kernels(
    results: tuple[dict[str, tuple[np.ndarray, np.ndarray]], str],
) -> None:
    """The cases reach what they claim: cut-off entries, long-row sums, threads."""
    pairs, source = results
    cutoff, _ = pairs["sm_cutoff"]
    assert (cutoff == -128).sum() > cutoff.size // 4  # exp 0 beyond the input radius
    longest, _ = pairs["sm_longest"]
    assert longest.max() < -120  # ~1/8191 each
    assert source.count("irc_softmax_reciprocal(sum") == sum(c.op is nn.SoftmaxOp for c in CASES)
    assert source.count("irc_log_sum_q12(sum)") == sum(c.op is nn.LogSoftmaxOp for c in CASES)
    assert source.count("ys[k] = row_out[mx - xs[k]];") == 4  # rows longer than 256
    log_cutoff, _ = pairs["ls_cutoff"]
    assert (log_cutoff == -128).sum() > log_cutoff.size // 4
    for kernel in ("nearest_q", "bilinear_s8", "bilinear_u8"):
        assert f"irc_resize_{kernel}(" in source
    assert "irc_parallel(irc_fn_0_loop" in source  # a large loop nest, on the pool
    assert "expf" not in source.split("/* Generated")[0]


def test_every_case_supported() -> None:
    _, exe, _ = executable()
    for op in exe.walk():
        if isinstance(op, nn.NNOp):
            support = CpuTarget().supports(op)
            assert support, support.reason


# ---- Refusals ------------------------------------------------------------------------------------


def _support(case: Case) -> tuple[bool, str, str]:
    block = Block(arg_types=[TensorType(qtype(case.dtype, *case.source), list(case.shape))])
    op = build_op(case, block.args[0])
    block.add_op(op)
    answer = CpuTarget().supports(op)
    return bool(answer), answer.code, answer.reason


@pytest.mark.parametrize(
    ("case", "message"),
    [
        (
            softmax("long_row", "int8", (0.01, 0), (1, quant_kernels.SOFTMAX_MAX_ROW + 1)),
            "at most 8191",
        ),
        (
            softmax("bad_scale", "int8", (0.05, 0), (2, 5), result=(0.01, -128)),
            "scale 1/256 and zero point -128",
        ),
        (
            softmax("i16_in", "int16", (0.001, 0), (2, 5), result=(1 / 65536, -32768)),
            "int8 or uint8 inputs",
        ),
        (
            log_softmax(
                "ls_long_row", "int8", (0.01, 0), (1, quant_kernels.LOG_SOFTMAX_MAX_ROW + 1)
            ),
            "at most 4095",
        ),
        (
            log_softmax("ls_bad_scale", "int8", (0.05, 0), (2, 5), result=(1 / 256, 127)),
            "scale 0.0625 and zero point 127",
        ),
        (
            resize(
                "out_of_bounds",
                "int8",
                (1, 2, 2, 1),
                size=[91, 91],
                mode="bilinear",
                coordinate_mode="asymmetric",
            ),
            "taps leave the input",
        ),
        (
            resize(
                "bl_pytorch",
                "int8",
                (1, 4, 4, 1),
                size=[8, 8],
                mode="bilinear",
                coordinate_mode="pytorch_half_pixel",
            ),
            "coordinate mode 'pytorch_half_pixel'",
        ),
        (
            resize(
                "bl_scales", "uint8", (1, 4, 4, 1), size=[6, 6], mode="bilinear", scales=[1.5, 1.5]
            ),
            "takes sizes, not scales",
        ),
        (
            resize("bl_i16", "int16", (1, 4, 4, 1), size=[8, 8], mode="bilinear"),
            "int8/uint8 storage",
        ),
    ],
    ids=lambda v: v.id if isinstance(v, Case) else "",
)
def test_refusals_are_clear(case: Case, message: str) -> None:
    ok, code, reason = _support(case)
    assert not ok
    assert code == "quantized"
    assert message in reason
    assert "reference target runs it" in reason


def test_out_of_bounds_taps_are_real() -> None:
    """The refused bilinear case does index past the input in TFLite's arithmetic."""
    from irc.targets.reference.quant_nn import _integer_taps

    low, _, _ = _integer_taps(91, 2, "asymmetric")
    assert int(low.max()) == 2  # row 2 of a 2-row input


# ---- The C helpers against the reference ---------------------------------------------------------

_WRAPPER = r"""
void t_bilinear_u8(const uint8_t *x, long N, long H, long W, long C, uint8_t *y, long OH,
                   long OW, const int32_t *hl, const int32_t *hh, const float *hw,
                   const int32_t *wl, const int32_t *wh, const float *ww) {
  irc_resize_bilinear_u8(x, N, H, W, C, y, OH, OW, hl, hh, hw, wl, wh, ww);
}
void t_log_sum(const int64_t *x, int64_t *o, long n) {
  for (long i = 0; i < n; ++i) o[i] = irc_log_sum_q12(x[i]);
}
void t_reciprocal(const int64_t *x, int64_t *recip, int32_t *bits, long n) {
  for (long i = 0; i < n; ++i) {
    int over;
    recip[i] = irc_softmax_reciprocal(x[i], &over);
    bits[i] = over;
  }
}
"""


@pytest.fixture(scope="module")
def lib(private_cache: Path) -> ctypes.CDLL:
    chain = toolchain.probe().toolchain
    assert chain is not None
    source = csrc.source_for({"softmax_q", "resize_q"}) + _WRAPPER
    return ctypes.CDLL(str(toolchain.build(source, chain).path))


def test_get_reciprocal_matches_reference(lib: ctypes.CDLL) -> None:
    """Every sum a row of up to 8191 summands can give: random ones over (0, 2^32), powers
    of two and their neighbours, and a dense run at the bottom of the range."""
    sums = [rng.integers(1, 1 << 32, size=200_000, dtype=np.int64)]
    sums.append(rng.integers(1 << 19, 1 << 24, size=100_000, dtype=np.int64))
    powers = np.int64(1) << np.arange(0, 32, dtype=np.int64)
    sums += [powers, powers - 1, powers + 1, np.arange(1, 70_000, dtype=np.int64)]
    sums.append(np.array([(1 << 32) - 1, 8191 << 19, 4095 << 19, 1 << 19], dtype=np.int64))
    x = np.concatenate(sums)
    x = x[(x > 0) & (x < (1 << 32))]
    recip = np.empty_like(x)
    bits = np.empty(x.size, dtype=np.int32)
    lib.t_reciprocal(
        ctypes.c_void_p(x.ctypes.data),
        ctypes.c_void_p(recip.ctypes.data),
        ctypes.c_void_p(bits.ctypes.data),
        ctypes.c_long(x.size),
    )
    expected_recip, expected_bits = get_reciprocal(x, 12)
    np.testing.assert_array_equal(recip, expected_recip)
    np.testing.assert_array_equal(bits, expected_bits)


def test_log_of_sum_matches_reference(lib: ctypes.CDLL) -> None:
    """log_softmax's Q5.26 logarithm of every sum a row of up to 4095 summands can give
    (at least 2^19: the row maximum's own summand), random, powers of two and a dense run."""
    sums = [rng.integers(1 << 19, 1 << 31, size=200_000, dtype=np.int64)]
    powers = np.int64(1) << np.arange(19, 31, dtype=np.int64)
    sums += [powers, powers - 1, powers + 1, np.arange(1 << 19, (1 << 19) + 70_000)]
    sums.append(np.array([(1 << 31) - 1, 4095 << 19], dtype=np.int64))
    x = np.concatenate(sums).astype(np.int64)
    x = x[(x >= 1 << 19) & (x < (1 << 31))]
    out = np.empty_like(x)
    lib.t_log_sum(
        ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(out.ctypes.data), ctypes.c_long(x.size)
    )
    np.testing.assert_array_equal(out, log_x_for_x_greater_than_or_equal_to_1(x, 12, 5))


def test_bilinear_u8_rounds_every_step_in_float32(lib: ctypes.CDLL) -> None:
    """Millions of random float32 weights through the uint8 kernel, against the reference's
    expression (quant_nn.resize_bilinear): an FMA instead of a product and a sum would
    change a few results in a million here (measured: 2-4), so contraction must stay off."""
    h = w = 2
    channels, oh, ow = 16, 2500, 100
    x = rng.integers(0, 256, size=(1, h, w, channels)).astype(np.uint8)
    hl, hh = np.zeros(oh, dtype=np.int32), np.ones(oh, dtype=np.int32)
    wl, wh = np.zeros(ow, dtype=np.int32), np.ones(ow, dtype=np.int32)
    hw, ww = rng.random(oh).astype(np.float32), rng.random(ow).astype(np.float32)
    y = np.empty((1, oh, ow, channels), dtype=np.uint8)
    pointer = ctypes.c_void_p
    sizes = [ctypes.c_long(v) for v in (1, h, w, channels)]
    lib.t_bilinear_u8(
        pointer(x.ctypes.data),
        *sizes,
        pointer(y.ctypes.data),
        ctypes.c_long(oh),
        ctypes.c_long(ow),
        *(pointer(a.ctypes.data) for a in (hl, hh, hw, wl, wh, ww)),
    )
    one = np.float32(1)
    dy, dx = hw[:, None, None], ww[None, :, None]
    rows0, rows1 = x[:, hl].astype(np.float32), x[:, hh].astype(np.float32)
    total = (
        rows0[:, :, wl] * (one - dy) * (one - dx)
        + rows1[:, :, wl] * dy * (one - dx)
        + rows0[:, :, wh] * (one - dy) * dx
        + rows1[:, :, wh] * dy * dx
        + np.float32(0.5)
    )
    np.testing.assert_array_equal(y, np.trunc(total).astype(np.int64).astype(np.uint8))


# ---- End to end ----------------------------------------------------------------------------------


@pytest.mark.skipif(
    not (MODELS / "small_cnn_int8" / "small_cnn_int8.tflite").exists(),
    reason="shared model small_cnn_int8 is missing",
)
def test_small_cnn_int8_softmax_and_resize_run_on_cpu() -> None:
    """The model's softmax and bilinear resize run in a CPU dispatch, bit-exact."""

    import irc

    folder = MODELS / "small_cnn_int8"
    model = irc.compile(folder / "small_cnn_int8.tflite", targets=["cpu"])
    reference = irc.compile(folder / "small_cnn_int8.tflite", targets=["reference"])
    (main,) = [
        f for f in model.module.walk() if isinstance(f, FuncOp) and f.sym_name.data == "main"
    ]
    host = {op.name for op in main.body.block.ops}
    assert "nn.softmax" not in host
    assert "nn.resize" not in host
    source = "".join(op.source.data for op in model.module.walk() if hasattr(op, "source"))
    assert "irc_softmax_reciprocal(sum" in source
    assert "irc_resize_bilinear_s8(" in source
    for k in range(2):
        inputs = dict(np.load(folder / f"inputs_{k}.npz"))
        got, want = model.run(inputs), reference.run(inputs)
        for key in want:
            np.testing.assert_array_equal(got[key], want[key])
