"""The `cpu` dialect: the CPU target's lowered form of a `delegate.executable`.

`lower-cpu` turns every `delegate.executable ... target("cpu")` into:

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
from xdsl.traits import HasParent, NoTerminator, SymbolOpInterface, SymbolTable
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


CPU = Dialect("cpu", [CModuleOp, ConstantOp, CallOp], [])
