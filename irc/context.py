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
    """Passes registered under their DESIGN.md §6 names: irc's own (graph, quantization,
    partitioning), then the targets' passes (`get_target_passes()`)."""

    def get_canonicalize() -> type[ModulePass]:
        from irc.passes.canonicalize import CanonicalizePass

        return CanonicalizePass

    def get_infer_shapes() -> type[ModulePass]:
        from irc.passes.infer_shapes import InferShapesPass

        return InferShapesPass

    def get_dce() -> type[ModulePass]:
        from irc.passes.dce import DCEPass

        return DCEPass

    def get_lower_quantized() -> type[ModulePass]:
        from irc.passes.lower_quantized import LowerQuantizedPass

        return LowerQuantizedPass

    def get_convert_layout() -> type[ModulePass]:
        from irc.passes.convert_layout import ConvertLayoutPass

        return ConvertLayoutPass

    def get_insert_qdq() -> type[ModulePass]:
        from irc.passes.insert_qdq import InsertQDQPass

        return InsertQDQPass

    def get_fold_qdq() -> type[ModulePass]:
        from irc.passes.fold_qdq import FoldQDQPass

        return FoldQDQPass

    def get_fuse_qdq() -> type[ModulePass]:
        from irc.passes.fuse_qdq import FuseQDQPass

        return FuseQDQPass

    def get_fuse_activations() -> type[ModulePass]:
        from irc.passes.fuse_activations import FuseActivationsPass

        return FuseActivationsPass

    def get_widen_fp16() -> type[ModulePass]:
        from irc.passes.widen_fp16 import WidenFp16Pass

        return WidenFp16Pass

    def get_partition() -> type[ModulePass]:
        from irc.passes.partition import PartitionPass

        return PartitionPass

    def get_outline_delegates() -> type[ModulePass]:
        from irc.passes.outline_delegates import OutlineDelegatesPass

        return OutlineDelegatesPass

    passes: dict[str, Callable[[], type[ModulePass]]] = {
        "canonicalize": get_canonicalize,
        "infer-shapes": get_infer_shapes,
        "dce": get_dce,
        "lower-quantized": get_lower_quantized,
        "convert-layout": get_convert_layout,
        "insert-qdq": get_insert_qdq,
        "fold-qdq": get_fold_qdq,
        "fuse-qdq": get_fuse_qdq,
        "fuse-activations": get_fuse_activations,
        "widen-fp16": get_widen_fp16,
        "partition": get_partition,
        "outline-delegates": get_outline_delegates,
    }
    for name, factory in get_target_passes().items():
        passes.setdefault(name, factory)
    return passes


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
