"""C code generation of the CPU target: one C function per entry of a `delegate.executable`.

`generate_function(func, c_name, constants)` (the heart of `cpu-codegen`) turns an entry
(a `func.func` of `nn` ops and `cpu.fusion`s on static float32 tensors, or of the integer
form `lower-quantized` gives quantized ops: integer `nn` ops, `quant.scast`,
`quant.rescale`) into one C function that runs all of its
ops; pointers carry each value's C type (`float`, `int8_t`, `uint8_t`, `int16_t`,
`int32_t`; a quantized tensor is its storage integers):

    void irc_fn_0(const float *in0, ..., int8_t *out0, ..., const void *const *consts,
                  float *ws);

* **Buffer plan.** Arguments are read in place and results written in place: the op that
  produces a returned value writes straight into the caller's output buffer. Every other
  intermediate tensor, and the scratch an op needs (a zero-padded input, a filter packed at
  run time), gets an offset in one workspace arena: first-fit over live ranges, 64-byte
  aligned, so buffers are reused as soon as their last reader ran. Reshapes are free (the
  result shares its input's buffer). `plan_function` computes the plan and records it on
  the entry (`cpu-plan-memory`: `cpu.offsets`, `cpu.scratch`, `cpu.alias`,
  `cpu.workspace`); `FunctionCodegen.generate` follows the recorded plan (`read_plan`
  checks it against the ops).
* **Constants.** `nn.constant` values are passed in the constants table `consts`, which the
  runtime builds once at load time; filters are packed at compile time into the layout
  their kernel reads (`packing`), so the table holds them packed. A constant operand of an
  elementwise op whose elements are all equal becomes a literal instead.
* **Integers.** `quant.scast` is free (an alias); `quant.rescale` runs `irc_mbqm`, the C
  mirror of the reference's MultiplyByQuantizedMultiplier (bit-exact, tested), on 8 int64
  vector lanes (`irc_mbqm_q8`; channels innermost step 8 channels at a time, per-lane
  multipliers and shifts), scalar only for tails, split across threads when large; a
  widening `nn.cast` whose only use is an integer binary op is an alias that op reads
  through (zero-point subtraction reads the int8 input directly); integer
  conv2d / fully_connected accumulate exactly in int32 (`irc_conv2d_i32`,
  `irc_depthwise_i32`, inputs widened to int32 and zero-padded in the workspace, constant
  filters packed to int32 at compile time); pools, reductions, casts, clamps and
  add/sub/mul (wrapping, as numpy's int32) follow the reference kernels exactly.
* **Fusion.** A `cpu.fusion` (`cpu-fuse`) is one kernel: kind "qconv", an int8 chain
  `x -> i32 - zp -> conv2d / fully_connected -> rescale [-> clip]` read back from the region
  with `qfusion.match_chain`, runs as ONE kernel that reads the int8 input and writes the
  int8 result (`fused_int8`: vpdpbusd dot products with the zero-point correction folded
  into the bias, or the depthwise kernel on column quads of 4 kernel rows, its int16 form
  for very wide kernels; requantization in the epilogue); "qadd",
  the int8 add (`fused_int8_add`); "conv_add", a float conv2d with the residual add (and
  a relu after it) in its epilogue. A fusion whose ops are not a chain of its kind is
  refused. `IRC_CPU_PROFILE=1` times every kernel (`KernelProfiler`, read with
  `targets/cpu/profiling.py`).
* **Kernels.** Heavy ops call the kernel library (`csrc`: convolution as a register-blocked
  implicit GEMM, depthwise, pooling, softmax, resize); elementwise ops, reductions and data
  movement become loop nests with literal bounds, their dimensions collapsed where the data
  is contiguous so that the innermost loop is long and gcc vectorises it.

No text from the model reaches the source: C names are generated (`in0`, `out1`, `K[3]`,
`irc_fn_0`) and comments hold only op names of the dialect and shapes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, TensorType, UnitAttr, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

import irc.targets.cpu.transformer_kernels as transformer_kernels
from irc.dialects import cpu, nn, quant
from irc.dialects.nn.base import ints_of
from irc.dialects.quant import quantized_element
from irc.dtypes import numpy_dtype
from irc.sanitize import c_comment, c_identifier
from irc.targets.cpu import csrc, dynamic_quant, packing, qfusion, quant_casts, quant_kernels
from irc.targets.cpu.profiling import KernelProfiler, profile_enabled
from irc.targets.cpu.qfusion import QuantAddChain, QuantChain, match_add, match_chain
from irc.targets.cpu.support import (
    BINARY_OPS,
    C_TYPES,
    DATA_MOVEMENT_OPS,
    INTEGER_BINARY_OPS,
    c_type,
    check_op,
)
from irc.targets.cpu.tables import TABLE_OPS, TABLE_SIZE, TableError, lookup_table

ALIGN_FLOATS = 16
"""Workspace allocations start on 64-byte boundaries."""

Lines = list[str]


class LoweringError(Exception):
    """An op the CPU code generator cannot lower (with the op, for a located diagnostic)."""

    def __init__(self, op: Operation | None, message: str):
        super().__init__(message)
        self.op = op
        self.message = message


# ---- Small helpers ------------------------------------------------------------------------------


def shape(value: SSAValue) -> tuple[int, ...]:
    type_ = value.type
    assert isinstance(type_, TensorType)
    return tuple(type_.get_shape())


def numel(dims: Sequence[int]) -> int:
    return math.prod(dims)


def dtype(value: SSAValue) -> np.dtype:
    """The numpy dtype holding `value`'s elements (quantized: storage integers)."""
    return numpy_dtype(value.type)


def ctype(value: SSAValue) -> str:
    """The C type of `value`'s elements (`float`, `int8_t`, ...)."""
    return C_TYPES[dtype(value)]


