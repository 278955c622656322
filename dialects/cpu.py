"""The `cpu` dialect: the CPU target's lowered form of a `delegate.executable`.

`lower-cpu` is three passes, each printable on its own (`irc-opt --print-ir-after-all`):

1. `cpu-fuse` wraps each chain of ops that runs as one C kernel in a `cpu.fusion` (a region
   on tensors ended by `cpu.yield`; `kind` says which kernel): `"qconv"`, an int8
   `cast -> sub zp -> conv2d / fully_connected -> rescale [-> scast -> clip]` chain;
   `"qadd"`, the int8 add of `lower-quantized`; `"conv_add"`, a float conv2d and the
   residual `nn.add` (and an `nn.relu` of it) computed in its epilogue; `"attention"`, an
   `nn.attention` and the head
   transposes its kernel reads through strides; `"dynamic_fc"`, a
   dynamically quantized fully connected layer with the quantization of its input
   (`targets/cpu/dynamic_quant.py`);
2. `cpu-plan-memory` records the workspace plan as discardable attributes: on every op of
   an entry (`nn.constant` aside) `cpu.offsets` (per result, its byte offset in the
   workspace, or -1 when the op writes the entry's result buffer), `cpu.scratch` (byte
   offsets of the scratch the kernel needs, when it needs some) or `cpu.alias` (the result
   shares operand 0's buffer: a free reshape, `quant.scast`, a widening cast read through);
   on the entry `cpu.workspace`, the arena's size in bytes;
3. `cpu-codegen` generates the C from the fused, planned entries, which become:

* one `cpu.module`: the C99 translation unit generated for the executable (`source`, one C
  function per entry) and, in its body, the constants those functions read, already packed
  into the layouts the kernels want (`cpu.constant`, numbered in the order of the constants
  table the functions receive);
* each entry's body replaced by one `cpu.call` of its C function: one call per dispatch,
  whatever the number of ops; `workspace` is the size in bytes of the scratch arena the
  function's buffer plan needs (intermediate tensors, padded inputs, packed runtime weights).

The entry functions keep their signatures, so `delegate.dispatch` ops still verify against
them. Example:

```mlir
delegate.executable private @main_cpu_0 target("cpu") {
  cpu.module @c source = "/* ... */ void irc_fn_0(...) { ... }" {
    cpu.constant 0 packing = "conv2d_filter" dense<...> : tensor<1x1x3x3x4x16xf32>
  }
  func.func @entry(%x: tensor<1x8x8x4xf32>) -> tensor<1x8x8x16xf32> {
    %y = cpu.call @c "irc_fn_0" (%x) workspace = 0 : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x16xf32>
    func.return %y : tensor<1x8x8x16xf32>
  }
}
```
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    I64,
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
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsTerminator,
    NoTerminator,
    SingleBlockImplicitTerminator,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException


@irdl_op_definition
class CModuleOp(IRDLOperation):
    """A generated C translation unit and the packed constants its functions read.

    `source` is the whole C file; its exported functions are the `function` names of the
    `cpu.call` ops that reference this module. The body holds only `cpu.constant` ops, whose
    indices are 0, 1, ... in order: the position of each in the constants table.
    """

    name = "cpu.module"

    sym_name = prop_def(SymbolNameConstraint())
    source = prop_def(StringAttr)
    body = region_def("single_block")

    traits = traits_def(SymbolOpInterface(), SymbolTable(), NoTerminator())

    def __init__(self, sym_name: str, source: str, constants: Sequence[Operation] = ()):
        super().__init__(
            properties={"sym_name": StringAttr(sym_name), "source": StringAttr(source)},
            regions=[Region(Block(list(constants)))],
        )

    @property
    def constants(self) -> list[ConstantOp]:
        return [op for op in self.body.block.ops if isinstance(op, ConstantOp)]

    def verify_(self) -> None:
        for expected, op in enumerate(self.body.block.ops):
            if not isinstance(op, ConstantOp):
                raise VerifyException(f"expected only cpu.constant ops in the body, got {op.name}")
            if op.index.value.data != expected:
                raise VerifyException(
                    f"constant #{expected} has index {op.index.value.data}; indices must count "
                    "0, 1, ... in order"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(" source = ")
        printer.print_string_literal(self.source.data)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    @classmethod
    def parse(cls, parser: Parser) -> CModuleOp:
        sym_name = parser.parse_symbol_name()
        parser.parse_keyword("source")
        parser.parse_punctuation("=")
        source = parser.parse_str_literal(" for the C source")
        attributes = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region()
        if not body.blocks:
            body.add_block(Block())
        op = cls.build(
            properties={"sym_name": sym_name, "source": StringAttr(source)}, regions=[body]
        )
        if attributes is not None:
            op.attributes |= attributes.data
        return op


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A constant of a `cpu.module`, packed for its kernels (`packing` says how).

    Example:
    ```mlir
    cpu.constant 0 packing = "conv2d_filter" dense<...> : tensor<1x1x3x3x4x16xf32>
    ```
    """

    name = "cpu.constant"

    index = prop_def(IntegerAttr[I64])
    packing = prop_def(StringAttr)
    value = prop_def(DenseIntOrFPElementsAttr)

    traits = lazy_traits_def(lambda: (HasParent(CModuleOp),))

    def __init__(self, index: int, packing: str, value: DenseIntOrFPElementsAttr):
        super().__init__(
            properties={
                "index": IntegerAttr(index, i64),
                "packing": StringAttr(packing),
                "value": value,
            }
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.index.value.data} packing = ")
        printer.print_string_literal(self.packing.data)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" ")
        printer.print_attribute(self.value)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        index = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_keyword("packing")
        parser.parse_punctuation("=")
        packing = parser.parse_str_literal(" for the packing")
        attributes = parser.parse_optional_attr_dict()
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error("expected a dense elements attribute", pos, parser.pos)
        op = cls(index, packing, value)
        op.attributes |= attributes
        return op


