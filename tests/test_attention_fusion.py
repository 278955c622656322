"""The CPU target's "attention" fusion (head transposes read / written through the attention
kernel's strides, targets/cpu/attention_layout.py) and the residual add in a fully
connected layer's epilogue: against the reference target (float32, rtol 1e-4 / atol 1e-5)
and bit for bit the unfused kernels (IRC_CPU_FUSE_ATTENTION=0, IRC_CPU_FUSE_RESIDUAL=0).
Sizes cover partial vectors, whole and partial 16 x 16 transposed key blocks, several
batches and heads, masks, and transposes that must not fold."""

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

pytestmark = needs_compiler

RTOL, ATOL = 1e-4, 1e-5


def _t(dims: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, dims))}xf32>"


def heads_module(
    b: int,
    s: int,
    h: int,
    dh: int,
    *,
    key_transposed: bool = True,
    mask: tuple[int, ...] | None = None,
    merge: bool = True,
    query_also_returned: bool = False,
) -> str:
    """BERT's attention block after its projections: q, k, v [b, s, h, dh] split into heads
    by transposes, the attention, then (with `merge`) the heads merged back to [b, s, h*dh]."""
    x = _t((b, s, h, dh))
    heads = _t((b, h, s, dh))
    keys = _t((b, h, dh, s)) if key_transposed else heads
    key_perm = "[0, 2, 3, 1]" if key_transposed else "[0, 2, 1, 3]"
    args = [f"%q: {x}", f"%k: {x}", f"%v: {x}"]
    operands, types = "%qt, %kt, %vt", f"{heads}, {keys}, {heads}"
    if mask is not None:
        args.append(f"%m: {_t(mask)}")
        operands, types = operands + ", %m", types + f", {_t(mask)}"
    flag = "key_transposed = true" if key_transposed else ""
    lines = [
        f"%qt = nn.transpose %q perm = [0, 2, 1, 3] : {x} -> {heads}",
        f"%kt = nn.transpose %k perm = {key_perm} : {x} -> {keys}",
        f"%vt = nn.transpose %v perm = [0, 2, 1, 3] : {x} -> {heads}",
        f"%o = nn.attention {operands} scale = 0.125 {flag} : {types} -> {heads}",
    ]
    results, result_types = ["%o"], [heads]
    if merge:
        merged = _t((b, s, h * dh))
        lines += [
            f"%ot = nn.transpose %o perm = [0, 2, 1, 3] : {heads} -> {x}",
            f"%r = nn.reshape %ot shape = [{b}, {s}, {h * dh}] : {x} -> {merged}",
        ]
        results, result_types = ["%r"], [merged]
    if query_also_returned:
        results.append("%qt")
        result_types.append(heads)
    body = "\n    ".join(lines)
    return (
        f"func.func @main({', '.join(args)}) -> ({', '.join(result_types)}) {{\n    {body}\n"
        f"    func.return {', '.join(results)} : {', '.join(result_types)}\n}}"
    )


def fc_residual_module(m: int, k: int, n: int) -> str:
    """Two fully connected layers with residual adds (the second product has two uses, so
    only the first add joins its epilogue) and a relu after the first add."""
    x, w, bias = _t((1, m, k)), _t((n, k)), _t((n,))
    y, w2 = _t((1, m, n)), _t((n, n))
    return f"""func.func @main(%x: {x}, %w: {w}, %b: {bias}, %r: {y}, %w2: {w2}) -> ({y}, {y}) {{
    %c = nn.fully_connected %x, %w, %b : {x}, {w}, {bias} -> {y}
    %a = nn.add %r, %c : {y}, {y} -> {y}
    %p = nn.relu %a : {y} -> {y}
    %d = nn.fully_connected %p, %w2 : {y}, {w2} -> {y}
    %e = nn.add %d, %p : {y}, {y} -> {y}
    func.return %e, %d : {y}, {y}
}}"""


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
        if spec.name == "m":  # an additive mask: some keys off, the first one kept
            a = np.where(a > 0.8, -3.4e38, 0.0).astype(np.float32)
            a[..., 0] = 0.0
        feeds[spec.name] = a
    return feeds


def check(text: str, switch: str, monkeypatch: pytest.MonkeyPatch, seed: int = 0) -> None:
    """Fused cpu == unfused cpu (bit for bit) and both match the reference."""
    compiled = irc.compile(parse(text), "cpu")
    with monkeypatch.context() as patch:
        patch.setenv(switch, "0")
        unfused = irc.compile(parse(text), "cpu")
    reference = irc.compile(parse(text), "reference")
    feeds = feeds_of(compiled, seed)
    got, plain, want = compiled.run(feeds), unfused.run(feeds), reference.run(feeds)
    for name in compiled.output_names:
        np.testing.assert_array_equal(got[name], plain[name], err_msg=name)
        np.testing.assert_allclose(got[name], want[name], rtol=RTOL, atol=ATOL, err_msg=name)


ATTENTION_CASES = {
    # BERT's layout: keys [H, Dh, S], a mask over the keys, heads not a vector wide
    "bert": dict(b=1, s=37, h=3, dh=20, mask=(1, 1, 1, 37)),
    # whole 16 x 16 key blocks (two vectors of keys), keys [H, S, Dh], no merge
    "keys_as_rows": dict(b=1, s=32, h=2, dh=32, key_transposed=False, merge=False),
    # two batches, a mask per batch and query row, a partial third vector of keys
    "batches": dict(b=2, s=33, h=4, dh=16, mask=(2, 1, 33, 33)),
    # a query transpose also returned: it runs, the others fold
    "query_returned": dict(b=1, s=20, h=2, dh=24, query_also_returned=True),
}


@pytest.mark.parametrize("case", sorted(ATTENTION_CASES))
def test_attention_fusion_matches(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    check(heads_module(**ATTENTION_CASES[case]), "IRC_CPU_FUSE_ATTENTION", monkeypatch)


def test_attention_fusion_takes_the_head_transposes() -> None:
    kinds = fused(heads_module(**ATTENTION_CASES["bert"]))
    assert kinds == {"attention": [["nn.transpose"] * 3 + ["nn.attention", "nn.transpose"]]}
    kinds = fused(heads_module(**ATTENTION_CASES["query_returned"]))
    assert kinds == {"attention": [["nn.transpose"] * 2 + ["nn.attention", "nn.transpose"]]}


def test_attention_fusion_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRC_CPU_FUSE_ATTENTION", "0")
    assert fused(heads_module(**ATTENTION_CASES["bert"])) == {}


@pytest.mark.parametrize(("m", "k", "n"), [(5, 7, 9), (37, 64, 48)])
def test_fc_residual_matches(m: int, k: int, n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    text = fc_residual_module(m, k, n)
    assert fused(text) == {"conv_add": [["nn.fully_connected", "nn.add", "nn.relu"]]}
    check(text, "IRC_CPU_FUSE_RESIDUAL", monkeypatch, seed=1)
