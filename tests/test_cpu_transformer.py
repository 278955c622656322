"""CPU kernels of targets/cpu/transformer_kernels.py against the reference target: layer_norm,
silu, gelu, attention (float32, rtol 1e-4 / atol 1e-5), and gather, select, compare, logical ops
and i64 / i1 casts (exact). Sizes include vector tails (not multiples of 16 or 8) and every
ISA profile this CPU runs; a BERT-like graph runs entirely inside cpu regions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from cpu_support import (
    Case,
    build_executable,
    isa_params,
    load_with_isa,
    lower,
    needs_compiler,
    op_case,
    reference_outputs,
    run_family,
)
from transformer_graphs import bert_inputs, bert_like, gpt2_inputs, gpt2_like
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block

from irc.dialects import nn
from irc.dtypes import element_type
from irc.targets.cpu.runtime import CpuRuntime
from irc.targets.cpu.target import CpuTarget

pytestmark = [needs_compiler, pytest.mark.private_cache]

RTOL, ATOL = 1e-4, 1e-5


def normal(*shape: int, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _float_cases() -> list[Case]:
    cases = []
    for i, (shape, axis, bias) in enumerate(
        [
            ((3, 5, 768), -1, True),
            ((4, 37), -1, False),
            ((2, 3, 9), 1, True),
            ((1, 1, 16), -1, True),
        ]
    ):
        x = normal(*shape, seed=i, scale=2.0) + 1.5
        params = normal(*shape[axis % len(shape) :], seed=10 + i)
        b = normal(*params.shape, seed=20 + i) if bias else None
        cases.append(
            op_case(
                f"ln{i}", nn.LayerNormOp, [x, params, b], constants=[1], axis=axis, epsilon=1e-5
            )
        )
    silu_x = np.concatenate([normal(1003, scale=5.0), np.float32([-100, -87, 0, 60, 90, 1e-30])])
    cases.append(op_case("silu", nn.SiluOp, [silu_x]))
    gelu_x = np.concatenate([normal(1001, scale=4.0), np.float32([-30, -9, 0, 9, 30, 1e-30])])
    cases.append(op_case("gelu_erf", nn.GeluOp, [gelu_x]))
    cases.append(op_case("gelu_tanh", nn.GeluOp, [gelu_x], approximate="tanh"))
    for i, (q_shape, n, e, key_t, mask_shape) in enumerate(
        [
            ((1, 12, 20, 64), 20, 64, True, (1, 1, 1, 20)),
            ((2, 3, 7, 13), 9, 5, False, (2, 1, 7, 9)),
            ((4, 17, 8), 33, 8, True, None),
            ((2, 2, 5, 4), 6, 3, False, (6,)),
            # rows past a register tile, partial vectors, a mask repeated along the keys
            ((1, 2, 70, 24), 45, 36, True, (1, 1, 70, 1)),
            # more than 512 keys and a head over 512 wide (products in k chunks)
            ((1, 9, 600), 700, 20, False, (9, 700)),
            ((2, 33, 24), 530, 24, True, None),
            # an empty head: every score 0, uniform weights
            ((1, 2, 3, 0), 6, 5, True, None),
        ]
    ):
        *batch, _, d = q_shape
        q = normal(*q_shape, seed=30 + i)
        k = normal(*batch, *((d, n) if key_t else (n, d)), seed=40 + i)
        v = normal(*batch, n, e, seed=50 + i)
        mask = None
        if mask_shape is not None:
            mask = np.where(normal(*mask_shape, seed=60 + i) > 0.7, -3.4e38, 0.0).astype(np.float32)
            mask[..., 0] = 0.0  # every row keeps one key
        cases.append(
            op_case(f"attn{i}", nn.AttentionOp, [q, k, v, mask], scale=0.125, key_transposed=key_t)
        )
    return cases


def test_float_kernels_match_reference() -> None:
    for case_id, (actual, expected) in run_family(_float_cases()).items():
        for got, want in zip(actual, expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=case_id)


@pytest.mark.parametrize("name", isa_params())
def test_float_kernels_on_every_isa(name: str) -> None:
    """The vector exp and the row kernels on AVX-512, AVX2 and the portable profile."""
    module, executable, built = build_executable(_float_cases())
    expected = [reference_outputs(b) for b in built]
    lower(module)
    outputs = list(
        load_with_isa(executable, name).execute("entry", [a for b in built for a in b.args])
    )
    for b, want in zip(built, expected, strict=True):
        got, outputs = outputs[: len(want)], outputs[len(want) :]
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL, err_msg=f"{name} {b.case.id}")


def _exact_cases() -> list[Case]:
    rng = np.random.default_rng(5)
    table = normal(50, 24, seed=1)
    ids64 = rng.integers(-50, 50, (2, 7)).astype(np.int64)
    ids32 = rng.integers(0, 3, (5,)).astype(np.int32)
    ints = rng.integers(-9, 9, (4, 3, 6)).astype(np.int64)
    bools = rng.integers(0, 2, (3, 6)).astype(np.bool_)
    floats = np.float32([[0.5, -1.0, np.nan, 3.0e10, -3.0e19, 2.9, -2.9, 0.0]])
    cases = [
        op_case("gather_rows_i64", nn.GatherOp, [table, ids64], constants=[0]),
        op_case("gather_axis1_i32", nn.GatherOp, [ints, ids32], axis=1),
        op_case("gather_bool", nn.GatherOp, [bools, np.int64([2, -1, 0])]),
        op_case("gather_scalar_index", nn.GatherOp, [table, np.array(3, np.int64)], axis=0),
    ]
    a, b = normal(3, 1, 6, seed=2), normal(4, 6, seed=3)
    b[0, :3] = np.nan
    a[0, 0, :2] = b[1, :2]
    for kind in ("eq", "ne", "lt", "le", "gt", "ge"):
        cases.append(op_case(f"cmp_f32_{kind}", nn.CompareOp, [a, b], kind=kind, **_to(np.bool_)))
    cases.append(
        op_case(
            "cmp_i64_eq", nn.CompareOp, [ints, np.zeros(6, np.int64)], kind="eq", **_to(np.bool_)
        )
    )
    cases.append(
        op_case(
            "cmp_splat",
            nn.CompareOp,
            [ints, np.array(0, np.int64)],
            [1],
            kind="lt",
            **_to(np.bool_),
        )
    )
    cases.append(
        op_case("cmp_bool", nn.CompareOp, [bools, bools[::-1].copy()], kind="ne", **_to(np.bool_))
    )
    other = rng.integers(0, 2, (6,)).astype(np.bool_)
    for op_type in (nn.LogicalAndOp, nn.LogicalOrOp, nn.LogicalXorOp):
        cases.append(op_case(op_type.name, op_type, [bools, other]))
    cases.append(op_case("not", nn.LogicalNotOp, [bools]))
    cases.append(
        op_case(
            "select_splats",
            nn.SelectOp,
            [bools, np.array(-3.4e38, np.float32), np.array(0.0, np.float32)],
            constants=[1, 2],
            **_to(np.float32),
        )
    )
    cases.append(op_case("select_bcast", nn.SelectOp, [bools[:1], a[0], b], **_to(np.float32)))
    cases.append(
        op_case(
            "select_i64", nn.SelectOp, [bools, ints[0], np.array(-1, np.int64)], **_to(np.int64)
        )
    )
    for target in (np.float32, np.int32, np.bool_):
        cases.append(op_case(f"cast_i64_{target.__name__}", nn.CastOp, [ints], **_to(target)))
    for target in (np.float32, np.int64, np.int32):
        cases.append(op_case(f"cast_bool_{target.__name__}", nn.CastOp, [bools], **_to(target)))
    for target in (np.int64, np.bool_):
        cases.append(op_case(f"cast_f32_{target.__name__}", nn.CastOp, [floats], **_to(target)))
    cases.append(op_case("cast_i32_i64", nn.CastOp, [ids32], **_to(np.int64)))
    return cases


def _to(dtype: type) -> dict[str, object]:
    return {"result_elements": element_type(np.dtype(dtype))}


def test_data_kernels_match_reference_exactly() -> None:
    for case_id, (actual, expected) in run_family(_exact_cases()).items():
        for got, want in zip(actual, expected, strict=True):
            assert got.dtype == want.dtype, case_id
            np.testing.assert_array_equal(got, want, err_msg=case_id)


def test_gather_clamps_an_index_out_of_range() -> None:
    """The reference raises; the C kernel must stay inside the table (clamped index)."""
    table = normal(4, 3)
    indices = np.int64([9, -9])
    module, executable, _ = build_executable(
        [op_case("g", nn.GatherOp, [table, indices], constants=[0])]
    )
    lower(module)
    (got,) = CpuRuntime().load(executable).execute("entry", [indices])
    np.testing.assert_array_equal(got, table[[3, 0]])


def test_attention_over_very_long_keys_is_refused() -> None:
    """Four rows of scores live on a thread's stack: very long key sequences are refused."""
    f32 = element_type(np.dtype(np.float32))
    block = Block(arg_types=[TensorType(f32, s) for s in ((4, 8), (20000, 8), (20000, 8))])
    support = CpuTarget().supports(nn.AttentionOp.make(*block.args, None))
    assert not support
    assert support.reason == "cpu: 'nn.attention' over 20000 keys (at most 16384)"


@pytest.mark.parametrize("which", ["bert", "gpt2"])
def test_transformer_graph_runs_in_cpu_regions_only(tmp_path: Path, which: str) -> None:
    """Every op of the BERT-like and GPT-2-like graphs (static shapes) is in a cpu region,
    and the result matches onnxruntime."""
    import onnxruntime

    import irc

    build, inputs = (bert_like, bert_inputs) if which == "bert" else (gpt2_like, gpt2_inputs)
    path = tmp_path / f"{which}.onnx"
    onnx.save(build(), path)
    feeds = inputs(2, 19)
    compiled = irc.compile(path, ["cpu"], input_shapes={k: v.shape for k, v in feeds.items()})
    assert "stays on the host" not in compiled.summary, compiled.summary
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = compiled.run(feeds)
    for name, want in zip(compiled.output_names, session.run(None, feeds), strict=True):
        scale = float(np.abs(want).max())
        np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-4 * scale, err_msg=name)
