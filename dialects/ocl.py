"""The `ocl` dialect: the OpenCL target's lowered form of a `delegate.executable`.

`lower-opencl` turns every `delegate.executable ... target("opencl")` into:

* one `ocl.program`: the generated OpenCL C source (shape-specialised kernels named `k0`,
  `k1`, ...; generated identifiers only) and, in its body, the constants to upload once at
  load (`ocl.upload`, numbered 0, 1, ...);
* each entry's body replaced by one `ocl.execute` on the entry's tensors, whose region is the
  entry's buffer plan and launch list: `ocl.alloc` (a device buffer of the plan, reused by
  liveness) and `ocl.launch` (a kernel of the program, its buffer arguments, global and local
  sizes; an empty local size lets the runtime choose).

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
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import HasParent, NoTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

BUFFER_NAME = re.compile(r"(in|out|c|b)([0-9]+)")
KERNEL_NAME = re.compile(r"k[0-9]+")


def _ints(values: Sequence[int]) -> ArrayAttr[IntegerAttr]:
    return ArrayAttr([IntegerAttr(v, i64) for v in values])


@irdl_op_definition
class ProgramOp(IRDLOperation):
    """Generated OpenCL C source and the constants its launches read (uploaded once)."""

    name = "ocl.program"

    sym_name = prop_def(SymbolNameConstraint())
    source = prop_def(StringAttr)
    body = region_def("single_block")

    traits = traits_def(SymbolOpInterface(), NoTerminator())

    def __init__(self, sym_name: str, source: str, uploads: Sequence[Operation] = ()):
        super().__init__(
            properties={"sym_name": StringAttr(sym_name), "source": StringAttr(source)},
            regions=[Region(Block(list(uploads)))],
        )

    @property
    def uploads(self) -> list[UploadOp]:
        return [op for op in self.body.block.ops if isinstance(op, UploadOp)]

    def verify_(self) -> None:
        for expected, op in enumerate(self.body.block.ops):
            if not isinstance(op, UploadOp):
                raise VerifyException(f"expected only ocl.upload ops in the body, got {op.name}")
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
    """Enqueue kernel `kernel` of the program on buffers `args` over `global` work-items."""

    name = "ocl.launch"

    kernel = prop_def(StringAttr)
    args = prop_def(ArrayAttr[StringAttr])
    global_size = prop_def(ArrayAttr[IntegerAttr], prop_name="global")
    local_size = prop_def(ArrayAttr[IntegerAttr], prop_name="local")

    traits = lazy_traits_def(lambda: (HasParent(ExecuteOp),))

    def __init__(
        self, kernel: str, args: Sequence[str], global_size: Sequence[int], local: Sequence[int]
    ):
        super().__init__(
            properties={
                "kernel": StringAttr(kernel),
                "args": ArrayAttr([StringAttr(a) for a in args]),
                "global": _ints(global_size),
                "local": _ints(local),
            }
        )

    def verify_(self) -> None:
        if not KERNEL_NAME.fullmatch(self.kernel.data):
            raise VerifyException(f"bad kernel name '{self.kernel.data}'")
        sizes = [a.value.data for a in self.global_size.data]
        if not 1 <= len(sizes) <= 3 or any(s < 1 for s in sizes):
            raise VerifyException(f"bad global size {sizes}")
        local = [a.value.data for a in self.local_size.data]
        if local and len(local) != len(sizes):
            raise VerifyException("local size must be empty or match the global size's rank")


OCL = Dialect("ocl", [ProgramOp, UploadOp, ExecuteOp, AllocOp, LaunchOp], [])
