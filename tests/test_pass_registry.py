"""The pass registry (`irc.context.get_all_passes()`): every pass resolves under its name, and
`canonicalize`, `infer-shapes` and `dce` parse from and print to their pipeline spec."""

from __future__ import annotations

import pytest
from xdsl.passes import ModulePass, PassPipeline

from irc.context import get_all_passes
from irc.passes.canonicalize import (
    CanonicalizePass,
)
from irc.passes.dce import DCEPass
from irc.passes.infer_shapes import InferShapesPass

OUR_PASSES = {"canonicalize": CanonicalizePass, "infer-shapes": InferShapesPass, "dce": DCEPass}


# ---- Registry and options ----------------------------------------------------------------------


def test_registry_resolves_every_pass():
    passes = get_all_passes()
    assert set(OUR_PASSES) <= set(passes)
    for name, factory in passes.items():
        pass_class = factory()
        assert issubclass(pass_class, ModulePass)
        assert pass_class.name == name


@pytest.mark.parametrize("name", sorted(OUR_PASSES))
def test_parse_spec(name: str):
    pipeline = PassPipeline.parse_spec(get_all_passes(), name)
    (pass_,) = pipeline.passes
    assert type(pass_) is OUR_PASSES[name]
    # The printed spec parses back to an equal pass.
    again = PassPipeline.parse_spec(get_all_passes(), str(pass_)).passes
    assert again == (pass_,)


def test_parse_spec_pipeline_of_all_three():
    pipeline = PassPipeline.parse_spec(get_all_passes(), "infer-shapes,canonicalize,dce")
    assert [type(p) for p in pipeline.passes] == [InferShapesPass, CanonicalizePass, DCEPass]


@pytest.mark.parametrize("name", sorted(OUR_PASSES))
def test_parse_spec_rejects_unknown_option(name: str):
    with pytest.raises(ValueError, match="bogus"):
        PassPipeline.parse_spec(get_all_passes(), f"{name}{{bogus=1}}")
