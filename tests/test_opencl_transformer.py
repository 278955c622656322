"""OpenCL kernels of what transformers need (targets/opencl/lowerings/transformer.py, casts.py,
typed.py and the i1 / i32 / i64 paths of logic.py, gather.py and movement.py) against the
reference target, in both kernel styles (`cpu`, `gpu`).

Float results: rtol 1e-4 / atol 1e-5, NaN where the reference has NaN (docs/semantics.md's
softmax rules inside attention: a NaN or +inf score makes its row NaN, a row of -inf is NaN,
a row masked everywhere with finfo.min gets equal weights, as the float64 sum absorbs the
score). Integer and `i1` results: exact.
The BERT-like and GPT-2-like graphs run with every op inside opencl regions and match
onnxruntime.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest
from cpu_support import Case, build_executable, op_case, reference_outputs
from opencl_support import kernel_style_params, needs_device, opencl_c_errors, wide_vector_calls
from transformer_graphs import bert_inputs, bert_like, gpt2_inputs, gpt2_like
from xdsl.dialects.builtin import StringAttr, TensorType, f16
from xdsl.ir import Block

from irc.context import make_context
from irc.dialects import nn, ocl
from irc.dtypes import element_type
from irc.targets.opencl.lower import LowerOpenCLPass
from irc.targets.opencl.runtime import OpenCLRuntime, OpenCLValue
from irc.targets.opencl.target import OpenCLTarget

pytestmark = pytest.mark.private_cache

RTOL, ATOL = 1e-4, 1e-5
FLOAT_MIN = float(np.finfo(np.float32).min)
STYLES = kernel_style_params()


def normal(*shape: int, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _to(dtype: type) -> dict[str, object]:
    return {"result_elements": element_type(np.dtype(dtype))}


def run_cases(cases: Sequence[Case], kernels: str) -> None:
    """Build the cases into one opencl executable, lower it with `kernels`, run it, compare
    each output with the reference kernels' (exactly for non-float outputs)."""
    module, executable, built = build_executable(cases, "test_opencl_transformer_0")
    executable.properties["target"] = StringAttr("opencl")
    with np.errstate(all="ignore"):  # the edge cases' NaN and inf
        expected = [reference_outputs(b) for b in built]
    LowerOpenCLPass(kernels=kernels).apply(make_context(), module)
    module.verify()
    loaded = OpenCLRuntime().load(executable)
    outs = iter(loaded.execute("entry", [a for b in built for a in b.args]))
    for b, refs in zip(built, expected, strict=True):
        for ref in refs:
            got = next(outs)
            assert isinstance(got, OpenCLValue)
            host = got.to_host()
            assert host.shape == ref.shape, b.case.id
            assert host.dtype == ref.dtype, b.case.id
            if ref.dtype.kind == "f":
                np.testing.assert_allclose(host, ref, rtol=RTOL, atol=ATOL, err_msg=b.case.id)
            else:
                np.testing.assert_array_equal(host, ref, err_msg=b.case.id)


# ---- layer_norm, silu, gelu ----------------------------------------------------------------------


def _layer_norm_cases() -> list[Case]:
    cases = []
    for i, (shape, axis, bias) in enumerate(
        [
            ((3, 5, 768), -1, True),  # float16 lanes
            ((4, 37), -1, False),  # scalar
            ((2, 3, 9), 1, True),  # two trailing dimensions
            ((2, 6, 20), -1, True),  # float4 lanes
            ((1, 1, 16), -1, False),
        ]
    ):
        x = normal(*shape, seed=i, scale=2.0) + 1.5
        scale = normal(*shape[axis % len(shape) :], seed=10 + i)
        b = normal(*scale.shape, seed=20 + i) if bias else None
        cases.append(
            op_case(f"ln{i}", nn.LayerNormOp, [x, scale, b], constants=[1], axis=axis, epsilon=1e-5)
        )
    edges = normal(4, 24, seed=5)
    edges[0, 3] = np.nan
    edges[1, 7] = np.inf
    edges[2] = 0.25  # a constant row: zero variance
    scale = normal(24, seed=6)
    cases.append(op_case("ln_edges", nn.LayerNormOp, [edges, scale, None], epsilon=1e-12, axis=-1))
    return cases


