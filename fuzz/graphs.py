"""Random valid `nn` graphs for differential testing (`fuzz/differential.py`).

A `Graph` is a plain description (value types, nodes, inputs, outputs) independent of xDSL:
the generator grows it op by op, checking every node with the op's own shape rule
(`Op.result_shapes`, the rule the verifier and `infer-shapes` use), the minimiser edits it, and
`build_module` turns it into an `nn` module with the dialect's builders (`Op.make`).

Generation is deterministic for a seed: `generate(seed)` draws 1-30 ops from the families of
`FAMILIES` on float32 (and i1 masks of compare/logic/select), sometimes on a quantized int8 or
uint8 chain (`quant.qcast` → quantized ops → `quant.dcast`, random scales and zero points).
Operands are usually the newest value (depth), sometimes an older one (branches); binary
ops, concat and select join two values. Shapes stay small (≤ 4096 elements a tensor).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    FunctionType,
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
    TensorType,
    f32,
    i1,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from irc.dialects import nn, quant
from irc.dialects.quant import UniformQuantizedType

MAX_ELEMENTS = 4096
"""No tensor of a generated graph has more elements (keeps a run fast)."""

i8 = IntegerType(8, Signedness.SIGNLESS)
u8 = IntegerType(8, Signedness.UNSIGNED)


@dataclass(frozen=True)
class VType:
    """A value's type: shape and element kind (`f32`, `i1`, or `q` with its quant type)."""

    shape: tuple[int, ...]
    kind: str = "f32"
    qtype: UniformQuantizedType | None = None

    @property
    def element(self) -> Attribute:
        if self.kind == "f32":
            return f32
        if self.kind == "i1":
            return i1
        assert self.qtype is not None
        return self.qtype

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def tensor(self) -> TensorType:
        return TensorType(self.element, self.shape)

    def numpy_dtype(self) -> np.dtype:
        if self.kind == "f32":
            return np.dtype(np.float32)
        if self.kind == "i1":
            return np.dtype(np.bool_)
        assert self.qtype is not None
        return np.dtype(np.uint8 if self.qtype.storage_type == u8 else np.int8)


@dataclass(frozen=True, eq=False)
class Const:
    """A constant operand (weights, slopes, indices)."""

    array: np.ndarray
    qtype: UniformQuantizedType | None = None


Operand = int | Const | None | list  # value id, constant, absent optional, variadic list


@dataclass(eq=False)
class Node:
    """One op: its kind (key of `OPS`), operands, properties and result value ids."""

    kind: str
    operands: list[Operand]
    props: dict[str, Any]
    results: list[int]
    result_kinds: list[VType] = field(default_factory=list)

    def value_operands(self) -> list[int]:
        out: list[int] = []
        for o in self.operands:
            if isinstance(o, int):
                out.append(o)
            elif isinstance(o, list):
                out += [v for v in o if isinstance(v, int)]
        return out


@dataclass
class Graph:
    """A random graph: `values[i]` is value i's type; inputs and outputs are value ids."""

    values: list[VType]
    inputs: list[int]
    nodes: list[Node]
    outputs: list[int]
    seed: int = 0

    def op_count(self) -> int:
        return len(self.nodes)

    def op_kinds(self) -> list[str]:
        return [n.kind for n in self.nodes]

    def copy(self) -> Graph:
        return Graph(
            list(self.values),
            list(self.inputs),
            [replace(n, operands=list(n.operands), props=dict(n.props)) for n in self.nodes],
            list(self.outputs),
            self.seed,
        )


OPS: dict[str, type[nn.NNOp] | type] = {
    "conv2d": nn.Conv2DOp,
    "conv2d_transpose": nn.Conv2DTransposeOp,
    "fully_connected": nn.FullyConnectedOp,
    "batch_matmul": nn.BatchMatmulOp,
    "max_pool2d": nn.MaxPool2DOp,
    "avg_pool2d": nn.AvgPool2DOp,
    "reduce": nn.ReduceOp,
    "softmax": nn.SoftmaxOp,
    "log_softmax": nn.LogSoftmaxOp,
    "reshape": nn.ReshapeOp,
    "transpose": nn.TransposeOp,
    "concat": nn.ConcatOp,
    "split": nn.SplitOp,
    "slice": nn.SliceOp,
    "pad": nn.PadOp,
    "resize": nn.ResizeOp,
    "gather": nn.GatherOp,
    "broadcast_to": nn.BroadcastToOp,
    "compare": nn.CompareOp,
    "select": nn.SelectOp,
    "logical_not": nn.LogicalNotOp,
    "logical_and": nn.LogicalAndOp,
    "logical_or": nn.LogicalOrOp,
    "logical_xor": nn.LogicalXorOp,
    "batch_norm": nn.BatchNormOp,
    "prelu": nn.PReluOp,
    "qcast": quant.QCastOp,
    "dcast": quant.DCastOp,
}
UNARY = {
    "relu": nn.ReluOp,
    "relu6": nn.Relu6Op,
    "clip": nn.ClipOp,
    "leaky_relu": nn.LeakyReluOp,
    "sigmoid": nn.SigmoidOp,
    "tanh": nn.TanhOp,
    "hard_swish": nn.HardSwishOp,
    "hard_sigmoid": nn.HardSigmoidOp,
    "gelu": nn.GeluOp,
    "erf": nn.ErfOp,
    "exp": nn.ExpOp,
    "log": nn.LogOp,
    "sqrt": nn.SqrtOp,
    "rsqrt": nn.RsqrtOp,
    "abs": nn.AbsOp,
    "neg": nn.NegOp,
}
BINARY = {
    "add": nn.AddOp,
    "sub": nn.SubOp,
    "mul": nn.MulOp,
    "div": nn.DivOp,
    "maximum": nn.MaximumOp,
    "minimum": nn.MinimumOp,
    "pow": nn.PowOp,
    "squared_difference": nn.SquaredDifferenceOp,
}
OPS.update(UNARY)
OPS.update(BINARY)

