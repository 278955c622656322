"""8-bit storage between the kernels of an int8 model (targets/opencl/int8_storage.py): a
conv whose fused epilogue ends in a qcast -> dcast round trip stores the 8-bit integer, and
the kernels reading it (1x1 GEMM, depthwise, direct conv, a residual add in an epilogue)
dequantize it — bit for bit the reference's, in both kernel styles, for signed and unsigned
storage and zero points at the minimum, inside the range and at 0. A reader that does not
claim the storage (a depthwise conv of 3 channels: one work-item per output) gets a
dequantizing launch. An int8 input's dcast is not launched when its scale is a float32.
The mutations (the stored integer off by one, the table read one entry off) are caught.
A classifier's weights that are int8 products are read as bytes (int8_weights.py), exactly."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_support import Case
from opencl_support import kernel_style_params, needs_device, run_cases_bit_exact
from xdsl.dialects.builtin import Float32Type, IntegerType, Signedness, TensorType
from xdsl.ir import Operation, SSAValue

from irc.dialects import nn, quant
from irc.targets.opencl import conv_kernels
from irc.targets.opencl.int8_storage import Int8Storage
from irc.targets.opencl.int8_weights import int8_weights

pytestmark = [pytest.mark.private_cache, needs_device]


def _element(scale: float, zp: int, signed: bool = True) -> quant.UniformQuantizedType:
    scale = float(np.float32(scale))
    storage = IntegerType(8) if signed else IntegerType(8, signedness=Signedness.UNSIGNED)
    return quant.UniformQuantizedType.per_tensor(storage, Float32Type(), scale, zp)


def _round_trip(value: SSAValue, element: quant.UniformQuantizedType) -> list[Operation]:
    shape = value.type.get_shape()  # type: ignore[union-attr]  # a TensorType
    q = quant.QCastOp(value, TensorType(element, shape), rounding="half_away_from_zero")
    return [q, quant.DCastOp(q.output)]


RELU6 = _element(6 / 255, -128)  # MobileNetV2's activations
MID = _element(0.0859375, 3)  # zero point inside the range
U8 = _element(0.05, 0, signed=False)
SYMMETRIC = _element(0.03125, 0)


def _block_case(case_id: str, elements: tuple[quant.UniformQuantizedType, ...], seed: int) -> Case:
    """x -> 1x1 conv (relu6) -> t1 -> depthwise 3x3 -> t2 -> 1x1 conv -> round trip -> + t1
    -> t3 -> 3x3 conv stride 2 (groups 1) -> round trip: t1 is read by the depthwise conv and
    the residual add, t2 by a GEMM, t3 by a direct conv (each `t` a round trip's result)."""
    e1, e2, e3, e4 = elements
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, 9, 11, 24)).astype(np.float32)
    w1 = (rng.standard_normal((48, 1, 1, 24)) * 0.3).astype(np.float32)
    wd = (rng.standard_normal((48, 3, 3, 1)) * 0.4).astype(np.float32)
    bd = (rng.standard_normal(48) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((48, 1, 1, 48)) * 0.2).astype(np.float32)
    w3 = (rng.standard_normal((20, 3, 3, 48)) * 0.1).astype(np.float32)

    def build(xv: SSAValue, w1v: SSAValue, wdv: SSAValue, bdv: SSAValue, w2v, w3v) -> list:
        ops: list[Operation] = [nn.Conv2DOp.make(xv, w1v, None, layout="NHWC", activation="relu6")]
        ops += _round_trip(ops[-1].results[0], e1)
        t1 = ops[-1].results[0]
        ops.append(nn.Conv2DOp.make(t1, wdv, bdv, layout="NHWC", groups=48, pads=[1, 1, 1, 1]))
        ops += _round_trip(ops[-1].results[0], e2)
        ops.append(nn.Conv2DOp.make(ops[-1].results[0], w2v, None, layout="NHWC"))
        ops += _round_trip(ops[-1].results[0], e3)
        ops.append(nn.AddOp.make(ops[-1].results[0], t1))
        ops += _round_trip(ops[-1].results[0], e1)
        ops.append(
            nn.Conv2DOp.make(
                ops[-1].results[0], w3v, None, layout="NHWC", strides=[2, 2], pads=[1, 1, 1, 1]
            )
        )
        ops += _round_trip(ops[-1].results[0], e4)
        return ops

    return Case(case_id, build, [x, w1, wd, bd, w2, w3], frozenset({1, 2, 3, 4, 5}))


