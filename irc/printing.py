"""IR printing that always re-parses: unique SSA names, whatever the name hints are.

xDSL 0.74's printer derives names from hints by counting per hint (`x`, `x_1`, `x_2`, ...), and
strips a `_<digits>` suffix from a hint; a hint such as `x_1_2` (stored as `x_1`) can then print
as a name another value already took, and the text no longer parses. Rewrites that copy names
onto new values make this happen in practice. `Printer` here skips every name already used.

Given a `WeightsWriter` (`irc.artifact`), `Printer` prints every large dense constant as
`dense_resource<wN> : type` and hands its bytes to the writer: how artifacts keep their
weights in a binary file next to the text.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.printer import Printer as XdslPrinter
from xdsl.targets.mlir import MLIRTarget

from irc.artifact import externalizes

if TYPE_CHECKING:
    from irc.artifact import WeightsWriter


class Printer(XdslPrinter):
    """xDSL's printer with SSA names guaranteed unique, and large constants optionally
    printed as `dense_resource` handles into `weights` (see the module docstring)."""

    weights: WeightsWriter | None = None
    """Where large dense constants go (None: printed inline as `dense<...>`)."""

    def print_attribute(self, attribute: Attribute) -> None:
        if (
            self.weights is not None
            and isinstance(attribute, DenseIntOrFPElementsAttr)
            and externalizes(attribute)
        ):
            handle = self.weights.add(attribute.data.data)
            self.print_string(f"dense_resource<{handle}> : ")
            super().print_attribute(attribute.type)
            return
        super().print_attribute(attribute)

    def print_ssa_value(self, value: SSAValue) -> str:
        if value in self._ssa_values or not value.name_hint:
            return super().print_ssa_value(value)
        used = getattr(self, "_irc_used_names", None)
        if used is None:
            used = self._irc_used_names = set(self._ssa_values.values())
        hint = value.name_hint
        index = self.ssa_names.get(hint, 0)
        name = hint if index == 0 else f"{hint}_{index}"
        while name in used:
            index += 1
            name = f"{hint}_{index}"
        self.ssa_names[hint] = index + 1
        self._ssa_values[value] = name
        used.add(name)
        self.print_string(f"%{name}")
        return name


def print_ir(
    op: Operation,
    stream: IO[str] | None = None,
    *,
    generic: bool = False,
    weights: WeightsWriter | None = None,
) -> str:
    """Print an op (usually a module) with `Printer`; returns the text when no stream is
    given. With `weights`, large dense constants go there (`irc.artifact`)."""
    buffer = io.StringIO() if stream is None else None
    printer = Printer(stream=stream if buffer is None else buffer, print_generic_format=generic)
    printer.weights = weights
    printer.print_op(op)
    return "" if buffer is None else buffer.getvalue()


@dataclass(frozen=True)
class IrcMLIRTarget(MLIRTarget):
    """irc-opt's `-t mlir` output target, printing with `Printer`."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        if self.syntax_highlight:  # xDSL's highlighting printer; names as xDSL gives them
            super().emit(ctx, module, output)
            return
        printer = Printer(
            stream=output,
            print_generic_format=self.print_generic_format,
            print_properties_as_attributes=self.print_properties_as_attributes,
            print_debuginfo=self.print_debuginfo,
        )
        printer.print_op(module)
        printer.print_metadata(ctx.loaded_dialects)
        print("\n", file=output)