@irdl_op_definition
class CallOp(IRDLOperation):
    """Run one C function of a `cpu.module` on tensors: the whole entry in one call.

    Arguments and results follow the enclosing entry's signature; the function gets the
    input buffers, the output buffers, the module's constants table and a `workspace`-byte
    scratch arena, in that order.

    Example:
    ```mlir
    %y = cpu.call @c "irc_fn_0" (%x) workspace = 4096 : (tensor<4xf32>) -> tensor<4xf32>
    ```
    """

    name = "cpu.call"

    module = prop_def(SymbolRefAttr)
    function = prop_def(StringAttr)
    workspace = prop_def(IntegerAttr[I64])
    args = var_operand_def()
    outputs = var_result_def()

    def __init__(
        self,
        module: str,
        function: str,
        workspace: int,
        args: Sequence[SSAValue],
        result_types: Sequence[Attribute],
    ):
        super().__init__(
            operands=[list(args)],
            result_types=[list(result_types)],
            properties={
                "module": SymbolRefAttr(module),
                "function": StringAttr(function),
                "workspace": IntegerAttr(workspace, i64),
            },
        )

    def verify_(self) -> None:
        if self.workspace.value.data < 0:
            raise VerifyException(
                f"workspace must be non-negative, got {self.workspace.value.data}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.module)
        printer.print_string(" ")
        printer.print_string_literal(self.function.data)
        printer.print_string(" (")
        printer.print_list(self.args, printer.print_operand)
        printer.print_string(f") workspace = {self.workspace.value.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : (")
        printer.print_list((a.type for a in self.args), printer.print_attribute)
        printer.print_string(") -> ")
        types = [r.type for r in self.outputs]
        if len(types) == 1:
            printer.print_attribute(types[0])
        else:
            printer.print_string("(")
            printer.print_list(types, printer.print_attribute)
            printer.print_string(")")

    @classmethod
    def parse(cls, parser: Parser) -> CallOp:
        module = parser.parse_attribute()
        if not isinstance(module, SymbolRefAttr):
            parser.raise_error("expected a symbol reference to a cpu.module")
        function = parser.parse_str_literal(" for the C function name")
        operands = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        parser.parse_keyword("workspace")
        parser.parse_punctuation("=")
        workspace = parser.parse_integer(allow_boolean=False, allow_negative=False)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        arg_types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        parser.parse_punctuation("->")
        if parser.parse_optional_punctuation("(") is not None:
            if parser.parse_optional_punctuation(")") is not None:
                result_types: list[Attribute] = []
            else:
                result_types = parser.parse_comma_separated_list(
                    parser.Delimiter.NONE, parser.parse_type
                )
                parser.parse_punctuation(")")
        else:
            result_types = [parser.parse_type()]
        args = parser.resolve_operands(operands, arg_types, pos)
        op = cls(module.root_reference.data, function, workspace, args, result_types)
        op.attributes |= attributes
        return op


PLAN_OFFSETS = "cpu.offsets"
"""Per result of a planned op: its byte offset in the workspace, -1 for an entry result."""
PLAN_SCRATCH = "cpu.scratch"
"""Byte offsets in the workspace of the scratch buffers a planned op's kernel needs."""
PLAN_ALIAS = "cpu.alias"
"""On a planned op whose result shares operand 0's buffer (nothing runs)."""
PLAN_WORKSPACE = "cpu.workspace"
"""On a planned entry: the size in bytes of its workspace arena."""

FUSION_KINDS = {
    "qconv": ("nn.conv2d", "nn.fully_connected"),
    "qadd": ("nn.add",),
    "conv_add": ("nn.conv2d",),
    "dynamic_fc": ("nn.fully_connected",),
    "qtable": ("quant.rescale",),
    "qmul": ("nn.mul",),
    "qsum": ("nn.reduce",),
    "attention": ("nn.attention",),
}
"""Kinds of `cpu.fusion` and the op names of which the region holds exactly one (the
producer the kernel is named after)."""


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The end of a `cpu.fusion` region: the fused kernel's result."""

    name = "cpu.yield"

    values = var_operand_def()

    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(FusionOp)))

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class FusionOp(IRDLOperation):
    """Ops that run as one C kernel of kind `kind` (`cpu-fuse`, see the module docstring).

    The region (not isolated: it reads values from above, e.g. the int8 input and the
    constants) holds the fused ops in order and `cpu.yield` of the kernel's result; no value
    defined inside is used outside. Example (generic form):

    ```mlir
    %y = "cpu.fusion"() <{kind = "conv_add"}> ({
      %c = nn.conv2d %x, %w layout = "NHWC" : ...
      %a = nn.add %c, %r : ...
      "cpu.yield"(%a) : (tensor<1x4x4x8xf32>) -> ()
    }) : () -> tensor<1x4x4x8xf32>
    ```
    """

    name = "cpu.fusion"

    kind = prop_def(StringAttr)
    outputs = var_result_def()
    body = region_def("single_block")

    traits = lazy_traits_def(lambda: (SingleBlockImplicitTerminator(YieldOp),))

    def __init__(self, kind: str, result_types: Sequence[Attribute], ops: Sequence[Operation]):
        super().__init__(
            properties={"kind": StringAttr(kind)},
            result_types=[list(result_types)],
            regions=[Region(Block(list(ops)))],
        )

    @property
    def members(self) -> list[Operation]:
        """The fused ops, in order (without the yield)."""
        return [op for op in self.body.block.ops if not isinstance(op, YieldOp)]

    def verify_(self) -> None:
        kind = self.kind.data
        if kind not in FUSION_KINDS:
            raise VerifyException(
                f"unknown fusion kind '{kind}' (expected one of {', '.join(FUSION_KINDS)})"
            )
        ops = list(self.body.block.ops)
        if len(ops) < 3 or not isinstance(ops[-1], YieldOp):
            raise VerifyException("expected at least two fused ops and cpu.yield")
        producers = [op for op in ops if op.name in FUSION_KINDS[kind]]
        if len(producers) != 1:
            names = " or ".join(f"'{n}'" for n in FUSION_KINDS[kind])
            raise VerifyException(f"a '{kind}' fusion holds exactly one {names}")
        if kind == "conv_add" and [op.name for op in ops[:-1]] not in (
            ["nn.conv2d", "nn.add"],
            ["nn.conv2d", "nn.add", "nn.relu"],
        ):
            raise VerifyException(
                "a 'conv_add' fusion holds an nn.conv2d and the nn.add of it (then an nn.relu)"
            )
        if kind == "attention" and any(
            op.name not in ("nn.attention", "nn.transpose") for op in ops[:-1]
        ):
            raise VerifyException("an 'attention' fusion holds an nn.attention and nn.transposes")
        for op in ops[:-1]:
            if op.regions:
                raise VerifyException(f"'{op.name}' with regions cannot be fused")
            for result in op.results:
                for use in result.uses:
                    if use.operation.parent is not self.body.block:
                        raise VerifyException(
                            f"the result of '{op.name}' is used outside the fusion"
                        )
        if [v.type for v in ops[-1].operands] != [v.type for v in self.outputs]:
            raise VerifyException("cpu.yield must yield values of the fusion's result types")


CPU = Dialect("cpu", [CModuleOp, ConstantOp, CallOp, FusionOp, YieldOp], [])