def _activation_cases() -> list[Case]:
    """float8 blocks (sizes that are multiples of 8) and one element per work-item."""
    edges = np.float32([-np.inf, -100, -87, -1e-30, 0, 1e-30, 60, 90, np.inf, np.nan])
    x = np.concatenate([normal(1003, scale=5.0), edges])
    gelu_edges = np.float32([-np.inf, -30, -13.5, -9, -3.5, 0, 1e-30, 9, 13.5, 30, np.inf, np.nan])
    gelu_x = np.concatenate([normal(1004, scale=4.0), gelu_edges])  # 1016 = 127 x 8
    cases = [
        op_case("silu", nn.SiluOp, [x]),
        op_case("silu_x8", nn.SiluOp, [np.concatenate([x, x[:3]])]),
        op_case("silu_2d", nn.SiluOp, [normal(3, 7, seed=4)]),
    ]
    for data, tag in ((gelu_x, "x8"), (gelu_x[:1013], "x1")):
        cases.append(op_case(f"gelu_erf_{tag}", nn.GeluOp, [data]))
        cases.append(op_case(f"gelu_tanh_{tag}", nn.GeluOp, [data], approximate="tanh"))
    return cases


@needs_device
@pytest.mark.parametrize("kernels", STYLES)
def test_layer_norm_silu_gelu_match_reference(kernels: str) -> None:
    run_cases(_layer_norm_cases() + _activation_cases(), kernels)


def _fully_connected_cases() -> list[Case]:
    """The tiled GEMM with more output channels than rows (a transformer's FC) takes row tiles
    first (conv_kernels.py); ragged last tiles (13 and 38 rows) included."""
    cases = []
    for i, (rows, k, n) in enumerate([(13, 32, 96), (38, 64, 144), (2, 16, 768)]):
        x = normal(1, rows, k, seed=40 + i)
        w = normal(n, k, seed=50 + i, scale=0.2)
        b = normal(n, seed=60 + i)
        cases.append(op_case(f"fc{i}", nn.FullyConnectedOp, [x, w, b], constants=[1, 2]))
    return cases


@needs_device
@pytest.mark.parametrize("kernels", STYLES)
def test_fully_connected_rows_first_matches_reference(kernels: str) -> None:
    run_cases(_fully_connected_cases(), kernels)


# ---- attention -----------------------------------------------------------------------------------


def _attention_case(
    case_id: str,
    q_shape: tuple[int, ...],
    n: int,
    e: int,
    key_t: bool,
    mask: np.ndarray | None,
    seed: int,
    scale: float = 0.125,
) -> tuple[Case, list[np.ndarray]]:
    *batch, _, d = q_shape
    q = normal(*q_shape, seed=seed)
    k = normal(*batch, *((d, n) if key_t else (n, d)), seed=seed + 1)
    v = normal(*batch, n, e, seed=seed + 2)
    arrays = [q, k, v, mask]
    case = op_case(case_id, nn.AttentionOp, arrays, scale=scale, key_transposed=key_t)
    return case, arrays  # type: ignore[return-value]


def _padding_mask(shape: tuple[int, ...], seed: int, masked: float = -3.4e38) -> np.ndarray:
    mask = np.where(normal(*shape, seed=seed) > 0.7, masked, 0.0).astype(np.float32)
    mask[..., 0] = 0.0  # every row keeps one key
    return mask


def _attention_cases() -> list[Case]:
    cases = [
        # BERT: [B, 1, 1, N] padding mask, keys transposed, a key tail (20 = 2 x 8 + 4)
        _attention_case("bert", (1, 12, 20, 64), 20, 64, True, _padding_mask((1, 1, 1, 20), 1), 0)[
            0
        ],
        # keys and mask rows aligned to the key block: vector loads
        _attention_case(
            "aligned", (2, 2, 16, 64), 32, 64, True, _padding_mask((2, 1, 1, 32), 2), 3
        )[0],
        # a mask per row and batch, keys not transposed, odd value width
        _attention_case("per_row", (2, 3, 7, 13), 9, 5, False, _padding_mask((2, 1, 7, 9), 3), 6)[
            0
        ],
        # rank 3, no mask, more rows than a work-item's (17 = 4 x 4 + 1)
        _attention_case("no_mask", (4, 17, 8), 32, 8, True, None, 9)[0],
        # a mask broadcast from one dimension, a tail block only
        _attention_case("short", (2, 2, 5, 4), 6, 3, False, _padding_mask((6,), 4), 12)[0],
        # a wide value: fewer rows per work-item
        _attention_case("wide", (1, 6, 8), 8, 300, True, None, 15)[0],
    ]
    # GPT-2's causal mask (finfo.min above the diagonal), one row per query, 24 keys
    causal = np.triu(np.full((24, 24), FLOAT_MIN, np.float32), 1)
    cases.append(_attention_case("causal", (1, 2, 24, 16), 24, 16, True, causal, 18)[0])
    return cases


