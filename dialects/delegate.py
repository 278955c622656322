"""The `delegate` dialect: regions of ops assigned to a target, executables, and dispatches.

* `delegate.region "target" (%a = %x : T, ...) -> (R...) { ...; delegate.yield ... }` holds ops
  that one target will run. It is isolated from above: every value it uses comes in through
  an explicit capture, bound to a block argument of its body (as in `gpu.launch` / IREE's
  `flow.dispatch.region`).
* `delegate.executable @sym target("opencl") { func.func @entry ... }` is an outlined region:
  a symbol table holding the functions a target compiles.
* `delegate.dispatch @sym::@entry(%args) : (T...) -> (R...)` calls an executable's entry; its
  verifier checks that the callee exists and that the types match.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    FunctionType,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
)
from xdsl.dialects.func import FuncOp
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
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    NoTerminator,
    SymbolOpInterface,
    SymbolTable,
    SymbolUserOpInterface,
)
from xdsl.utils.exceptions import VerifyException


def _print_type_list(printer: Printer, types: Sequence[Attribute]) -> None:
    printer.print_string("(")
    printer.print_list(types, printer.print_attribute)
    printer.print_string(")")


def _parse_type_list(parser: Parser) -> list[Attribute]:
    return parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)


@irdl_op_definition
class RegionOp(IRDLOperation):
    """Ops assigned to one target, with explicit captures (isolated from above).

    Example:
    ```mlir
    %r = delegate.region "opencl" (%a = %x : tensor<4xf32>, %b = %y : tensor<4xf32>)
        -> (tensor<4xf32>) {
      %s = nn.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
      delegate.yield %s : tensor<4xf32>
    }
    ```
    """

    name = "delegate.region"

    target = prop_def(StringAttr)
    captures = var_operand_def()
    outputs = var_result_def()
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove())

    def __init__(
        self,
        target: str,
        captures: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region,
    ):
        super().__init__(
            operands=[list(captures)],
            result_types=[list(result_types)],
            properties={"target": StringAttr(target)},
            regions=[body],
        )

    def verify_(self) -> None:
        block = self.body.block
        arg_types = [a.type for a in block.args]
        capture_types = [c.type for c in self.captures]
        if arg_types != capture_types:
            raise VerifyException(
                f"body arguments {_types_text(arg_types)} do not match the captured values "
                f"{_types_text(capture_types)}"
            )
        terminator = block.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException("body must end with delegate.yield")
        yielded = [v.type for v in terminator.values]
        results = [r.type for r in self.outputs]
        if yielded != results:
            raise VerifyException(
                f"yielded types {_types_text(yielded)} do not match the results "
                f"{_types_text(results)}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.target.data)
        printer.print_string(" (")
        block = self.body.block

        def print_capture(pair: tuple[SSAValue, SSAValue]) -> None:
            arg, value = pair
            printer.print_operand(arg)
            printer.print_string(" = ")
            printer.print_operand(value)
            printer.print_string(" : ")
            printer.print_attribute(value.type)

        printer.print_list(zip(block.args, self.captures), print_capture)
        printer.print_string(") -> ")
        _print_type_list(printer, [r.type for r in self.outputs])
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> RegionOp:
        target = parser.parse_str_literal(" for the delegate target")
        arguments: list[Parser.Argument] = []
        values: list[UnresolvedOperand] = []
        types: list[Attribute] = []

        def parse_capture() -> None:
            argument = parser.parse_argument(expect_type=False)
            parser.parse_punctuation("=")
            values.append(parser.parse_unresolved_operand())
            parser.parse_punctuation(":")
            type_ = parser.parse_type()
            types.append(type_)
            arguments.append(argument.resolve(type_))

        parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_capture)
        parser.parse_punctuation("->")
        result_types = _parse_type_list(parser)
        attributes = parser.parse_optional_attr_dict_with_keyword()
        captures = parser.resolve_operands(values, types, parser.pos)
        body = parser.parse_region(arguments)
        op = cls(target, captures, result_types, body)
        if attributes is not None:
            op.attributes |= attributes.data
        return op


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminates a `delegate.region`, returning its results."""

    name = "delegate.yield"

    values = var_operand_def()

    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(RegionOp)))

    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class ExecutableOp(IRDLOperation):
    """An outlined region: functions compiled for one target, named by a symbol.

    Example:
    ```mlir
    delegate.executable private @main_opencl_0 target("opencl") {
      func.func @entry(%x: tensor<4xf32>) -> tensor<4xf32> { ... }
    }
    ```
    """

    name = "delegate.executable"

    sym_name = prop_def(SymbolNameConstraint())
    sym_visibility = opt_prop_def(StringAttr)
    target = prop_def(StringAttr)
    body = region_def("single_block")

    traits = traits_def(SymbolOpInterface(), SymbolTable(), IsolatedFromAbove(), NoTerminator())

    def __init__(
        self,
        sym_name: str,
        target: str,
        body: Region | Sequence[Operation],
        visibility: str | None = "private",
    ):
        properties: dict[str, Attribute] = {
            "sym_name": StringAttr(sym_name),
            "target": StringAttr(target),
        }
        if visibility is not None:
            properties["sym_visibility"] = StringAttr(visibility)
        if not isinstance(body, Region):
            body = Region(Block(list(body)))
        super().__init__(properties=properties, regions=[body])

    def print(self, printer: Printer) -> None:
        if self.sym_visibility is not None:
            printer.print_string(f" {self.sym_visibility.data}")
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(" target(")
        printer.print_string_literal(self.target.data)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        # An empty body prints as `{\n}` rather than `{\n^bb0:\n}`; parse() adds the block back.
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    @classmethod
    def parse(cls, parser: Parser) -> ExecutableOp:
        visibility = parser.parse_optional_visibility_keyword()
        sym_name = parser.parse_symbol_name()
        parser.parse_keyword("target")
        parser.parse_punctuation("(")
        target = parser.parse_str_literal(" for the executable target")
        parser.parse_punctuation(")")
        attributes = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region()
        if not body.blocks:
            body.add_block(Block())
        op = cls(sym_name.data, target, body, None if visibility is None else visibility.data)
        if attributes is not None:
            op.attributes |= attributes.data
        return op

    def verify_(self) -> None:
        if self.sym_visibility is not None and self.sym_visibility.data not in (
            "public",
            "private",
            "nested",
        ):
            raise VerifyException(
                f"visibility must be public, private or nested, got '{self.sym_visibility.data}'"
            )


