"""Helpers of the CPU target tests: build executables from op builders, run them, compare.

A `Case` is one op (or a small graph) built on values typed like its input arrays: an array
becomes an entry argument, or an `nn.constant` inside the entry when its index is in
`constants`. `build_executable(cases)` puts many independent cases into ONE executable (one
argument list, one result list), so a family of kernels compiles once; with
`per_case=True` each case is an entry function of its own in that executable (one C function
per case in the one translation unit: gcc's optimisation of one function grows faster than
its size, so 62 conv_transpose cases compile in 6.9 s of CPU as 62 functions against 15.1 s
as one; Xeon @ 2.50GHz, AVX-512), run in order by `execute_cases`. `reference_outputs` runs
the reference kernels on the same ops before `lower-cpu` erases them.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import pytest
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType
from xdsl.dialects.builtin import f32 as f32_type
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue

from irc.context import make_context
from irc.dialects import delegate, nn
from irc.dialects.quant import UniformQuantizedType
from irc.dtypes import element_type
from irc.targets.cpu import isa, library, toolchain
from irc.targets.cpu.lower import LowerCpuPass
from irc.targets.cpu.runtime import CpuRuntime, LoadedCpuExecutable
from irc.targets.cpu.target import CpuTarget
from irc.targets.reference import kernel_for
from irc.targets.reference.target import ReferenceRuntime

SHARED_MODELS = Path(__file__).resolve().parents[1].parent / "shared" / "models"
"""../shared/models from the repository root (tests that read it skip when it is missing)."""

Builder = Callable[..., Operation | Sequence[Operation]]
"""Takes the case's values (arguments or constant results) and returns the op(s) to run;
the results of the last op are the case's outputs."""


@dataclass
class Case:
    id: str
    build: Builder
    arrays: Sequence[np.ndarray]
    constants: frozenset[int] = field(default_factory=frozenset)
    """Indices of `arrays` that become `nn.constant` ops instead of entry arguments."""


def op_case(
    case_id: str,
    op_type: type[nn.NNOp],
    arrays: Sequence[np.ndarray | Sequence[np.ndarray] | None],
    constants: Sequence[int] = (),
    **props: object,
) -> Case:
    """A case running one `op_type` built with `make`: one entry per operand definition
    (None: an absent optional operand; a list: a variadic one). `constants` index the
    flattened arrays."""
    flat: list[np.ndarray] = []
    groups: list[list[int] | int | None] = []
    for item in arrays:
        if item is None:
            groups.append(None)
        elif isinstance(item, np.ndarray):
            groups.append(len(flat))
            flat.append(item)
        else:
            groups.append(list(range(len(flat), len(flat) + len(item))))
            flat.extend(item)

    def build(*values: SSAValue) -> Operation:
        operands = [
            None if g is None else values[g] if isinstance(g, int) else [values[i] for i in g]
            for g in groups
        ]
        return op_type.make(*operands, **props)

    return Case(case_id, build, flat, frozenset(constants))


@dataclass
class BuiltCase:
    case: Case
    ops: list[Operation]
    args: list[np.ndarray]
    """The case's entry arguments, in order."""
    bindings: dict[SSAValue, np.ndarray]
    """Block argument -> its array."""
    outputs: list[SSAValue]


def tensor_type(array: np.ndarray) -> TensorType:
    return TensorType(element_type(array.dtype), array.shape)


def build_executable(
    cases: Sequence[Case], name: str = "test_cpu_0", *, per_case: bool = False
) -> tuple[ModuleOp, delegate.ExecutableOp, list[BuiltCase]]:
    """One executable running every case: its entry `entry` takes all cases' arguments and
    returns all their results, concatenated in order; with `per_case`, one entry per case
    instead (`case_entry(i)`, run them with `execute_cases`)."""
    blocks: list[Block] = []
    built: list[BuiltCase] = []
    for case in cases:
        arrays = [a for i, a in enumerate(case.arrays) if i not in case.constants]
        if per_case or not blocks:
            blocks.append(Block())
        block = blocks[-1]
        values: list[SSAValue] = []
        ops: list[Operation] = []
        case_args: list[np.ndarray] = []
        bindings: dict[SSAValue, np.ndarray] = {}
        for i, array in enumerate(case.arrays):
            if i in case.constants:
                const = nn.ConstantOp.from_array(np.ascontiguousarray(array))
                ops.append(const)
                values.append(const.output)
            else:
                arg = block.insert_arg(tensor_type(array), len(block.args))
                values.append(arg)
                bindings[arg] = array
                case_args.append(array)
        assert len(case_args) == len(arrays)
        made = case.build(*values)
        made_ops = [made] if isinstance(made, Operation) else list(made)
        ops += made_ops
        built.append(BuiltCase(case, ops, case_args, bindings, list(made_ops[-1].results)))
        block.add_ops(ops)
    if not blocks:
        blocks.append(Block())
    funcs: list[Operation] = []
    for i, block in enumerate(blocks):
        mine = built[i : i + 1] if per_case else built
        outputs = [v for b in mine for v in b.outputs]
        block.add_op(ReturnOp(*outputs))
        func_type = FunctionType.from_lists([a.type for a in block.args], [v.type for v in outputs])
        funcs.append(FuncOp(case_entry(i) if per_case else "entry", func_type, Region(block)))
    executable = delegate.ExecutableOp(name, "cpu", funcs)
    module = ModuleOp([executable])
    module.verify()
    return module, executable, built