def _attention_edge_cases() -> list[Case]:
    """Rows the reference's softmax rules decide (docs/semantics.md)."""
    mask = np.zeros((1, 1, 8, 12), np.float32)
    mask[..., 0, 5:] = FLOAT_MIN  # partly masked
    mask[..., 1, :] = FLOAT_MIN  # masked everywhere with finfo.min: equal weights
    mask[..., 2, :] = -np.inf  # masked everywhere with -inf: NaN
    mask[..., 3, ::2] = -np.inf  # half -inf
    mask[..., 4, 3] = np.nan  # NaN: the row is NaN
    mask[..., 5, 4] = np.inf  # +inf: the row is NaN
    mask[..., 6, :] = -1e30  # absorbs the scores too: equal weights
    base, _ = _attention_case("edges", (1, 2, 8, 16), 12, 16, True, mask, 21)
    q, k, v, _ = base.arrays
    q = q.copy()
    q[0, 1, 7, 2] = np.nan  # head 1, row 7: a NaN query
    k = k.copy()
    k[0, 1, 5, 9] = np.inf  # head 1, key 9: +inf or -inf scores by the sign of q[..., 5]
    edges = op_case("edges", nn.AttentionOp, [q, k, v, mask], scale=0.5, key_transposed=True)
    v_nan = normal(1, 2, 12, 16, seed=30)
    v_nan[0, 0, 3, 5] = np.nan  # a masked key's NaN value still reaches its column
    q2, k2 = normal(1, 2, 8, 16, seed=31), normal(1, 2, 16, 12, seed=32)
    partial = np.zeros((1, 1, 1, 12), np.float32)
    partial[..., 3] = FLOAT_MIN
    nan_value = op_case(
        "nan_value", nn.AttentionOp, [q2, k2, v_nan, partial], scale=0.25, key_transposed=True
    )
    return [edges, nan_value]


@needs_device
@pytest.mark.parametrize("kernels", STYLES)
def test_attention_matches_reference(kernels: str) -> None:
    run_cases(_attention_cases() + _attention_edge_cases(), kernels)


