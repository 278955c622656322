"""NaN / ±Inf regression tests of the OpenCL target against the reference (docs/semantics.md).

Each case was a mismatch of the differential fuzzer (`fuzz/differential.py`): OpenCL's fmax /
fmin return the non-NaN operand and `-cl-fast-relaxed-math` let the compiler assume there is
no NaN or Inf, so relu, relu6, clip, maximum / minimum, max-pool, reduce max / min and the
fused activations turned NaN into a number; PoCL's tanh(-inf) = -0.99999994 made
gelu(tanh)(-1e30) = -3e22; and qcast of ±inf / NaN saturated the wrong way. One graph per op
family, all in one module (one OpenCL program build), compared with the fuzzer's rule.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from cpu_support import needs_compiler
from opencl_support import needs_device
from xdsl.dialects.builtin import f32

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.differential import compare
from fuzz.graphs import Const, Graph, Node, VType, build_module, i8
from irc.dialects.quant import UniformQuantizedType

pytestmark = pytest.mark.private_cache

EDGES = np.array(
    [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-40, 3e38, -3e38, 1e30, -1e30, 2.5, -2.5, 7.0, -7.0],
    np.float32,
)


def _edge_tensor(shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = rng.standard_normal(shape).astype(np.float32)
    flat = out.reshape(-1)
    flat[: min(flat.size, EDGES.size)] = EDGES[: flat.size]
    rng.shuffle(flat)
    return out


def _unary(kind: str, shape: tuple[int, ...] = (2, 14), **props: object) -> Graph:
    return Graph([VType(shape), VType(shape)], [0], [Node(kind, [0], dict(props), [1])], [1])


def _binary(kind: str, shape: tuple[int, ...] = (14, 14), **props: object) -> Graph:
    nodes = [Node(kind, [0, 1], dict(props), [2])]
    return Graph([VType(shape), VType(shape), VType(shape)], [0, 1], nodes, [2])


def _op(op: str, in_shape, out_shape, operands=None, **props: object) -> Graph:
    node = Node(op, operands or [0], dict(props), [1])
    return Graph([VType(in_shape), VType(out_shape)], [0], [node], [1])


def _cases() -> dict[str, Graph]:
    conv_w = Const(np.ones((3, 1, 1, 14), np.float32))
    qt = UniformQuantizedType.per_tensor(i8, f32, 0.5, -22)  # type: ignore[arg-type]
    qcast = Graph(
        [VType((1, 2, 7, 14)), VType((1, 2, 7, 14), "q", qt), VType((1, 2, 7, 14), "q", qt)],
        [0],
        [Node("qcast", [0], {}, [1]), Node("relu", [1], {}, [2])],
        [2],
    )
    return {
        "relu": _unary("relu"),
        "relu6": _unary("relu6"),
        "clip_both": _unary("clip", min=-1.5, max=2.0),
        "clip_min": _unary("clip", min=-1.5),
        "clip_max": _unary("clip", max=2.0),
        "hard_sigmoid": _unary("hard_sigmoid"),
        "hard_swish": _unary("hard_swish"),
        "leaky_relu": _unary("leaky_relu", alpha=0.1),
        "gelu_tanh": _unary("gelu", approximate="tanh"),
        "gelu": _unary("gelu"),
        "maximum": _binary("maximum"),
        "minimum": _binary("minimum"),
        "add_relu": _binary("add", activation="relu"),
        "mul_relu6": _binary("mul", activation="relu6"),
        "sub_relu_n1_to_1": _binary("sub", activation="relu_n1_to_1"),
        "conv_relu6": _op(
            "conv2d",
            (1, 4, 4, 14),
            (1, 4, 4, 3),
            [0, conv_w, None],
            layout="NHWC",
            activation="relu6",
        ),
        "max_pool": _op(
            "max_pool2d",
            (1, 4, 4, 14),
            (1, 2, 2, 14),
            kernel=[2, 2],
            strides=[2, 2],
            layout="NHWC",
        ),
        "max_pool_padded": _op(
            "max_pool2d",
            (1, 4, 4, 14),
            (1, 4, 4, 14),
            kernel=[3, 3],
            pads=[1, 1, 1, 1],
            layout="NHWC",
        ),
        "reduce_max": _op("reduce", (14, 14), (14,), kind="max", axes=[1], keepdims=False),
        "reduce_min": _op("reduce", (14, 14), (14,), kind="min", axes=[0], keepdims=False),
        "softmax": _op("softmax", (14, 14), (14, 14)),
        "softmax_axis0": _op("softmax", (14, 14), (14, 14), axis=0),
        "log_softmax": _op("log_softmax", (14, 14), (14, 14)),
        "qcast_relu": qcast,
        "pad_nan_value": _op("pad", (2, 14), (4, 14), pads=[1, 1, 0, 0], value=float("nan")),
        "pad_inf_value": _op("pad", (2, 14), (2, 16), pads=[0, 0, 1, 1], value=float("-inf")),
    }


def _inputs(graph: Graph, seed: int) -> list[np.ndarray]:
    return [_edge_tensor(graph.values[v].shape, seed + i) for i, v in enumerate(graph.inputs)]


def _run(graphs: list[Graph], inputs: list[list[np.ndarray]], target: str) -> list[np.ndarray]:
    import irc

    compiled = irc.compile(build_module(graphs), targets=[target])
    feed = {f"g{k}_in{i}": a for k, ins in enumerate(inputs) for i, a in enumerate(ins)}
    result = compiled.run(feed)
    return [np.asarray(result[f"g{k}_out0"]) for k in range(len(graphs))]


@needs_device
def test_opencl_matches_reference_on_nan_and_inf() -> None:
    cases = _cases()
    graphs = list(cases.values())
    inputs = [_inputs(g, 10 * k) for k, g in enumerate(graphs)]
    with np.errstate(all="ignore"):
        expected = _run(graphs, inputs, "reference")
    got = _run(graphs, inputs, "opencl")
    failures = []
    for name, ref, out in zip(cases, expected, got, strict=True):
        why = compare(ref, out)
        if why is not None:
            failures.append(f"{name}: {why}")
    assert not failures, "\n".join(failures)


@needs_device
def test_every_case_runs_on_opencl() -> None:
    """The cases are not left to the host (where they would pass trivially)."""
    import irc

    compiled = irc.compile(build_module(list(_cases().values())), targets=["opencl"])
    assert "host: 0 ops" in compiled.summary, compiled.summary


def test_reference_relu_and_max_propagate_nan() -> None:
    """The documented semantics themselves (docs/semantics.md), on the reference."""
    x = np.array([np.nan, -np.inf, np.inf, -1.0, 0.5], np.float32)
    graphs = [_unary("relu", (5,)), _unary("relu6", (5,)), _unary("clip", (5,), min=0.0, max=1.0)]
    out = _run(graphs, [[x], [x], [x]], "reference")
    np.testing.assert_array_equal(out[0], [np.nan, 0.0, np.inf, 0.0, 0.5])
    np.testing.assert_array_equal(out[1], [np.nan, 0.0, 6.0, 0.0, 0.5])
    np.testing.assert_array_equal(out[2], [np.nan, 0.0, 1.0, 0.0, 0.5])


def test_reference_qcast_saturates_inf_and_maps_nan_to_zero_point() -> None:
    qt = UniformQuantizedType.per_tensor(i8, f32, 0.5, -22)  # type: ignore[arg-type]
    graph = Graph([VType((6,)), VType((6,), "q", qt)], [0], [Node("qcast", [0], {}, [1])], [1])
    x = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 3.0], np.float32)
    with np.errstate(all="ignore"):
        (out,) = _run([graph], [[x]], "reference")
    np.testing.assert_array_equal(out, np.array([-22, 127, -128, 127, -128, -16], np.int8))


@pytest.mark.parametrize("target", ["reference", pytest.param("cpu", marks=needs_compiler)])
def test_hard_swish_does_not_overflow_near_float_max(target: str) -> None:
    """x * (clip(x + 3, 0, 6) / 6): hard_swish(3.4e38) is 3.4e38, not inf (onnxruntime agrees;
    `(x * clip) / 6` overflowed on the reference and cpu targets)."""
    x = np.array([3.4e38, -3.4e38, 1e38, np.nan, np.inf, -np.inf, 1.0, -4.0], np.float32)
    with np.errstate(all="ignore"):
        (out,) = _run([_unary("hard_swish", (8,))], [[x]], target)
    expected = np.array([3.4e38, -0.0, 1e38, np.nan, np.inf, np.nan, 4 / 6, -0.0], np.float32)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


@needs_device
def test_softmax_of_huge_values_and_masked_rows() -> None:
    """softmax(beta * x) where beta * x - max is fused into an fma under -cl-mad-enable: the
    maximum's unrounded residual (~1e28) overflowed exp() and made the row NaN (fuzzer seed
    200121: softmax beta=2.61 axis=0 of [-inf, 1.2e35, 4.3e19]). A row of -inf stays NaN."""
    rows = np.array(
        [[-np.inf, 1.2445122e35, 4.3467618e19], [-np.inf, -np.inf, -np.inf], [1.0, 2.0, 3.0]],
        np.float32,
    )
    graphs = [
        _op("softmax", (3, 3), (3, 3), beta=2.61),
        _op("softmax", (3, 3), (3, 3), axis=0, beta=2.61),
        _op("log_softmax", (3, 3), (3, 3)),
    ]
    inputs = [[rows], [np.ascontiguousarray(rows.T)], [rows]]
    with np.errstate(all="ignore"):
        expected = _run(graphs, inputs, "reference")
    got = _run(graphs, inputs, "opencl")
    for ref, out in zip(expected, got, strict=True):
        assert compare(ref, out) is None, (ref, out)
    np.testing.assert_array_equal(expected[0][0], [0.0, 1.0, 0.0])
