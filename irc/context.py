"""Registries of irc: the dialects and passes that tools and the Python API know.

Factories are lazy (a closure that imports on first use), as in xDSL's own
`get_all_dialects()` / `get_all_passes()`, so `irc-opt --help` stays fast and a
dialect module is only imported when IR mentions it.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.context import Context
from xdsl.ir import Dialect
from xdsl.passes import ModulePass


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Dialects understood by irc tools: irc's own plus the xDSL ones the pipeline uses."""

    def get_builtin() -> Dialect:
        from xdsl.dialects.builtin import Builtin

        return Builtin

    def get_func() -> Dialect:
        from xdsl.dialects.func import Func

        return Func

    def get_arith() -> Dialect:
        from xdsl.dialects.arith import Arith

        return Arith

    def get_tensor() -> Dialect:
        from xdsl.dialects.tensor import Tensor

        return Tensor

    def get_memref() -> Dialect:
        from xdsl.dialects.memref import MemRef

        return MemRef

    def get_scf() -> Dialect:
        from xdsl.dialects.scf import Scf

        return Scf

    def get_nn() -> Dialect:
        from irc.dialects.nn import NN

        return NN

    def get_quant() -> Dialect:
        from irc.dialects.quant import Quant

        return Quant

    def get_delegate() -> Dialect:
        from irc.dialects.delegate import Delegate

        return Delegate

    def get_cpu() -> Dialect:
        from irc.dialects.cpu import CPU

        return CPU

    def get_ocl() -> Dialect:
        from irc.dialects.ocl import OCL

        return OCL

    return {
        "builtin": get_builtin,
        "func": get_func,
        "arith": get_arith,
        "tensor": get_tensor,
        "memref": get_memref,
        "scf": get_scf,
        "nn": get_nn,
        "quant": get_quant,
        "delegate": get_delegate,
        "cpu": get_cpu,
        "ocl": get_ocl,
    }


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Passes registered under their docs/design.md §6 names: irc's own (`get_own_passes()`:
    graph, quantization, partitioning), then the targets' passes (`get_target_passes()`)."""
    passes = get_own_passes()
    for name, factory in get_target_passes().items():
        passes.setdefault(name, factory)
    return passes


def get_own_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """irc's own passes, as lazy factories; naming them imports no target (`irc-opt` needs
    the targets' passes only when a pipeline names one, or to list them all)."""

    from irc.targets.base import PassTable

    own = PassTable(
        {
            "canonicalize": "irc.passes.canonicalize:CanonicalizePass",
            "infer-shapes": "irc.passes.infer_shapes:InferShapesPass",
            "dce": "irc.passes.dce:DCEPass",
            "lower-quantized": "irc.passes.lower_quantized:LowerQuantizedPass",
            "convert-layout": "irc.passes.convert_layout:ConvertLayoutPass",
            "insert-qdq": "irc.passes.insert_qdq:InsertQDQPass",
            "fold-qdq": "irc.passes.fold_qdq:FoldQDQPass",
            "fuse-qdq": "irc.passes.fuse_qdq:FuseQDQPass",
            "fuse-activations": "irc.passes.fuse_activations:FuseActivationsPass",
            "widen-fp16": "irc.passes.widen_fp16:WidenFp16Pass",
            "partition": "irc.passes.partition:PartitionPass",
            "outline-delegates": "irc.passes.outline_delegates:OutlineDelegatesPass",
        }
    )
    return {name: (lambda name=name: own[name]) for name in own}


def get_target_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """The passes every registered target declares through `Target.passes()` (the built-in
    `cpu` and `opencl` targets' `lower-cpu`, `opencl-fuse`, ... and a plugin's own), as lazy
    factories: a pass module is imported when its factory is called.

    irc's own passes keep their names: `get_all_passes()` lets them win over a target's pass
    of the same name (a target's lowering still gets its own, `irc.pipelines.parse_pipeline`'s
    `extra_passes`); between targets, the first registered wins. Raises `TargetError` for a
    bad `IRC_PLUGINS` spec, as every lookup of a target does.
    """
    from irc.targets import registered_targets

    factories: dict[str, Callable[[], type[ModulePass]]] = {}
    for target in registered_targets().values():
        table = target.passes()
        for name in table:
            factories.setdefault(name, lambda table=table, name=name: table[name])
    return factories


def make_context(*, allow_unregistered: bool = False) -> Context:
    """A fresh xDSL context with every irc dialect registered (lazily)."""
    ctx = Context(allow_unregistered=allow_unregistered)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx
