"""The `ocl` dialect: the OpenCL target's lowered form of a `delegate.executable`.

`lower-opencl` is four passes, each printable on its own (`irc-opt --print-ir-after-all`):

1. `opencl-fuse` wraps a producer (conv2d, fully_connected, batch_matmul, an elementwise op)
   and its single-use elementwise epilogue chain (activations, and binary ops whose other
   operand is a tensor of the output's shape — a residual `nn.add` — or a one-element
   constant) into one `ocl.fusion` op: a region on tensors, ended by `ocl.yield`, that
   becomes one kernel;
2. `opencl-bufferize` picks the kernel of every op or fusion (`ocl.kernel` in the program:
   a shape-specialised template instance), the constants to upload (`ocl.upload`) and one
   `ocl.alloc` per intermediate tensor, and replaces the entry's body by `ocl.execute`;
3. `opencl-plan-memory` reuses planned buffers by liveness (`peak_bytes` shrinks);
4. `opencl-codegen` assembles the kernels into the program's `source` (the `ocl.kernel` ops
   go) and sets every launch's local size (a rule, or measured with `tune=true`).

The result, for every `delegate.executable ... target("opencl")`:

* one `ocl.program`: the generated OpenCL C source (shape-specialised kernels named `k0`,
  `k1`, ...; generated identifiers only) and, in its body, the constants to upload once at
  load (`ocl.upload`, numbered 0, 1, ...); its optional `precision` (`"fp32"` when absent,
  `"fp16"`: float tensors stored as half bits, read and written with vload_half/vstore_half
  on any device, or `"fp16-native"`: half buffers and values, the source needing cl_khr_fp16)
  is the element storage `opencl-bufferize{precision=...}` chose, read by `opencl-codegen`
  and the runtime;
* each entry's body replaced by one `ocl.execute` on the entry's tensors, whose region is the
  entry's buffer plan and launch list: `ocl.alloc` (a device buffer of the plan, reused by
  liveness) and `ocl.launch` (a kernel of the program, its buffer arguments, global and local
  sizes; an empty local size lets the runtime choose). A launch writes its last `writes`
  arguments (1 when absent; an op with several results, `nn.split`, writes one buffer per
  result in one launch) and only reads the others.

Buffers are named by strings: `in<i>` / `out<i>` (the entry's arguments and results), `c<i>`
(uploaded constants) and `b<i>` (planned buffers). `peak_bytes` on `ocl.execute` is the sum
of the planned buffers' sizes. Example (generic form):

```mlir
"ocl.program"() <{sym_name = "kernels", source = "__kernel void k0(...) {...}"}> ({
  "ocl.upload"() <{index = 0 : i64, value = dense<...> : tensor<16x3x3x3xf32>}> : () -> ()
}) : () -> ()
func.func @entry(%x: tensor<1x8x8x3xf32>) -> tensor<1x8x8x16xf32> {
  %y = "ocl.execute"(%x) <{program = @kernels, peak_bytes = 0 : i64, ...}> ({
    "ocl.launch"() <{kernel = "k0", args = ["in0", "c0", "out0"], global = [1024],
                     local = []}> : () -> ()
  }) : (tensor<1x8x8x3xf32>) -> tensor<1x8x8x16xf32>
  func.return %y : tensor<1x8x8x16xf32>
}
```
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import (
    HasParent,
    IsTerminator,
    NoTerminator,
    SingleBlockImplicitTerminator,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException

BUFFER_NAME = re.compile(r"(in|out|c|b)([0-9]+)")
KERNEL_NAME = re.compile(r"k[0-9]+")
KERNEL_DEFINITION = re.compile(
    r"__kernel (?:__attribute__\(\(reqd_work_group_size\([0-9, ]+\)\)\) )?void KERNEL_NAME\("
)
"""How an `ocl.kernel` body defines its kernel (with an optional required work-group size)."""


def _ints(values: Sequence[int]) -> ArrayAttr[IntegerAttr]:
    return ArrayAttr([IntegerAttr(v, i64) for v in values])


PRECISIONS = ("fp32", "fp16", "fp16-native")
"""Values of `ocl.program`'s `precision`: the device storage of float tensors (float, half
bits through vload_half/vstore_half, half values with cl_khr_fp16)."""


@irdl_op_definition
class ProgramOp(IRDLOperation):
    """Generated OpenCL C source and the constants its launches read (uploaded once).

    `precision` records the storage of float tensors: absent or `"fp32"` for float,
    `"fp16"` / `"fp16-native"` for half (buffers and uploads; the host converts at the
    boundary; `fp16-native` kernels compute on half values too, with cl_khr_fp16).
    """

    name = "ocl.program"

    sym_name = prop_def(SymbolNameConstraint())
    source = prop_def(StringAttr)
    precision_attr = opt_prop_def(StringAttr, prop_name="precision")
    body = region_def("single_block")

    traits = traits_def(SymbolOpInterface(), NoTerminator())

    def __init__(
        self,
        sym_name: str,
        source: str,
        uploads: Sequence[Operation] = (),
        precision: str | None = None,
    ):
        properties: dict[str, Attribute] = {
            "sym_name": StringAttr(sym_name),
            "source": StringAttr(source),
        }
        if precision is not None:
            properties["precision"] = StringAttr(precision)
        super().__init__(properties=properties, regions=[Region(Block(list(uploads)))])

    @property
    def precision(self) -> str:
        """`"fp32"` (also when the property is absent), `"fp16"` or `"fp16-native"`."""
        return "fp32" if self.precision_attr is None else self.precision_attr.data

    @property
    def uploads(self) -> list[UploadOp]:
        return [op for op in self.body.block.ops if isinstance(op, UploadOp)]

    @property
    def kernels(self) -> list[KernelOp]:
        """Kernels `opencl-codegen` has not assembled into `source` yet."""
        return [op for op in self.body.block.ops if isinstance(op, KernelOp)]

    def verify_(self) -> None:
        if self.precision not in PRECISIONS:
            raise VerifyException(
                f"precision must be fp32, fp16 or fp16-native, got '{self.precision}'"
            )
        uploads = [op for op in self.body.block.ops if isinstance(op, UploadOp)]
        names: set[str] = set()
        for op in self.body.block.ops:
            if isinstance(op, KernelOp):
                if op.sym_name.data in names:
                    raise VerifyException(f"kernel '{op.sym_name.data}' is defined twice")
                names.add(op.sym_name.data)
            elif not isinstance(op, UploadOp):
                raise VerifyException(
                    f"expected only ocl.upload and ocl.kernel ops in the body, got {op.name}"
                )
        for expected, op in enumerate(uploads):
            if op.index.value.data != expected:
                raise VerifyException(
                    f"upload #{expected} has index {op.index.value.data}; indices must count "
                    "0, 1, ... in order"
                )


@irdl_op_definition
class UploadOp(IRDLOperation):
    """A constant copied to a device buffer (`c<index>`) once, when the program loads."""

    name = "ocl.upload"

    index = prop_def(IntegerAttr[I64])
    value = prop_def(DenseIntOrFPElementsAttr)

    traits = lazy_traits_def(lambda: (HasParent(ProgramOp),))

    def __init__(self, index: int, value: DenseIntOrFPElementsAttr):
        super().__init__(properties={"index": IntegerAttr(index, i64), "value": value})


@irdl_op_definition
class KernelOp(IRDLOperation):
    """One shape-specialised kernel chosen by `opencl-bufferize`, not yet in the program's
    source: its OpenCL C text (named `KERNEL_NAME` until `opencl-codegen` names it
    `sym_name`) and what it computes (`description`, a comment in the source)."""

    name = "ocl.kernel"

    sym_name = prop_def(StringAttr)
    body = prop_def(StringAttr)
    description = prop_def(StringAttr)

    traits = lazy_traits_def(lambda: (HasParent(ProgramOp),))

    def __init__(self, sym_name: str, body: str, description: str):
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "body": StringAttr(body),
                "description": StringAttr(description),
            }
        )

    def verify_(self) -> None:
        if not KERNEL_NAME.fullmatch(self.sym_name.data):
            raise VerifyException(f"bad kernel name '{self.sym_name.data}'")
        if KERNEL_DEFINITION.search(self.body.data) is None:
            raise VerifyException(
                "the body must define '__kernel void KERNEL_NAME(...)' (an "
                "'__attribute__((reqd_work_group_size(X, Y, Z)))' may follow '__kernel')"
            )
        if "*/" in self.description.data or "\n" in self.description.data:
            raise VerifyException("the description must be one line without '*/'")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The end of an `ocl.fusion` region: the fused unit's result."""

    name = "ocl.yield"

    values = var_operand_def()

    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(FusionOp)))

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class FusionOp(IRDLOperation):
    """A producer and its elementwise epilogue chain, run as one kernel (`opencl-fuse`).

    The region (not isolated: it reads values from above) holds the producer first, then
    each epilogue op reading the previous op's only result, and `ocl.yield` of the last."""

    name = "ocl.fusion"

    outputs = var_result_def()
    body = region_def("single_block")

    traits = lazy_traits_def(lambda: (SingleBlockImplicitTerminator(YieldOp),))

    def __init__(self, result_types: Sequence[Attribute], ops: Sequence[Operation]):
        super().__init__(result_types=[list(result_types)], regions=[Region(Block(list(ops)))])

    @property
    def producer(self) -> Operation:
        first = self.body.block.first_op
        assert first is not None
        return first

    @property
    def epilogue(self) -> list[Operation]:
        """The ops after the producer, in order (without the yield)."""
        return [op for op in self.body.block.ops if not isinstance(op, YieldOp)][1:]

    def verify_(self) -> None:
        ops = list(self.body.block.ops)
        if len(ops) < 3 or not isinstance(ops[-1], YieldOp):
            raise VerifyException("expected a producer, at least one epilogue op and ocl.yield")
        previous = ops[0]
        for op in ops[1:]:
            if len(previous.results) != 1:
                raise VerifyException(f"'{previous.name}' in a fusion must have one result")
            result = previous.results[0]
            if result not in op.operands:
                raise VerifyException(f"'{op.name}' does not read the result of '{previous.name}'")
            if not result.has_one_use():
                raise VerifyException(
                    f"the result of '{previous.name}' must have one use (the next fused op)"
                )
            if op.regions:
                raise VerifyException(f"'{op.name}' with regions cannot be fused")
            previous = op
        if [v.type for v in ops[-1].operands] != [v.type for v in self.outputs]:
            raise VerifyException("ocl.yield must yield values of the fusion's result types")


@irdl_op_definition
class ExecuteOp(IRDLOperation):
    """Run an entry on the device: its buffer plan and kernel launches, in order."""

    name = "ocl.execute"

    program = prop_def(SymbolRefAttr)
    peak_bytes = prop_def(IntegerAttr[I64])
    args = var_operand_def()
    outputs = var_result_def()
    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    def __init__(
        self,
        program: str,
        peak_bytes: int,
        args: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Sequence[Operation],
    ):
        super().__init__(
            operands=[list(args)],
            result_types=[list(result_types)],
            properties={
                "program": SymbolRefAttr(program),
                "peak_bytes": IntegerAttr(peak_bytes, i64),
            },
            regions=[Region(Block(list(body)))],
        )

    def verify_(self) -> None:
        allocated: set[str] = set()
        total = 0
        for op in self.body.block.ops:
            if isinstance(op, AllocOp):
                allocated.add(f"b{op.id.value.data}")
                total += op.bytes.value.data
            elif isinstance(op, LaunchOp):
                for name in op.written:
                    if name.startswith(("in", "c")):
                        raise VerifyException(
                            f"launch of '{op.kernel.data}' writes '{name}' (read-only: an entry "
                            "argument or an uploaded constant)"
                        )
                for arg in op.args.data:
                    m = BUFFER_NAME.fullmatch(arg.data)
                    if m is None:
                        raise VerifyException(f"bad buffer name '{arg.data}'")
                    kind, index = m.group(1), int(m.group(2))
                    if kind == "b" and arg.data not in allocated:
                        raise VerifyException(f"buffer '{arg.data}' is used before its ocl.alloc")
                    if kind == "in" and index >= len(self.args):
                        raise VerifyException(f"'{arg.data}': the entry has {len(self.args)} args")
                    if kind == "out" and index >= len(self.outputs):
                        raise VerifyException(
                            f"'{arg.data}': the entry has {len(self.outputs)} results"
                        )
            else:
                raise VerifyException(f"unexpected '{op.name}' in ocl.execute")
        if total != self.peak_bytes.value.data:
            raise VerifyException(
                f"peak_bytes {self.peak_bytes.value.data} differs from the allocations ({total})"
            )