ACTIVATED = ("conv2d", "conv2d_transpose", "fully_connected", "add", "sub", "mul", "div")


# ---- Building the IR ---------------------------------------------------------------------------


def _const_op(c: Const) -> nn.ConstantOp:
    array = np.array(c.array, order="C", copy=True)
    if c.qtype is not None:
        return nn.ConstantOp.from_array(array, TensorType(c.qtype, array.shape))
    return nn.ConstantOp.from_array(array)


def build_ops(graph: Graph, env: dict[int, SSAValue], block: Block) -> None:
    """Append the graph's ops to `block`; `env` maps value ids to SSA values (inputs set)."""
    for node in graph.nodes:
        operands: list[SSAValue | list[SSAValue] | None] = []

        def one(o: Operand) -> SSAValue:
            if isinstance(o, int):
                return env[o]
            assert isinstance(o, Const)
            c = _const_op(o)
            block.add_op(c)
            return c.output

        for o in node.operands:
            if o is None:
                operands.append(None)
            elif isinstance(o, list):
                operands.append([one(x) for x in o])
            else:
                operands.append(one(o))
        cls = OPS[node.kind]
        elements = [graph.values[r].element for r in node.results]
        if node.kind in ("qcast", "dcast"):
            (x,) = operands
            op = cls(x, graph.values[node.results[0]].tensor())  # type: ignore[call-arg]
        else:
            op = cls.make(*operands, result_elements=elements, **node.props)
        block.add_op(op)
        for r, res in zip(node.results, op.results, strict=True):
            env[r] = res


def build_module(graphs: Sequence[Graph], entry: str = "main") -> ModuleOp:
    """One module whose `@main` runs every graph; inputs `g<k>_in<i>`, outputs `g<k>_out<j>`."""
    arg_types = [graph.values[v].tensor() for graph in graphs for v in graph.inputs]
    block = Block(arg_types=arg_types)
    args = iter(block.args)
    outputs: list[SSAValue] = []
    in_names: list[str] = []
    out_names: list[str] = []
    for k, graph in enumerate(graphs):
        env: dict[int, SSAValue] = {}
        for i, v in enumerate(graph.inputs):
            env[v] = next(args)
            in_names.append(f"g{k}_in{i}")
        build_ops(graph, env, block)
        for j, v in enumerate(graph.outputs):
            outputs.append(env[v])
            out_names.append(f"g{k}_out{j}")
    block.add_op(ReturnOp(*outputs))
    func = FuncOp(
        entry,
        FunctionType.from_lists(arg_types, [v.type for v in outputs]),
        Region(block),
    )
    func.attributes["irc.input_names"] = ArrayAttr([StringAttr(n) for n in in_names])
    func.attributes["irc.output_names"] = ArrayAttr([StringAttr(n) for n in out_names])
    module = ModuleOp([func])
    module.verify()
    return module


# ---- Generation -------------------------------------------------------------------------------