def _fallback_case(case_id: str, seed: int) -> Case:
    """A narrow GEMM (32 -> 3 channels, stored lane by lane) read by a 3-channel depthwise
    conv, which no generator tiles: its input is dequantized by a launch of its own."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, 5, 6, 32)).astype(np.float32)
    w = (rng.standard_normal((3, 1, 1, 32)) * 0.3).astype(np.float32)
    wd = rng.standard_normal((3, 3, 3, 1)).astype(np.float32)

    def build(xv: SSAValue, wv: SSAValue, wdv: SSAValue) -> list[Operation]:
        ops: list[Operation] = [nn.Conv2DOp.make(xv, wv, None, layout="NHWC")]
        ops += _round_trip(ops[-1].results[0], MID)
        ops.append(nn.Conv2DOp.make(ops[-1].results[0], wdv, None, layout="NHWC", groups=3))
        ops += _round_trip(ops[-1].results[0], RELU6)
        return ops

    return Case(case_id, build, [x, w, wd], frozenset({1, 2}))


def _input_case(case_id: str, scale: float, seed: int) -> Case:
    """A quantized input (a standalone qcast to a per-tensor type of `scale`, not rounded to
    float32) dequantized for a 1x1 conv, as MobileNetV2's pooled features for its classifier:
    the conv reads the qcast's 8-bit result itself where the scale is a float32; the dcast is
    launched where it is not (its double product differs from float32's)."""
    element = quant.UniformQuantizedType.per_tensor(IntegerType(8), Float32Type(), scale, -5)
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((1, 6, 7, 16)) * 60 * scale).astype(np.float32)
    w = (rng.standard_normal((16, 1, 1, 16)) * 0.3).astype(np.float32)

    def build(xv: SSAValue, wv: SSAValue) -> list[Operation]:
        q = quant.QCastOp(xv, TensorType(element, [1, 6, 7, 16]), rounding="half_to_even")
        ops: list[Operation] = [q, quant.DCastOp(q.output)]
        ops.append(nn.Conv2DOp.make(ops[-1].results[0], wv, None, layout="NHWC"))
        return ops + _round_trip(ops[-1].results[0], MID)

    return Case(case_id, build, [x, w], frozenset({1}))


NOT_FLOAT32 = 0.1  # float32 rounds it

CASES = [
    _block_case("relu6_storage", (RELU6, MID, SYMMETRIC, MID), 1),
    _block_case("unsigned_storage", (U8, U8, MID, RELU6), 2),
    _block_case("zero_points_inside", (MID, SYMMETRIC, RELU6, U8), 3),
    _fallback_case("dequantized_for_an_untiled_reader", 4),
    _input_case("input_read_as_int8", 0.0078125, 5),
    _input_case("input_dcast_kept", NOT_FLOAT32, 6),
]


@pytest.mark.parametrize("kernels", kernel_style_params())
def test_int8_storage_is_bit_exact(kernels: str) -> None:
    source = run_cases_bit_exact(CASES, kernels, f"test_int8_storage_{kernels}")
    assert "__global char* restrict y" in source  # stored as 8-bit
    assert "__global uchar* restrict y" in source
    assert "__global const char* restrict x0" in source  # and read so
    assert "__global const uchar* restrict x0" in source
    assert "dequantize 8-bit storage (char, scale 0.0859375f)" in source  # the fallback launch
    assert source.count("quant.dcast 1x6x7x16") == 1  # input_dcast_kept's, not the other


