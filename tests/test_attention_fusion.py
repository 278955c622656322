"""The CPU target's "attention" fusion (head transposes read / written through the attention
kernel's strides, targets/cpu/attention_layout.py): against the reference target (float32,
rtol 1e-4 / atol 1e-5) and bit for bit the unfused kernels (IRC_CPU_FUSE_ATTENTION=0).
Sizes cover partial vectors, whole and partial 16 x 16 transposed key blocks, several
batches and heads, masks, and a transpose that must not fold."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_support import needs_compiler
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

import irc
from irc.context import make_context
from irc.dialects import cpu
from irc.pipelines import default_pipeline, parse_pipeline, run_passes

pytestmark = [needs_compiler, pytest.mark.private_cache]

RTOL, ATOL = 1e-4, 1e-5


def _t(dims: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, dims))}xf32>"


Block = tuple[list[str], list[str], list[str], list[str]]
"""A function's pieces: arguments, body lines, results, result types."""


def heads_block(
    p: str,
    b: int,
    s: int,
    h: int,
    dh: int,
    *,
    key_transposed: bool = True,
    mask: tuple[int, ...] | None = None,
    merge: bool = True,
    query_also_returned: bool = False,
) -> Block:
    """BERT's attention block after its projections, its values named with prefix `p`: q, k,
    v [b, s, h, dh] split into heads by transposes, the attention, then (with `merge`) the
    heads merged back to [b, s, h*dh]."""
    x = _t((b, s, h, dh))
    heads = _t((b, h, s, dh))
    keys = _t((b, h, dh, s)) if key_transposed else heads
    key_perm = "[0, 2, 3, 1]" if key_transposed else "[0, 2, 1, 3]"
    args = [f"%{p}q: {x}", f"%{p}k: {x}", f"%{p}v: {x}"]
    operands, types = f"%{p}qt, %{p}kt, %{p}vt", f"{heads}, {keys}, {heads}"
    if mask is not None:
        args.append(f"%{p}m: {_t(mask)}")
        operands, types = operands + f", %{p}m", types + f", {_t(mask)}"
    flag = "key_transposed = true" if key_transposed else ""
    lines = [
        f"%{p}qt = nn.transpose %{p}q perm = [0, 2, 1, 3] : {x} -> {heads}",
        f"%{p}kt = nn.transpose %{p}k perm = {key_perm} : {x} -> {keys}",
        f"%{p}vt = nn.transpose %{p}v perm = [0, 2, 1, 3] : {x} -> {heads}",
        f"%{p}o = nn.attention {operands} scale = 0.125 {flag} : {types} -> {heads}",
    ]
    results, result_types = [f"%{p}o"], [heads]
    if merge:
        merged = _t((b, s, h * dh))
        lines += [
            f"%{p}ot = nn.transpose %{p}o perm = [0, 2, 1, 3] : {heads} -> {x}",
            f"%{p}r = nn.reshape %{p}ot shape = [{b}, {s}, {h * dh}] : {x} -> {merged}",
        ]
        results, result_types = [f"%{p}r"], [merged]
    if query_also_returned:
        results.append(f"%{p}qt")
        result_types.append(heads)
    return args, lines, results, result_types


def module_of(*blocks: Block) -> str:
    """One function @main holding the blocks side by side."""
    args = [a for b in blocks for a in b[0]]
    lines = [line for b in blocks for line in b[1]]
    results = [r for b in blocks for r in b[2]]
    types = [t for b in blocks for t in b[3]]
    body = "\n    ".join(lines)
    return (
        f"func.func @main({', '.join(args)}) -> ({', '.join(types)}) {{\n    {body}\n"
        f"    func.return {', '.join(results)} : {', '.join(types)}\n}}"
    )


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text, "test.mlir").parse_module()
    module.verify()
    return module


def fused(text: str) -> dict[str, list[list[str]]]:
    """The cpu.fusion kinds cpu-fuse makes of the module, each with its ops' names."""
    module = parse(text)
    run_passes(module, parse_pipeline(default_pipeline(["cpu"]) + ",cpu-fuse"))
    found: dict[str, list[list[str]]] = {}
    for op in module.walk():
        if isinstance(op, cpu.FusionOp):
            found.setdefault(op.kind.data, []).append([m.name for m in op.members])
    return found


def feeds_of(compiled: irc.CompiledModel, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in compiled.inputs:
        a = rng.standard_normal(spec.shape).astype(np.float32)
        if spec.name.endswith("m"):  # an additive mask: some keys off, the first one kept
            a = np.where(a > 0.8, -3.4e38, 0.0).astype(np.float32)
            a[..., 0] = 0.0
        feeds[spec.name] = a
    return feeds


ATTENTION_CASES = {
    # BERT's layout: keys [H, Dh, S], a mask over the keys, heads not a vector wide
    "bert": dict(b=1, s=37, h=3, dh=20, mask=(1, 1, 1, 37)),
    # whole 16 x 16 key blocks (two vectors of keys), keys [H, S, Dh], no merge
    "rows": dict(b=1, s=32, h=2, dh=32, key_transposed=False, merge=False),
    # two batches, a mask per batch and query row, a partial third vector of keys
    "batches": dict(b=2, s=33, h=4, dh=16, mask=(2, 1, 33, 33)),
    # a query transpose also returned: it runs, the others fold
    "returned": dict(b=1, s=20, h=2, dh=24, query_also_returned=True),
}


def all_cases() -> str:
    return module_of(*(heads_block(name, **kw) for name, kw in ATTENTION_CASES.items()))


def test_fusion_matches_the_reference_and_the_unfused_kernels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fused cpu == unfused cpu (bit for bit) and both match the reference."""
    text = all_cases()
    compiled = irc.compile(parse(text), "cpu")
    with monkeypatch.context() as patch:
        patch.setenv("IRC_CPU_FUSE_ATTENTION", "0")
        unfused = irc.compile(parse(text), "cpu")
    reference = irc.compile(parse(text), "reference")
    feeds = feeds_of(compiled, 0)
    got, plain, want = compiled.run(feeds), unfused.run(feeds), reference.run(feeds)
    assert len(compiled.output_names) == 5
    for name in compiled.output_names:
        np.testing.assert_array_equal(got[name], plain[name], err_msg=name)
        np.testing.assert_allclose(got[name], want[name], rtol=RTOL, atol=ATOL, err_msg=name)


def test_the_fusions_take_their_ops() -> None:
    kinds = fused(all_cases())
    heads = ["nn.transpose"] * 3 + ["nn.attention"]
    assert (
        kinds["attention"]
        == [
            [*heads, "nn.transpose"],  # bert
            heads,  # rows: no merging transpose
            [*heads, "nn.transpose"],  # batches
            [*heads[1:], "nn.transpose"],  # returned: the query's transpose stays out
        ]
    )
    assert set(kinds) == {"attention"}


def test_the_fusion_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRC_CPU_FUSE_ATTENTION", "0")
    assert fused(all_cases()) == {}