class Gen:
    """The state of one graph's generation."""

    def __init__(self, seed: int, *, quantized_share: float = 0.2):
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.layout = "NHWC" if self.rng.random() < 0.5 else "NCHW"
        self.values: list[VType] = []
        self.inputs: list[int] = []
        self.nodes: list[Node] = []
        self.quantized = bool(self.rng.random() < quantized_share)

    # -- values --
    def new_value(self, t: VType) -> int:
        self.values.append(t)
        return len(self.values) - 1

    def new_input(self, shape: Sequence[int], kind: str = "f32") -> int:
        v = self.new_value(VType(tuple(int(d) for d in shape), kind))
        self.inputs.append(v)
        return v

    def pick(self, pred: Callable[[VType], bool] = lambda t: True) -> int | None:
        """Usually the newest matching value (depth), sometimes any (branches)."""
        cands = [i for i, t in enumerate(self.values) if pred(t)]
        if not cands:
            return None
        if self.rng.random() < 0.6:
            return cands[-1]
        return int(self.rng.choice(cands))

    def floats(self, rank: int | None = None) -> Callable[[VType], bool]:
        return lambda t: t.kind == "f32" and (rank is None or len(t.shape) == rank)

    def weights(self, shape: Sequence[int], scale: float | None = None) -> np.ndarray:
        fan_in = max(1, math.prod(shape[1:]) if len(shape) > 1 else 1)
        s = scale if scale is not None else 1.0 / math.sqrt(fan_in)
        return (self.rng.standard_normal(tuple(shape)) * s).astype(np.float32)

    def add(self, kind: str, operands: list[Operand], props: dict[str, Any]) -> list[int] | None:
        """Add a node when the op's shape rule accepts it (float results unless `props`
        of a compare: i1); None when it does not."""
        cls = OPS[kind]
        shapes: list[tuple[int, ...]] = []
        for o in operands:
            if o is None:
                continue
            items = o if isinstance(o, list) else [o]
            for x in items:
                shapes.append(self.values[x].shape if isinstance(x, int) else tuple(x.array.shape))
        full = {}
        kinds = {name: k for name, k, _, _ in cls._prop_kinds()}  # type: ignore[attr-defined]
        from irc.dialects.nn.base import to_prop_attr

        try:
            for name, value in props.items():
                if value is not None:
                    full[name] = to_prop_attr(kinds[name], value)
            for name, _, default, _ in cls._prop_kinds():  # type: ignore[attr-defined]
                if name not in full and default is not None:
                    full[name] = default
            out = cls.result_shapes(shapes, full)  # type: ignore[attr-defined]
        except (VerifyException, ValueError, IndexError, KeyError, TypeError):
            return None
        if any(d < 0 for s in out for d in s) or any(math.prod(s) > MAX_ELEMENTS for s in out):
            return None
        if any(math.prod(s) == 0 for s in out):
            return None
        first = next((self.values[x] for x in _flat_values(operands)), VType((), "f32"))
        if kind in ("compare", "logical_not", "logical_and", "logical_or", "logical_xor"):
            types = [VType(s, "i1") for s in out]
        elif first.kind == "q" and kind not in ("select",):
            types = [VType(s, "q", first.qtype) for s in out]
        else:
            kind_of = "f32" if kind != "select" else self.values[_flat_values(operands)[1]].kind
            qt = None if kind_of != "q" else self.values[_flat_values(operands)[1]].qtype
            types = [VType(s, kind_of, qt) for s in out]
        results = [self.new_value(t) for t in types]
        self.nodes.append(Node(kind, operands, props, results))
        return results

    def result_override(self, results: list[int], t: Sequence[VType]) -> None:
        for r, tt in zip(results, t, strict=True):
            self.values[r] = tt


def _flat_values(operands: Sequence[Operand]) -> list[int]:
    out: list[int] = []
    for o in operands:
        if isinstance(o, int):
            out.append(o)
        elif isinstance(o, list):
            out += [v for v in o if isinstance(v, int)]
    return out


def _layout_dims(layout: str, shape: Sequence[int]) -> tuple[int, int, int, int]:
    """(N, C, H, W) of a rank-4 shape."""
    if layout == "NHWC":
        n, h, w, c = shape
    else:
        n, c, h, w = shape
    return n, c, h, w