def case_entry(index: int) -> str:
    """The entry function of case `index` of an executable built with `per_case`."""
    return f"entry_{index}"


def execute_cases(loaded: LoadedCpuExecutable, built: Sequence[BuiltCase]) -> list[np.ndarray]:
    """Every case of a `per_case` executable run on its own arguments: all the cases'
    outputs in order (what the single entry of the other form returns)."""
    outputs: list[np.ndarray] = []
    for i, b in enumerate(built):
        outputs += loaded.execute(case_entry(i), b.args)
    return outputs


def reference_outputs(built: BuiltCase) -> list[np.ndarray]:
    """Run a built case's ops on the reference kernels (before lowering erases them)."""
    env: dict[SSAValue, np.ndarray] = dict(built.bindings)
    for op in built.ops:
        results = kernel_for(op)(*[env[v] for v in op.operands])
        for result, value in zip(op.results, results, strict=True):
            env[result] = value
    return [env[v] for v in built.outputs]


def lower(module: ModuleOp) -> ModuleOp:
    LowerCpuPass().apply(make_context(), module)
    module.verify()
    return module


needs_compiler = pytest.mark.skipif(
    not CpuTarget().available(), reason="no working C compiler for the cpu target"
)
"""Skips a test (as `pytestmark`: a module) that compiles C when no working compiler is found."""


Results = dict[str, tuple[list[np.ndarray], list[np.ndarray]]]
"""Case id -> (the CPU target's outputs, the reference kernels' outputs)."""


def isa_params(names: Sequence[str] = isa.PREFERENCE) -> list[object]:
    """pytest params of the ISA profiles `names` (best first): the ones this host cannot run
    are skipped with what it lacks (tests/test_cpu_isa.py still compiles them); of those it
    runs, the first is the test command's and the others are in the `slow` tier (CI runs
    every profile the machine runs; each costs a kernel library build)."""
    params: list[object] = []
    first_runnable = True
    for name in names:
        lacking = isa.missing(isa.PROFILES[name])
        if lacking:
            marks = [pytest.mark.skip(reason=f"host lacks {', '.join(lacking)}")]
        else:
            marks = [] if first_runnable else [pytest.mark.slow]
            first_runnable = False
        params.append(pytest.param(name, id=name, marks=marks))
    return params


RUNNABLE_ISAS = tuple(p.name for p in isa.runnable())
"""The ISA profiles this host runs, best first."""


def isas_with_distinct_code(
    executable: delegate.ExecutableOp, names: Sequence[str] = RUNNABLE_ISAS
) -> tuple[str, ...]:
    """The ISA profiles of `names` (in order) whose build of the lowered `executable` would
    compile different C: a profile is left out when the generated source, preprocessed with
    its flags (its `#if __AVX2__`-style branches taken, its tile defines expanded; the system
    headers' lines ignored), is the same text as an earlier profile's. Float-only code reads
    no VNNI macro, so on an AVX-512 VNNI host `avx512` compiles the very C of `avx512vnni`
    (only the `-march` tuning differs) and building it again tests the C compiler, not irc;
    int8 code takes VNNI branches, and both stay."""
    probe = toolchain.probe()
    assert probe.toolchain is not None, probe.reason
    source = generated_source(executable)
    sources = [source]
    if library.is_glue(source):  # and the kernel library it calls (its core and parts)
        sources += [library.core_source(), *map(library.part_source, library.parts_of(source))]
    seen: set[str] = set()
    kept: list[str] = []
    for name in names:
        flags = toolchain.flags_for(probe.toolchain, isa.PROFILES[name]).flags
        compile_flags = [f for f in flags if f != "-shared"]
        cmd = [probe.toolchain.compiler, *compile_flags, "-E", "-x", "c", "-"]
        digest = hashlib.sha256()
        for text in sources:
            proc = subprocess.run(cmd, input=text, capture_output=True, text=True, check=True)
            digest.update(_own_lines(proc.stdout).encode() + b"\0")
        digest = digest.hexdigest()
        if digest not in seen:
            seen.add(digest)
            kept.append(name)
    return tuple(kept)


