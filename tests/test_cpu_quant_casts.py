"""CPU kernels of quant.qcast and quant.dcast (targets/cpu/quant_casts.py): bit-exact with
the reference kernels, per tensor and per axis, every storage type, both roundings, and the
edge cases of QuantizeLinear (ties, saturation, infinities, NaN)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from cpu_support import assert_each_equal, cases_executable, needs_compiler, reference_then_lower
from xdsl.dialects.builtin import Float16Type, TensorType, f32
from xdsl.ir import Block, Operation, SSAValue

from irc.dialects import nn, quant
from irc.dialects.quant import UniformQuantizedType
from irc.dtypes import element_type
from irc.targets.cpu.runtime import CpuRuntime
from irc.targets.cpu.support import check_op

pytestmark = [needs_compiler, pytest.mark.private_cache]


def qtype(
    storage: str, scales: list[float], zero_points: list[int], axis: int | None
) -> UniformQuantizedType:
    element = element_type(storage)
    if axis is None:
        return UniformQuantizedType.per_tensor(element, f32, scales[0], zero_points[0])  # type: ignore[arg-type]
    return UniformQuantizedType.per_axis(element, f32, axis, scales, zero_points)  # type: ignore[arg-type]


def float_input(shape: tuple[int, ...], scale: float, seed: int) -> np.ndarray:
    """Values over (and beyond) the storage range, with exact ties, infinities and NaN."""
    rng = np.random.default_rng(seed)
    x = np.asarray(rng.normal(0, 60 * scale, shape), np.float32)
    flat = x.reshape(-1)
    specials = [0.5 * scale, -0.5 * scale, 1.5 * scale, -2.5 * scale, 1e30, -1e30]
    specials += [np.inf, -np.inf, np.nan, 0.0]
    flat[: len(specials)] = specials
    return x


@dataclass
class QCastCase:
    id: str
    qtype: UniformQuantizedType
    x: np.ndarray
    rounding: str

    @property
    def in_type(self) -> TensorType:
        return TensorType(f32, self.x.shape)

    def build(self, ops: list[Operation], x: SSAValue) -> SSAValue:
        result = TensorType(self.qtype, self.x.shape)
        ops.append(cast := quant.QCastOp(x, result, rounding=self.rounding))
        return cast.output


@dataclass
class DCastCase:
    id: str
    qtype: UniformQuantizedType
    x: np.ndarray

    @property
    def in_type(self) -> TensorType:
        return TensorType(self.qtype, self.x.shape)

    def build(self, ops: list[Operation], x: SSAValue) -> SSAValue:
        ops.append(cast := quant.DCastOp(x))
        return cast.output


PARAMS = {
    "int8": ([0.05], [-3]),
    "uint8": ([0.02], [128]),
    "int16": ([0.001], [7]),
    "int32": ([1e-4], [-1000]),
}


def qcast_cases() -> list[QCastCase]:
    cases = []
    for storage, (scales, zps) in PARAMS.items():
        for rounding in ("half_to_even", "half_away_from_zero"):
            x = float_input((3, 40), scales[0], len(cases))
            cases.append(
                QCastCase(f"{storage}-{rounding}", qtype(storage, scales, zps, None), x, rounding)
            )
    per_axis = qtype("int8", [0.05, 0.013, 0.2], [0, 5, -7], 1)
    cases.append(
        QCastCase("int8-per-axis", per_axis, float_input((2, 3, 5), 0.05, 9), "half_to_even")
    )
    return cases


def dcast_cases() -> list[DCastCase]:
    rng = np.random.default_rng(10)
    cases = []
    for storage, (scales, zps) in PARAMS.items():
        info = np.iinfo(storage)
        x = rng.integers(info.min, int(info.max) + 1, (4, 33)).astype(storage)
        cases.append(DCastCase(storage, qtype(storage, scales, zps, None), x))
    per_axis = qtype("uint8", [0.03, 0.011], [10, 250], 0)
    cases.append(
        DCastCase("uint8-per-axis", per_axis, rng.integers(0, 256, (2, 7)).astype("uint8"))
    )
    return cases


@dataclass
class IntToFloatCase:
    id: str
    x: np.ndarray

    @property
    def in_type(self) -> TensorType:
        return TensorType(element_type(str(self.x.dtype)), self.x.shape)

    def build(self, ops: list[Operation], x: SSAValue) -> SSAValue:
        ops.append(cast := nn.CastOp.make(x, result_elements=f32))
        return cast.results[0]


def int_to_float_cases() -> list[IntToFloatCase]:
    """ONNX Cast after MatMulInteger: i32 beyond 2^24 rounds to the nearest float32."""
    rng = np.random.default_rng(11)
    wide = rng.integers(-(2**31), 2**31, (3, 17)).astype(np.int32)
    wide.flat[:3] = [2**24 + 1, -(2**31), 2**31 - 1]
    return [
        IntToFloatCase("int32", wide),
        IntToFloatCase("uint8", rng.integers(0, 256, (5,)).astype(np.uint8)),
    ]


CASES = {"qcast": qcast_cases, "dcast": dcast_cases, "int-to-float": int_to_float_cases}


@pytest.mark.parametrize("kind", list(CASES))
def test_casts_match_the_reference_exactly(kind: str) -> None:
    cases = CASES[kind]()
    module, executable, inputs = cases_executable(f"test_{kind}_0", cases)
    executable, inputs, expected = reference_then_lower(module, executable, inputs)
    actual = CpuRuntime().load(executable).execute("entry", inputs)
    assert_each_equal(cases, actual, expected)


def test_a_half_precision_cast_is_refused() -> None:
    block = Block(arg_types=[TensorType(Float16Type(), (4,))])
    element = UniformQuantizedType.per_tensor(element_type("int8"), Float16Type(), 0.5, 0)  # type: ignore[arg-type]
    cast = quant.QCastOp(block.args[0], TensorType(element, (4,)))
    answer = check_op(cast)
    assert not answer
    assert answer.reason == "cpu: 'quant.qcast' on f16 (float32 only)"
