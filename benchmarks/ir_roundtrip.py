#!/usr/bin/env python3
"""Parse and print times of a MobileNet-sized `nn` module (the Foundation issue's target: < 2 s).

Builds `irc.synthetic.mobilenet_v2_like()` (~170 ops, ~3.5 M float32 weights held as
`dense<"0x...">` constants), then times printing it to text, parsing it back, verifying it, and
the generic form, taking the best of `--repeat` rounds (this machine is shared and noisy).

usage: python benchmarks/ir_roundtrip.py [--repeat N]
"""

from __future__ import annotations

import argparse
import io
import time
from collections.abc import Callable

from xdsl.parser import Parser
from xdsl.printer import Printer

from irc.context import make_context
from irc.dialects import nn
from irc.synthetic import mobilenet_v2_like

TARGET_SECONDS = 2.0


def best_of(repeat: int, fn: Callable[[], object]) -> tuple[float, object]:
    """Smallest wall time of `repeat` calls, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def print_module(module: object, generic: bool) -> str:
    stream = io.StringIO()
    Printer(stream, print_generic_format=generic).print_op(module)  # type: ignore[arg-type]
    return stream.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    build_s, module = best_of(1, mobilenet_v2_like)
    ops = sum(1 for _ in module.walk())  # type: ignore[attr-defined]
    weights = sum(
        op.to_array().size
        for op in module.walk()
        if isinstance(op, nn.ConstantOp)  # type: ignore[attr-defined]
    )
    print(f"module: {ops} ops, {weights / 1e6:.2f} M weights (built in {build_s:.2f} s)")

    rows = []
    for generic in (False, True):
        form = "generic" if generic else "custom"
        print_s, text = best_of(args.repeat, lambda g=generic: print_module(module, g))
        ctx = make_context()
        parse_s, parsed = best_of(args.repeat, lambda t=text, c=ctx: Parser(c, t).parse_module())
        verify_s, _ = best_of(args.repeat, parsed.verify)  # type: ignore[union-attr]
        same = print_module(parsed, generic) == text
        rows.append((form, print_s, parse_s, verify_s, len(text) / 1e6, same))

    print(f"{'form':8} {'print s':>8} {'parse s':>8} {'verify s':>9} {'text MB':>8}  round-trip")
    for form, print_s, parse_s, verify_s, size, same in rows:
        print(
            f"{form:8} {print_s:8.3f} {parse_s:8.3f} {verify_s:9.3f} {size:8.1f}  "
            f"{'identical' if same else 'DIFFERS'}"
        )
    worst = max(max(r[1], r[2]) for r in rows)
    verdict = "within" if worst < TARGET_SECONDS else "OVER"
    print(f"slowest parse/print {worst:.3f} s: {verdict} the {TARGET_SECONDS:.0f} s target")


if __name__ == "__main__":
    main()