def with_kernels(source: str) -> str:
    """`source` (generated code) and, when it is glue, the C of the kernel library it calls
    (its core and parts, targets/cpu/library.py): the kernels the code runs, wherever they
    are compiled."""
    if not library.is_glue(source):
        return source
    parts = [library.part_source(part) for part in library.parts_of(source)]
    return "\n".join([source, library.core_source(), *parts])


def _own_lines(preprocessed: str) -> str:
    """The lines of `cc -E` output that come from the main file (line markers name it
    `<stdin>`), without blank lines: the generated code after its macros and branches."""
    own, current = [], ""
    for line in preprocessed.splitlines():
        if (marker := re.match(r'# \d+ "(.*)"', line)) is not None:
            current = marker.group(1)
        elif current == "<stdin>" and line.strip():
            own.append(line)
    return "\n".join(own)


def load_with_isa(executable: delegate.ExecutableOp, name: str) -> LoadedCpuExecutable:
    """The executable built for, and loaded with, the ISA profile `name` (`IRC_CPU_ISA`)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(isa.ISA_ENV, name)
        mp.delenv(isa.PORTABLE_ENV, raising=False)
        loaded = CpuRuntime().load(executable)
    assert loaded.library.isa == name
    return loaded


def run_family(cases: Sequence[Case]) -> Results:
    """Build, lower, compile and run one executable with all `cases` (an entry per case);
    actual and expected."""
    module, executable, built = build_executable(cases, per_case=True)
    expected = [reference_outputs(b) for b in built]
    lower(module)
    loaded = CpuRuntime().load(executable)
    outputs = execute_cases(loaded, built)
    results: Results = {}
    for b, exp in zip(built, expected, strict=True):
        actual, outputs = outputs[: len(b.outputs)], outputs[len(b.outputs) :]
        results[b.case.id] = (actual, exp)
    return results


def qtype(dtype: str, scale: float | Sequence[float], zp: int = 0) -> UniformQuantizedType:
    """A quantized element type on `dtype` storage, scales rounded to float32: per tensor for
    one scale, per axis 0 (one zero point `zp` for all) for a sequence of them."""
    storage = element_type(dtype)
    if isinstance(scale, int | float):
        return UniformQuantizedType.per_tensor(storage, f32_type, float(np.float32(scale)), zp)  # type: ignore[arg-type]
    scales = [float(np.float32(s)) for s in scale]
    return UniformQuantizedType.per_axis(storage, f32_type, 0, scales, [zp] * len(scales))  # type: ignore[arg-type]


def random_storage(rng: np.random.Generator, shape: Sequence[int], dtype: str) -> np.ndarray:
    """Uniformly random integers over the whole range of `dtype`."""
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, size=shape).astype(dtype)


class ArgumentCase(Protocol):
    """A case built on one entry argument: its type, its input, and `build(ops, x)` appending
    its ops and returning the result."""

    id: str
    in_type: TensorType
    x: np.ndarray

    def build(self, ops: list[Operation], x: SSAValue) -> SSAValue: ...


def cases_executable(
    name: str, cases: Sequence[ArgumentCase]
) -> tuple[ModuleOp, delegate.ExecutableOp, list[np.ndarray]]:
    """One cpu executable running every case on its own argument; and the inputs."""
    types = [c.in_type for c in cases]
    block = Block(arg_types=types)
    results: list[SSAValue] = []
    for case, arg in zip(cases, block.args, strict=True):
        ops: list[Operation] = []
        results.append(case.build(ops, arg))
        block.add_ops(ops)
    block.add_op(ReturnOp(*results))
    func = FuncOp("entry", FunctionType.from_lists(types, [r.type for r in results]), Region(block))
    executable = delegate.ExecutableOp(name, "cpu", [func])
    module = ModuleOp([executable])
    module.verify()
    return module, executable, [c.x for c in cases]


def reference_then_lower(
    module: ModuleOp, executable: delegate.ExecutableOp, inputs: list[np.ndarray]
) -> tuple[delegate.ExecutableOp, list[np.ndarray], list[np.ndarray]]:
    """Run the executable on the reference target, then lower it for the CPU target in place:
    (executable, inputs, reference outputs)."""
    expected = ReferenceRuntime().load(executable).execute("entry", inputs)
    lower(module)
    return executable, inputs, list(expected)


def generated_source(executable: delegate.ExecutableOp) -> str:
    """The C source a lowered cpu executable holds."""
    (source,) = [op.source.data for op in executable.walk() if hasattr(op, "source")]
    return source


def one_op_per_argument(
    name: str,
    arg_types: Sequence[TensorType],
    build: Callable[[int, SSAValue], Operation],
) -> tuple[ModuleOp, delegate.ExecutableOp]:
    """A cpu executable whose entry applies `build(i, argument i)` to each argument and
    returns every op's first result, in order."""
    block = Block(arg_types=list(arg_types))
    ops = [build(i, arg) for i, arg in enumerate(block.args)]
    block.add_ops([*ops, ReturnOp(*(op.results[0] for op in ops))])
    func = FuncOp(
        "entry",
        FunctionType.from_lists(list(arg_types), [op.results[0].type for op in ops]),
        Region(block),
    )
    executable = delegate.ExecutableOp(name, "cpu", [func])
    module = ModuleOp([executable])
    module.verify()
    return module, executable