def _window(g: Gen, h: int, w: int, max_k: int = 3) -> dict[str, Any] | None:
    """Kernel, strides, dilations and pads that fit an h x w input."""
    rng = g.rng
    kh, kw = int(rng.integers(1, max_k + 1)), int(rng.integers(1, max_k + 1))
    sh, sw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    dh, dw = (1, 1) if rng.random() < 0.7 else (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    pads = [int(rng.integers(0, kh)), int(rng.integers(0, kw))]
    pads += [int(rng.integers(0, kh)), int(rng.integers(0, kw))]
    if rng.random() < 0.4:
        pads = [0, 0, 0, 0]
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    if h + pads[0] + pads[2] < eh or w + pads[1] + pads[3] < ew:
        return None
    return {"kernel": [kh, kw], "strides": [sh, sw], "dilations": [dh, dw], "pads": pads}


# ---- One generator per op family ---------------------------------------------------------------


def gen_unary(g: Gen) -> bool:
    x = g.pick(lambda t: t.kind == "f32")
    if x is None:
        return False
    kind = str(g.rng.choice(list(UNARY)))
    props: dict[str, Any] = {}
    rng = g.rng
    if kind == "clip":
        lo, hi = sorted(float(v) for v in np.round(rng.normal(size=2) * 3, 2))
        which = rng.integers(0, 3)
        props = {"min": lo if which != 2 else None, "max": hi if which != 1 else None}
    elif kind == "leaky_relu":
        props = {"alpha": float(np.round(rng.uniform(0.0, 0.5), 3))}
    elif kind == "hard_sigmoid" and rng.random() < 0.5:
        props = {"alpha": 1 / 6, "beta": 0.5}
    elif kind == "gelu":
        props = {"approximate": str(rng.choice(["none", "tanh"]))}
    return g.add(kind, [x], props) is not None


def _broadcast_partner(g: Gen, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with `shape`: a suffix with some dimensions set to 1."""
    rng = g.rng
    n = int(rng.integers(0, len(shape) + 1)) if rng.random() < 0.5 else len(shape)
    out = list(shape[len(shape) - n :])
    for i in range(len(out)):
        if rng.random() < 0.3:
            out[i] = 1
    if rng.random() < 0.15 and len(shape) < 4:  # the partner broadcasts the other way too
        out = [int(rng.integers(2, 4)), *shape]
        for i in range(1, len(out)):
            if rng.random() < 0.3:
                out[i] = 1
    return tuple(out)


def gen_binary(g: Gen, kinds: Sequence[str] = tuple(BINARY)) -> bool:
    a = g.pick(lambda t: t.kind == "f32")
    if a is None:
        return False
    rng = g.rng
    kind = str(rng.choice(list(kinds)))
    sa = g.values[a].shape
    choice = rng.random()
    b: Operand
    if choice < 0.35:  # join with another value of a compatible shape
        cands = [
            i
            for i, t in enumerate(g.values)
            if t.kind == "f32" and _broadcastable(t.shape, sa) and i != a
        ]
        b = int(rng.choice(cands)) if cands else a
    elif choice < 0.7:
        b = g.new_input(_broadcast_partner(g, sa))
    else:
        shape = _broadcast_partner(g, sa)
        b = Const(g.weights(shape, 1.0) + (2.0 if kind in ("div", "pow") else 0.0))
    if kind == "pow":
        # exponents as in models (x^2, x^0.5, ...): pow multiplies its base's relative error
        # by |exponent|, so a random 1e20 exponent only measures libm's last bits
        exponents = np.array([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 3.0], np.float32)
        b = Const(rng.choice(exponents, size=_broadcast_partner(g, sa)).astype(np.float32))
    operands = [a, b] if rng.random() < 0.8 or kind == "pow" else [b, a]
    props: dict[str, Any] = {}
    if kind in ACTIVATED and rng.random() < 0.4:
        props["activation"] = str(rng.choice(nn.ACTIVATIONS[1:]))
    if isinstance(operands[0], Const):
        operands = [operands[1], operands[0]]
    return g.add(kind, operands, props) is not None


def _broadcastable(a: Sequence[int], b: Sequence[int]) -> bool:
    for x, y in zip(reversed(a), reversed(b)):
        if x != y and x != 1 and y != 1:
            return False
    return True


def gen_prelu(g: Gen) -> bool:
    x = g.pick(lambda t: t.kind == "f32" and len(t.shape) >= 1)
    if x is None:
        return False
    s = g.values[x].shape
    slope = (s[-1],) if g.rng.random() < 0.6 else s
    return g.add("prelu", [x, Const(g.weights(slope, 0.5))], {}) is not None


def gen_compare_select(g: Gen) -> bool:
    rng = g.rng
    a = g.pick(lambda t: t.kind == "f32")
    if a is None:
        return False
    sa = g.values[a].shape
    cands = [i for i, t in enumerate(g.values) if t.kind == "f32" and _broadcastable(t.shape, sa)]
    b = int(rng.choice(cands)) if rng.random() < 0.5 else g.new_input(_broadcast_partner(g, sa))
    kind = str(rng.choice(["eq", "ne", "lt", "le", "gt", "ge"]))
    res = g.add("compare", [a, b], {"kind": kind})
    if res is None:
        return False
    (c,) = res
    if rng.random() < 0.25:
        masks = [
            i for i, t in enumerate(g.values) if t.kind == "i1" and t.shape == g.values[c].shape
        ]
        op = str(rng.choice(["logical_not", "logical_and", "logical_or", "logical_xor"]))
        if op == "logical_not":
            res = g.add(op, [c], {})
        else:
            res = g.add(op, [c, int(rng.choice(masks))], {})
        if res is None:
            return True
        (c,) = res
    if rng.random() < 0.85:
        sc = g.values[c].shape
        t = [i for i, v in enumerate(g.values) if v.kind == "f32" and _broadcastable(v.shape, sc)]
        x = int(rng.choice(t))
        y = int(rng.choice(t))
        g.add("select", [c, x, y], {})
    return True


def gen_conv(g: Gen, transpose: bool = False) -> bool:
    x = g.pick(g.floats(4))
    if x is None:
        return False
    rng = g.rng
    _n, c, h, w = _layout_dims(g.layout, g.values[x].shape)
    win = _window(g, h, w)
    if win is None:
        return False
    kh, kw = win.pop("kernel")
    groups = 1
    if not transpose:
        r = rng.random()
        if r < 0.3:
            groups = c
        elif r < 0.45:
            divisors = [d for d in range(1, c + 1) if c % d == 0]
            groups = int(rng.choice(divisors))
    mult = int(rng.integers(1, 3)) if groups == c and groups > 1 else 1
    oc = groups * mult if groups > 1 else int(rng.integers(1, 9))
    cin = c // groups
    if g.layout == "NHWC":
        fshape = (oc, kh, kw, cin)
    else:
        fshape = (oc, cin, kh, kw) if not transpose else (cin, oc, kh, kw)
    if transpose and g.layout == "NHWC":
        fshape = (oc, kh, kw, cin)
    props: dict[str, Any] = {
        "strides": win["strides"],
        "pads": win["pads"],
        "dilations": win["dilations"],
        "layout": g.layout,
    }
    if not transpose:
        props["groups"] = groups
    else:
        props["pads"] = [min(p, k - 1) for p, k in zip(win["pads"], [kh, kw, kh, kw])]
    if rng.random() < 0.4:
        props["activation"] = str(rng.choice(nn.ACTIVATIONS[1:]))
    bias = Const(g.weights((oc,), 0.5)) if rng.random() < 0.7 else None
    kind = "conv2d_transpose" if transpose else "conv2d"
    return g.add(kind, [x, Const(g.weights(fshape)), bias], props) is not None


def gen_fully_connected(g: Gen) -> bool:
    x = g.pick(lambda t: t.kind == "f32" and 1 <= len(t.shape) <= 3 and t.shape[-1] <= 256)
    if x is None:
        return False
    rng = g.rng
    k = g.values[x].shape[-1]
    units = int(rng.integers(1, 17))
    bias = Const(g.weights((units,), 0.5)) if rng.random() < 0.6 else None
    props: dict[str, Any] = {}
    if rng.random() < 0.3:
        props["activation"] = str(rng.choice(nn.ACTIVATIONS[1:]))
    return g.add("fully_connected", [x, Const(g.weights((units, k))), bias], props) is not None


def gen_batch_matmul(g: Gen) -> bool:
    x = g.pick(lambda t: t.kind == "f32" and 2 <= len(t.shape) <= 4)
    if x is None:
        return False
    rng = g.rng
    s = g.values[x].shape
    adj_x = bool(rng.random() < 0.3)
    adj_y = bool(rng.random() < 0.3)
    k = s[-2] if adj_x else s[-1]
    n = int(rng.integers(1, 9))
    batch = list(s[:-2])
    if batch and rng.random() < 0.3:
        batch = [1] * len(batch)
    rshape = (*batch, n, k) if adj_y else (*batch, k, n)
    # the right operand is a graph input (a second activation, as in attention)
    props = {"adj_x": adj_x, "adj_y": adj_y}
    return g.add("batch_matmul", [x, g.new_input(rshape)], props) is not None


def gen_pool(g: Gen) -> bool:
    x = g.pick(g.floats(4))
    if x is None:
        return False
    rng = g.rng
    _, _, h, w = _layout_dims(g.layout, g.values[x].shape)
    win = _window(g, h, w)
    if win is None:
        return False
    win["dilations"] = [1, 1]
    win["pads"] = [min(p, k - 1) for p, k in zip(win["pads"], win["kernel"] * 2)]
    kind = "max_pool2d" if rng.random() < 0.5 else "avg_pool2d"
    props = {**win, "layout": g.layout}
    if kind == "avg_pool2d":
        props["count_include_pad"] = bool(rng.random() < 0.5)
    if rng.random() < 0.2:
        props["activation"] = str(rng.choice(nn.ACTIVATIONS[1:]))
    return g.add(kind, [x], props) is not None


def gen_reduce(g: Gen) -> bool:
    x = g.pick(lambda t: t.kind == "f32" and len(t.shape) >= 1)
    if x is None:
        return False
    rng = g.rng
    rank = len(g.values[x].shape)
    count = int(rng.integers(1, rank + 1))
    axes = sorted(int(a) for a in rng.choice(rank, size=count, replace=False))
    if rng.random() < 0.3:
        axes = [a - rank for a in axes]
    kind = str(rng.choice(["mean", "sum", "max", "min", "prod"]))
    return (
        g.add("reduce", [x], {"kind": kind, "axes": axes, "keepdims": bool(rng.random() < 0.5)})
        is not None
    )


def gen_softmax(g: Gen) -> bool:
    x = g.pick(lambda t: t.kind == "f32" and len(t.shape) >= 1)
    if x is None:
        return False
    rng = g.rng
    rank = len(g.values[x].shape)
    axis = -1 if rng.random() < 0.6 else int(rng.integers(-rank, rank))
    if rng.random() < 0.6:
        props: dict[str, Any] = {"axis": axis}
        if rng.random() < 0.3:
            props["beta"] = float(np.round(rng.uniform(0.2, 3.0), 2))
        return g.add("softmax", [x], props) is not None
    return g.add("log_softmax", [x], {"axis": axis}) is not None


def gen_concat(g: Gen) -> bool:
    a = g.pick(lambda t: t.kind == "f32" and len(t.shape) >= 1)
    if a is None:
        return False
    rng = g.rng
    s = g.values[a].shape
    axis = int(rng.integers(0, len(s)))
    parts: list[Operand] = [a]
    for _ in range(int(rng.integers(1, 3))):
        same = [
            i
            for i, t in enumerate(g.values)
            if t.kind == "f32"
            and len(t.shape) == len(s)
            and all(d == e for j, (d, e) in enumerate(zip(t.shape, s)) if j != axis)
        ]
        r = rng.random()
        if r < 0.5:
            parts.append(int(rng.choice(same)))
        elif r < 0.8:
            shape = list(s)
            shape[axis] = int(rng.integers(1, 4))
            parts.append(g.new_input(shape))
        else:
            shape = list(s)
            shape[axis] = int(rng.integers(1, 4))
            parts.append(Const(g.weights(shape, 1.0)))
    order = list(rng.permutation(len(parts)))
    parts = [parts[i] for i in order]
    if not any(isinstance(p, int) for p in parts):
        return False
    return (
        g.add("concat", [parts], {"axis": axis if rng.random() < 0.7 else axis - len(s)})
        is not None
    )


def gen_split(g: Gen) -> bool:
    x = g.pick(lambda t: t.kind == "f32" and any(d >= 2 for d in t.shape))
    if x is None:
        return False
    rng = g.rng
    s = g.values[x].shape
    axes = [i for i, d in enumerate(s) if d >= 2]
    axis = int(rng.choice(axes))
    d = s[axis]
    cuts = sorted(set(int(c) for c in rng.integers(1, d, size=int(rng.integers(1, min(d, 4))))))
    sizes = [b - a for a, b in zip([0, *cuts], [*cuts, d])]
    return g.add("split", [x], {"axis": axis, "sizes": sizes}) is not None


def gen_slice(g: Gen) -> bool:
    x = g.pick(lambda t: t.kind == "f32" and len(t.shape) >= 1)
    if x is None:
        return False
    rng = g.rng
    s = g.values[x].shape
    begin, end, strides = [], [], []
    for d in s:
        b = int(rng.integers(0, d))
        e = int(rng.integers(b + 1, d + 1))
        begin.append(b)
        end.append(e)
        strides.append(int(rng.integers(1, 3)))
    return g.add("slice", [x], {"begin": begin, "end": end, "strides": strides}) is not None


EDGE_PAD_VALUES = (0.0, -1.5, float("-inf"), float("inf"), float("nan"), -0.0, 3.0e38)


def gen_pad(g: Gen) -> bool:
    x = g.pick(lambda t: t.kind == "f32" and 1 <= len(t.shape) <= 4)
    if x is None:
        return False
    rng = g.rng
    s = g.values[x].shape
    mode = str(rng.choice(["constant", "reflect", "edge"]))
    pads = []
    for d in s:
        top = int(rng.integers(0, 3)) if rng.random() < 0.6 else 0
        if mode == "reflect":
            top = min(top, d - 1)
        pads.append(top)
    for d in s:
        bottom = int(rng.integers(0, 3)) if rng.random() < 0.6 else 0
        if mode == "reflect":
            bottom = min(bottom, d - 1)
        pads.append(bottom)
    interleaved = [p for i in range(len(s)) for p in (pads[i], pads[len(s) + i])]
    props: dict[str, Any] = {"pads": interleaved, "mode": mode}
    if mode == "constant" and rng.random() < 0.5:
        props["value"] = float(rng.choice(EDGE_PAD_VALUES))
    return g.add("pad", [x], props) is not None


def gen_transpose(g: Gen) -> bool:
    x = g.pick(lambda t: t.kind == "f32" and len(t.shape) >= 2)
    if x is None:
        return False
    perm = [int(p) for p in g.rng.permutation(len(g.values[x].shape))]
    return g.add("transpose", [x], {"perm": perm}) is not None


def gen_reshape(g: Gen) -> bool:
    x = g.pick(lambda t: t.kind == "f32")
    if x is None:
        return False
    rng = g.rng
    total = g.values[x].size
    factors = []
    rest = total
    for p in (2, 3, 5, 7):
        while rest % p == 0:
            factors.append(p)
            rest //= p
    if rest > 1:
        factors.append(rest)
    rng.shuffle(factors)
    rank = int(rng.integers(1, 5))
    dims = [1] * rank
    for f in factors:
        dims[int(rng.integers(0, rank))] *= int(f)
    if rng.random() < 0.2:
        dims[int(rng.integers(0, rank))] = -1
    return g.add("reshape", [x], {"shape": dims}) is not None


def gen_resize(g: Gen) -> bool:
    x = g.pick(g.floats(4))
    if x is None:
        return False
    rng = g.rng
    _, _, h, w = _layout_dims(g.layout, g.values[x].shape)
    size = [
        max(1, int(h * rng.choice([0.5, 1, 1.5, 2, 3]))),
        max(1, int(w * rng.choice([0.5, 1, 2]))),
    ]
    mode = str(rng.choice(["nearest", "bilinear"]))
    props: dict[str, Any] = {
        "size": size,
        "mode": mode,
        "coordinate_mode": str(
            rng.choice(
                [
                    "half_pixel",
                    "align_corners",
                    "asymmetric",
                    "pytorch_half_pixel",
                    "tf_half_pixel_for_nn",
                ]
            )
        ),
        "layout": g.layout,
    }
    if mode == "nearest":
        props["nearest_mode"] = str(
            rng.choice(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
        )
    return g.add("resize", [x], props) is not None


def gen_gather(g: Gen) -> bool:
    x = g.pick(lambda t: t.kind == "f32" and len(t.shape) >= 1)
    if x is None:
        return False
    rng = g.rng
    s = g.values[x].shape
    axis = int(rng.integers(0, len(s)))
    ishape = tuple(int(d) for d in rng.integers(1, 4, size=int(rng.integers(0, 3))))
    idx = np.asarray(rng.integers(-s[axis], s[axis], size=ishape), dtype=np.int32)
    return g.add("gather", [x, Const(idx)], {"axis": axis, "batch_dims": 0}) is not None


def gen_broadcast_to(g: Gen) -> bool:
    x = g.pick(lambda t: t.kind == "f32" and len(t.shape) <= 3 and t.size <= 256)
    if x is None:
        return False
    rng = g.rng
    s = list(g.values[x].shape)
    shape = [d if d != 1 or rng.random() < 0.5 else int(rng.integers(2, 4)) for d in s]
    if rng.random() < 0.5:
        shape = [int(rng.integers(1, 4)), *shape]
    return g.add("broadcast_to", [x], {"shape": shape}) is not None


def gen_batch_norm(g: Gen) -> bool:
    x = g.pick(g.floats(4))
    if x is None:
        return False
    _, c, _, _ = _layout_dims(g.layout, g.values[x].shape)
    scale = Const(g.weights((c,), 1.0))
    offset = Const(g.weights((c,), 1.0))
    mean = Const(g.weights((c,), 1.0))
    var = Const(np.abs(g.weights((c,), 1.0)) + np.float32(0.1))
    return (
        g.add("batch_norm", [x, scale, offset, mean, var], {"epsilon": 1e-3, "layout": g.layout})
        is not None
    )


FAMILIES: dict[str, tuple[float, Callable[[Gen], bool]]] = {
    "unary": (3.0, gen_unary),
    "binary": (3.0, gen_binary),
    "prelu": (0.5, gen_prelu),
    "compare_select": (1.0, gen_compare_select),
    "conv2d": (2.5, gen_conv),
    "conv2d_transpose": (0.4, lambda g: gen_conv(g, transpose=True)),
    "fully_connected": (0.8, gen_fully_connected),
    "batch_matmul": (0.6, gen_batch_matmul),
    "pool": (1.5, gen_pool),
    "reduce": (1.0, gen_reduce),
    "softmax": (1.0, gen_softmax),
    "concat": (1.0, gen_concat),
    "split": (0.6, gen_split),
    "slice": (0.6, gen_slice),
    "pad": (0.8, gen_pad),
    "transpose": (0.6, gen_transpose),
    "reshape": (0.6, gen_reshape),
    "resize": (0.8, gen_resize),
    "gather": (0.4, gen_gather),
    "broadcast_to": (0.3, gen_broadcast_to),
    "batch_norm": (0.4, gen_batch_norm),
}
"""Op families, their relative weight and their generator."""


def _first_input(g: Gen) -> None:
    rng = g.rng
    r = rng.random()
    if r < 0.7:
        n = 1 if rng.random() < 0.8 else 2
        c = int(rng.choice([1, 2, 3, 4, 6, 8]))
        h, w = int(rng.integers(1, 10)), int(rng.integers(1, 10))
        g.new_input((n, h, w, c) if g.layout == "NHWC" else (n, c, h, w))
    elif r < 0.85:
        g.new_input((int(rng.integers(1, 5)), int(rng.integers(1, 33))))
    else:
        g.new_input(tuple(int(d) for d in rng.integers(1, 7, size=int(rng.integers(1, 4)))))


def generate(
    seed: int,
    *,
    max_ops: int = 30,
    families: Sequence[str] | None = None,
    quantized_share: float = 0.2,
) -> Graph:
    """A random valid graph of 1 to `max_ops` ops (a quantized tail adds up to 2 + `max_ops`
    more in `quantized_share` of the graphs), deterministic for `seed`."""
    g = Gen(seed, quantized_share=quantized_share)
    rng = g.rng
    _first_input(g)
    names = list(families or FAMILIES)
    weights = np.array([FAMILIES[n][0] for n in names])
    weights /= weights.sum()
    target = int(rng.integers(1, max_ops + 1)) if rng.random() < 0.7 else int(rng.integers(1, 6))
    attempts = 0
    while len(g.nodes) < target and attempts < target * 6:
        attempts += 1
        family = str(rng.choice(names, p=weights))
        FAMILIES[family][1](g)
    if not g.nodes:
        gen_unary(g)
        if not g.nodes:
            g.add("relu", [g.inputs[0]], {})
    if g.quantized:
        _quantize_tail(g, max_ops)
    return _finish(g)


def _quantize_tail(g: Gen, max_ops: int = 4) -> None:
    """Append a quantized chain: qcast of a float value, 1-4 quantized ops, dcast."""
    rng = g.rng
    x = g.pick(lambda t: t.kind == "f32" and len(t.shape) == 4)
    if x is None:
        return
    storage = i8 if rng.random() < 0.7 else u8
    low, high = (-128, 127) if storage == i8 else (0, 255)

    def qtype() -> UniformQuantizedType:
        scale = float(np.float32(10 ** rng.uniform(-3, 0)))
        zp = (
            int(rng.integers(low, high + 1))
            if rng.random() < 0.7
            else (0 if storage == i8 else 128)
        )
        return UniformQuantizedType.per_tensor(storage, f32, scale, zp)  # type: ignore[arg-type]

    q = g.new_value(VType(g.values[x].shape, "q", qtype()))
    g.nodes.append(Node("qcast", [x], {}, [q]))
    for _ in range(int(rng.integers(1, min(4, max_ops) + 1))):
        kind = str(
            rng.choice(
                [
                    "conv2d",
                    "add",
                    "max_pool2d",
                    "avg_pool2d",
                    "relu",
                    "concat",
                    "reshape",
                    "transpose",
                    "pad",
                ]
            )
        )
        s = g.values[q].shape
        qt = qtype() if kind in ("conv2d", "add") else g.values[q].qtype
        assert qt is not None
        if kind == "conv2d":
            _n, c, h, w = _layout_dims(g.layout, s)
            oc = int(rng.integers(1, 9))
            k = int(rng.integers(1, 4))
            if h < k or w < k:
                continue
            fshape = (oc, k, k, c) if g.layout == "NHWC" else (oc, c, k, k)
            fscale = float(np.float32(10 ** rng.uniform(-3, -1)))
            # the filter's storage is the input's (lower-quantized requires one storage type)
            fzp = 0 if storage == i8 else 128
            ftype = UniformQuantizedType.per_tensor(storage, f32, fscale, fzp)  # type: ignore[arg-type]
            fdtype = np.int8 if storage == i8 else np.uint8
            filt = Const(rng.integers(low + 1, high + 1, size=fshape).astype(fdtype), ftype)
            in_scale = g.values[q].qtype.scale_values[0]  # type: ignore[union-attr]
            btype = UniformQuantizedType.per_tensor(
                IntegerType(32, Signedness.SIGNLESS),
                f32,
                float(np.float32(in_scale * fscale)),
                0,  # type: ignore[arg-type]
            )
            bias = Const(rng.integers(-1000, 1000, size=(oc,)).astype(np.int32), btype)
            props: dict[str, Any] = {"layout": g.layout}
            if rng.random() < 0.3:
                props["activation"] = str(rng.choice(["relu", "relu6"]))
            res = g.add("conv2d", [q, filt, bias], props)
        elif kind == "add":
            other = g.new_value(VType(s, "q", qtype()))
            g.inputs.append(other)
            res = g.add("add", [q, other], {})
        elif kind in ("max_pool2d", "avg_pool2d"):
            _, _, h, w = _layout_dims(g.layout, s)
            win = _window(g, h, w)
            if win is None:
                continue
            win["dilations"] = [1, 1]
            win["pads"] = [0, 0, 0, 0]
            props = {**win, "layout": g.layout}
            if kind == "avg_pool2d":
                props["count_include_pad"] = False
            res = g.add(kind, [q], props)
        elif kind == "relu":
            res = g.add("relu", [q], {})
        elif kind == "concat":
            res = g.add("concat", [[q, q]], {"axis": int(rng.integers(0, 4))})
        elif kind == "reshape":
            res = g.add("reshape", [q], {"shape": [g.values[q].size]})
            if res is not None:
                res2 = g.add("reshape", [res[0]], {"shape": list(s)})
                res = res2
        elif kind == "transpose":
            res = g.add("transpose", [q], {"perm": [0, 1, 2, 3]})
        else:
            res = g.add("pad", [q], {"pads": [0, 0, 1, 1, 1, 1, 0, 0]})
        if res is None:
            continue
        if kind in ("conv2d", "add"):
            g.result_override(res, [VType(g.values[res[0]].shape, "q", qt)])
        q = res[0]
        if len(g.values[q].shape) != 4:
            break
    out = g.new_value(VType(g.values[q].shape, "f32"))
    g.nodes.append(Node("dcast", [q], {}, [out]))


def _finish(g: Gen) -> Graph:
    used = {v for n in g.nodes for v in n.value_operands()}
    produced = [r for n in g.nodes for r in n.results]
    outputs = [r for r in produced if r not in used]
    if not outputs:
        outputs = [produced[-1]]
    # quantized values leave the graph as stored integers: fine, compared exactly
    return Graph(g.values, g.inputs, g.nodes, outputs[:6], g.seed)


# ---- Inputs ---------------------------------------------------------------------------------

FLOAT_EDGES = np.array(
    [
        np.nan,
        np.inf,
        -np.inf,
        -0.0,
        0.0,
        1e-40,  # denormal
        -3e-42,
        np.finfo(np.float32).tiny,
        3.0e38,
        -3.0e38,
        np.finfo(np.float32).max,
        1e-30,
        1e20,
        -1e20,
        65504.0,
    ],
    dtype=np.float32,
)


def make_inputs(graph: Graph, seed: int, edge: bool) -> list[np.ndarray]:
    """Seeded inputs for `graph`; with `edge`, about 15 % of float elements are edge values
    (NaN, ±Inf, ±0, denormals, huge and tiny magnitudes) and integer storage hits its limits."""
    rng = np.random.default_rng(seed)
    out = []
    for v in graph.inputs:
        t = graph.values[v]
        if t.kind == "f32":
            scale = float(rng.choice([1.0, 1.0, 4.0, 1e-3]))
            a = np.asarray(rng.standard_normal(t.shape) * scale, dtype=np.float32)
            if edge:
                mask = rng.random(t.shape) < 0.15
                a[mask] = rng.choice(FLOAT_EDGES, size=int(mask.sum()))
        elif t.kind == "i1":
            a = np.asarray(rng.random(t.shape) < 0.5)
        else:
            info = np.iinfo(t.numpy_dtype())
            a = np.asarray(
                rng.integers(info.min, int(info.max) + 1, size=t.shape), dtype=t.numpy_dtype()
            )
            if edge:
                mask = rng.random(t.shape) < 0.2
                a[mask] = rng.choice([info.min, info.max], size=int(mask.sum()))
        out.append(np.asarray(a))
    return out
