"""An entry's ops as a sequence of small C functions ("steps") the entry calls in order.

gcc's time on one function grows faster than the function: DenseNet-121's entry (430 ops in
one function) took gcc 21.4 CPU s, the same statements split into functions of 8 ops 9.9 s
(Xeon @ 2.50GHz, AVX-512, gcc -O3; `benchmarks/compile_time.py --goals`). So the entry's
op blocks are grouped, in order, into `static void <entry>_step<k>(<entry's pointers>, K,
ws)` functions of at most `OPS_PER_STEP` ops each, and the entry only calls them (an entry
of at most `OPS_PER_STEP` ops keeps its statements). Each op's
statements are unchanged (a block of its own that reads only the entry's pointer
parameters, `K` and `ws`), so are their order and every kernel call: the results are the
same bits. A step that calls an outlined loop (`outline.py`) declares its own copy of the
loops' context struct, filled from the same pointers, as the entry did.
"""

from __future__ import annotations

from collections.abc import Sequence

from irc.targets.cpu.lowerings.registry import Lines

OPS_PER_STEP = 8
"""Ops per step function: 4-8 measured fastest to compile (16 and 32 within 15 %)."""


def split_into_steps(
    c_name: str,
    params: Sequence[tuple[str, str]],
    ops: Sequence[Lines],
    loops_declaration: Lines,
) -> tuple[str, Lines]:
    """The step functions' C definitions and the entry's calls of them, one per group of
    `OPS_PER_STEP` consecutive op blocks of `ops` (each one op's statements). `params`
    are the (C type, name) pointer parameters every step takes and the entry passes on;
    `loops_declaration` declares `irc_loops` (outline.py), empty when nothing was outlined.
    An entry of at most `OPS_PER_STEP` ops keeps its statements (no definitions; the
    entry's lines are the declaration and the ops' statements, as before)."""
    if len(ops) <= OPS_PER_STEP:  # one step: the statements stay in the entry
        return "", [*loops_declaration, *(line for op in ops for line in op)]
    definitions: list[str] = []
    calls: Lines = []
    signature = ", ".join(f"{ct}{name}" for ct, name in params)
    arguments = ", ".join(name for _, name in params)
    unused = " ".join(f"(void){name};" for _, name in params)
    for start in range(0, len(ops), OPS_PER_STEP):
        group = ops[start : start + OPS_PER_STEP]
        step = f"{c_name}_step{len(definitions)}"
        lines = [line for op in group for line in op]
        head = [f"  {unused}"]
        if loops_declaration and any("irc_loops" in line for line in lines):
            head += ["  " + line for line in loops_declaration]
        definitions.append(
            "\n".join(
                [
                    f"static void {step}({signature}) {{",
                    *head,
                    *("  " + line for line in lines),
                    "}",
                ]
            )
            + "\n"
        )
        calls.append(f"{step}({arguments});")
    return "".join(definitions), calls