def units(value: SSAValue) -> int:
    """Workspace units (4 bytes, a float) that `value` takes."""
    return -(-numel(shape(value)) * dtype(value).itemsize // 4)


def c_float(value: float) -> str:
    """A C float literal for `value` rounded to float32 (exact: 9 significant digits)."""
    f = np.float32(value)
    if np.isnan(f):
        return "NAN"
    if np.isinf(f):
        return "INFINITY" if f > 0 else "(-INFINITY)"
    text = f"{float(f):.9g}"
    if not any(ch in text for ch in ".e"):
        text += ".0"
    text += "f"
    return f"({text})" if text.startswith("-") else text


def c_call(function: str, *args: object) -> str:
    """`function(a, b, ...);` with every argument formatted by `str`."""
    return f"{function}({', '.join(map(str, args))});"


def contiguous_strides(dims: Sequence[int]) -> list[int]:
    strides = [1] * len(dims)
    for d in range(len(dims) - 2, -1, -1):
        strides[d] = strides[d + 1] * dims[d + 1]
    return strides


def broadcast_strides(dims: Sequence[int], out: Sequence[int]) -> list[int]:
    """Strides of a tensor of shape `dims` read at the indices of its broadcast `out` shape."""
    own = contiguous_strides(dims)
    offset = len(out) - len(dims)
    return [0 if d < offset or dims[d - offset] == 1 else own[d - offset] for d in range(len(out))]


def collapse(
    dims: Sequence[int], strides: Sequence[Sequence[int]]
) -> tuple[list[int], list[list[int]]]:
    """Drop unit dimensions and merge neighbours that every array walks contiguously."""
    keep = [d for d in range(len(dims)) if dims[d] != 1]
    out_dims: list[int] = []
    out_strides: list[list[int]] = [[] for _ in strides]
    for d in reversed(keep):
        if out_dims and all(s[d] == st[0] * out_dims[0] for s, st in zip(strides, out_strides)):
            out_dims[0] *= dims[d]
            continue
        out_dims.insert(0, dims[d])
        for s, st in zip(strides, out_strides):
            st.insert(0, s[d])
    return out_dims, out_strides


def index_expr(offset: int, strides: Sequence[int]) -> str:
    terms = []
    for k, s in enumerate(strides):
        if s == 1:
            terms.append(f"i{k}")
        elif s != 0:
            terms.append(f"i{k} * {s}")
    if offset or not terms:
        terms.append(str(offset))
    return " + ".join(terms)


_PAR_RESCALE = 1 << 16
"""Elements from which a `quant.rescale` loop is split across OpenMP threads."""
_PAR_ELEMENTS = 1 << 17
"""Elements from which an integer elementwise loop nest is split across OpenMP threads."""
_RESCALE_CHUNK = 4096
"""Elements per task of a rescale whose parameters are shared by contiguous runs."""


_WIDENING_SOURCES = ("int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t")


def _widening_cast_into_binary(op: nn.CastOp) -> bool:
    """An integer `nn.cast` to int32 from a type it holds exactly, whose only use is an
    integer binary op: that op reads the cast's input directly (the cast is an alias)."""
    result = op.results[0]
    if ctype(result) != "int32_t" or ctype(op.operands[0]) not in _WIDENING_SOURCES:
        return False
    if not result.has_one_use():
        return False
    user = result.get_user_of_unique_use()
    return user is not None and type(user) in INTEGER_BINARY_OPS


def parallel(dims: Sequence[int], lines: Lines) -> Lines:
    """`lines` (a loop nest over `dims`) split across OpenMP threads when it is large enough."""
    if numel(dims) < _PAR_ELEMENTS or not dims or dims[0] < 2:
        return lines
    return ["IRC_PARFOR(schedule(static))", *lines]


def loop_nest(
    dims: Sequence[int],
    arrays: Sequence[tuple[int, Sequence[int]]],
    body: Callable[[list[str]], Lines],
) -> Lines:
    """Nested loops over `dims`; `body` gets one index expression per (offset, strides)."""
    if numel(dims) == 0:
        return []
    lines: Lines = [
        "  " * k + f"for (long i{k} = 0; i{k} < {d}; ++i{k})" for k, d in enumerate(dims)
    ]
    indent = "  " * len(dims)
    inner = body([index_expr(offset, st) for offset, st in arrays])
    if len(inner) == 1 or not lines:
        lines.extend(indent + line for line in inner)
    else:
        lines[-1] += " {"
        lines.extend(indent + line for line in inner)
        lines.append("  " * (len(dims) - 1) + "}")
    return lines


def block(comment: str, decls: Lines, body: Lines) -> Lines:
    """A `{ ... }` statement block with a comment line (comments never contain model text)."""
    head = f"/* {c_comment(comment)} */"
    return [head, "{", *("  " + d for d in decls), *("  " + b for b in body), "}"]


def describe(op: Operation) -> str:
    """`nn.add 1x8x8x4, 4 -> 1x8x8x4`: the op's dialect name and its shapes only."""

    def fmt(v: SSAValue) -> str:
        dims = shape(v)
        return "x".join(map(str, dims)) if dims else "scalar"

    ins = ", ".join(fmt(v) for v in op.operands)
    outs = ", ".join(fmt(v) for v in op.results)
    return f"{op.name} {ins} -> {outs}" if ins else f"{op.name} -> {outs}"


def transpose_lines(src: str, dst: str, dims: Sequence[int], perm: Sequence[int]) -> Lines:
    """dst = transpose(src of shape `dims`, perm) as a collapsed loop nest."""
    out_dims = [dims[p] for p in perm]
    in_strides = contiguous_strides(dims)
    cdims, (so, si) = collapse(
        out_dims, [contiguous_strides(out_dims), [in_strides[p] for p in perm]]
    )
    return loop_nest(cdims, [(0, so), (0, si)], lambda ix: [f"{dst}[{ix[0]}] = {src}[{ix[1]}];"])


# ---- Constants ----------------------------------------------------------------------------------


@dataclass
class ConstantTable:
    """The constants of one `cpu.module`: (packing, float32 or integer array), from 0."""

    entries: list[tuple[str, np.ndarray]] = field(default_factory=list)
    _index: dict[tuple[SSAValue, str], int] = field(default_factory=dict)

    def add(self, key: SSAValue, packing_name: str, make: Callable[[], np.ndarray]) -> int:
        """The index of `key`'s constant packed as `packing_name` (packed once)."""
        ident = (key, packing_name)
        if ident not in self._index:
            self._index[ident] = len(self.entries)
            array = np.ascontiguousarray(make())
            if array.dtype.kind == "f":
                array = array.astype(np.float32, copy=False)
            self.entries.append((packing_name, array))
        return self._index[ident]


# ---- Per-op lowering ----------------------------------------------------------------------------


@dataclass
class Storage:
    """Where a value lives during one call: an argument, a result, a constant or the arena."""

    kind: str
    """"in", "out", "const" or "ws"."""
    index: int
    """Argument/result/constant index, or the arena offset in floats."""
    ct: str = "float"
    """The C type of the elements."""

    def expr(self) -> str:
        match self.kind:
            case "in":
                return f"in{self.index}"
            case "out":
                return f"out{self.index}"
            case "const":
                if self.ct != "float":
                    return f"((const {self.ct} *)K[{self.index}])"
                return f"K[{self.index}]"
        if self.ct != "float":
            return f"(({self.ct} *)(ws + {self.index}))"
        return f"(ws + {self.index})"


@dataclass
class Lowered:
    """How one op runs: scratch it needs, how to emit it, and whether it is a free alias."""

    emit: Callable[[Emitter, list[str], list[str]], Lines]
    """(emitter, result pointers, scratch pointers) -> C statements."""
    temps: list[int] = field(default_factory=list)
    """Scratch buffers (floats) the op needs while it runs."""
    snippets: tuple[str, ...] = ()
    """Kernel-library snippets the emitted code calls."""
    alias: bool = False
    """The (single) result shares operand 0's buffer: nothing to run."""
    reads: tuple[SSAValue, ...] = ()
    """Values the emitted code reads besides the op's operands (kept alive until it ran)."""
    timed: tuple[Operation, tuple[SSAValue, ...]] | None = None
    """For a fusion: the op its kernel is profiled as, and the values labelling its type."""


class Emitter:
    """What emitters may ask at emission time: pointers to values and packed constants."""

    def __init__(self, codegen: FunctionCodegen):
        self._codegen = codegen

    def ptr(self, value: SSAValue) -> str:
        return self._codegen.pointer(value)

    def packed(
        self, value: SSAValue, packing_name: str, make: Callable[[np.ndarray], np.ndarray]
    ) -> str:
        array = self._codegen.constant_array(value)
        assert array is not None
        index = self._codegen.constants.add(value, packing_name, lambda: make(array))
        return f"K[{index}]"


_DEPTHWISE_QUADS_STACK = 32 * 1024
"""Bytes of column quads the column-quad depthwise kernel may keep on the stack per thread."""


def _activation_code(op: Operation) -> int:
    attr = op.properties.get("activation")
    name = "none" if attr is None else attr.data  # type: ignore[attr-defined]
    if name not in csrc.ACTIVATION_CODES:
        raise LoweringError(op, f"activation '{name}' is not supported")
    return csrc.ACTIVATION_CODES[name]


def _zero_point(value: SSAValue) -> int:
    qtype = quantized_element(value.type)
    return 0 if qtype is None else int(qtype.zero_point_values[0])


def _value_range(value: SSAValue) -> tuple[int, int]:
    """The stored range of a quantized value, else its integer type's range."""
    qtype = quantized_element(value.type)
    if qtype is not None:
        return qtype.storage_range
    info = np.iinfo(dtype(value))
    return int(info.min), int(info.max)


def fusion_inputs(fusion: cpu.FusionOp) -> tuple[SSAValue, ...]:
    """The values the ops of a fusion read from above it, in first-use order."""
    members = fusion.members
    inside = set(members)
    found: dict[SSAValue, None] = {}
    for op in members:
        for value in op.operands:
            if value.owner not in inside:
                found[value] = None
    return tuple(found)


def _holds_exactly(
    members: list[Operation], skipped: list[Operation], final: Operation, yielded: object
) -> bool:
    """Whether a fusion's ops are exactly a matched chain ending in the yielded op."""
    return (
        yielded is final and set(members) == {*skipped, final} and len(members) == len(skipped) + 1
    )


def _wrap_activation(expr: str, code: int) -> str:
    return expr if code == 0 else f"irc_act({expr}, {code})"


class OpLowering:
    """Lowering rules by op class; `lower(op)` returns a `Lowered`."""

    def __init__(self, codegen: FunctionCodegen):
        self.codegen = codegen

    def lower(self, op: Operation) -> Lowered:
        if isinstance(op, cpu.FusionOp):
            return self.fusion(op)
        support = check_op(op)
        if not support:
            raise LoweringError(op, support.reason.removeprefix("cpu: "))
        if transformer_kernels.handles(op):
            # one class under two module names (.typecheck maps irc.targets to targets/)
            return transformer_kernels.lower(self, op)  # pyright: ignore[reportReturnType, reportArgumentType]
        if isinstance(op, quant.SCastOp):
            return Lowered(lambda em, res, tmp: [], alias=True)
        if isinstance(op, quant.RescaleOp):
            return self.rescale(op)
        if quant_casts.handles(op):
            # one class under two module names (.typecheck maps irc.targets to targets/)
            return quant_casts.lower_cast(self, op)  # pyright: ignore[reportReturnType, reportArgumentType]
        if isinstance(op, nn.CastOp) and _widening_cast_into_binary(op):
            return Lowered(lambda em, res, tmp: [], alias=True)
        if isinstance(op, nn.SubOp) and self._zero_point_folded(op):
            return Lowered(lambda em, res, tmp: [], alias=True)
        if ctype(op.results[0]) != "float" and type(op) not in DATA_MOVEMENT_OPS:
            return self.lower_integer(op)
        if type(op) in BINARY_OPS:
            return self.binary(op, BINARY_OPS[type(op)])  # type: ignore[arg-type]
        method = getattr(self, "lower_" + op.name.removeprefix("nn."), None)
        if method is not None:
            return method(op)
        return self.unary(op)

    def fusion(self, fusion: cpu.FusionOp) -> Lowered:
        """A `cpu.fusion` (`cpu-fuse`) as the one kernel of its kind."""
        members = fusion.members
        for member in members:
            support = check_op(member)
            if not support:
                raise LoweringError(member, support.reason.removeprefix("cpu: "))
        kind = fusion.kind.data
        yielded = fusion.body.block.last_op
        final = yielded.operands[0].owner if yielded is not None and yielded.operands else None
        reads = fusion_inputs(fusion)
        if kind == "qconv":
            producer = next(
                op for op in members if isinstance(op, nn.Conv2DOp | nn.FullyConnectedOp)
            )
            chain = match_chain(producer)
            if chain is not None and _holds_exactly(members, chain.skipped, chain.final, final):
                lowered = self.fused_int8(chain)
                timed = (chain.conv, (chain.source,))
                return Lowered(lowered.emit, lowered.temps, lowered.snippets, False, reads, timed)
        elif kind == "qadd":
            add = next(op for op in members if isinstance(op, nn.AddOp))
            add_chain = match_add(add)
            if add_chain is not None and _holds_exactly(
                members, add_chain.skipped, add_chain.final, final
            ):
                lowered = self.fused_int8_add(add_chain)
                timed = (add_chain.add, add_chain.sources)
                return Lowered(lowered.emit, lowered.temps, lowered.snippets, False, reads, timed)
        elif kind == "conv_add" and len(members) in (2, 3):
            conv, add = members[:2]
            relu = members[2] if len(members) == 3 else None
            if (
                isinstance(conv, nn.Conv2DOp)
                and isinstance(add, nn.AddOp)
                and final is (add if relu is None else relu)
                and (relu is None or (isinstance(relu, nn.ReluOp) and _activation_code(add) == 0))
            ):
                other = add.operands[1] if add.operands[0] is conv.output else add.operands[0]
                act2 = _activation_code(add) if relu is None else csrc.ACTIVATION_CODES["relu"]
                lowered = self.lower_conv2d(conv, (other, act2))
                timed = (conv, tuple(conv.operands))
                return Lowered(lowered.emit, lowered.temps, lowered.snippets, False, reads, timed)
        elif kind == dynamic_quant.KIND:
            # one class under two module names (.typecheck maps irc.targets to targets/)
            return dynamic_quant.lower_fusion(self, fusion)  # pyright: ignore[reportReturnType, reportArgumentType]
        raise LoweringError(fusion, f"the '{kind}' fusion does not hold a chain of its kind")

    # ---- The integer form of lower-quantized ----

    def lower_integer(self, op: Operation) -> Lowered:
        match op:
            case nn.CastOp() | nn.ClipOp() | nn.ReluOp() | nn.NegOp() | nn.AbsOp():
                return self.integer_unary(op)
            case nn.Conv2DOp():
                return self.integer_conv2d(op)
            case nn.Conv2DTransposeOp():
                return self.lower_conv2d_transpose(op)
            case nn.FullyConnectedOp():
                return self.integer_fully_connected(op)
            case nn.MaxPool2DOp() | nn.AvgPool2DOp():
                return self.integer_pool(op)
            case nn.ReduceOp():
                return self.integer_reduce(op)
        if type(op) in INTEGER_BINARY_OPS:
            return self.integer_binary(op)  # type: ignore[arg-type]
        if type(op) in TABLE_OPS:
            return self.integer_table(op)
        if type(op) in quant_kernels.NATIVE_OPS:
            # one class under two module names (.typecheck maps irc.targets to targets/)
            return quant_kernels.lower_native(self, op)  # pyright: ignore[reportReturnType, reportArgumentType]
        raise LoweringError(op, f"no integer kernel for '{op.name}'")

    def integer_table(self, op: Operation) -> Lowered:
        """A quantized 8-bit unary op (`tables.py`): `y[i] = table[(uint8_t)x[i]]`, the table
        a constant holding the reference kernel's result for every input byte."""
        try:
            table = lookup_table(op)
        except TableError as exc:
            raise LoweringError(op, str(exc)) from None
        count = numel(shape(op.results[0]))
        ct_out = ctype(op.results[0])
        stored = table.view(np.int8)  # the bytes, as an i8 constant

        def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
            index = self.codegen.constants.add(
                op.results[0], f"lut_8bit [{TABLE_SIZE}]", lambda: stored
            )
            decls = [
                f"const uint8_t *restrict px = (const uint8_t *){em.ptr(op.operands[0])};",
                f"const {ct_out} *restrict lut = (const {ct_out} *)K[{index}];",
                f"{ct_out} *restrict po = {res[0]};",
            ]
            body = loop_nest([count], [(0, [1])], lambda ix: [f"po[{ix[0]}] = lut[px[{ix[0]}]];"])
            return block(describe(op), decls, parallel([count], body))

        return Lowered(emit, snippets=("quant",))

    def fused_int8(self, chain: QuantChain) -> Lowered:
        """An int8 conv2d / fully_connected chain (`qfusion`) as one kernel: int8 in, int8
        out, the rescale and clamp in the epilogue (`csrc` snippet "qfused")."""
        conv, source = chain.conv, chain.source
        out_value = chain.final.results[0]
        filter_array = self.codegen.constant_array(conv.operands[1])
        assert filter_array is not None
        weights = filter_array.astype(np.int8)  # values in int8 range (checked by the match)
        bias_value = conv.operands[2] if len(conv.operands) > 2 else None
        bias = None if bias_value is None else self.codegen.constant_array(bias_value)
        offset = qfusion.flip_offset(source)
        signed = offset == 128
        zp = chain.zero_point
        zp_out = _zero_point(chain.rescale.output)
        low, high = chain.low, chain.high

        def requant(padded: int, channels: int) -> tuple[Lines, tuple[object, ...]]:
            """The epilogue's arguments (its parameters are a constant, packed at compile
            time: `qfusion.requant_blocks`)."""
            params, mode = qfusion.requant_blocks(chain.rescale, channels, padded)
            table = self._fused_constant(conv, f"qrequant_i64 [{padded // 16}][64]", params)
            rq = f"(const int64_t *){table}"
            return [], (rq, mode, f"{zp_out}LL", f"{low}LL", f"{high}LL")

        if chain.depthwise:
            assert isinstance(conv, nn.Conv2DOp)
            geo = qfusion.conv_geometry(conv)
            (n, h, w, c), (_, kh, kw, _) = shape(source), shape(conv.operands[1])
            _, oh, ow, _ = shape(out_value)
            cp = -(-c // 16) * 16
            _, mode = qfusion.requant_blocks(chain.rescale, c, cp)
            sh, sw = geo["strides"]
            dh, dw = geo["dilations"]
            # The column-quad kernel keeps one chunk of columns per kernel-row group on the
            # stack; a very wide dilated or strided kernel takes the int16 kernel instead.
            columns = (csrc.DEPTHWISE_QUADS_CHUNK - 1) * sw + (kw - 1) * dw + 1
            quads = -(-kh // 4) * columns * 64 <= _DEPTHWISE_QUADS_STACK
            if quads:
                pack_name = "qdepthwise_quads_i8 [Cp16/16][ceil(KH/4)][KW][16][4]"
                pack = qfusion.pack_depthwise_quads(weights, cp)
                folded_dw = qfusion.fold_bias(weights, bias, zp, offset, cp)
                kernel_dw = csrc.fused_depthwise_quads_kernel((kh, kw) == (3, 3), mode)
                # int8 storage XOR 0x80 is x + 128, an unsigned byte for vpdpbusd (the bias
                # takes -128 * sum(w) for it).
                flip_or_pairs, w_ctype = ("0x80808080u" if signed else "0u"), "int8_t"
            else:
                pack_name = "qdepthwise_i16 [KH][KW][Cp16]"
                pack = qfusion.pack_depthwise_i16(weights, cp)
                # Two int8 x int8 products fit in int16 unless a weight is -128 (|x w| <= 16256).
                pairs = int(signed and int(weights.min()) >= -127)
                folded_dw = qfusion.fold_bias(weights, bias, zp, 0, cp)
                kernel_dw = csrc.fused_depthwise_kernel(signed, (kh, kw) == (3, 3), mode)
                flip_or_pairs, w_ctype = str(pairs), "int16_t"

            def emit_dw(em: Emitter, res: list[str], _: list[str]) -> Lines:
                wk = em.packed(conv.operands[1], pack_name, lambda a: pack)
                bk = self._fused_constant(conv, f"{pack_name} bias_i32 [Cp16]", folded_dw)
                decls, epilogue = requant(cp, c)
                x = f"(const uint8_t *){em.ptr(source)}" if quads else em.ptr(source)
                args = (x, n, h, w, c, cp, zp, flip_or_pairs, f"(const {w_ctype} *){wk}")
                args += (f"(const int32_t *){bk}", *epilogue, f"(uint8_t *){res[0]}", oh, ow)
                args += (kh, kw, sh, sw, dh, dw, geo["pads"][0], geo["pads"][1])
                return block(describe(conv), decls, [c_call(kernel_dw, *args)])

            return Lowered(emit_dw, snippets=(kernel_dw,), reads=(source,))

        if isinstance(conv, nn.FullyConnectedOp):
            m, k = numel(shape(source)[:-1]), shape(source)[-1]
            oc = shape(conv.operands[1])[0]
            ohwi = weights.reshape(oc, 1, 1, k)
            n, h, w, c, oh, ow = 1, 1, m, k, 1, m
            strides, dilations, pads = [1, 1], [1, 1], [0, 0, 0, 0]
            kh = kw = 1
        else:
            geo = qfusion.conv_geometry(conv)
            ohwi = weights
            (n, h, w, c), (oc, kh, kw, _) = shape(source), shape(conv.operands[1])
            _, oh, ow, _ = shape(out_value)
            strides, dilations, pads = geo["strides"], geo["dilations"], geo["pads"]
            if kh == kw == 1 and tuple(strides) == (1, 1) and not any(pads):  # one row of pixels
                n, h, w, oh, ow = 1, 1, n * h * w, 1, n * h * w
        nv = qfusion.vnni_blocks(oc)
        nb = 16 * nv
        padded = -(-oc // nb) * nb
        c4 = -(-c // 4)
        pt, pl, pb, pr = pads
        hp, wp = h + pt + pb, w + pl + pr
        needs_copy = any(pads) or c % 4 != 0
        temps = [-(-(n * hp * wp * c4 * 4) // 4)] if needs_copy else []
        mr = 8 if ow >= 4 else 1
        if mr == 1:
            nv, nb = 2, 32
            padded = -(-oc // nb) * nb
        mode = qfusion.requant_blocks(chain.rescale, oc, padded)[1]
        kernel = csrc.fused_conv_kernel(mr, nv, mode)
        packed_w = qfusion.pack_vnni(ohwi, nv)
        folded = qfusion.fold_bias(ohwi, bias, zp, offset, padded)
        flip = "0x80808080u" if signed else "0u"

        def emit(em: Emitter, res: list[str], tmp: list[str]) -> Lines:
            wk = em.packed(
                conv.operands[1],
                f"qconv_vnni_i8 [OC/{nb}][KH][KW][C/4][{nb}][4]",
                lambda a: packed_w,
            )
            bk = self._fused_constant(conv, f"qconv_vnni_bias_i32 [{padded}]", folded)
            body: Lines = []
            x = f"(const uint8_t *){em.ptr(source)}"
            if needs_copy:
                fill = zp & 255
                body.append(
                    c_call(
                        "irc_qpad",
                        f"(uint8_t *){tmp[0]}",
                        x,
                        n,
                        h,
                        w,
                        c,
                        c4 * 4,
                        pt,
                        pl,
                        pb,
                        pr,
                        fill,
                    )
                )
                x = f"(const uint8_t *){tmp[0]}"
            args = (x, n, hp, wp, c4 * 4, flip, f"(const int8_t *){wk}", f"(const int32_t *){bk}")
            decls, epilogue = requant(padded, oc)
            args += (*epilogue, f"(uint8_t *){res[0]}", oh, ow, oc, kh, kw)
            args += (*strides, *dilations, c4)
            body.append(c_call(kernel, *args))
            return block(describe(conv), decls, body)

        return Lowered(emit, temps, (kernel,), reads=(source,))

    def fused_int8_add(self, chain: QuantAddChain) -> Lowered:
        """An int8 add chain (`qfusion.match_add_chains`) as one elementwise kernel: both
        inputs requantized to the common scale, summed, requantized to the int8 result."""
        sa, sb = chain.sources
        count = numel(shape(chain.add.output))
        kernel = "irc_qadd_s8" if ctype(sa) == "int8_t" else "irc_qadd_u8"
        blocks = [
            qfusion.requant_blocks(r, 16, 16)[0] for r in (*chain.input_rescales, chain.rescale)
        ]
        zp_out = _zero_point(chain.rescale.output)

        def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
            tables = [
                self._fused_constant(chain.add, f"qadd_requant_i64 [1][64] {name}", params)
                for name, params in zip(("lhs", "rhs", "sum"), blocks, strict=True)
            ]
            args = (em.ptr(sa), em.ptr(sb), count, *chain.zero_points, *chain.factors)
            args += (*(f"(const int64_t *){t}" for t in tables), f"{zp_out}LL")
            args += (f"{chain.low}LL", f"{chain.high}LL", f"(uint8_t *){res[0]}")
            return block(describe(chain.add), [], [c_call(kernel, *args)])

        return Lowered(emit, snippets=(kernel,), reads=(sa, sb))

    def _fused_constant(self, conv: Operation, packing_name: str, array: np.ndarray) -> str:
        """A constant computed for one fused chain (keyed by its conv: it depends on the
        filter, the bias and the zero point together)."""
        return f"K[{self.codegen.constants.add(conv.results[0], packing_name, lambda: array)}]"

    def rescale(self, op: quant.RescaleOp) -> Lowered:
        """`quant.rescale`: TFLite's MultiplyByQuantizedMultiplier (`irc_mbqm`), exactly the
        reference's (targets/reference/quant.py), then the result's zero point and range."""
        dims = shape(op.input)
        count = numel(dims)
        multipliers, shifts = list(op.multiplier_values), list(op.shift_values)
        channels = len(multipliers)
        if op.axis is None or channels == 1:
            outer, channels, inner = 1, 1, count
            multipliers, shifts = multipliers[:1], shifts[:1]
        else:
            axis = op.axis.value.data % len(dims)
            outer, inner = numel(dims[:axis]), numel(dims[axis + 1 :])
        zp_in, zp_out = _zero_point(op.input), _zero_point(op.output)
        low, high = _value_range(op.output)
        single = int(op.rounding.data == "single_round")
        ct_in, ct_out = ctype(op.input), ctype(op.output)

        if single:  # (x * m + rounder) >> total
            lanes_a = [(1 << (30 - v)) if 31 - v > 0 else 0 for v in shifts]
            lanes_b = [31 - v for v in shifts]
        else:  # left, right shifts
            lanes_a = [max(v, 0) for v in shifts]
            lanes_b = [max(-v, 0) for v in shifts]
        vector = all(0 <= v < 64 for v in (lanes_b if single else lanes_a + lanes_b))
        size_in, size_out = dtype(op.input).itemsize, dtype(op.output).itemsize
        vfn = "irc_mbqm1_q8" if single else "irc_mbqm_q8"

        def scalar(k: str) -> Lines:
            value = f"{zp_out}LL + irc_mbqm((int64_t)px[{k}] - ({zp_in}LL), mc, sc, {single})"
            return [
                f"const int64_t v = {value};",
                f"po[{k}] = ({ct_out})(v < ({low}LL) ? ({low}LL) : (v > {high}LL ? {high}LL : v));",
            ]

        def lanes(k: str) -> Lines:
            value = f"{vfn}(__builtin_convertvector(xin, irc_q8) - ({zp_in}LL), mv, av, bv)"
            return [
                "irc_in8 xin;",
                f"__builtin_memcpy(&xin, px + {k}, sizeof xin);",
                f"const irc_q8 v = irc_q8_clamp({zp_out}LL + {value}, {low}LL, {high}LL);",
                "const irc_out8 out = __builtin_convertvector(v, irc_out8);",
                f"__builtin_memcpy(po + {k}, &out, sizeof out);",
            ]

        def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
            decls = [
                f"static const int32_t rm[] = {{{', '.join(map(str, multipliers))}}};",
                f"static const int32_t rs[] = {{{', '.join(map(str, shifts))}}};",
                f"const {ct_in} *restrict px = {em.ptr(op.input)};",
                f"{ct_out} *restrict po = {res[0]};",
            ]
            if vector:
                decls += [
                    f"static const int64_t qm[] = {{{', '.join(map(str, multipliers))}}};",
                    f"static const int64_t qa[] = {{{', '.join(map(str, lanes_a))}}};",
                    f"static const int64_t qb[] = {{{', '.join(map(str, lanes_b))}}};",
                    f"typedef {ct_in} irc_in8 __attribute__((vector_size({8 * size_in})));",
                    f"typedef {ct_out} irc_out8 __attribute__((vector_size({8 * size_out})));",
                ]
            pragma = ["IRC_PARFOR(schedule(static))"] if count >= _PAR_RESCALE else []
            if not count:
                body: Lines = []
            elif inner == 1:  # per-channel on the innermost axis: channels innermost
                whole = channels - channels % 8 if vector else 0
                body = [*pragma, f"for (long o = 0; o < {outer}; ++o) {{"]
                if whole:
                    body += [
                        f"  for (long c = 0; c < {whole}; c += 8) {{",
                        f"    const long k = o * {channels} + c;",
                        "    irc_q8 mv, av, bv;",
                        "    __builtin_memcpy(&mv, qm + c, sizeof mv);",
                        "    __builtin_memcpy(&av, qa + c, sizeof av);",
                        "    __builtin_memcpy(&bv, qb + c, sizeof bv);",
                        *("    " + line for line in lanes("k")),
                        "  }",
                    ]
                if whole < channels:
                    body += [
                        f"  for (long c = {whole}; c < {channels}; ++c) {{",
                        f"    const long k = o * {channels} + c;",
                        "    const int64_t mc = rm[c];",
                        "    const int sc = rs[c];",
                        *("    " + line for line in scalar("k")),
                        "  }",
                    ]
                body.append("}")
            else:  # blocks of `inner` elements sharing (m, s), split into chunks for threads
                chunk = min(inner, _RESCALE_CHUNK)
                pieces = -(-inner // chunk)
                tasks = outer * channels * pieces
                body = [
                    *pragma,
                    f"for (long t = 0; t < {tasks}; ++t) {{",
                    f"  const long oc = t / {pieces}, c = oc % {channels};",
                    f"  const long start = oc * {inner} + (t % {pieces}) * {chunk};",
                    f"  const long stop = start + {chunk} < (oc + 1) * {inner}"
                    f" ? start + {chunk} : (oc + 1) * {inner};",
                    "  const int64_t mc = rm[c];",
                    "  const int sc = rs[c];",
                    "  long k = start;",
                ]
                if vector:
                    body += [
                        "  const irc_q8 mv = (irc_q8){0} + qm[c], av = (irc_q8){0} + qa[c],"
                        " bv = (irc_q8){0} + qb[c];",
                        "  for (; k + 8 <= stop; k += 8) {",
                        *("    " + line for line in lanes("k")),
                        "  }",
                    ]
                body += [
                    "  for (; k < stop; ++k) {",
                    *("    " + line for line in scalar("k")),
                    "  }",
                    "}",
                ]
            return block(describe(op), decls, body)

        return Lowered(emit, snippets=("quant",))

    def integer_unary(self, op: Operation) -> Lowered:
        count = numel(shape(op.results[0]))
        ct_in, ct_out = ctype(op.operands[0]), ctype(op.results[0])
        expr = {
            nn.ReluOp: f"({ct_out})(x < 0 ? 0 : x)",
            nn.NegOp: f"({ct_out})(-x)",
            nn.AbsOp: f"({ct_out})(x < 0 ? -x : x)",
        }.get(type(op), f"({ct_out})x")
        if isinstance(op, nn.ClipOp):
            if op.min is not None:
                low = int(op.min.value.data)
                expr = f"(x < {low} ? {low} : {expr})"
            if op.max is not None:
                high = int(op.max.value.data)
                expr = f"(x > {high} ? {high} : {expr})"

        def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
            decls = [
                f"const {ct_in} *restrict px = {em.ptr(op.operands[0])};",
                f"{ct_out} *restrict po = {res[0]};",
            ]
            body = loop_nest(
                [count],
                [(0, [1])],
                lambda ix: [f"const int64_t x = px[{ix[0]}];", f"po[{ix[0]}] = {expr};"],
            )
            return block(describe(op), decls, parallel([count], body))

        return Lowered(emit, snippets=("quant",))

    def integer_binary(self, op: nn.ElementwiseBinaryOp) -> Lowered:
        out = shape(op.output)
        expr = INTEGER_BINARY_OPS[type(op)]
        dims, (so, sa, sb) = collapse(
            out,
            [
                contiguous_strides(out),
                broadcast_strides(shape(op.lhs), out),
                broadcast_strides(shape(op.rhs), out),
            ],
        )

        def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
            # An operand may alias the narrower input of a widening cast folded in here.
            ta, tb = (ctype(self.codegen.base(v)) for v in (op.lhs, op.rhs))
            decls = [
                f"const {ta} *restrict pa = {em.ptr(op.lhs)};",
                f"const {tb} *restrict pb = {em.ptr(op.rhs)};",
                f"int32_t *restrict po = {res[0]};",
            ]

            def body_of(ix: list[str]) -> Lines:
                return [
                    f"const int32_t a = pa[{ix[1]}];",
                    f"const int32_t b = pb[{ix[2]}];",
                    f"po[{ix[0]}] = {expr};",
                ]

            body = loop_nest(dims, [(0, so), (0, sa), (0, sb)], body_of)
            return block(describe(op), decls, parallel(dims, body))

        return Lowered(emit, snippets=("quant",))

    def _widened_input(
        self, value: SSAValue, pads: Sequence[int], temps: list[int]
    ) -> Callable[[Emitter, list[str]], tuple[Lines, str]]:
        """Code giving `value` (NHWC, any integer type) as int32, zero-padded by
        `pads` = (top, left, bottom, right): in place when it already is, else in a temp."""
        dims = shape(value)
        n, h, w, c = dims
        pt, pl, pb, pr = pads
        hp, wp = h + pt + pb, w + pl + pr
        if ctype(value) == "int32_t" and not any(pads):
            return lambda em, tmp: ([], em.ptr(value))
        slot = len(temps)
        temps.append(n * hp * wp * c)

        def emit(em: Emitter, tmp: list[str]) -> tuple[Lines, str]:
            dst = f"((int32_t *){tmp[slot]})"
            lines = [
                f"memset({dst}, 0, sizeof(int32_t) * {n * hp * wp * c});",
                *parallel([n * h, w * c], []),
                f"for (long i = 0; i < {n * h}; ++i)",
                f"  for (long j = 0; j < {w * c}; ++j)",
                f"    {dst}[((i / {h} * {hp} + i % {h} + {pt}) * {wp} + {pl}) * {c} + j] = "
                f"(int32_t){em.ptr(value)}[i * {w * c} + j];",
            ]
            return lines, dst

        return emit

    def _integer_bias(self, em: Emitter, bias: SSAValue | None) -> str:
        return "NULL" if bias is None else em.ptr(bias)

    def integer_conv2d(self, op: nn.Conv2DOp) -> Lowered:
        props = op.all_properties()
        groups = op.groups.value.data
        sh, sw = ints_of(props["strides"])  # type: ignore[arg-type]
        dh, dw = ints_of(props["dilations"])  # type: ignore[arg-type]
        pads = ints_of(props["pads"])  # type: ignore[arg-type]
        pt, pl, pb, pr = pads
        (n, h, w, c), (oc, kh, kw, cg) = shape(op.input), shape(op.filter)
        _, oh, ow, _ = shape(op.output)
        ocg = oc // groups
        hp, wp = h + pt + pb, w + pl + pr
        depthwise = groups > 1 and groups == c and oc == c
        if self.codegen.constant_array(op.filter) is None:
            raise LoweringError(op, "integer conv2d needs a constant filter")
        temps: list[int] = []
        widen = self._widened_input(op.input, pads, temps)

        def emit(em: Emitter, res: list[str], tmp: list[str]) -> Lines:
            body, x = widen(em, tmp)
            if depthwise:
                wk = em.packed(
                    op.filter,
                    "depthwise_filter_i32 [KH][KW][C]",
                    lambda a: packing.pack_depthwise(a, np.int32),
                )
                args = (x, n, hp, wp, c, f"(const int32_t *){wk}")
                args += (self._integer_bias(em, op.bias), res[0], oh, ow, kh, kw, sh, sw, dh, dw)
                body.append(c_call("irc_depthwise_i32", *args))
            else:
                wk = em.packed(
                    op.filter,
                    "conv2d_filter_i32 [G][OCg/16][KH][KW][Cg][16]",
                    lambda a: packing.pack_filter(a, groups, 1, np.int32),
                )
                args = (x, n, hp, wp, c, f"(const int32_t *){wk}")
                args += (self._integer_bias(em, op.bias), res[0], oh, ow, oc, kh, kw)
                body.append(c_call("irc_conv2d_i32", *args, sh, sw, dh, dw, groups, cg, ocg))
            return block(describe(op), [], body)

        return Lowered(emit, temps, ("conv_int",))

    def integer_fully_connected(self, op: nn.FullyConnectedOp) -> Lowered:
        x_shape, (oc, k) = shape(op.input), shape(op.weights)
        m = numel(x_shape[:-1])
        if self.codegen.constant_array(op.weights) is None:
            raise LoweringError(op, "integer fully_connected needs constant weights")
        temps = [] if ctype(op.input) == "int32_t" else [m * k]

        def emit(em: Emitter, res: list[str], tmp: list[str]) -> Lines:
            if ctype(op.input) == "int32_t":
                body: Lines = []
                x = em.ptr(op.input)
            else:
                body, x = [], f"((int32_t *){tmp[0]})"
                body += loop_nest(
                    [m * k],
                    [(0, [1])],
                    lambda ix: [f"{x}[{ix[0]}] = (int32_t){em.ptr(op.input)}[{ix[0]}];"],
                )
            wk = em.packed(
                op.weights,
                "conv2d_filter_i32 [1][N/16][1][1][K][16]",
                lambda a: packing.pack_filter(a.reshape(oc, 1, 1, k), 1, 1, np.int32),
            )
            if m:
                args = (x, 1, 1, m, k, f"(const int32_t *){wk}", self._integer_bias(em, op.bias))
                args += (res[0], 1, m, oc, 1, 1, 1, 1, 1, 1, 1, k, oc)
                body.append(c_call("irc_conv2d_i32", *args))
            return block(describe(op), [], body)

        return Lowered(emit, temps, ("conv_int",))

    def integer_pool(self, op: nn.MaxPool2DOp | nn.AvgPool2DOp) -> Lowered:
        props = op.all_properties()
        is_max = isinstance(op, nn.MaxPool2DOp)
        kh, kw = ints_of(props["kernel"])  # type: ignore[arg-type]
        sh, sw = ints_of(props["strides"])  # type: ignore[arg-type]
        dh, dw = ints_of(props["dilations"])  # type: ignore[arg-type]
        pt, pl, _, _ = ints_of(props["pads"])  # type: ignore[arg-type]
        include_pad = 0 if is_max else int(bool(op.count_include_pad.value.data))
        (n, h, w, c), (_, oh, ow, _) = shape(op.input), shape(op.output)
        ct = ctype(op.input)
        lowest = int(np.iinfo(dtype(op.input)).min)

        def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
            args = (int(is_max), em.ptr(op.input), n, h, w, c, res[0], oh, ow)
            args += (kh, kw, sh, sw, dh, dw, pt, pl, include_pad, f"{lowest}LL")
            return block(describe(op), [], [c_call(f"irc_pool2d_{ct}", *args)])

        return Lowered(emit, snippets=("pool_int",))

    def integer_reduce(self, op: nn.ReduceOp) -> Lowered:
        info = np.iinfo(dtype(op.input))
        init = {"sum": "0", "max": f"{int(info.min)}LL", "min": f"{int(info.max)}LL"}
        combine = {
            "sum": "po[{o}] = (int32_t)((uint32_t)po[{o}] + (uint32_t)px[{x}]);",
            "max": "po[{o}] = px[{x}] > po[{o}] ? px[{x}] : po[{o}];",
            "min": "po[{o}] = px[{x}] < po[{o}] ? px[{x}] : po[{o}];",
        }
        return reduction(op, ctype(op.input), init, combine, "quant")

    # ---- Elementwise ----

    def binary(self, op: nn.ElementwiseBinaryOp, expr: str) -> Lowered:
        out = shape(op.output)
        # A splat constant operand (one value, any shape) is a literal, not an array.
        splats = [self.codegen.constant_splat(v) for v in (op.lhs, op.rhs)]
        dims, (so, sa, sb) = collapse(
            out,
            [
                contiguous_strides(out),
                broadcast_strides(() if splats[0] is not None else shape(op.lhs), out),
                broadcast_strides(() if splats[1] is not None else shape(op.rhs), out),
            ],
        )
        act = _activation_code(op)
        full = _wrap_activation(f"({expr})", act)

        def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
            decls = [f"float *restrict po = {res[0]};"]
            loads = []
            for name, value, splat, index in (
                ("a", op.lhs, splats[0], 1),
                ("b", op.rhs, splats[1], 2),
            ):
                if splat is not None:
                    decls.insert(0, f"const float {name} = {c_float(splat)};")
                else:
                    decls.insert(0, f"const float *restrict p{name} = {em.ptr(value)};")
                    loads.append((name, index))

            def body_of(ix: list[str]) -> Lines:
                lines = [f"const float {n} = p{n}[{ix[i]}];" for n, i in loads]
                return [*lines, f"po[{ix[0]}] = {full};"]

            body = loop_nest(dims, [(0, so), (0, sa), (0, sb)], body_of)
            return block(describe(op), decls, parallel(dims, body))

        return Lowered(emit, snippets=("common",))

    def unary_expr(self, op: Operation) -> str:
        x = "x"
        match op:
            case nn.ReluOp():
                return "x < 0.0f ? 0.0f : x"
            case nn.Relu6Op():
                return "irc_clampf(x, 0.0f, 6.0f)"
            case nn.ClipOp():
                expr = x
                if op.min is not None:
                    low = c_float(op.min.value.data)
                    expr = f"({expr} < {low} ? {low} : {expr})"  # -0.0 and NaN kept
                if op.max is not None:
                    high = c_float(op.max.value.data)
                    expr = f"({expr} > {high} ? {high} : {expr})"
                return expr
            case nn.SigmoidOp():
                return "1.0f / (1.0f + expf(-x))"
            case nn.TanhOp():
                return "tanhf(x)"
            case nn.HardSwishOp():
                return "x * (irc_clampf(x + 3.0f, 0.0f, 6.0f) / 6.0f)"
            case nn.LeakyReluOp():
                return f"x >= 0.0f ? x : x * {c_float(op.alpha.value.data)}"
            case nn.HardSigmoidOp():
                alpha, beta = c_float(op.alpha.value.data), c_float(op.beta.value.data)
                return f"irc_clampf(x * {alpha} + {beta}, 0.0f, 1.0f)"
            case nn.ExpOp():
                return "expf(x)"
            case nn.LogOp():
                return "logf(x)"
            case nn.SqrtOp():
                return "sqrtf(x)"
            case nn.RsqrtOp():
                return "1.0f / sqrtf(x)"
            case nn.AbsOp():
                return "fabsf(x)"
            case nn.NegOp():
                return "-x"
            case nn.ErfOp():
                return "erff(x)"
            case nn.GeluOp() if op.approximate.data == "tanh":
                k0, k1 = c_float(math.sqrt(2 / math.pi)), c_float(0.044715)
                return f"0.5f * x * (1.0f + tanhf({k0} * (x + {k1} * x * x * x)))"
            case nn.GeluOp():
                return f"0.5f * x * (1.0f + erff(x * {c_float(1 / math.sqrt(2))}))"
        raise LoweringError(op, f"no kernel for '{op.name}'")

    def unary(self, op: Operation) -> Lowered:
        expr = self.unary_expr(op)
        count = numel(shape(op.results[0]))

        def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
            decls = [
                f"const float *restrict px = {em.ptr(op.operands[0])};",
                f"float *restrict po = {res[0]};",
            ]
            body = loop_nest(
                [count],
                [(0, [1])],
                lambda ix: [f"const float x = px[{ix[0]}];", f"po[{ix[0]}] = {expr};"],
            )
            return block(describe(op), decls, body)

        return Lowered(emit, snippets=("common",))

    # ---- Convolution and matrix products ----

    def _bias(self, em: Emitter, bias: SSAValue | None) -> str:
        """The bias pointer; NULL when there is none or it is a constant of zeros."""
        if bias is None or self.codegen.constant_splat(bias) == 0.0:
            return "NULL"
        return em.ptr(bias)

    def lower_conv2d(
        self, op: nn.Conv2DOp, residual: tuple[SSAValue, int] | None = None
    ) -> Lowered:
        """A float conv2d; with `residual` = (value, activation code) the result is
        act(conv + value) (a residual add fused into the epilogue: `residual_adds`)."""
        props = op.all_properties()
        layout = op.layout.data
        groups = op.groups.value.data
        strides = ints_of(props["strides"])  # type: ignore[arg-type]
        dilations = ints_of(props["dilations"])  # type: ignore[arg-type]
        pt, pl, pb, pr = ints_of(props["pads"])  # type: ignore[arg-type]
        act = _activation_code(op)
        x_shape, w_shape, y_shape = shape(op.input), shape(op.filter), shape(op.output)
        if layout == "NCHW":
            n, c, h, w = x_shape
            oc, cg, kh, kw = w_shape
            _, _, oh, ow = y_shape
        else:
            n, h, w, c = x_shape
            oc, kh, kw, cg = w_shape
            _, oh, ow, _ = y_shape
        ocg = oc // groups
        hp, wp = h + pt + pb, w + pl + pr
        depthwise = groups > 1 and groups == c and oc == c
        pointwise = kh == kw == 1 and tuple(strides) == (1, 1) and not (pt or pl or pb or pr)
        nv = packing.vectors_per_block(ocg)
        filter_const = self.codegen.constant_array(op.filter) is not None

        temps: list[int] = []
        slots: dict[str, int] = {}

        def temp(name: str, size: int) -> None:
            slots[name] = len(temps)
            temps.append(size)

        if layout == "NCHW":
            temp("x_nhwc", numel(x_shape))
            temp("y_nhwc", numel(y_shape))
            if not filter_const:
                temp("w_ohwi", numel(w_shape))
        if (pt or pl or pb or pr) and not depthwise:  # depthwise pads implicitly
            temp("padded", n * hp * wp * c)
        if not filter_const:
            temp(
                "w_packed",
                kh * kw * c
                if depthwise
                else packing.packed_filter_size(oc, kh, kw, cg, groups, nv),
            )

        def ohwi(array: np.ndarray) -> np.ndarray:
            return array.transpose(0, 2, 3, 1) if layout == "NCHW" else array

        def emit(em: Emitter, res: list[str], tmp: list[str]) -> Lines:
            body: Lines = []
            x, y = em.ptr(op.input), res[0]
            if layout == "NCHW":
                body += transpose_lines(x, tmp[slots["x_nhwc"]], x_shape, (0, 2, 3, 1))
                x, y = tmp[slots["x_nhwc"]], tmp[slots["y_nhwc"]]
            if "padded" in slots:
                body.append(
                    c_call("irc_pad_nhwc", tmp[slots["padded"]], x, n, h, w, c, pt, pl, pb, pr)
                )
                x = tmp[slots["padded"]]
            if filter_const:
                if depthwise:
                    wk = em.packed(
                        op.filter,
                        "depthwise_filter [KH][KW][C]",
                        lambda a: packing.pack_depthwise(ohwi(a)),
                    )
                else:
                    wk = em.packed(
                        op.filter,
                        f"conv2d_filter [G][OCg/{16 * nv}][KH][KW][Cg][{16 * nv}]",
                        lambda a: packing.pack_filter(ohwi(a), groups, nv),
                    )
            else:
                src = em.ptr(op.filter)
                if layout == "NCHW":
                    body += transpose_lines(src, tmp[slots["w_ohwi"]], w_shape, (0, 2, 3, 1))
                    src = tmp[slots["w_ohwi"]]
                wk = tmp[slots["w_packed"]]
                if depthwise:
                    body += transpose_lines(src, wk, (c, kh, kw), (1, 2, 0))
                else:
                    body.append(
                        c_call("irc_pack_filter", wk, src, groups, ocg, kh, kw, cg, 16 * nv)
                    )
            bias = self._bias(em, op.bias)
            sh, sw = strides
            dh, dw = dilations
            extra = ("NULL", 0) if residual is None else (em.ptr(residual[0]), residual[1])
            if depthwise:
                body.append(
                    c_call(
                        "irc_depthwise",
                        *(x, n, h, w, c, wk, bias, y, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, act),
                    )
                )
            elif pointwise:
                m = n * h * w
                geometry = (1, 1, m, c, wk, bias, y, 1, m, oc, 1, 1, 1, 1, 1, 1)
                body.append(c_call("irc_conv2d", nv, x, *geometry, groups, cg, ocg, act, *extra))
            else:
                geometry = (n, hp, wp, c, wk, bias, y, oh, ow, oc, kh, kw, sh, sw, dh, dw)
                body.append(c_call("irc_conv2d", nv, x, *geometry, groups, cg, ocg, act, *extra))
            if layout == "NCHW":
                body += transpose_lines(y, res[0], (n, oh, ow, oc), (0, 3, 1, 2))
            return block(describe(op), [], body)

        snippets = ["depthwise" if depthwise else "conv2d"]
        if "padded" in slots:
            snippets.append("pad_nhwc")
        if not filter_const and not depthwise:
            snippets.append("pack_filter")
        return Lowered(emit, temps, tuple(snippets))

    def lower_conv2d_transpose(self, op: nn.Conv2DTransposeOp) -> Lowered:
        """Float and integer conv2d_transpose: a gather kernel (`conv_transpose`)."""
        from irc.targets.cpu.conv_transpose import lower_conv2d_transpose

        # one class under two module names (.typecheck maps irc.targets to targets/)
        return lower_conv2d_transpose(self, op)  # pyright: ignore[reportReturnType, reportArgumentType]

    def _zero_point_folded(self, op: nn.SubOp) -> bool:
        """An input's zero-point subtraction that its integer conv2d_transpose does itself
        (`conv_transpose.folded_zero_point`): the sub is an alias of the narrow input."""
        from irc.targets.cpu.conv_transpose import folded_zero_point

        return folded_zero_point(op) is not None

    def lower_fully_connected(self, op: nn.FullyConnectedOp) -> Lowered:
        x_shape, (oc, k) = shape(op.input), shape(op.weights)
        m = numel(x_shape[:-1])
        nv = packing.vectors_per_block(oc)
        weights_const = self.codegen.constant_array(op.weights) is not None
        act = _activation_code(op)
        temps = [] if weights_const else [packing.packed_filter_size(oc, 1, 1, k, 1, nv)]

        def emit(em: Emitter, res: list[str], tmp: list[str]) -> Lines:
            body: Lines = []
            if weights_const:
                wk = em.packed(
                    op.weights,
                    f"conv2d_filter [1][N/{16 * nv}][1][1][K][{16 * nv}]",
                    lambda a: packing.pack_filter(a.reshape(oc, 1, 1, k), 1, nv),
                )
            else:
                wk = tmp[0]
                body.append(
                    c_call("irc_pack_filter", wk, em.ptr(op.weights), 1, oc, 1, 1, k, 16 * nv)
                )
            bias = self._bias(em, op.bias)
            if m:
                geometry = (1, 1, m, k, wk, bias, res[0], 1, m, oc, 1, 1, 1, 1, 1, 1)
                args = (nv, em.ptr(op.input), *geometry, 1, k, oc, act, "NULL", 0)
                body.append(c_call("irc_conv2d", *args))
            return block(describe(op), [], body)

        snippets = ("conv2d",) if weights_const else ("conv2d", "pack_filter")
        return Lowered(emit, temps, snippets)

    def lower_batch_matmul(self, op: nn.BatchMatmulOp) -> Lowered:
        """float32 `nn.batch_matmul` (numpy broadcasting of the batch dimensions, adj_x /
        adj_y as strides): per output batch the offsets of its operands, then one loop nest
        (`irc_batch_matmul`)."""
        x_shape, y_shape, z_shape = shape(op.lhs), shape(op.rhs), shape(op.output)
        adj_x, adj_y = op.adj_x.value.data, op.adj_y.value.data
        batch = z_shape[:-2]
        m, n = z_shape[-2], z_shape[-1]
        k = x_shape[-2] if adj_x else x_shape[-1]
        # element strides of (m, k) in x and (k, n) in y; transposes swap them
        xsm, xsk = (1, m) if adj_x else (k, 1)
        ysk, ysn = (1, k) if adj_y else (n, 1)
        x_offsets = self._batch_offsets(x_shape, batch)
        y_offsets = self._batch_offsets(y_shape, batch)

        def longs(name: str, values: Sequence[int]) -> str:
            return f"static const long {name}[] = {{{', '.join(map(str, values)) or '0'}}};"

        def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
            decls = [longs("xo", x_offsets), longs("yo", y_offsets)]
            if not numel(z_shape):
                return block(describe(op), [], [])
            call = c_call(
                "irc_batch_matmul",
                em.ptr(op.lhs),
                em.ptr(op.rhs),
                res[0],
                len(x_offsets),
                m,
                k,
                n,
                "xo",
                "yo",
                xsm,
                xsk,
                ysk,
                ysn,
            )
            return block(describe(op), decls, [call])

        return Lowered(emit, snippets=("batch_matmul",))

    @staticmethod
    def _batch_offsets(dims: Sequence[int], batch: Sequence[int]) -> list[int]:
        """Element offset of each matrix of a `dims` operand at every index of the broadcast
        `batch` shape (row-major order)."""
        matrix = dims[-2] * dims[-1]
        own = dims[:-2]
        strides = broadcast_strides(own, batch) if batch else []
        strides = [s * matrix for s in strides]
        offsets = [0]
        for size, stride in zip(batch, strides, strict=True):
            offsets = [o + i * stride for o in offsets for i in range(size)]
        return offsets

    # ---- Pooling ----

    def _pool(self, op: nn.MaxPool2DOp | nn.AvgPool2DOp, is_max: bool) -> Lowered:
        props = op.all_properties()
        layout = op.layout.data
        kh, kw = ints_of(props["kernel"])  # type: ignore[arg-type]
        sh, sw = ints_of(props["strides"])  # type: ignore[arg-type]
        dh, dw = ints_of(props["dilations"])  # type: ignore[arg-type]
        pt, pl, _, _ = ints_of(props["pads"])  # type: ignore[arg-type]
        include_pad = 0 if is_max else int(bool(op.count_include_pad.value.data))  # type: ignore[union-attr]
        act = _activation_code(op)
        x_shape, y_shape = shape(op.input), shape(op.output)
        nchw = layout == "NCHW"
        if nchw:
            n, c, h, w = x_shape
            _, _, oh, ow = y_shape
        else:
            n, h, w, c = x_shape
            _, oh, ow, _ = y_shape
        temps = [numel(x_shape), numel(y_shape)] if nchw else []

        def emit(em: Emitter, res: list[str], tmp: list[str]) -> Lines:
            body: Lines = []
            x, y = em.ptr(op.input), res[0]
            if nchw:
                body += transpose_lines(x, tmp[0], x_shape, (0, 2, 3, 1))
                x, y = tmp[0], tmp[1]
            window = (kh, kw, sh, sw, dh, dw, pt, pl)
            body.append(
                c_call(
                    "irc_pool2d", int(is_max), x, n, h, w, c, y, oh, ow, *window, include_pad, act
                )
            )
            if nchw:
                body += transpose_lines(y, res[0], (n, oh, ow, c), (0, 3, 1, 2))
            return block(describe(op), [], body)

        return Lowered(emit, temps, ("pool2d",))

    def lower_max_pool2d(self, op: nn.MaxPool2DOp) -> Lowered:
        return self._pool(op, True)

    def lower_avg_pool2d(self, op: nn.AvgPool2DOp) -> Lowered:
        return self._pool(op, False)

    # ---- Reductions and softmax ----

    def lower_reduce(self, op: nn.ReduceOp) -> Lowered:
        init = {"sum": "0.0f", "mean": "0.0f", "prod": "1.0f", "max": "(-INFINITY)"}
        init["min"] = "INFINITY"
        combine = {
            "sum": "po[{o}] += px[{x}];",
            "mean": "po[{o}] += px[{x}];",
            "prod": "po[{o}] *= px[{x}];",
            "max": "po[{o}] = irc_maxf(po[{o}], px[{x}]);",
            "min": "po[{o}] = irc_minf(po[{o}], px[{x}]);",
        }
        return reduction(op, "float", init, combine, "common")

    def _softmax(self, op: nn.SoftmaxOp | nn.LogSoftmaxOp, is_log: bool) -> Lowered:
        dims = shape(op.input)
        axis = op.axis.value.data % len(dims)
        outer, n, inner = numel(dims[:axis]), dims[axis], numel(dims[axis + 1 :])
        beta = 1.0 if is_log else op.beta.value.data  # type: ignore[union-attr]

        def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
            call = c_call(
                "irc_softmax",
                *(em.ptr(op.input), res[0], outer, n, inner),
                *(c_float(beta), int(beta != 1.0), int(is_log)),
            )
            return block(describe(op), [], [call])

        return Lowered(emit, snippets=("softmax",))

    def lower_softmax(self, op: nn.SoftmaxOp) -> Lowered:
        return self._softmax(op, False)

    def lower_log_softmax(self, op: nn.LogSoftmaxOp) -> Lowered:
        return self._softmax(op, True)

    # ---- Data movement ----

    def lower_reshape(self, op: nn.ReshapeOp) -> Lowered:
        return Lowered(lambda em, res, tmp: [], alias=True)

    def lower_transpose(self, op: nn.TransposeOp) -> Lowered:
        ct = ctype(op.input)
        dims, perm = shape(op.input), ints_of(op.perm)

        def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
            decls = [
                f"const {ct} *restrict px = {em.ptr(op.input)};",
                f"{ct} *restrict po = {res[0]};",
            ]
            return block(describe(op), decls, transpose_lines("px", "po", dims, perm))

        return Lowered(emit)

    def lower_broadcast_to(self, op: nn.BroadcastToOp) -> Lowered:
        ct = ctype(op.input)
        out = shape(op.output)
        cdims, (so, sx) = collapse(
            out, [contiguous_strides(out), broadcast_strides(shape(op.input), out)]
        )

        def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
            decls = [
                f"const {ct} *restrict px = {em.ptr(op.input)};",
                f"{ct} *restrict po = {res[0]};",
            ]
            body = loop_nest(cdims, [(0, so), (0, sx)], lambda ix: [f"po[{ix[0]}] = px[{ix[1]}];"])
            return block(describe(op), decls, body)

        return Lowered(emit)

    def lower_concat(self, op: nn.ConcatOp) -> Lowered:
        out = shape(op.output)
        axis = op.axis.value.data % len(out)
        outer = numel(out[:axis])
        out_inner = numel(out[axis:])
        act = _activation_code(op)

        def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
            body: Lines = []
            offset = 0
            for value in op.inputs:
                inner = numel(shape(value)[axis:])
                src = em.ptr(value)
                if inner:
                    body += _copy_rows(
                        res[0], offset, out_inner, src, 0, inner, outer, inner, ctype(op.output)
                    )
                offset += inner
            if act:
                body += loop_nest(
                    [numel(out)],
                    [(0, [1])],
                    lambda ix: [f"{res[0]}[{ix[0]}] = irc_act({res[0]}[{ix[0]}], {act});"],
                )
            return block(describe(op), [], body)

        return Lowered(emit, snippets=("common",))

    def lower_split(self, op: nn.SplitOp) -> Lowered:
        dims = shape(op.input)
        axis = op.axis.value.data % len(dims)
        outer = numel(dims[:axis])
        in_inner = numel(dims[axis:])

        def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
            body: Lines = []
            offset = 0
            src = em.ptr(op.input)
            for value, dst in zip(op.outputs, res):
                inner = numel(shape(value)[axis:])
                if inner:
                    body += _copy_rows(
                        dst, 0, inner, src, offset, in_inner, outer, inner, ctype(op.input)
                    )
                offset += inner
            return block(describe(op), [], body)

        return Lowered(emit)

    def lower_slice(self, op: nn.SliceOp) -> Lowered:
        ct = ctype(op.input)
        dims, out = shape(op.input), shape(op.output)
        begin, steps = ints_of(op.begin), ints_of(op.strides)
        in_strides = contiguous_strides(dims)
        base = sum(b * s for b, s in zip(begin, in_strides))
        cdims, (so, sx) = collapse(
            out, [contiguous_strides(out), [s * st for s, st in zip(in_strides, steps)]]
        )

        def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
            decls = [
                f"const {ct} *restrict px = {em.ptr(op.input)};",
                f"{ct} *restrict po = {res[0]};",
            ]
            body = loop_nest(
                cdims, [(0, so), (base, sx)], lambda ix: [f"po[{ix[0]}] = px[{ix[1]}];"]
            )
            return block(describe(op), decls, body)

        return Lowered(emit)

    def lower_pad(self, op: nn.PadOp) -> Lowered:
        ct = ctype(op.input)
        dims, out = shape(op.input), shape(op.output)
        pads = ints_of(op.pads)
        out_strides = contiguous_strides(out)
        base = sum(pads[2 * d] * out_strides[d] for d in range(len(dims)))
        cdims, (sx, so) = collapse(dims, [contiguous_strides(dims), out_strides])
        fill = op.value.value.data
        value = c_float(fill) if ct == "float" else str(int(fill))

        def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
            decls = [
                f"const {ct} *restrict px = {em.ptr(op.input)};",
                f"{ct} *restrict po = {res[0]};",
            ]
            body = loop_nest([numel(out)], [(0, [1])], lambda ix: [f"po[{ix[0]}] = {value};"])
            body += loop_nest(
                cdims, [(0, sx), (base, so)], lambda ix: [f"po[{ix[1]}] = px[{ix[0]}];"]
            )
            return block(describe(op), decls, body)

        return Lowered(emit)

    def lower_resize(self, op: nn.ResizeOp) -> Lowered:
        from irc.targets.cpu.resize_tables import resize_tables

        layout = op.layout.data
        x_shape, y_shape = shape(op.input), shape(op.output)
        nchw = layout == "NCHW"
        if nchw:
            n, c, h, w = x_shape
            _, _, oh, ow = y_shape
        else:
            n, h, w, c = x_shape
            _, oh, ow, _ = y_shape
        tables = resize_tables(op, h, w)
        temps = [numel(x_shape), numel(y_shape)] if nchw else []

        def ints(name: str, values: np.ndarray) -> str:
            return f"static const int {name}[] = {{{', '.join(str(int(v)) for v in values)}}};"

        def floats(name: str, values: np.ndarray) -> str:
            return f"static const float {name}[] = {{{', '.join(c_float(v) for v in values)}}};"

        def emit(em: Emitter, res: list[str], tmp: list[str]) -> Lines:
            body: Lines = []
            x, y = em.ptr(op.input), res[0]
            if nchw:
                body += transpose_lines(x, tmp[0], x_shape, (0, 2, 3, 1))
                x, y = tmp[0], tmp[1]
            if op.mode.data == "nearest":
                hi, wi = tables  # nearest: (row indices, column indices)
                assert isinstance(hi, np.ndarray)
                assert isinstance(wi, np.ndarray)
                decls = [ints("hi", hi), ints("wi", wi)]
                body.append(c_call("irc_resize_nearest", x, n, h, w, c, y, oh, ow, "hi", "wi"))
            else:
                (hl, hh, hw), (wl, wh, ww) = tables
                tables_names = ("hl", "hh", "hw", "wl", "wh", "ww")
                decls = [ints("hl", hl), ints("hh", hh), floats("hw", hw)]
                decls += [ints("wl", wl), ints("wh", wh), floats("ww", ww)]
                body.append(c_call("irc_resize_bilinear", x, n, h, w, c, y, oh, ow, *tables_names))
            if nchw:
                body += transpose_lines(y, res[0], (n, oh, ow, c), (0, 3, 1, 2))
            return block(describe(op), decls, body)

        return Lowered(emit, temps, ("resize",))


def _copy_rows(
    dst: str,
    dst_offset: int,
    dst_row: int,
    src: str,
    src_offset: int,
    src_row: int,
    rows: int,
    count: int,
    ct: str = "float",
) -> Lines:
    """`rows` copies of `count` elements of C type `ct` between row-strided buffers."""
    if rows == 1 or (dst_row == count and src_row == count):
        return [
            f"memcpy({dst} + {dst_offset}, {src} + {src_offset}, sizeof({ct}) * {rows * count});"
        ]
    return [
        f"for (long r = 0; r < {rows}; ++r)",
        f"  memcpy({dst} + {dst_offset} + r * {dst_row}, {src} + {src_offset} + r * {src_row}, "
        f"sizeof({ct}) * {count});",
    ]


# ---- The function -------------------------------------------------------------------------------


@dataclass
class GeneratedFunction:
    """One entry lowered to C."""

    name: str
    """The C function's name (generated, never taken from the model)."""
    source: str
    """Its C definition."""
    workspace_bytes: int
    snippets: frozenset[str]
    num_inputs: int
    num_outputs: int


class _Arena:
    """First-fit allocation of aligned blocks in the workspace; tracks the peak."""

    def __init__(self) -> None:
        self.live: dict[int, tuple[int, int]] = {}
        self.peak = 0
        self._next_id = 0

    def alloc(self, size: int) -> tuple[int, int]:
        size = max(ALIGN_FLOATS, -(-size // ALIGN_FLOATS) * ALIGN_FLOATS)
        offset = 0
        for start, length in sorted(self.live.values()):
            if start - offset >= size:
                break
            offset = max(offset, start + length)
        ident = self._next_id
        self._next_id += 1
        self.live[ident] = (offset, size)
        self.peak = max(self.peak, offset + size)
        return ident, offset

    def free(self, ident: int) -> None:
        del self.live[ident]


@dataclass
class BufferPlan:
    """Where an entry's values and scratch live: what `cpu-plan-memory` records."""

    results: dict[Operation, list[int]]
    """Per op running a kernel: each result's workspace offset in floats, -1 for an entry
    result (written in place into the caller's output buffer)."""
    scratch: dict[Operation, list[int]]
    """Per op running a kernel: its scratch buffers' workspace offsets in floats."""
    aliases: set[Operation]
    """Ops whose result shares operand 0's buffer (nothing runs)."""
    workspace_floats: int


class FunctionCodegen:
    """Generates the C function of one entry (see the module docstring)."""

    def __init__(self, func: FuncOp, c_name: str, constants: ConstantTable):
        self.func = func
        self.c_name = c_identifier(c_name)
        self.constants = constants
        self._storage: dict[SSAValue, Storage] = {}
        self._constant_values: dict[SSAValue, np.ndarray] = {}
        self._base: dict[SSAValue, SSAValue] = {}
        self._plan_comment: Lines = []

    def constant_array(self, value: SSAValue) -> np.ndarray | None:
        return self._constant_values.get(value)

    def constant_splat(self, value: SSAValue) -> float | None:
        """The value of a constant all of whose elements are equal (None otherwise)."""
        array = self._constant_values.get(self.base(value))
        if array is None or array.size == 0 or array.dtype.kind != "f":
            return None
        first = array.reshape(-1)[0]
        if np.isnan(first) or not np.all(array == first):
            return None
        return float(first)

    def base(self, value: SSAValue) -> SSAValue:
        while value in self._base:
            value = self._base[value]
        return value

    def pointer(self, value: SSAValue) -> str:
        base = self.base(value)
        if base in self._constant_values and base not in self._storage:
            array = self._constant_values[base]
            index = self.constants.add(base, "raw", lambda: array)
            self._storage[base] = Storage("const", index, C_TYPES[array.dtype])
        return self._storage[base].expr()

    def _analyse(self) -> tuple[list[tuple[Operation, Lowered]], list[SSAValue]]:
        """How every op runs (constants aside) and the returned values; checks the entry."""
        block = self.func.body.block
        ops = list(block.ops)
        if not ops or not isinstance(ops[-1], ReturnOp):
            raise LoweringError(self.func, "the entry must end with func.return")
        returned = list(ops[-1].operands)
        for i, arg in enumerate(block.args):
            ct = c_type(arg.type) or "float"  # checked after the ops
            self._storage[arg] = Storage("in", i, ct)
        lowering = OpLowering(self)
        plans: list[tuple[Operation, Lowered]] = []
        for op in ops[:-1]:
            if isinstance(op, nn.ConstantOp):
                support = check_op(op)
                if not support:
                    raise LoweringError(op, support.reason.removeprefix("cpu: "))
                array = np.ascontiguousarray(op.to_array()).astype(dtype(op.output), copy=False)
                self._constant_values[op.output] = array
                continue
            if not isinstance(op, nn.NNOp | quant.SCastOp | quant.RescaleOp | cpu.FusionOp) and (
                type(op) not in quant_casts.CAST_OPS
            ):
                raise LoweringError(op, f"no kernel for '{op.name}'")
            lowered = lowering.lower(op)
            if lowered.alias:
                self._base[op.results[0]] = op.operands[0]
            plans.append((op, lowered))
        # Ops first (their refusals say most), then what crosses the boundary.
        for arg in block.args:
            self._check_tensor(arg, self.func)
        for value in returned:
            self._check_tensor(value, ops[-1])
        return plans, returned

    def plan_memory(self) -> BufferPlan:
        """The entry's buffer plan (see the module docstring), computed from its ops."""
        plans, returned = self._analyse()
        return self._plan_buffers(plans, returned)

    def generate(self) -> GeneratedFunction:
        """The C function, following the buffer plan recorded on the entry's ops."""
        plans, returned = self._analyse()
        plan = read_plan(self.func, plans, self._output_of(plans, returned))
        temps_of = self._apply_plan(plans, plan, returned)
        block = self.func.body.block
        emitter = Emitter(self)
        profiling = profile_enabled()
        profiler = KernelProfiler(self.c_name)
        body: Lines = []
        snippets: set[str] = {"common"}
        for op, lowered in plans:
            if lowered.alias:
                continue
            results = [self.pointer(r) for r in op.results]
            lines = lowered.emit(emitter, results, temps_of[op])
            if profiling:
                timed, data = lowered.timed or (op, tuple(op.operands))
                element = ctype(self.base(data[0])) if data else ctype(op.results[0])
                lines = profiler.wrap(timed, f"{describe(timed)} {element}", lines)
            body += lines
            snippets.update(lowered.snippets)
        for j, value in enumerate(returned):
            src = self.pointer(value)
            if src != f"out{j}":
                count = numel(shape(value))
                size = f"sizeof({ctype(value)}) * {count}"
                body.append(f"memcpy(out{j}, {src}, {size}); /* result {j} */")

        params = [f"const {ctype(a)} *in{i}" for i, a in enumerate(block.args)]
        params += [f"{ctype(v)} *out{j}" for j, v in enumerate(returned)]
        params += ["const void *const *consts", "float *ws"]
        header = [
            f"/* {c_comment(self.c_name)}: {len(plans)} ops, "
            f"workspace {plan.workspace_floats * 4} bytes. */",
            *self._plan_comment,
            f"void {self.c_name}({', '.join(params)}) {{",
            "  const float *const *K = (const float *const *)consts;",
            "  (void)K;",
            "  (void)ws;",
        ]
        source = "\n".join([*header, *("  " + line for line in body), "}"]) + "\n"
        if profiling:
            source = profiler.table() + source
            snippets.add("profile")
        return GeneratedFunction(
            self.c_name,
            source,
            plan.workspace_floats * 4,
            frozenset(snippets),
            len(block.args),
            len(returned),
        )

    def _check_tensor(self, value: SSAValue, op: Operation) -> None:
        type_ = value.type
        if not isinstance(type_, TensorType) or any(d < 0 for d in type_.get_shape()):
            raise LoweringError(op, f"expected a tensor of static shape, got {type_}")
        if c_type(type_) is None:
            raise LoweringError(
                op, f"entry arguments and results must be float32 or integer tensors, got {type_}"
            )

    def _output_of(
        self, plans: list[tuple[Operation, Lowered]], returned: list[SSAValue]
    ) -> dict[SSAValue, int]:
        """Returned values produced here -> the output buffer they are written into."""
        produced = {r for op, lowered in plans if not lowered.alias for r in op.results}
        outputs: dict[SSAValue, int] = {}
        for j, value in enumerate(returned):
            base = self.base(value)
            if base in produced and base not in outputs:
                outputs[base] = j
        return outputs

    def _plan_buffers(
        self, plans: list[tuple[Operation, Lowered]], returned: list[SSAValue]
    ) -> BufferPlan:
        """First-fit over live ranges: every produced value and every op's scratch."""
        outputs = self._output_of(plans, returned)
        # Last use of every buffer (through aliases), in op positions.
        last_use: dict[SSAValue, int] = {}
        for i, (op, lowered) in enumerate(plans):
            for value in (*op.operands, *op.results, *lowered.reads):
                last_use[self.base(value)] = i
        arena = _Arena()
        live: dict[SSAValue, int] = {}
        plan = BufferPlan({}, {}, set(), 0)
        for i, (op, lowered) in enumerate(plans):
            if lowered.alias:
                plan.aliases.add(op)
            else:
                offsets = []
                for result in op.results:
                    if result in outputs:
                        offsets.append(-1)
                        continue
                    ident, offset = arena.alloc(units(result))
                    live[result] = ident
                    offsets.append(offset)
                plan.results[op] = offsets
                scratch = [arena.alloc(size) for size in lowered.temps]
                plan.scratch[op] = [offset for _, offset in scratch]
                for ident, _ in scratch:
                    arena.free(ident)
            for value, ident in list(live.items()):
                if last_use.get(value, i) <= i:
                    arena.free(ident)
                    del live[value]
        plan.workspace_floats = arena.peak
        return plan

    def _apply_plan(
        self, plans: list[tuple[Operation, Lowered]], plan: BufferPlan, returned: list[SSAValue]
    ) -> dict[Operation, list[str]]:
        """Give every produced value its storage; returns each op's scratch pointers."""
        outputs = self._output_of(plans, returned)
        temps_of: dict[Operation, list[str]] = {}
        lines: Lines = []
        for i, (op, lowered) in enumerate(plans):
            if lowered.alias:
                continue
            for result, offset in zip(op.results, plan.results[op], strict=True):
                if offset < 0:
                    self._storage[result] = Storage("out", outputs[result], ctype(result))
                    lines.append(f" *   op {i} result: {self._storage[result].expr()}")
                else:
                    self._storage[result] = Storage("ws", offset, ctype(result))
                    lines.append(f" *   op {i} result: ws[{offset}..+{units(result)}]")
            temps_of[op] = [f"(ws + {offset})" for offset in plan.scratch[op]]
            for offset, size in zip(plan.scratch[op], lowered.temps, strict=True):
                lines.append(f" *   op {i} scratch: ws[{offset}..+{size}]")
        self._plan_comment = (
            ["/*", " * Buffer plan (offsets in floats):", *lines, " */"] if lines else []
        )
        return temps_of


def record_plan(func: FuncOp, plan: BufferPlan) -> None:
    """Write `plan` on the entry and its ops (`cpu.offsets`, `cpu.scratch`, `cpu.alias`,
    `cpu.workspace`; byte offsets), replacing an earlier plan."""
    for op in func.body.block.ops:
        for name in (cpu.PLAN_OFFSETS, cpu.PLAN_SCRATCH, cpu.PLAN_ALIAS):
            op.attributes.pop(name, None)
    for op in plan.aliases:
        op.attributes[cpu.PLAN_ALIAS] = UnitAttr()
    for op, offsets in plan.results.items():
        op.attributes[cpu.PLAN_OFFSETS] = DenseArrayBase.from_list(
            i64, [o * 4 if o >= 0 else -1 for o in offsets]
        )
        if plan.scratch[op]:
            op.attributes[cpu.PLAN_SCRATCH] = DenseArrayBase.from_list(
                i64, [o * 4 for o in plan.scratch[op]]
            )
    func.attributes[cpu.PLAN_WORKSPACE] = IntegerAttr(plan.workspace_floats * 4, i64)


def _byte_offsets(op: Operation, name: str) -> list[int] | None:
    attr = op.attributes.get(name)
    if attr is None:
        return None
    if not isinstance(attr, DenseArrayBase) or attr.elt_type != i64:
        raise LoweringError(op, f"'{name}' must be an array<i64: ...> of byte offsets")
    return [int(v) for v in attr.get_values()]


def read_plan(
    func: FuncOp,
    plans: list[tuple[Operation, Lowered]],
    outputs: dict[SSAValue, int],
) -> BufferPlan:
    """The plan recorded by `cpu-plan-memory`, checked against the ops (offsets in floats)."""
    workspace = func.attributes.get(cpu.PLAN_WORKSPACE)
    if workspace is None:
        raise LoweringError(
            func, f"the entry has no buffer plan ('{cpu.PLAN_WORKSPACE}'): run cpu-plan-memory"
        )
    if not isinstance(workspace, IntegerAttr) or workspace.value.data < 0:
        raise LoweringError(func, f"'{cpu.PLAN_WORKSPACE}' must be a non-negative integer")
    limit = workspace.value.data
    align = ALIGN_FLOATS * 4
    if limit % 4:
        raise LoweringError(func, f"'{cpu.PLAN_WORKSPACE}' must be a multiple of 4 bytes")
    plan = BufferPlan({}, {}, set(), limit // 4)
    for op, lowered in plans:
        if lowered.alias:
            if cpu.PLAN_ALIAS not in op.attributes:
                raise LoweringError(op, f"the op is an alias but lacks '{cpu.PLAN_ALIAS}'")
            plan.aliases.add(op)
            continue
        if cpu.PLAN_ALIAS in op.attributes:
            raise LoweringError(op, f"'{cpu.PLAN_ALIAS}' on an op that runs a kernel")
        offsets = _byte_offsets(op, cpu.PLAN_OFFSETS)
        if offsets is None or len(offsets) != len(op.results):
            raise LoweringError(
                op, f"expected '{cpu.PLAN_OFFSETS}' with one offset per result (the plan)"
            )
        scratch = _byte_offsets(op, cpu.PLAN_SCRATCH) or []
        if len(scratch) != len(lowered.temps):
            raise LoweringError(
                op,
                f"the kernel needs {len(lowered.temps)} scratch buffers, the plan has "
                f"{len(scratch)}",
            )
        sizes = [units(r) * 4 for r in op.results]
        for result, offset in zip(op.results, offsets, strict=True):
            if offset == -1 and result not in outputs:
                raise LoweringError(op, "offset -1 for a value that is not an entry result")
        for offset, size in [
            *zip(offsets, sizes),
            *((s, t * 4) for s, t in zip(scratch, lowered.temps)),
        ]:
            if offset == -1:
                continue
            if offset < 0 or offset % align or offset + size > limit:
                raise LoweringError(
                    op,
                    f"planned offset {offset} (+{size} bytes) is not {align}-byte aligned "
                    f"inside the {limit}-byte workspace",
                )
        plan.results[op] = [o // 4 if o >= 0 else -1 for o in offsets]
        plan.scratch[op] = [o // 4 for o in scratch]
    return plan


def plan_function(func: FuncOp) -> BufferPlan:
    """Compute the buffer plan of one entry and record it on it (`cpu-plan-memory`)."""
    plan = FunctionCodegen(func, "plan", ConstantTable()).plan_memory()
    record_plan(func, plan)
    return plan


def generate_function(func: FuncOp, c_name: str, constants: ConstantTable) -> GeneratedFunction:
    """Lower one entry to C (raises LoweringError on an op it cannot run); the entry is
    planned first (`plan_function`) when it carries no buffer plan."""
    if cpu.PLAN_WORKSPACE not in func.attributes:
        plan_function(func)
    return FunctionCodegen(func, c_name, constants).generate()


def assemble_source(functions: Sequence[GeneratedFunction]) -> str:
    """The translation unit: a banner, the kernel snippets used, then the functions."""
    snippets = set().union(*(f.snippets for f in functions)) if functions else {"common"}
    banner = "/* Generated by irc's CPU target (lower-cpu); do not edit. */\n"
    return banner + csrc.source_for(snippets) + "\n" + "\n".join(f.source for f in functions)


def reduction(
    op: nn.ReduceOp, ct: str, init: dict[str, str], combine: dict[str, str], snippet: str
) -> Lowered:
    """`nn.reduce` as two loop nests on C type `ct`: every output set to `init[kind]`, then
    `combine[kind]` (a statement of `po[{o}]` and `px[{x}]`) over the input; `mean` divides by
    the reduced count afterwards (float only)."""
    dims = shape(op.input)
    rank = len(dims)
    axes = {a % rank for a in ints_of(op.axes)}
    kind = op.kind.data
    kept = [d for d in range(rank) if d not in axes]
    out_strides = [0] * rank
    for d, s in zip(kept, contiguous_strides([dims[d] for d in kept])):
        out_strides[d] = s
    cdims, (sx, so) = collapse(dims, [contiguous_strides(dims), out_strides])
    out_count = numel([dims[d] for d in kept])
    count = numel([dims[d] for d in axes])

    def emit(em: Emitter, res: list[str], _: list[str]) -> Lines:
        decls = [f"const {ct} *restrict px = {em.ptr(op.input)};", f"{ct} *restrict po = {res[0]};"]
        body = loop_nest([out_count], [(0, [1])], lambda ix: [f"po[{ix[0]}] = {init[kind]};"])
        body += loop_nest(
            cdims, [(0, sx), (0, so)], lambda ix: [combine[kind].format(x=ix[0], o=ix[1])]
        )
        if kind == "mean":
            body += loop_nest(
                [out_count],
                [(0, [1])],
                lambda ix: [f"po[{ix[0]}] = po[{ix[0]}] / {c_float(count)};"],
            )
        return block(describe(op), decls, body)

    return Lowered(emit, snippets=(snippet,))
