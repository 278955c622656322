"""Timing the kernels of the CPU target's generated functions, and reading the times back.

With `IRC_CPU_PROFILE=1` at lowering time, every op of a generated function is timed
(`KernelProfiler`, used by `codegen`): the library exports
`irc_fn_<i>_profile(&ns, &labels, &flops)`, the nanoseconds summed over calls, one label per
op (dialect op name and shapes only; a fused kernel's with its fusion kind first) and its
arithmetic operations. `kernel_tables(path)` reads those tables from a loaded library
(dlopen returns the handle already loaded in this process, so the counters are the ones the
executor's calls incremented); `reset()` zeroes them.
"""

from __future__ import annotations

import ctypes
import math
import os
from dataclasses import dataclass
from pathlib import Path

from xdsl.ir import Operation

from irc.dialects import cpu, nn
from irc.sanitize import c_string_literal
from irc.targets.cpu.qfusion import shape_of

Lines = list[str]

MAX_FUNCTIONS = 256


PROFILE_ENV = "IRC_CPU_PROFILE"
"""Set to 1 to time every kernel of the generated functions (see `KernelProfiler`)."""


def profile_enabled() -> bool:
    """Whether generated functions time their kernels (`IRC_CPU_PROFILE=1`)."""
    return os.environ.get(PROFILE_ENV, "0").strip() == "1"


def op_flops(op: Operation) -> int:
    """Arithmetic operations of a convolution or fully connected op (2 per multiply-add);
    0 for other ops."""
    if isinstance(op, nn.Conv2DOp):
        dims = shape_of(op.filter)
        nhwc = op.layout.data == "NHWC"
        kh, kw, cg = (dims[1], dims[2], dims[3]) if nhwc else (dims[2], dims[3], dims[1])
        return 2 * math.prod(shape_of(op.output)) * kh * kw * cg
    if isinstance(op, nn.FullyConnectedOp):
        return 2 * math.prod(shape_of(op.output)) * shape_of(op.weights)[-1]
    return 0


class KernelProfiler:
    """Instrumentation of one generated function: every op's code is timed (monotonic clock,
    summed over calls) into `<fn>_prof_ns`; `<fn>_profile(&ns, &labels, &flops)` returns the
    tables and their length. Labels hold only dialect op names and shapes (`describe`),
    quoted by `c_string_literal`."""

    def __init__(self, c_name: str):
        self.c_name = c_name
        self.labels: list[str] = []
        self.flops: list[int] = []

    def wrap(self, op: Operation, text: str, lines: Lines) -> Lines:
        """`lines` (op's code) timed, labelled `text` (kept to letters, digits and ._-> ,);
        the kernel of a `cpu.fusion` (`op` one of its members) is labelled with the fusion's
        kind first (`qtable quant.rescale 1x56x56x96 -> ...`): the row times the whole
        fused chain, not that op alone."""
        index = len(self.labels)
        parent = op.parent_op()
        if isinstance(parent, cpu.FusionOp):
            text = f"{parent.kind.data} {text}"
        label = "".join(ch for ch in text if ch.isalnum() or ch in "._-> ,")
        self.labels.append(label)
        self.flops.append(op_flops(op))
        return [
            "{ const double irc_t0 = irc_now_ns();",
            *lines,
            f"  {self.c_name}_prof_ns[{index}] += irc_now_ns() - irc_t0; }}",
        ]

    def table(self) -> str:
        n = max(1, len(self.labels))
        labels = ", ".join(c_string_literal(label) for label in self.labels) or '""'
        flops = ", ".join(f"{f}.0" for f in self.flops) or "0.0"
        fn = self.c_name
        return (
            f"static double {fn}_prof_ns[{n}];\n"
            f"static const char *const {fn}_prof_labels[{n}] = {{{labels}}};\n"
            f"static const double {fn}_prof_flops[{n}] = {{{flops}}};\n"
            f"int {fn}_profile(double **ns, const char *const **labels, const double **flops) {{\n"
            f"  *ns = {fn}_prof_ns; *labels = {fn}_prof_labels; *flops = {fn}_prof_flops;\n"
            f"  return {len(self.labels)};\n}}\n"
        )


@dataclass
class KernelTable:
    """The profile of one generated function."""

    function: str
    labels: list[str]
    flops: list[float]
    _ns: ctypes._Pointer

    def times_ms(self) -> list[float]:
        """Milliseconds per op, summed over the calls since the last reset."""
        return [self._ns[k] / 1e6 for k in range(len(self.labels))]

    def reset(self) -> None:
        for k in range(len(self.labels)):
            self._ns[k] = 0.0


def kernel_tables(library: str | Path) -> list[KernelTable]:
    """The profile tables of the library at `library` ([] when it was built without them)."""
    handle = ctypes.CDLL(str(library))
    tables = []
    for i in range(MAX_FUNCTIONS):
        name = f"irc_fn_{i}"
        try:
            fn = getattr(handle, f"{name}_profile")
        except AttributeError:
            break
        fn.restype = ctypes.c_int
        ns = ctypes.POINTER(ctypes.c_double)()
        labels = ctypes.POINTER(ctypes.c_char_p)()
        flops = ctypes.POINTER(ctypes.c_double)()
        count = fn(ctypes.byref(ns), ctypes.byref(labels), ctypes.byref(flops))
        tables.append(
            KernelTable(
                name,
                [(labels[k] or b"").decode() for k in range(count)],
                [flops[k] for k in range(count)],
                ns,
            )
        )
    return tables