def run_lowered_and_reference(
    module: ModuleOp, executable: delegate.ExecutableOp, inputs: Sequence[np.ndarray]
) -> tuple[list[np.ndarray], list[np.ndarray], str]:
    """(CPU outputs, reference outputs, generated C) of an executable on `inputs`: the
    reference target runs it first, then `lower-cpu` and the CPU runtime."""
    _, _, expected = reference_then_lower(module, executable, list(inputs))
    actual = list(CpuRuntime().load(executable).execute("entry", list(inputs)))
    return actual, expected, generated_source(executable)


class QConvCase:
    """One quantized NHWC conv2d on an entry argument (int8 or uint8 storage; uint8 filters
    have zero point 128): random input and filter over the whole storage range (or all at
    the minimum with `extreme`: the largest products), per-channel or per-tensor filter
    scales, an optional random i32 bias in [-bias_bound, bias_bound), and a fused activation.
    `depthwise`: one filter per channel (groups = channels = out_channels)."""

    def __init__(
        self,
        id: str,
        rng: np.random.Generator,
        shape: tuple[int, int, int, int],
        out_channels: int,
        kernel: tuple[int, int] = (1, 1),
        *,
        depthwise: bool = False,
        dtype: str = "int8",
        zp_in: int = 0,
        zp_out: int = 0,
        strides: tuple[int, int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        dilations: tuple[int, int] = (1, 1),
        per_channel: bool = True,
        act: str = "none",
        out_scale: float = 0.5,
        bias: bool = True,
        bias_bound: int = 20000,
        extreme: bool = False,
    ):
        self.id = id
        c = shape[-1]
        self.x = random_storage(rng, shape, dtype)
        w_shape = (c, *kernel, 1) if depthwise else (out_channels, *kernel, c)
        self.w = random_storage(rng, w_shape, dtype)
        if extreme:
            self.x[...] = np.iinfo(dtype).min
            self.w[...] = np.iinfo(dtype).min
        self.in_type = TensorType(qtype(dtype, 0.05, zp_in), list(shape))
        scales = list(rng.uniform(0.002, 0.02, out_channels)) if per_channel else 0.01
        self.w_type = qtype(dtype, scales, 128 if dtype == "uint8" else 0)
        self.b = (
            rng.integers(-bias_bound, bias_bound, out_channels).astype(np.int32) if bias else None
        )
        self.props = dict(
            activation=act,
            result_elements=qtype(dtype, out_scale, zp_out),
            strides=list(strides),
            pads=list(pads),
            dilations=list(dilations),
            groups=c if depthwise else 1,
            layout="NHWC",
        )

    def build(self, ops: list[Operation], x: SSAValue) -> SSAValue:
        w = nn.ConstantOp.from_array(self.w, TensorType(self.w_type, list(self.w.shape)))
        ops.append(w)
        b = None
        if self.b is not None:
            ops.append(bias := nn.ConstantOp.from_array(self.b))
            b = bias.results[0]
        ops.append(conv := nn.Conv2DOp.make(x, w.results[0], b, **self.props))
        return conv.results[0]


def assert_each_equal(
    cases: Sequence[ArgumentCase], actual: Sequence[np.ndarray], expected: Sequence[np.ndarray]
) -> None:
    """Every case's result has the reference's dtype and values, exactly."""
    for case, got, want in zip(cases, actual, expected, strict=True):
        assert got.dtype == want.dtype, case.id
        np.testing.assert_array_equal(got, want, err_msg=case.id)