@needs_device
def test_rows_masked_everywhere() -> None:
    """finfo.min everywhere: equal weights (the mean of the values), as the reference and
    onnxruntime; -inf everywhere, a NaN or a +inf in the mask: NaN."""
    (case,) = [c for c in _attention_edge_cases() if c.id == "edges"]
    module, executable, built = build_executable([case], "masked_opencl_0")
    executable.properties["target"] = StringAttr("opencl")
    LowerOpenCLPass().apply(make_context(), module)
    (out,) = OpenCLRuntime().load(executable).execute("entry", built[0].args)
    host = out.to_host()  # type: ignore[union-attr]
    _, _, v, _ = case.arrays
    uniform = v.mean(axis=-2)  # what equal weights give
    np.testing.assert_allclose(host[0, 0, 1], uniform[0, 0], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(host[0, 0, 6], uniform[0, 0], rtol=RTOL, atol=ATOL)
    assert np.isnan(host[0, :, 2]).all()
    assert np.isnan(host[0, :, 4:6]).all()
    assert np.isfinite(host[0, 0, 0]).all()


@pytest.mark.parametrize("kernels", STYLES)
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_kernels_type_check_in_every_precision(kernels: str, precision: str) -> None:
    """The OpenCL C of every case (half buffers in fp16, which PoCL here cannot run) passes
    libclang's OpenCL C 1.2 check; in fp32 it passes no 512-bit vector to a builtin (PoCL's
    ABI note on AVX2 CPUs; fp16 converts float16 vectors as the tiled convs do)."""
    cases = _layer_norm_cases() + _activation_cases() + _attention_cases() + _exact_cases()
    module, executable, _ = build_executable(cases, "typed_opencl_0")
    executable.properties["target"] = StringAttr("opencl")
    with np.errstate(over="ignore"):  # finfo.min constants become -inf halves
        LowerOpenCLPass(kernels=kernels, precision=precision).apply(make_context(), module)
    (program,) = [op for op in module.walk() if isinstance(op, ocl.ProgramOp)]
    source = program.source.data
    assert opencl_c_errors(source, fp16=precision == "fp16") == []
    if precision == "fp32":
        assert wide_vector_calls(source) == []


# ---- casts, comparisons, logic, select, gather, movement on i1 / i32 / i64 -----------------------


def _exact_cases() -> list[Case]:
    rng = np.random.default_rng(5)
    table = normal(50, 24, seed=1)
    ids64 = rng.integers(-50, 50, (2, 7)).astype(np.int64)
    ids32 = rng.integers(0, 3, (5,)).astype(np.int32)
    ints = rng.integers(-9, 9, (4, 3, 6)).astype(np.int64)
    big = np.int64([[2**40 + 3, -(2**35), 2**31, -(2**31) - 1, 7, 0]])
    bools = rng.integers(0, 2, (3, 6)).astype(np.bool_)
    floats = np.float32(
        [[0.5, -1.0, np.nan, 3.0e10, -3.0e19, 2.9, -2.9, 0.0, -0.0, np.inf, -np.inf, 1e-40]]
    )
    cases = [
        op_case("gather_rows_i64", nn.GatherOp, [table, ids64]),
        op_case("gather_const_i64", nn.GatherOp, [table, ids64], constants=[1]),
        op_case("gather_axis1_i32", nn.GatherOp, [ints, ids32], axis=1),
        op_case("gather_bool", nn.GatherOp, [bools, np.int64([2, -1, 0])]),
        op_case("gather_const_table_i64", nn.GatherOp, [ints, np.int64([1, 0])], constants=[0]),
    ]
    a, b = normal(3, 1, 6, seed=2), normal(4, 6, seed=3)
    b[0, :3] = np.nan
    a[0, 0, :2] = b[1, :2]
    for kind in ("eq", "ne", "lt", "le", "gt", "ge"):
        cases.append(op_case(f"cmp_f32_{kind}", nn.CompareOp, [a, b], kind=kind, **_to(np.bool_)))
        cases.append(
            op_case(f"cmp_i64_{kind}", nn.CompareOp, [ints, ints[0, 0]], kind=kind, **_to(np.bool_))
        )
    zeros = np.zeros((4, 3, 6), np.int64)
    cases += [
        op_case("cmp_i64_zero", nn.CompareOp, [ints, zeros], [1], kind="eq", **_to(np.bool_)),
        op_case("cmp_i32", nn.CompareOp, [ids32, np.int32([1])], [1], kind="lt", **_to(np.bool_)),
        op_case("cmp_bool", nn.CompareOp, [bools, bools[::-1].copy()], kind="ne", **_to(np.bool_)),
    ]
    other = rng.integers(0, 2, (6,)).astype(np.bool_)
    for op_type in (nn.LogicalAndOp, nn.LogicalOrOp, nn.LogicalXorOp):
        cases.append(op_case(op_type.name, op_type, [bools, other]))
        cases.append(op_case(op_type.name + "_const", op_type, [bools, other], [1]))
    cases.append(op_case("not", nn.LogicalNotOp, [bools]))
    cases += [
        op_case(
            "select_splats",
            nn.SelectOp,
            [bools, np.array(FLOAT_MIN, np.float32), np.array(0.0, np.float32)],
            constants=[1, 2],
            **_to(np.float32),
        ),
        op_case("select_bcast", nn.SelectOp, [bools[:1], a[0], b], **_to(np.float32)),
        op_case(
            "select_i64",
            nn.SelectOp,
            [bools, ints[0], np.array(-1, np.int64)],
            constants=[2],
            **_to(np.int64),
        ),
        op_case("select_bool", nn.SelectOp, [bools, other, ~other], **_to(np.bool_)),
        op_case("select_const_cond", nn.SelectOp, [bools, a[0], b[:3]], [0], **_to(np.float32)),
    ]
    for target in (np.float32, np.int32, np.bool_, np.int64):
        cases.append(op_case(f"cast_i64_{target.__name__}", nn.CastOp, [ints], **_to(target)))
        cases.append(op_case(f"cast_big_{target.__name__}", nn.CastOp, [big], **_to(target)))
    for target in (np.float32, np.int64, np.int32):
        cases.append(op_case(f"cast_bool_{target.__name__}", nn.CastOp, [bools], **_to(target)))
    for target in (np.int64, np.int32, np.bool_):
        cases.append(op_case(f"cast_f32_{target.__name__}", nn.CastOp, [floats], **_to(target)))
    cases += [
        op_case("cast_i32_i64", nn.CastOp, [ids32], **_to(np.int64)),
        op_case("cast_i32_f32", nn.CastOp, [ids32], **_to(np.float32)),
        op_case("cast_const_i64", nn.CastOp, [ints], [0], **_to(np.float32)),
    ]
    # data movement on i64 and i1 (constant inputs uploaded as bytes)
    cases += [
        op_case("reshape_i64", nn.ReshapeOp, [ints], shape=[12, 6]),
        op_case("reshape_const_bool", nn.ReshapeOp, [bools], [0], shape=[18]),
        op_case("transpose_i64", nn.TransposeOp, [ints], perm=[2, 0, 1]),
        op_case("concat_i64", nn.ConcatOp, [[ints, ints[:1]]], axis=0),
        op_case("concat_const_bool", nn.ConcatOp, [[bools, bools]], [1], axis=1),
        op_case(
            "slice_i64", nn.SliceOp, [ints], begin=[3, 0, 5], end=[1, 3, -1], strides=[-1, 1, -2]
        ),
        op_case("broadcast_i64", nn.BroadcastToOp, [ints[:1, :1]], shape=[2, 3, 6]),
        op_case("broadcast_bool", nn.BroadcastToOp, [other], shape=[4, 6]),
        op_case("split_i64", nn.SplitOp, [ints], axis=2, sizes=[2, 4]),
    ]
    return cases


@needs_device
@pytest.mark.parametrize("kernels", STYLES)
def test_integer_and_bool_kernels_match_reference_exactly(kernels: str) -> None:
    run_cases(_exact_cases(), kernels)


def test_support_takes_integer_movement_and_refuses_other_types() -> None:
    """i64 / i1 data movement, comparisons and casts run; an f16 cast does not."""
    i64 = element_type(np.dtype(np.int64))
    f32 = element_type(np.dtype(np.float32))
    target = OpenCLTarget()
    block = Block(arg_types=[TensorType(i64, (2, 3)), TensorType(f16, (2, 3))])
    ints, halves = block.args
    assert target.supports(nn.ReshapeOp.make(ints, shape=[6]))
    assert target.supports(nn.CastOp.make(ints, result_elements=f32))
    refused = target.supports(nn.CastOp.make(halves, result_elements=f32))
    assert not refused
    assert refused.reason == "opencl: 'nn.cast' on f16 tensors (float32 only)"
    refused = target.supports(nn.ReluOp.make(ints))
    assert not refused
    assert refused.code == "dtype"


# ---- whole models --------------------------------------------------------------------------------


@needs_device
@pytest.mark.parametrize("kernels", STYLES)
@pytest.mark.parametrize("which", ["bert", "gpt2"])
def test_transformer_graph_runs_in_opencl_regions_only(
    tmp_path: Path, which: str, kernels: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every op of the BERT-like and GPT-2-like graphs (static shapes) is in an opencl
    region, and the result matches onnxruntime within 2e-3 of the output's scale."""
    import onnxruntime

    import irc

    monkeypatch.setenv("IRC_OPENCL_KERNELS", kernels)
    build, inputs = (bert_like, bert_inputs) if which == "bert" else (gpt2_like, gpt2_inputs)
    path = tmp_path / f"{which}.onnx"
    onnx.save(build(), path)
    feeds = inputs(2, 19)
    compiled = irc.compile(path, ["opencl"], input_shapes={k: v.shape for k, v in feeds.items()})
    assert "stays on the host" not in compiled.summary, compiled.summary
    assert "host: 0 ops" in compiled.summary, compiled.summary
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = compiled.run(feeds)
    for name, want in zip(compiled.output_names, session.run(None, feeds), strict=True):
        scale = float(np.abs(want).max())
        np.testing.assert_allclose(got[name], want, rtol=0, atol=2e-3 * scale, err_msg=name)
