"""ONNX Clip with an absent bound (differential fuzzer, seed 2000783: `nn.clip` with only a
minimum, then a conv, fed +inf: the reference gave inf, onnxruntime 4.09e37).

The ONNX spec's default bounds are numeric_limits<float>::lowest() and max(), so onnxruntime
clamps ±inf to ∓3.4e38 where a bound is absent; `nn.clip` without a bound is unbounded. The
fuzzer's ONNX form now states the absent bound as ±inf (what the `nn` op means); irc's
importer reads an absent ONNX bound of a float tensor as the spec's limit (fixed).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx_support import make_onnx_model, run_onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.differential import graph_inputs, run_target
from fuzz.graphs import Graph, Node, VType
from fuzz.onnx_emit import check_onnx, to_onnx

FLT_MAX = np.finfo(np.float32).max
EDGES = np.array([[np.inf, -np.inf, np.nan, 2.0, -0.0, 1e38]], np.float32)


@pytest.mark.parametrize("bounds", [{"min": 1.41}, {"max": -0.5}, {"min": -1.0, "max": 2.0}])
def test_onnx_form_of_a_one_sided_clip_agrees_with_onnxruntime(bounds: dict) -> None:
    t = VType(EDGES.shape)
    graph = Graph([t, t], [0], [Node("clip", [0], bounds, [1])], [1])
    (ref,) = run_target([graph], [[EDGES]], "reference")
    assert ref.outputs is not None
    assert np.isinf(ref.outputs[0]).any() == (len(bounds) == 1)
    model = to_onnx(graph)
    assert model is not None
    assert check_onnx(graph, [EDGES], ref.outputs) == {}


def test_seed_2000783_agrees_with_onnxruntime() -> None:
    graph, inputs, _ = graph_inputs(2000783, 12, 0.2)
    (ref,) = run_target([graph], [inputs], "reference")
    assert check_onnx(graph, inputs, ref.outputs) == {}


def test_onnxruntime_clamps_inf_where_a_bound_is_absent() -> None:
    """What the spec says and onnxruntime does (the reason for the explicit ±inf)."""
    (y,) = run_onnx(
        helper.make_node("Clip", ["X", "lo", ""], ["Y"]),
        {"X": EDGES},
        constants={"lo": np.array(0.0, np.float32)},
    )
    assert y[0, 0] == FLT_MAX
    assert y[0, 1] == 0.0


def test_irc_imports_an_absent_clip_bound_as_the_float_maximum(tmp_path: Path) -> None:
    import irc

    node = helper.make_node("Clip", ["X", "lo", ""], ["Y"])
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, list(EDGES.shape))],
        [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, list(EDGES.shape))],
        [numpy_helper.from_array(np.array(0.0, np.float32), "lo")],
    )
    path = tmp_path / "clip.onnx"
    onnx.save(make_onnx_model(graph, 18), path)
    (expected,) = run_onnx(node, {"X": EDGES}, constants={"lo": np.array(0.0, np.float32)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = irc.compile(str(path), targets=["reference"]).run({"X": EDGES})["Y"]
    # exactly: the comparison rule takes 3.4e38 and inf as one result (OVERFLOW_EDGE); a
    # conv after the clip scales 3.4e38 down to a plain number (the seed's 4.09e37)
    np.testing.assert_array_equal(np.asarray(got), expected)
