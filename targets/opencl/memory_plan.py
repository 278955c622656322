"""`opencl-plan-memory`: reuse an `ocl.execute`'s planned buffers by liveness.

A planned buffer `b<i>` is live from the first launch that names it to the last one. The
plan walks the buffers in order of first use and gives each a pool buffer that is free —
its previous tenant's last launch came strictly earlier, so no launch ever reads and writes
the same pool buffer — the smallest one large enough, else the largest free one grown to
fit, else a new one. The launches are renamed to the pool buffers, the `ocl.alloc` ops
become one per pool buffer, and `peak_bytes` (device memory of the plan) shrinks to their
sum. Running it again changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from irc.diagnostics import emit_error
from irc.dialects import ocl
from irc.targets.opencl.fuse import opencl_executables


@dataclass
class BufferPlan:
    """Pool buffer of every planned buffer, and the pool buffers' sizes."""

    assignment: dict[int, int]
    sizes: list[int]

    @property
    def peak_bytes(self) -> int:
        return sum(self.sizes)


def plan_buffers(sizes: dict[int, int], first: dict[int, int], last: dict[int, int]) -> BufferPlan:
    """Assign buffers (id → bytes, live over launches `first[id]..last[id]`) to pool
    buffers; a buffer no launch names gets none."""
    pool: list[int] = []
    free_after: list[int] = []
    """Index of the last launch of each pool buffer's current tenant."""
    assignment: dict[int, int] = {}
    for buffer in sorted(first, key=lambda b: (first[b], b)):
        need = sizes[buffer]
        free = [p for p in range(len(pool)) if free_after[p] < first[buffer]]
        fitting = [p for p in free if pool[p] >= need]
        if fitting:
            chosen = min(fitting, key=lambda p: (pool[p], p))
        elif free:
            chosen = max(free, key=lambda p: (pool[p], -p))
            pool[chosen] = need
        else:
            pool.append(need)
            free_after.append(-1)
            chosen = len(pool) - 1
        free_after[chosen] = last[buffer]
        assignment[buffer] = chosen
    return BufferPlan(assignment, pool)


def plan_execute(execute: ocl.ExecuteOp, pass_name: str = "opencl-plan-memory") -> BufferPlan:
    """Plan one `ocl.execute` in place; returns the plan."""
    sizes: dict[int, int] = {}
    allocs: list[ocl.AllocOp] = []
    launches: list[ocl.LaunchOp] = []
    for op in execute.body.block.ops:
        if isinstance(op, ocl.AllocOp):
            allocs.append(op)
            sizes[op.id.value.data] = op.bytes.value.data
        elif isinstance(op, ocl.LaunchOp):
            launches.append(op)
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for index, launch in enumerate(launches):
        for arg in launch.args.data:
            m = ocl.BUFFER_NAME.fullmatch(arg.data)
            if m is None or m.group(1) != "b":
                continue
            buffer = int(m.group(2))
            if buffer not in sizes:
                emit_error(launch, f"{pass_name}: buffer '{arg.data}' has no ocl.alloc")
            first.setdefault(buffer, index)
            last[buffer] = index
    plan = plan_buffers(sizes, first, last)
    for launch in launches:
        renamed = []
        for arg in launch.args.data:
            m = ocl.BUFFER_NAME.fullmatch(arg.data)
            if m is not None and m.group(1) == "b":
                renamed.append(StringAttr(f"b{plan.assignment[int(m.group(2))]}"))
            else:
                renamed.append(arg)
        launch.args = type(launch.args)(renamed)
    anchor: Operation | None = launches[0] if launches else None
    for op in allocs:
        execute.body.block.erase_op(op)
    new_allocs = [ocl.AllocOp(i, n) for i, n in enumerate(plan.sizes)]
    point = (
        InsertPoint.before(anchor) if anchor is not None else InsertPoint.at_end(execute.body.block)
    )
    Rewriter.insert_op(new_allocs, point)
    execute.peak_bytes = IntegerAttr(plan.peak_bytes, i64)
    return plan


@dataclass(frozen=True)
class OpenCLPlanMemoryPass(ModulePass):
    """Reuse the planned device buffers of every OpenCL `ocl.execute` by liveness."""

    name = "opencl-plan-memory"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for executable in opencl_executables(op):
            for execute in executable.walk():
                if isinstance(execute, ocl.ExecuteOp):
                    plan_execute(execute)