class DispatchSymbolUser(SymbolUserOpInterface):
    """Checks that `@exe::@entry` names a func.func in an executable, with matching types."""

    def verify(self, op: Operation) -> None:
        assert isinstance(op, DispatchOp)
        callee = op.callee
        module = op.get_toplevel_object()
        if not isinstance(module, Operation) or not module.has_trait(SymbolTable):
            return  # not inside a module (yet): there is nothing to resolve the callee in
        executable = SymbolTable.lookup_symbol(module, callee.root_reference)
        if not isinstance(executable, ExecutableOp):
            raise VerifyException(
                f"'@{callee.root_reference.data}' does not name a delegate.executable"
            )
        if len(callee.nested_references.data) != 1:
            raise VerifyException(
                f"expected a callee of the form @executable::@entry, got {callee}"
            )
        entry_name = callee.nested_references.data[0]
        entry = SymbolTable.lookup_symbol(executable, entry_name)
        if not isinstance(entry, FuncOp):
            raise VerifyException(
                f"'@{entry_name.data}' is not a func.func in executable "
                f"'@{callee.root_reference.data}'"
            )
        if entry.sym_visibility is not None and entry.sym_visibility.data == "private":
            raise VerifyException(
                f"entry '@{entry_name.data}' of executable '@{callee.root_reference.data}' is "
                "private; dispatched entries must be public"
            )
        expected = entry.function_type
        actual = FunctionType.from_lists([a.type for a in op.args], [r.type for r in op.outputs])
        if expected != actual:
            raise VerifyException(f"dispatch types {actual} do not match the entry's {expected}")


@irdl_op_definition
class DispatchOp(IRDLOperation):
    """Run an executable's entry function on a target.

    Example:
    ```mlir
    %y = delegate.dispatch @main_opencl_0::@entry(%x) : (tensor<4xf32>) -> tensor<4xf32>
    ```
    """

    name = "delegate.dispatch"

    callee = prop_def(SymbolRefAttr)
    args = var_operand_def()
    outputs = var_result_def()

    traits = traits_def(DispatchSymbolUser())

    assembly_format = "$callee `(` $args `)` attr-dict `:` functional-type($args, $outputs)"

    def __init__(
        self,
        executable: str,
        entry: str,
        args: Sequence[SSAValue],
        result_types: Sequence[Attribute],
    ):
        super().__init__(
            operands=[list(args)],
            result_types=[list(result_types)],
            properties={"callee": SymbolRefAttr(executable, [entry])},
        )


def _types_text(types: Sequence[Attribute]) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


Delegate = Dialect("delegate", [RegionOp, YieldOp, ExecutableOp, DispatchOp], [])
