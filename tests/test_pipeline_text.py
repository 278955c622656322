"""Pipeline text (irc.pipelines): MLIR's `builtin.module(...)` form, named pipelines, and
pass options checked and described from the passes' own dataclass fields."""

from __future__ import annotations

import pytest

from irc.context import get_all_passes
from irc.pipelines import (
    NAMED_PIPELINES,
    compile_pipeline_spec,
    default_pipeline,
    parse_pipeline,
    pass_options,
    pass_summary,
    pipeline_specs,
)


def _text(spec: str) -> list[str]:
    return [str(s) for s in pipeline_specs(spec)]


def test_mlir_anchor_and_plain_lists_are_the_same_pipeline() -> None:
    plain = _text("canonicalize,convert-layout{to=NHWC}")
    assert _text("builtin.module(canonicalize,convert-layout{to=NHWC})") == plain
    assert _text("  builtin.module( canonicalize , convert-layout{to=NHWC} ) ") == plain
    assert _text("builtin.module()") == []


def test_nested_anchors_are_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^nested pass pipelines \('func.func\(\.\.\.\)'\)"):
        pipeline_specs("builtin.module(func.func(canonicalize))")


def test_named_pipelines_expand_to_the_python_presets() -> None:
    assert _text("irc-default{targets=opencl,cpu min-ops=3}") == _text(
        default_pipeline(["opencl", "cpu"], min_ops=3)
    )
    assert _text("irc-compile{targets=cpu}") == _text(compile_pipeline_spec(["cpu"]))
    assert _text("canonicalize,irc-default{targets=reference}")[1:] == _text(
        default_pipeline(["reference"])
    )
    with pytest.raises(ValueError, match="irc-default: option 'targets' is required"):
        pipeline_specs("irc-default")
    assert set(NAMED_PIPELINES) == {"irc-default", "irc-compile"}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("convert-layout{to=X}", "convert-layout: option 'to' must be one of NCHW, NHWC, got 'X'"),
        ("convert-layout{to=NCHW,NHWC}", "convert-layout: option 'to' takes one NCHW|NHWC, got"),
        ("partition{min-ops=1.5}", "partition: option 'min-ops' must be an integer, got 1.5"),
        ("partition{strict=yes}", "partition: option 'strict' must be true or false, got 'yes'"),
        ("partition{targets=a,3}", "partition: option 'targets' takes a list of str: must be"),
        ("partition{colour=red}", "partition: unknown option 'colour'; its options: targets,"),
        ("dce{x=1}", "dce: unknown option 'x'; it takes no options"),
        ("nosuchpass", "unknown pass 'nosuchpass'; available passes: canonicalize,"),
        ("canonicalize{", "bad pipeline 'canonicalize{': Expected argument name here"),
    ],
)
def test_bad_pipelines_are_described_in_their_own_terms(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=r"^\S") as info:
        parse_pipeline(spec)
    assert str(info.value).startswith(message)
    assert "typing." not in str(info.value)


def test_good_options_still_build_the_pass() -> None:
    (convert,) = parse_pipeline("builtin.module(convert-layout{to=NHWC targets=a,b})")
    assert (convert.to, convert.targets) == ("NHWC", ("a", "b"))


def test_every_pass_is_described_from_its_fields() -> None:
    for name, factory in get_all_passes().items():
        pass_class = factory()
        assert pass_summary(pass_class), name
        for option in pass_options(pass_class):
            assert "_" not in option.name, (name, option)
    options = {o.name: o for o in pass_options(get_all_passes()["convert-layout"]())}
    assert list(options) == ["to", "targets", "keep-signature"]
    assert (options["to"].type, options["to"].default) == ("NCHW|NHWC", "NCHW")
    assert options["to"].doc == "The layout that layout-sensitive ops get."
    assert (options["keep-signature"].type, options["keep-signature"].default) == ("bool", "true")
    assert (options["targets"].type, options["targets"].default) == ("list of str", "")