@irdl_op_definition
class AllocOp(IRDLOperation):
    """A planned device buffer `b<id>` of `bytes` bytes (allocated once per loaded program)."""

    name = "ocl.alloc"

    id = prop_def(IntegerAttr[I64])
    bytes = prop_def(IntegerAttr[I64])

    traits = lazy_traits_def(lambda: (HasParent(ExecuteOp),))

    def __init__(self, buffer_id: int, nbytes: int):
        super().__init__(
            properties={"id": IntegerAttr(buffer_id, i64), "bytes": IntegerAttr(nbytes, i64)}
        )


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Enqueue kernel `kernel` of the program on buffers `args` over `global` work-items;
    the kernel writes the last `writes` buffers (one when absent) and reads the others."""

    name = "ocl.launch"

    kernel = prop_def(StringAttr)
    args = prop_def(ArrayAttr[StringAttr])
    global_size = prop_def(ArrayAttr[IntegerAttr], prop_name="global")
    local_size = prop_def(ArrayAttr[IntegerAttr], prop_name="local")
    writes = opt_prop_def(IntegerAttr[I64])
    label = opt_prop_def(StringAttr)
    """What this launch computes when its kernel, shared by identical ops, describes another
    (profiles show it); absent: the kernel's description."""

    traits = lazy_traits_def(lambda: (HasParent(ExecuteOp),))

    def __init__(
        self,
        kernel: str,
        args: Sequence[str],
        global_size: Sequence[int],
        local: Sequence[int],
        writes: int = 1,
        label: str | None = None,
    ):
        properties: dict[str, Attribute] = {
            "kernel": StringAttr(kernel),
            "args": ArrayAttr([StringAttr(a) for a in args]),
            "global": _ints(global_size),
            "local": _ints(local),
        }
        if writes != 1:
            properties["writes"] = IntegerAttr(writes, i64)
        if label is not None:
            properties["label"] = StringAttr(label)
        super().__init__(properties=properties)

    @property
    def written_count(self) -> int:
        """How many trailing arguments the kernel writes (`writes`, 1 when absent)."""
        return 1 if self.writes is None else self.writes.value.data

    @property
    def written(self) -> list[str]:
        """The buffers the kernel writes (the others it only reads)."""
        names = [a.data for a in self.args.data]
        return names[len(names) - self.written_count :]

    def verify_(self) -> None:
        if not KERNEL_NAME.fullmatch(self.kernel.data):
            raise VerifyException(f"bad kernel name '{self.kernel.data}'")
        sizes = [a.value.data for a in self.global_size.data]
        if not 1 <= len(sizes) <= 3 or any(s < 1 for s in sizes):
            raise VerifyException(f"bad global size {sizes}")
        local = [a.value.data for a in self.local_size.data]
        if local and len(local) != len(sizes):
            raise VerifyException("local size must be empty or match the global size's rank")
        if not 1 <= self.written_count <= len(self.args.data):
            raise VerifyException(
                f"writes {self.written_count}: a launch writes between 1 and its "
                f"{len(self.args.data)} arguments"
            )


OCL = Dialect(
    "ocl",
    [ProgramOp, UploadOp, KernelOp, FusionOp, YieldOp, ExecuteOp, AllocOp, LaunchOp],
    [],
)
