"""ONNX forms of the differential fuzzer's graphs (`fuzz/graphs.py`), so that irc's ONNX
importer and onnxruntime join the comparison.

`to_onnx(graph)` emits an opset-20 model with inputs `g0_in<i>` and outputs `g0_out<j>` (the
names `build_module` gives), or None when the graph has no ONNX form here: NHWC-only ops
(an NHWC conv, pool, resize or batch_norm), quantized chains, or an op this emitter does not
map. `check_onnx` runs the model through `irc.compile(path, ["reference"])`
("onnx-import") and through onnxruntime ("onnxruntime") and compares both with the
reference's outputs of the `nn` graph, with `compare` of `fuzz/differential.py`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from fuzz.graphs import Const, Graph

OPSET = 20
"""Gelu (both forms) is an ONNX op from opset 20 (reduce axes are an input from 18)."""
UNARY_ONNX = {
    "relu": "Relu",
    "sigmoid": "Sigmoid",
    "tanh": "Tanh",
    "hard_swish": "HardSwish",
    "erf": "Erf",
    "exp": "Exp",
    "log": "Log",
    "sqrt": "Sqrt",
    "abs": "Abs",
    "neg": "Neg",
}
BINARY_ONNX = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow"}
BINARY_ONNX |= {"maximum": "Max", "minimum": "Min"}
COMPARE_ONNX = {"eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater"}
COMPARE_ONNX |= {"ge": "GreaterOrEqual"}
LOGICAL_ONNX = {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}
REDUCE_ONNX = {"mean": "ReduceMean", "sum": "ReduceSum", "max": "ReduceMax"}
REDUCE_ONNX |= {"min": "ReduceMin", "prod": "ReduceProd"}


KNOWN_ORT = "known: onnxruntime drops NaN: "
"""The prefix of an onnxruntime difference that docs/semantics.md explains."""


def ort_drops_nan(ref: np.ndarray, got: np.ndarray) -> bool:
    """Whether `got` differs from `ref` only where the reference is NaN: onnxruntime's
    MaxPool, ReduceMax/ReduceMin and Max/Min skip NaN, and its Resize interpolates an
    infinity with itself to the infinity (docs/semantics.md)."""
    from fuzz.differential import compare

    if ref.dtype.kind != "f" or ref.shape != got.shape:
        return False
    return compare(np.where(np.isnan(ref), got, ref), got) is None


class _NoForm(Exception):
    """The graph has no ONNX form here."""


class _Emitter:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, v: int) -> str:
        if v in self.graph.inputs:
            return f"g0_in{self.graph.inputs.index(v)}"
        return f"v{v}"

    def fresh(self) -> str:
        self.count += 1
        return f"t{self.count}"

    def const(self, array: np.ndarray) -> str:
        n = self.fresh()
        self.inits.append(numpy_helper.from_array(np.asarray(array), n))
        return n

    def operand(self, o: object) -> str:
        if isinstance(o, int):
            return self.name(o)
        if isinstance(o, Const):
            if o.qtype is not None:
                raise _NoForm("quantized constant")
            return self.const(o.array)
        raise _NoForm("operand")

    def node(self, op: str, inputs: Sequence[str], out: str | None = None, **attrs) -> str:
        out = out or self.fresh()
        self.nodes.append(helper.make_node(op, list(inputs), [out], **attrs))
        return out

    def activation(self, x: str, kind: str, out: str) -> str:
        f32 = np.float32
        if kind == "none":
            return self.node("Identity", [x], out)
        if kind == "relu":
            return self.node("Relu", [x], out)
        if kind == "relu6":
            return self.node("Clip", [x, self.const(f32(0)), self.const(f32(6))], out)
        if kind == "relu_n1_to_1":
            return self.node("Clip", [x, self.const(f32(-1)), self.const(f32(1))], out)
        if kind == "tanh":
            return self.node("Tanh", [x], out)
        raise _NoForm(kind)


def _layout_ok(node_props: dict) -> None:
    if node_props.get("layout", "NCHW") != "NCHW":
        raise _NoForm("NHWC")


def _emit(e: _Emitter) -> None:
    g = e.graph
    f32 = np.float32
    for n in g.nodes:
        p = n.props
        out = e.name(n.results[0])
        if any(g.values[v].kind == "q" for v in [*n.value_operands(), *n.results]):
            raise _NoForm("quantized")
        ins = [e.operand(o) if o is not None else "" for o in n.operands if not isinstance(o, list)]
        k = n.kind
        act = p.get("activation", "none")
        if k in UNARY_ONNX:
            e.node(UNARY_ONNX[k], ins, out)
        elif k == "relu6":
            e.node("Clip", [ins[0], e.const(f32(0)), e.const(f32(6))], out)
        elif k == "clip":
            # an absent nn.clip bound is unbounded; an absent ONNX Clip bound is the float
            # maximum (the spec's numeric_limits default: onnxruntime clamps inf to
            # 3.4e38), so the bound is stated as ±inf (docs/semantics.md, seed 2000783)
            lo = e.const(f32(p["min"] if p.get("min") is not None else -np.inf))
            hi = e.const(f32(p["max"] if p.get("max") is not None else np.inf))
            e.node("Clip", [ins[0], lo, hi], out)
        elif k == "leaky_relu":
            e.node("LeakyRelu", ins, out, alpha=float(p.get("alpha", 0.01)))
        elif k == "hard_sigmoid":
            e.node(
                "HardSigmoid",
                ins,
                out,
                alpha=float(p.get("alpha", 0.2)),
                beta=float(p.get("beta", 0.5)),
            )
        elif k == "gelu":  # the op, not 0.5 x (1 + erf(x / sqrt 2)): its tail cancels
            e.node("Gelu", ins, out, approximate=str(p.get("approximate", "none")))
        elif k == "rsqrt":
            e.node("Reciprocal", [e.node("Sqrt", ins)], out)
        elif k in BINARY_ONNX:
            t = e.node(BINARY_ONNX[k], ins, out if act == "none" else None)
            if act != "none":
                e.activation(t, act, out)
        elif k == "squared_difference":
            d = e.node("Sub", ins)
            e.node("Mul", [d, d], out)
        elif k == "prelu":
            e.node("PRelu", ins, out)
        elif k == "compare":
            if p["kind"] == "ne":
                e.node("Not", [e.node("Equal", ins)], out)
            else:
                e.node(COMPARE_ONNX[p["kind"]], ins, out)
        elif k in LOGICAL_ONNX:
            e.node(LOGICAL_ONNX[k], ins, out)
        elif k == "logical_not":
            e.node("Not", ins, out)
        elif k == "select":
            e.node("Where", ins, out)
        elif k in ("conv2d", "conv2d_transpose"):
            _layout_ok(p)
            attrs = {
                "strides": list(p.get("strides", [1, 1])),
                "dilations": list(p.get("dilations", [1, 1])),
                "pads": list(p.get("pads", [0, 0, 0, 0])),
                "group": int(p.get("groups", 1)),
            }
            ins = [x for x in ins if x]
            op = "Conv" if k == "conv2d" else "ConvTranspose"
            t = e.node(op, ins, out if act == "none" else None, **attrs)
            if act != "none":
                e.activation(t, act, out)
        elif k == "fully_connected":
            w = n.operands[1]
            if not isinstance(w, Const):
                raise _NoForm("weights")
            t = e.node("MatMul", [ins[0], e.const(np.ascontiguousarray(w.array.T))])
            if n.operands[2] is not None:
                t = e.node("Add", [t, ins[2]])
            e.activation(t, act, out)
        elif k == "batch_matmul":
            a, b = ins
            for flag, idx in (("adj_x", 0), ("adj_y", 1)):
                if p.get(flag):
                    rank = len(g.values[n.value_operands()[idx]].shape)
                    perm = [*range(rank - 2), rank - 1, rank - 2]
                    t = e.node("Transpose", [a if idx == 0 else b], perm=perm)
                    a, b = (t, b) if idx == 0 else (a, t)
            e.node("MatMul", [a, b], out)
        elif k in ("max_pool2d", "avg_pool2d"):
            _layout_ok(p)
            attrs = {
                "kernel_shape": list(p["kernel"]),
                "strides": list(p.get("strides", [1, 1])),
                "pads": list(p.get("pads", [0, 0, 0, 0])),
            }
            if k == "max_pool2d":
                attrs["dilations"] = list(p.get("dilations", [1, 1]))
                t = e.node("MaxPool", ins, out if act == "none" else None, **attrs)
            else:
                attrs["count_include_pad"] = int(bool(p.get("count_include_pad")))
                t = e.node("AveragePool", ins, out if act == "none" else None, **attrs)
            if act != "none":
                e.activation(t, act, out)
        elif k == "reduce":
            axes = list(p["axes"])
            keep = int(bool(p["keepdims"]))
            e.node(
                REDUCE_ONNX[p["kind"]],
                [ins[0], e.const(np.array(axes, np.int64))],
                out,
                keepdims=keep,
            )
        elif k in ("softmax", "log_softmax"):
            x = ins[0]
            beta = p.get("beta", 1.0)
            if beta != 1.0:
                x = e.node("Mul", [x, e.const(f32(beta))])
            e.node(
                "Softmax" if k == "softmax" else "LogSoftmax", [x], out, axis=int(p.get("axis", -1))
            )
        elif k == "concat":
            (parts,) = [o for o in n.operands if isinstance(o, list)]
            e.node("Concat", [e.operand(x) for x in parts], out, axis=int(p["axis"]))
            if act != "none":
                raise _NoForm("concat activation")
        elif k == "split":
            outs = [e.name(r) for r in n.results]
            sizes = e.const(np.array(p["sizes"], np.int64))
            e.nodes.append(helper.make_node("Split", [ins[0], sizes], outs, axis=int(p["axis"])))
        elif k == "slice":
            rank = len(p["begin"])
            e.node(
                "Slice",
                [
                    ins[0],
                    e.const(np.array(p["begin"], np.int64)),
                    e.const(np.array(p["end"], np.int64)),
                    e.const(np.arange(rank, dtype=np.int64)),
                    e.const(np.array(p["strides"], np.int64)),
                ],
                out,
            )
        elif k == "pad":
            pads = list(p["pads"])
            onnx_pads = pads[0::2] + pads[1::2]
            value = e.const(f32(p.get("value", 0.0)))
            e.node(
                "Pad",
                [ins[0], e.const(np.array(onnx_pads, np.int64)), value],
                out,
                mode=p.get("mode", "constant"),
            )
        elif k == "transpose":
            e.node("Transpose", ins, out, perm=list(p["perm"]))
        elif k == "reshape":
            e.node("Reshape", [ins[0], e.const(np.array(p["shape"], np.int64))], out)
        elif k == "resize":
            _layout_ok(p)
            shape = g.values[n.value_operands()[0]].shape
            sizes = np.array([shape[0], shape[1], *p["size"]], np.int64)
            attrs = {
                "mode": "nearest" if p.get("mode", "nearest") == "nearest" else "linear",
                "coordinate_transformation_mode": p.get("coordinate_mode", "half_pixel"),
            }
            if attrs["mode"] == "nearest":
                attrs["nearest_mode"] = p.get("nearest_mode", "round_prefer_floor")
            e.node("Resize", [ins[0], "", "", e.const(sizes)], out, **attrs)
        elif k == "gather":
            e.node("Gather", ins, out, axis=int(p["axis"]))
        elif k == "broadcast_to":
            e.node("Expand", [ins[0], e.const(np.array(p["shape"], np.int64))], out)
        elif k == "batch_norm":
            _layout_ok(p)
            e.node("BatchNormalization", ins, out, epsilon=float(p.get("epsilon", 1e-5)))
        else:
            raise _NoForm(k)


def _elem(kind: str) -> int:
    return TensorProto.BOOL if kind == "i1" else TensorProto.FLOAT


def to_onnx(graph: Graph) -> onnx.ModelProto | None:
    """The graph as an ONNX model, or None when it has no ONNX form here."""
    e = _Emitter(graph)
    try:
        _emit(e)
    except _NoForm:
        return None
    if any(graph.values[v].kind == "q" for v in graph.inputs):
        return None
    inputs = [
        helper.make_tensor_value_info(
            e.name(v), _elem(graph.values[v].kind), list(graph.values[v].shape)
        )
        for v in graph.inputs
    ]
    outputs = []
    for j, v in enumerate(graph.outputs):
        e.node("Identity", [e.name(v)], f"g0_out{j}")
        t = graph.values[v]
        outputs.append(helper.make_tensor_value_info(f"g0_out{j}", _elem(t.kind), list(t.shape)))
    model = helper.make_model(
        helper.make_graph(e.nodes, "fuzz", inputs, outputs, e.inits),
        opset_imports=[helper.make_opsetid("", OPSET)],
    )
    model.ir_version = 9
    return model


def check_onnx(
    graph: Graph, inputs: Sequence[np.ndarray], reference: Sequence[np.ndarray] | None
) -> dict[str, str] | None:
    """Mismatches of the importer ("onnx-import") and onnxruntime against the reference's
    outputs of the `nn` graph; None when the graph has no ONNX form (or no reference)."""
    import warnings

    import irc
    from fuzz.differential import compare, describe_exception

    if reference is None:
        return None
    model = to_onnx(graph)
    if model is None:
        return None
    feed = {f"g0_in{i}": a for i, a in enumerate(inputs)}
    found: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.onnx"
        onnx.save(model, path)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = irc.compile(str(path), targets=["reference"]).run(feed)
            for j, ref in enumerate(reference):
                why = compare(ref, np.asarray(got[f"g0_out{j}"]))
                if why is not None:
                    found["onnx-import"] = f"output {j}: {why}"
                    break
        except Exception as exc:
            found["onnx-import"] = f"crash: {describe_exception(exc)}"
        try:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            options.log_severity_level = 3
            session = ort.InferenceSession(model.SerializeToString(), options)
            outs = session.run(None, feed)
            for j, ref in enumerate(reference):
                why = compare(ref, np.asarray(outs[j]))
                if why is not None:
                    known = ort_drops_nan(ref, np.asarray(outs[j]))
                    found["onnxruntime"] = f"{KNOWN_ORT if known else ''}output {j}: {why}"
                    break
        except ImportError:
            pass
        except Exception as exc:
            found["onnxruntime"] = f"crash: {describe_exception(exc)}"
    return found
