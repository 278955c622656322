"""Parallel loops of generated code as tasks of the library's thread pool.

A lowering marks a loop nest whose outer iterations are independent with
`helpers.parallel` (`IRC_PARFOR(schedule(static)) /* work: N */` on the line before its
outermost `for`). When the op's statement block is only declarations (and typedefs) and
that loop (what `helpers.block(comment, decls, parallel(dims, loop))` gives),
`LoopContext.outline` moves the block into a task function of its own, at file level,
whose part `p` runs the outer iterations `irc_pool_range(p, parts, D0)`, and the entry
calls it through `irc_parallel` (kernels/common/pool.h): the same pool, and the same
spinning workers, as the library's kernels, instead of an OpenMP team beside them (two
sets of threads spinning for two cores). Parts: one per IRC_LOOP_PART_WORK of the
marker's work (elements, or multiply-adds), at least 4 per thread (`irc_pool_parts`).
The task reads the entry's arguments, `K` and `ws` from one context struct the entry
fills once; the block's declarations are evaluated again in each part (pointers and
constants). Any split computes the same values (iterations are independent). Any other
marked loop (other statements in its block) stays an OpenMP loop.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from irc.targets.cpu.lowerings.helpers import PARFOR
from irc.targets.cpu.lowerings.registry import Lines

_OUTER_FOR = re.compile(r"^(\s*)for \(long (\w+) = 0; \2 < (\d+); \+\+\2\)(.*)$")
_DECLARATION = re.compile(r"^[A-Za-z_][\w\s*]*[\s*][A-Za-z_]\w*(\[\d*\])? = [^;]*;$")
_STATEMENT_KEYWORDS = ("for ", "for(", "if ", "if(", "while", "do ", "switch", "return", "{", "}")

PART_WORK = "IRC_LOOP_PART_WORK"
"""The pool.h constant: work (elements, or multiply-adds) of a loop nest per part."""


@dataclass
class LoopContext:
    """The outlined loops of one entry function and the struct their tasks read."""

    c_name: str
    """The entry's C name (task and struct names derive from it)."""
    params: Sequence[tuple[str, str]]
    """(C type, name) of the entry's pointer parameters the tasks may read."""
    tasks: list[str] = field(default_factory=list)
    """The task functions' C definitions."""

    @property
    def struct(self) -> str:
        return f"{self.c_name}_loops"

    def definitions(self) -> str:
        """The context struct and the task functions ('' when no loop was outlined)."""
        if not self.tasks:
            return ""
        fields = "".join(f"  {ct} {name};\n" for ct, name in self.params)
        struct = f"typedef struct {{\n{fields}  long parts;\n}} {self.struct};\n"
        return struct + "".join(self.tasks)

    def entry_declaration(self) -> Lines:
        """The entry's context variable (nothing when no loop was outlined)."""
        if not self.tasks:
            return []
        names = ", ".join(name for _, name in self.params)
        return [f"{self.struct} irc_loops = {{{names}, 0}};"]

    def outline(self, lines: Lines) -> Lines:
        """`lines` (one op's statement block) with its marked loop outlined into a task, or
        unchanged when it is not a block of declarations and one marked loop."""
        found = _split_block(lines)
        if found is None:
            return lines
        head, decls, indent, var, count, rest, loop = found
        task = f"{self.c_name}_loop{len(self.tasks)}"
        unpack = [f"  {ct} {name} = irc_a->{name};" for ct, name in self.params]
        unused = " ".join(f"(void){name};" for _, name in self.params)
        body = [
            f"static void {task}(const void *irc_ctx, long irc_part) {{",
            f"  const {self.struct} *irc_a = (const {self.struct} *)irc_ctx;",
            *unpack,
            f"  {unused}",
            "  long irc_lo, irc_hi;",
            f"  irc_pool_range(irc_part, irc_a->parts, {count}, &irc_lo, &irc_hi);",
            *("  " + d.strip() for d in decls),
            f"  for (long {var} = irc_lo; {var} < irc_hi; ++{var}){rest}",
            *("  " + line[len(indent) :] for line in loop),
            "}",
        ]
        self.tasks.append("\n".join(body) + "\n")
        work = _work(lines, count)
        return [
            *head,
            "{",
            "  const int irc_t = irc_nthreads();",
            f"  irc_loops.parts = irc_pool_parts({count}, {work}.0, {PART_WORK}, irc_t);",
            f"  irc_parallel({task}, &irc_loops, irc_loops.parts, irc_t);",
            "}",
        ]


_WORK = re.compile(r"/\* work: (\d+) \*/")


def _work(lines: Lines, count: int) -> int:
    """The marker's work (elements, or multiply-adds: `helpers.parallel`), else `count`."""
    for line in lines:
        match = _WORK.search(line)
        if match:
            return int(match.group(1))
    return count


def _is_declaration(line: str) -> bool:
    text = line.strip()
    if text.startswith("typedef ") and text.endswith(";"):
        return True
    return not text.startswith(_STATEMENT_KEYWORDS) and bool(_DECLARATION.match(text))


def _split_block(
    lines: Lines,
) -> tuple[Lines, Lines, str, str, int, str, Lines] | None:
    """(comment lines, declarations, the outer loop's indentation, its variable, its count,
    the rest of its `for` line, the lines of its body) of a block that is declarations
    then one marked loop; None otherwise."""
    try:
        at = next(i for i, line in enumerate(lines) if line.strip().startswith(PARFOR))
        opening = lines.index("{")
    except (StopIteration, ValueError):
        return None
    if opening > at or lines[-1] != "}":
        return None
    if not all(line.lstrip().startswith("/*") for line in lines[:opening]):
        return None
    decls = lines[opening + 1 : at]
    if not all(_is_declaration(d) for d in decls):
        return None
    if at + 1 >= len(lines) - 1:
        return None
    match = _OUTER_FOR.match(lines[at + 1])
    if match is None:
        return None
    indent, var, count, rest = match.group(1), match.group(2), int(match.group(3)), match.group(4)
    loop = lines[at + 2 : -1]
    for k, line in enumerate(loop):
        deeper = line.startswith(indent) and len(line) > len(indent) and line[len(indent)] == " "
        closing = k == len(loop) - 1 and rest.endswith("{") and line == indent + "}"
        if not (deeper or closing):
            return None
    if rest.endswith("{") and (not loop or loop[-1] != indent + "}"):
        return None
    return lines[:opening], decls, indent, var, count, rest, loop
