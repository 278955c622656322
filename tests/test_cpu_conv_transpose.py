"""`nn.conv2d_transpose` on the CPU target against the reference target.

Three families, each ONE executable compiled once (`cpu_support`):
- float32, checked with rtol 1e-4 / atol 1e-5: hand-picked edges (strides 1/2/3, dilations,
  asymmetric pads, `output_padding` cells that only get the bias, groups, channel counts
  around the 4/8/16-lane vectors and the 64-channel block, activations, filters as
  constants and as arguments, NCHW) plus a seeded random sweep;
- the integer form `lower-quantized` produces (int8 / uint8 / int16 / int32 input, i8 or
  i16 constant filter, i32 bias and result), bit-exact;
- quantized int8 ops (per-tensor and per-channel, zero points), run by the CPU runtime after
  `lower-cpu` against the reference runtime on the same executable, bit-exact; and one
  model compiled with `--targets cpu` (strict partitioning: the op must run on the CPU).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pytest
from cpu_support import (
    Case,
    Results,
    build_executable,
    lower,
    needs_compiler,
    op_case,
    run_family,
)
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType
from xdsl.dialects.builtin import f32 as f32_type
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue

from irc.dialects import delegate, nn
from irc.dialects.quant import UniformQuantizedType
from irc.dtypes import element_type
from irc.targets.cpu.runtime import CpuRuntime
from irc.targets.cpu.target import CpuTarget
from irc.targets.reference.target import ReferenceRuntime

pytestmark = [needs_compiler, pytest.mark.private_cache]

RTOL, ATOL = 1e-4, 1e-5

_RNG = np.random.default_rng(20251125)


def ids(cases: Sequence[Case]) -> list[str]:
    return [c.id for c in cases]


def filter_shape(
    layout: str, c: int, oc: int, kernel: tuple[int, int], groups: int
) -> tuple[int, ...]:
    """OHWI (NHWC: O = C_out, I = C_in / groups) or IOHW (NCHW: O = C_out / groups)."""
    kh, kw = kernel
    return (oc, kh, kw, c // groups) if layout == "NHWC" else (c, oc // groups, kh, kw)


# ---- Float32 ------------------------------------------------------------------------------------


def fcase(
    case_id: str,
    x: tuple[int, ...],
    oc: int,
    kernel: tuple[int, int],
    *,
    bias: bool = True,
    const_filter: bool = True,
    groups: int = 1,
    layout: str = "NHWC",
    **props: object,
) -> Case:
    c = x[3] if layout == "NHWC" else x[1]
    w = filter_shape(layout, c, oc, kernel, groups)
    arrays = [
        _RNG.uniform(-1, 1, x).astype(np.float32),
        _RNG.uniform(-0.5, 0.5, w).astype(np.float32),
        _RNG.uniform(-1, 1, oc).astype(np.float32) if bias else None,
    ]
    constants = [1] if const_filter else []
    return op_case(
        case_id, nn.Conv2DTransposeOp, arrays, constants, groups=groups, layout=layout, **props
    )


FLOAT_CASES = [
    fcase("s1_k3", (1, 5, 6, 3), 4, (3, 3)),
    fcase("s2_k3_asym_pads", (1, 16, 16, 32), 8, (3, 3), strides=[2, 2], pads=[0, 0, 1, 1]),
    fcase("s3_k2", (2, 4, 5, 6), 5, (2, 2), strides=[3, 3]),
    fcase("s2_k4_pads", (1, 6, 7, 9), 17, (4, 4), strides=[2, 2], pads=[1, 1, 1, 1]),
    fcase("s2x3_k3x5", (1, 5, 4, 7), 3, (3, 5), strides=[2, 3], pads=[1, 2, 0, 1]),
    fcase("dilation2", (1, 6, 5, 4), 6, (3, 3), dilations=[2, 2], pads=[1, 0, 2, 1]),
    fcase("dil2_s2", (1, 5, 5, 3), 4, (3, 3), strides=[2, 2], dilations=[2, 2]),
    fcase("dil3_s2_mixed", (1, 4, 6, 5), 7, (2, 3), strides=[2, 2], dilations=[3, 1]),
    fcase("output_padding", (1, 4, 4, 3), 5, (3, 3), strides=[2, 2], output_padding=[1, 1]),
    fcase(
        "output_padding_beyond_taps",
        (1, 3, 3, 2),
        3,
        (1, 1),
        strides=[3, 3],
        output_padding=[2, 1],
        pads=[0, 1, 0, 0],
    ),
    fcase("groups2", (1, 5, 5, 8), 6, (3, 3), groups=2, strides=[2, 2], pads=[1, 1, 1, 1]),
    fcase("depthwise_like", (1, 4, 5, 6), 6, (3, 3), groups=6, strides=[2, 2]),
    fcase("oc16_relu", (1, 4, 4, 5), 16, (2, 2), strides=[2, 2], activation="relu"),
    fcase("oc33_relu6", (1, 3, 4, 4), 33, (3, 3), activation="relu6", pads=[1, 1, 1, 1]),
    fcase("oc70_block_tail", (1, 3, 3, 6), 70, (2, 2), strides=[2, 2]),
    fcase("oc128_blocks", (1, 2, 3, 3), 128, (3, 3), strides=[2, 1], pads=[1, 0, 0, 1]),
    fcase("tanh_nobias", (1, 4, 3, 3), 2, (3, 3), bias=False, activation="tanh"),
    fcase("relu_n1_to_1", (1, 3, 3, 4), 4, (2, 2), activation="relu_n1_to_1"),
    fcase("runtime_filter", (1, 4, 5, 6), 10, (3, 3), const_filter=False, strides=[2, 2]),
    fcase(
        "runtime_filter_groups",
        (2, 3, 3, 4),
        6,
        (2, 3),
        const_filter=False,
        groups=2,
        strides=[1, 2],
    ),
    fcase("cg_long", (1, 3, 3, 37), 9, (3, 3), strides=[2, 2], pads=[1, 1, 1, 1]),
    fcase("pad_crops_everything_but_one", (1, 2, 2, 2), 3, (3, 3), pads=[1, 1, 2, 2]),
    fcase("tiles_oc8_s1", (1, 3, 19, 5), 8, (3, 3), pads=[1, 1, 1, 1]),
    fcase("tiles_oc20_s2_relu", (1, 2, 17, 6), 20, (3, 3), strides=[2, 2], activation="relu"),
    fcase("tiles_oc40_dil2", (2, 2, 15, 5), 40, (2, 3), dilations=[1, 2], pads=[0, 2, 1, 0]),
    fcase("tiles_oc70_s3", (1, 2, 16, 7), 70, (2, 4), strides=[3, 3], pads=[1, 1, 0, 2]),
    fcase("tiles_oc130", (1, 1, 12, 4), 130, (1, 3), strides=[1, 2], output_padding=[0, 1]),
    fcase("tiles_groups", (1, 2, 21, 6), 9, (2, 3), groups=3, strides=[2, 2], pads=[0, 1, 1, 0]),
    fcase("tiles_runtime_filter", (1, 2, 18, 3), 17, (3, 3), const_filter=False),
    fcase("nchw", (1, 3, 4, 5), 4, (3, 3), layout="NCHW", strides=[2, 2], pads=[1, 0, 1, 1]),
    fcase("nchw_tiles", (1, 5, 2, 20), 12, (3, 3), layout="NCHW", strides=[2, 2]),
    fcase(
        "nchw_groups_runtime",
        (2, 4, 3, 3),
        6,
        (2, 2),
        layout="NCHW",
        groups=2,
        const_filter=False,
        strides=[2, 2],
        output_padding=[1, 0],
    ),
]


def _sweep(count: int, seed: int) -> list[Case]:
    """Random valid configurations: groups, kernel, stride, dilation, pads, output padding,
    odd channel counts around the vector and block sizes."""
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    while len(cases) < count:
        n = int(rng.integers(1, 3))
        h, w = (int(v) for v in rng.integers(1, 8, size=2))
        c = int(rng.choice([1, 2, 3, 5, 8, 12, 17]))
        divisors = [g for g in range(1, c + 1) if c % g == 0]
        groups = int(rng.choice(divisors))
        oc = groups * int(rng.choice([1, 3, 4, 7, 8, 9, 16, 20]))
        kernel = (int(rng.integers(1, 5)), int(rng.integers(1, 5)))
        strides = [int(v) for v in rng.integers(1, 4, size=2)]
        dilations = [int(v) for v in rng.integers(1, 3, size=2)]
        pads = [int(v) for v in rng.integers(0, 3, size=4)]
        output_padding = [int(rng.integers(0, s)) for s in strides]
        sizes = [
            (size - 1) * strides[i] - pads[i] - pads[i + 2] + dilations[i] * (kernel[i] - 1) + 1
            for i, size in enumerate((h, w))
        ]
        if min(sizes[i] + output_padding[i] for i in range(2)) <= 0:
            continue
        layout = str(rng.choice(["NHWC", "NHWC", "NCHW"]))
        x = (n, h, w, c) if layout == "NHWC" else (n, c, h, w)
        cases.append(
            fcase(
                f"sweep_{len(cases)}_{layout}",
                x,
                oc,
                kernel,
                bias=bool(rng.integers(0, 2)),
                const_filter=bool(rng.integers(0, 3)),
                groups=groups,
                layout=layout,
                strides=strides,
                dilations=dilations,
                pads=pads,
                output_padding=output_padding,
                activation=str(rng.choice(["none", "relu", "relu6"])),
            )
        )
    return cases


FLOAT_ALL = FLOAT_CASES + _sweep(30, 7)


@pytest.fixture(scope="module")
def float_results() -> Results:
    return run_family(FLOAT_ALL)


@pytest.mark.parametrize("case_id", ids(FLOAT_ALL))
def test_float(float_results: Results, case_id: str) -> None:
    (actual,), (expected,) = float_results[case_id]
    assert actual.dtype == np.float32
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL)


def test_float_cases_run_on_the_cpu_target() -> None:
    module, executable, _ = build_executable(FLOAT_ALL[:3])
    lower(module)
    (source,) = [op.source.data for op in executable.walk() if hasattr(op, "source")]
    assert source.count("nn.conv2d_transpose") >= 3
    assert "irc_tv" in source


# ---- The integer form -------------------------------------------------------------------------


def icase(
    case_id: str,
    x: tuple[int, ...],
    oc: int,
    kernel: tuple[int, int],
    *,
    x_dtype: str = "int32",
    w_dtype: str = "int8",
    bias: bool = True,
    groups: int = 1,
    **props: object,
) -> Case:
    w = filter_shape("NHWC", x[3], oc, kernel, groups)
    lo, hi = (-255, 256) if x_dtype in ("int32", "int16") else (None, None)
    info = np.iinfo(x_dtype)
    low = info.min if lo is None else lo
    high = int(info.max) + 1 if hi is None else hi
    winfo = np.iinfo(w_dtype)
    arrays = [
        _RNG.integers(low, high, size=x).astype(x_dtype),
        _RNG.integers(winfo.min, int(winfo.max) + 1, size=w).astype(w_dtype),
        _RNG.integers(-20000, 20000, size=oc).astype(np.int32) if bias else None,
    ]
    return op_case(
        case_id,
        nn.Conv2DTransposeOp,
        arrays,
        [1],
        groups=groups,
        layout="NHWC",
        result_elements=element_type("int32"),
        **props,
    )


INTEGER_CASES = [
    icase("i32_s2_asym", (1, 8, 8, 16), 8, (3, 3), strides=[2, 2], pads=[0, 0, 1, 1]),
    icase("i8_direct_s1", (1, 5, 6, 7), 5, (3, 3), x_dtype="int8", pads=[1, 1, 1, 1]),
    icase("u8_s3", (2, 3, 4, 4), 20, (2, 3), x_dtype="uint8", strides=[3, 2]),
    icase("i8_tiles_oc8", (1, 2, 20, 9), 8, (3, 3), x_dtype="int8", strides=[2, 2]),
    icase("i32_tiles_oc70_dil", (1, 2, 14, 5), 70, (3, 2), dilations=[2, 2], pads=[1, 0, 0, 1]),
    icase("u8_tiles_groups", (1, 2, 19, 4), 6, (2, 2), x_dtype="uint8", groups=2),
    icase("i16_filter", (1, 4, 4, 3), 9, (3, 3), w_dtype="int16", strides=[2, 2]),
    icase("i16_input_dil", (1, 4, 5, 5), 4, (3, 2), x_dtype="int16", dilations=[2, 2]),
    icase("groups3_nobias", (1, 4, 3, 6), 9, (2, 2), groups=3, bias=False, strides=[2, 2]),
    icase("oc70_outpad", (1, 3, 3, 5), 70, (3, 3), strides=[2, 2], output_padding=[1, 1]),
    icase(
        "dil_s2_pads",
        (1, 5, 4, 8),
        12,
        (3, 3),
        strides=[2, 2],
        dilations=[2, 1],
        pads=[1, 2, 2, 0],
    ),
]


def centred_case(case_id: str, consumers: int) -> Case:
    """The integer form's centring ``sub(cast(x) to i32, zp)`` feeding `consumers`
    conv2d_transposes (summed when two): with one, the kernel reads the int8 x and subtracts
    the zero point itself; with two, the sub is computed (no folding) and both read it."""
    x = _RNG.integers(-128, 128, size=(1, 3, 12, 5)).astype(np.int8)
    zp = np.array(-7, np.int32)
    w = _RNG.integers(-127, 128, size=(6, 3, 3, 5)).astype(np.int8)
    b = _RNG.integers(-999, 999, size=6).astype(np.int32)
    i32 = element_type("int32")

    def build(*values: SSAValue) -> list[Operation]:
        xv, zv, wv, bv = values
        cast = nn.CastOp.make(xv, result_elements=i32)
        sub = nn.SubOp.make(cast.output, zv)
        ops: list[Operation] = [cast, sub]
        for k in range(consumers):
            props = {"strides": [2, 2], "pads": [k, k, 1 - k, 1 - k]}
            ops.append(nn.Conv2DTransposeOp.make(sub.output, wv, bv, layout="NHWC", **props))
        if consumers == 2:
            ops.append(nn.AddOp.make(ops[2].results[0], ops[3].results[0]))
        return ops

    return Case(case_id, build, [x, zp, w, b], frozenset({1, 2, 3}))


CENTRED_CASES = [centred_case("centring_folded", 1), centred_case("centring_shared", 2)]


def extreme_case(case_id: str, cg: int) -> Case:
    """int8 x = 127 and w = 127 everywhere, 3x3 taps all in range in the middle: sums of
    9 * cg odd products, accumulated one after the other in the interior tiles. With
    cg = 114 the bound 128 * 127 * 9 * cg stays within 2**24 and the kernel accumulates in
    float32 (exact); with cg = 130 the sums pass 2**24, where float32 would round (odd sums
    above 2**24), and the kernel accumulates in 32-bit integers."""
    x = np.full((1, 3, 20, cg), 127, np.int8)
    w = np.full((3, 3, 3, cg), 127, np.int8)
    b = np.array([1, -1, 2**30], np.int32)
    return op_case(
        case_id,
        nn.Conv2DTransposeOp,
        [x, w, b],
        [1],
        layout="NHWC",
        result_elements=element_type("int32"),
    )


EXTREME_CASES = [extreme_case("extreme_exact_in_float", 114), extreme_case("extreme_int32", 130)]


@pytest.fixture(scope="module")
def integer_results() -> Results:
    return run_family(INTEGER_CASES + CENTRED_CASES + EXTREME_CASES)


@pytest.mark.parametrize("case_id", ids(INTEGER_CASES + CENTRED_CASES + EXTREME_CASES))
def test_integer_form_bit_exact(integer_results: Results, case_id: str) -> None:
    (actual,), (expected,) = integer_results[case_id]
    assert actual.dtype == expected.dtype == np.int32
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)


def test_centring_is_folded_only_into_a_single_consumer() -> None:
    for case, folded in zip(CENTRED_CASES, (True, False), strict=True):
        module, executable, _ = build_executable([case])
        lower(module)
        (source,) = [op.source.data for op in executable.walk() if hasattr(op, "source")]
        assert ("/* nn.sub" not in source) == folded
        # Folded: the int8 argument itself is read, converted once with the zero point.
        assert ("(float)((int32_t)in0[i0] - (-7))" in source) == folded


def test_integer_accumulator_follows_the_bound() -> None:
    """Float32 accumulation only where it is exact (`conv_transpose._exact_in_float`)."""
    module, executable, _ = build_executable(EXTREME_CASES)
    lower(module)
    (source,) = [op.source.data for op in executable.walk() if hasattr(op, "source")]
    float_kernel, int_kernel = source.split("/* nn.conv2d_transpose")[1:]
    assert "typedef float irc_tv" in float_kernel
    assert "typedef uint32_t irc_tv" in int_kernel


def test_integer_nchw_is_refused() -> None:
    x = np.zeros((1, 3, 4, 4), np.int32)
    w = np.zeros((3, 2, 3, 3), np.int8)
    case = op_case(
        "nchw",
        nn.Conv2DTransposeOp,
        [x, w, None],
        [1],
        layout="NCHW",
        result_elements=element_type("int32"),
    )
    _, executable, _ = build_executable([case])
    op = next(o for o in executable.walk() if isinstance(o, nn.Conv2DTransposeOp))
    support = CpuTarget().supports(op)
    assert not support
    assert "NCHW" in support.reason


# ---- Quantized int8 ---------------------------------------------------------------------------


def qtype(scale: float | Sequence[float], zp: int = 0, dtype: str = "int8") -> UniformQuantizedType:
    storage = element_type(dtype)
    if isinstance(scale, float):
        return UniformQuantizedType.per_tensor(storage, f32_type, float(np.float32(scale)), zp)  # type: ignore[arg-type]
    scales = [float(np.float32(s)) for s in scale]
    return UniformQuantizedType.per_axis(storage, f32_type, 0, scales, [zp] * len(scales))  # type: ignore[arg-type]


QUANT_CONFIGS = {
    # id: (input shape, OC, kernel, zp_in, zp_out, per-channel, activation, props)
    "q_s2_asym_zp": ((1, 8, 8, 16), 8, (3, 3), -128, 17, True, "none", {"strides": [2, 2]}),
    "q_zp0_relu6": ((1, 5, 5, 6), 12, (3, 3), 0, -5, True, "relu6", {"pads": [1, 1, 1, 1]}),
    "q_per_tensor_s3": ((2, 3, 4, 5), 7, (2, 2), 9, 0, False, "relu", {"strides": [3, 3]}),
    "q_groups_outpad": (
        (1, 4, 4, 8),
        6,
        (3, 3),
        -3,
        4,
        True,
        "none",
        {"strides": [2, 2], "groups": 2, "output_padding": [1, 1], "pads": [0, 1, 1, 0]},
    ),
}


def _quant_func(name: str) -> tuple[FuncOp, list[np.ndarray]]:
    """A function `name` running every case of `QUANT_CONFIGS` (same seed: same data), and
    its int8 inputs."""
    rng = np.random.default_rng(11)
    types: list[TensorType] = []
    feed: list[np.ndarray] = []
    for shape, _, _, zp_in, *_ in QUANT_CONFIGS.values():
        feed.append(rng.integers(-128, 128, size=shape).astype(np.int8))
        types.append(TensorType(qtype(0.05, zp_in), list(shape)))
    block = Block(arg_types=types)
    results = []
    for arg, (shape, oc, kernel, _, zp_out, per_channel, act, props) in zip(
        block.args, QUANT_CONFIGS.values(), strict=True
    ):
        groups = int(props.get("groups", 1))  # type: ignore[call-overload]
        w = rng.integers(-127, 128, size=filter_shape("NHWC", shape[3], oc, kernel, groups))
        scales = list(rng.uniform(0.002, 0.02, oc)) if per_channel else 0.01
        weights = nn.ConstantOp.from_array(
            w.astype(np.int8), TensorType(qtype(scales), list(w.shape))
        )
        bias = nn.ConstantOp.from_array(rng.integers(-3000, 3000, oc).astype(np.int32))
        conv = nn.Conv2DTransposeOp.make(
            arg,
            weights.output,
            bias.output,
            layout="NHWC",
            activation=act,
            result_elements=qtype(0.3, zp_out),
            **props,
        )
        ops: list[Operation] = [weights, bias, conv]
        block.add_ops(ops)
        results.append(conv.output)
    block.add_op(ReturnOp(*results))
    func_type = FunctionType.from_lists(types, [r.type for r in results])
    return FuncOp(name, func_type, Region(block)), feed


@pytest.fixture(scope="module")
def quant_family() -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(CPU, reference) results of the quantized cases, run as one `cpu` executable."""
    func, feed = _quant_func("entry")
    executable = delegate.ExecutableOp("test_cpu_conv_transpose", "cpu", [func])
    module = ModuleOp([executable])
    module.verify()
    expected = ReferenceRuntime().load(executable).execute("entry", feed)
    lower(module)
    actual = CpuRuntime().load(executable).execute("entry", feed)
    return list(actual), list(expected)