_STORE = Int8Storage.store
_TABLE = Int8Storage.table


def _store_off_by_one(self: Int8Storage, v: str, width: int = 0) -> str:
    return _STORE(self, f"({v} - 1.0f)", width)


def _table_shifted(self: Int8Storage) -> np.ndarray:
    return _TABLE(self)[np.r_[1:256, 255]]


@pytest.mark.parametrize(
    ("name", "mutant"), [("store", _store_off_by_one), ("table", _table_shifted)]
)
def test_mutations_are_caught(monkeypatch: pytest.MonkeyPatch, name: str, mutant: object) -> None:
    """A kernel storing `q + zp - 1`, or a table read one entry off, fails the comparison."""
    monkeypatch.setattr(Int8Storage, name, mutant)
    with pytest.raises(AssertionError):
        run_cases_bit_exact(CASES[:1], "cpu", f"test_int8_storage_mutant_{name}")


def _int8_product_weights(rows: int, cols: int, seed: int) -> np.ndarray:
    """Weights `scale[n] * q` as fold-qdq leaves them (float32 products, |q| <= 127)."""
    rng = np.random.default_rng(seed)
    q = rng.integers(-127, 128, (rows, cols)).astype(np.float32)
    q[:, 0] = 127  # the symmetric scale's peak
    scales = (rng.uniform(0.001, 0.05, rows)).astype(np.float32)
    return scales[:, None] * q


def test_int8_weights_recovers_exact_products_only() -> None:
    w = _int8_product_weights(40, 64, 7)
    found = int8_weights(w)
    assert found is not None
    q, scales = found
    np.testing.assert_array_equal(scales[:, None] * q.astype(np.float32), w)
    w[3, 5] = np.nextafter(w[3, 5], np.float32(1))  # one weight off the grid
    assert int8_weights(w) is None
    zero_row = _int8_product_weights(3, 8, 8)
    zero_row[1] = 0.0
    assert int8_weights(zero_row) is not None
    floats = np.random.default_rng(9).standard_normal((8, 8)).astype(np.float32)
    assert int8_weights(floats) is None  # a float model's weights
    assert int8_weights(np.array([[1.0, 0.3, np.nan]], np.float32)) is None


def _classifier_case(case_id: str, weights: np.ndarray, seed: int) -> Case:
    """A 1-row fully_connected (a classifier) with int8-product weights, then a round trip."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, weights.shape[1])).astype(np.float32)
    bias = rng.standard_normal(weights.shape[0]).astype(np.float32)

    def build(xv: SSAValue, wv: SSAValue, bv: SSAValue) -> list[Operation]:
        fc = nn.FullyConnectedOp.make(xv, wv, bv)
        return [fc, *_round_trip(fc.output, MID)]

    return Case(case_id, build, [x, weights, bias], frozenset({1, 2}))


CLASSIFIER = _int8_product_weights(200, 400, 8)  # 80000 weights: 8-bit


def test_classifier_reads_8bit_weights_bit_exact() -> None:
    source = run_cases_bit_exact(
        [_classifier_case("classifier", CLASSIFIER, 9)], "cpu", "test_int8_weights"
    )
    assert "8-bit weights" in source
    assert "__global const char16* wp" in source
    assert "]) * s0;" in source


def test_classifier_weight_scale_mutation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scales 0.1 % off give other weights: the comparison fails."""

    def scales_off(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        found = int8_weights(weights)
        assert found is not None
        return found[0], found[1] * np.float32(1.001)

    monkeypatch.setattr(conv_kernels, "int8_weights", scales_off)
    with pytest.raises(AssertionError):
        run_cases_bit_exact(
            [_classifier_case("classifier", CLASSIFIER, 9)], "cpu", "test_int8_weights_mutant"
        )
