#!/usr/bin/env python3
"""Per-launch and per-call overhead of irc's OpenCL runtime beside bare pyopencl.

A chain of N tiny softmax kernels (one launch each, 1x4x4x8 floats) is compiled with
`targets=["opencl"]` for N = 2 (the partitioner's smallest region) and N = `--launches`; the
per-launch overhead of irc is (t(N) - t(2)) / (N - 2) of `CompiledModel.run` medians, and the
per-call overhead about t(2).
Beside it, in the same process and on the same device, the floor: irc's own softmax kernel
enqueued N times with pyopencl (`set_args` once, `enqueue_nd_range_kernel`, one `finish`), and
pyopencl's call style `kernel(queue, global, local, *args)`. Prints microseconds; asserts
nothing. Figures on this shared machine move 1.5-2x between runs: compare one run's rows.

usage: python benchmarks/opencl_launch_overhead.py [--launches N] [--repeat K]
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable, Sequence

import numpy as np
from side_by_side import timed_runs

SHAPE = "1x4x4x8"


def chain(n: int) -> str:
    """IR text of `n` chained softmax ops (each its own kernel launch)."""
    t = f"tensor<{SHAPE}xf32>"
    lines = [f"func.func @main(%v0: {t}) -> {t} {{"]
    for i in range(n):
        lines.append(f"  %v{i + 1} = nn.softmax %v{i} axis = 3 : {t} -> {t}")
    lines.append(f"  func.return %v{n} : {t}")
    lines.append("}")
    return "\n".join(lines)


def median_us(fn: Callable[[], object], repeat: int, warmup: int = 5) -> float:
    return float(np.median(timed_runs(fn, repeat, warmup))) * 1e6


def irc_times(launches: int, repeat: int) -> tuple[float, float, str]:
    """Median µs of one `run` with 2 and with `launches` kernels, and the program source."""
    from xdsl.parser import Parser

    import irc
    from irc.context import make_context
    from irc.dialects import ocl

    out = []
    source = ""
    x = np.random.default_rng(0).standard_normal((1, 4, 4, 8)).astype(np.float32)
    for n in (2, launches):
        module = Parser(make_context(), chain(n), "chain.mlir").parse_module()
        model = irc.compile(module, targets=["opencl"])
        feed = {model.input_names[0]: x}
        out.append(median_us(lambda m=model, f=feed: m.run(f), repeat))
        source = next(op for op in model.module.walk() if isinstance(op, ocl.ProgramOp)).source.data
    return out[0], out[1], source


def pyopencl_times(source: str, launches: int, repeat: int) -> tuple[float, float]:
    """Median µs per launch of irc's softmax kernel `k0` (`source`) through bare pyopencl:
    preset arguments + enqueue_nd_range_kernel, and the call style."""
    from irc.targets.opencl.device import get_device
    from irc.targets.opencl.runtime import build_program

    device = get_device()
    cl, queue = device.cl, device.queue
    program = build_program(device, source).program
    x = cl.Buffer(device.context, cl.mem_flags.READ_WRITE, 512)
    y = cl.Buffer(device.context, cl.mem_flags.READ_WRITE, 512)
    kernel = cl.Kernel(program, "k0")
    kernel.set_args(x, y)
    size, local = (16,), (16,)

    def preset() -> None:
        for _ in range(launches):
            cl.enqueue_nd_range_kernel(queue, kernel, size, local)
        queue.finish()

    def call_style() -> None:
        for _ in range(launches):
            kernel(queue, size, local, x, y)
        queue.finish()

    return median_us(preset, repeat) / launches, median_us(call_style, repeat) / launches


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one, many, source = irc_times(args.launches, args.repeat)
        preset, call_style = pyopencl_times(source, args.launches, args.repeat)
    from irc.targets.opencl.device import get_device

    per_launch = (many - one) / (args.launches - 2)
    print(f"device: {get_device().name}")
    print(f"irc run, 2 launches:                    {one:8.1f} µs per call")
    print(f"irc run, {args.launches} launches:                {many:8.1f} µs per call")
    print(f"irc per-launch overhead:                {per_launch:8.1f} µs")
    print(f"pyopencl preset args + enqueue_nd_range: {preset:8.1f} µs per launch")
    print(f"pyopencl kernel(queue, g, l, *args):     {call_style:8.1f} µs per launch")
    print(f"irc / preset-enqueue floor:             {per_launch / preset:8.2f}x")


if __name__ == "__main__":
    main()