@pytest.mark.parametrize("index", range(len(QUANT_CONFIGS)), ids=list(QUANT_CONFIGS))
def test_quantized_bit_exact(
    quant_family: tuple[list[np.ndarray], list[np.ndarray]], index: int
) -> None:
    actual, expected = quant_family[0][index], quant_family[1][index]
    assert actual.dtype == expected.dtype == np.int8
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)


def test_quantized_is_supported_through_its_integer_form() -> None:
    func, _ = _quant_func("main")
    for op in func.walk():
        if isinstance(op, nn.Conv2DTransposeOp):
            support = CpuTarget().supports(op)
            assert support, support.reason


def test_quantized_end_to_end_targets_cpu() -> None:
    """`irc.compile(..., targets=["cpu"])` with strict partitioning (nothing on the host)
    matches the reference target bit for bit."""
    import irc

    func, feed = _quant_func("main")
    module = ModuleOp([func])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = irc.compile(module, targets=["cpu"], strict=True)
        reference = irc.compile(module, targets=["reference"])
    assert not model.refusals
    inputs = dict(zip(model.input_names, feed, strict=True))
    got, want = model.run(inputs), reference.run(inputs)
    assert got.keys() == want.keys()
    for key in got:
        assert got[key].dtype == want[key].dtype
        np.testing.assert_array_equal(got[key], want[key])
