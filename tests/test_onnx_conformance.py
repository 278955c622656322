"""ONNX backend test data (shipped in the onnx wheel) through the ONNX importer.

Every case under `onnx/backend/test/data/{pytorch-converted,pytorch-operator,simple}` holds a
`model.onnx` and `test_data_set_*/{input,output}_*.pb`. Each case must import, run on the
reference target (`irc.run`) and match every expected output, unless it is listed in
`UNSUPPORTED` with the reason. The list is checked both ways: a listed case that starts
passing fails (remove it), an unlisted case that fails fails (fix it, or list it).

To refresh the list after adding converters::

    .venv/bin/python tests/test_onnx_conformance.py            # report, changes nothing
    .venv/bin/python tests/test_onnx_conformance.py --update   # rewrite UNSUPPORTED below

`--update` drops cases that now pass and adds failing ones with the first line of their
error as the reason (prefixed "TODO review:"); review those before committing.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import irc
from irc.importers import ModelImportError, import_model

DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
SUITES = ("pytorch-converted", "pytorch-operator", "simple")
RTOL, ATOL = 1e-3, 1e-5

_3D = "3-D data: nn has 2-D convolutions and pools (1-D ones run over a unit height)"
_SEQUENCE = "sequence values: irc imports tensors only"
_STRING = "string tensors: irc imports numeric tensors only"

# UNSUPPORTED-BEGIN (rewritten by --update; keep one entry per line)
UNSUPPORTED: dict[str, str] = {
    "test_AvgPool3d": _3D,
    "test_AvgPool3d_stride": _3D,
    "test_AvgPool3d_stride1_pad0_gpu_input": _3D,
    "test_Conv3d": _3D,
    "test_Conv3d_dilated": _3D,
    "test_Conv3d_dilated_strided": _3D,
    "test_Conv3d_groups": _3D,
    "test_Conv3d_no_bias": _3D,
    "test_Conv3d_stride": _3D,
    "test_Conv3d_stride_padding": _3D,
    "test_MaxPool3d": _3D,
    "test_MaxPool3d_stride": _3D,
    "test_MaxPool3d_stride_padding": _3D,
    "test_expand_shape_model1": "Expand to a shape that is a graph input (known at run time only)",
    "test_expand_shape_model2": "Expand to a shape that is a graph input (known at run time only)",
    "test_expand_shape_model3": "Expand to a shape that is a graph input (known at run time only)",
    "test_expand_shape_model4": "Expand to a shape that is a graph input (known at run time only)",
    "test_gradient_of_add": "training op Gradient (domain ai.onnx.preview.training)",
    "test_gradient_of_add_and_mul": "training op Gradient (domain ai.onnx.preview.training)",
    "test_sequence_model1": _SEQUENCE,
    "test_sequence_model2": _SEQUENCE,
    "test_sequence_model3": _SEQUENCE,
    "test_sequence_model4": _SEQUENCE,
    "test_sequence_model5": _SEQUENCE,
    "test_sequence_model6": _SEQUENCE,
    "test_sequence_model7": _SEQUENCE,
    "test_sequence_model8": _SEQUENCE,
    "test_shrink": "Shrink: no nn op",
    "test_sign_model": "Sign on a run-time tensor: no nn op",
    "test_strnorm_model_monday_casesensintive_lower": _STRING,
    "test_strnorm_model_monday_casesensintive_nochangecase": _STRING,
    "test_strnorm_model_monday_casesensintive_upper": _STRING,
    "test_strnorm_model_monday_empty_output": _STRING,
    "test_strnorm_model_monday_insensintive_upper_twodim": _STRING,
    "test_strnorm_model_nostopwords_nochangecase": _STRING,
}
# UNSUPPORTED-END


def case_dirs() -> dict[str, Path]:
    """Case name -> directory, over all suites (names are unique across them)."""
    cases: dict[str, Path] = {}
    for suite in SUITES:
        root = DATA / suite
        if root.is_dir():
            for case in sorted(root.iterdir()):
                if (case / "model.onnx").is_file():
                    cases[case.name] = case
    return cases


def _read_tensor(path: Path) -> np.ndarray:
    tensor = onnx.TensorProto()
    tensor.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(tensor)


@functools.cache
def run_case(name: str) -> str | None:
    """None when the case imports, runs and matches; else what went wrong (one line)."""
    directory = case_dirs()[name]
    path = directory / "model.onnx"
    model = onnx.load(str(path), load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    input_names = [i.name for i in model.graph.input if i.name not in initializers]
    output_names = [o.name for o in model.graph.output]
    try:
        module = import_model(path)
    except ModelImportError as exc:
        lines = str(exc).splitlines()
        return "import: " + (lines[1].strip() if len(lines) > 1 else lines[0])
    for data_set in sorted(directory.glob("test_data_set_*")):
        inputs = {n: _read_tensor(data_set / f"input_{i}.pb") for i, n in enumerate(input_names)}
        try:
            got = irc.run(module, inputs)
        except Exception as exc:
            return f"run: {type(exc).__name__}: {exc}".splitlines()[0]
        for i, output in enumerate(output_names):
            expected = _read_tensor(data_set / f"output_{i}.pb")
            actual = got[output]
            if actual.shape != expected.shape:
                return f"{output}: shape {actual.shape}, expected {expected.shape}"
            if not np.allclose(actual, expected, rtol=RTOL, atol=ATOL, equal_nan=True):
                error = np.max(np.abs(actual.astype(np.float64) - expected))
                return f"{output}: max abs error {error:.3g} in {data_set.name}"
    return None


CASES = sorted(case_dirs())


@pytest.mark.skipif(not CASES, reason="the onnx wheel ships no backend test data")
@pytest.mark.parametrize("name", CASES)
def test_case(name: str) -> None:
    failure = run_case(name)
    if name in UNSUPPORTED:
        assert failure is not None, (
            f"{name} is listed as unsupported ({UNSUPPORTED[name]}) but now passes: remove it "
            "from UNSUPPORTED (or run this file with --update)"
        )
    else:
        assert failure is None, failure


def test_list_names_existing_cases() -> None:
    if not CASES:
        pytest.skip("the onnx wheel ships no backend test data")
    stale = sorted(set(UNSUPPORTED) - set(CASES))
    assert not stale, f"UNSUPPORTED names cases that do not exist: {stale}"


def test_summary() -> None:
    """Print how many cases are supported (not listed) and how many of those pass."""
    if not CASES:
        pytest.skip("the onnx wheel ships no backend test data")
    supported = [c for c in CASES if c not in UNSUPPORTED]
    passing = [c for c in supported if run_case(c) is None]
    print(
        f"\nONNX backend conformance: {len(passing)}/{len(supported)} supported cases pass; "
        f"{len(CASES) - len(supported)} of {len(CASES)} listed unsupported"
    )
    assert len(passing) == len(supported)


# ---- Command line: report and --update ---------------------------------------------------------


def _update_list(results: dict[str, str | None]) -> None:
    source = Path(__file__).read_text()
    begin = source.index("# UNSUPPORTED-BEGIN")
    end = source.index("# UNSUPPORTED-END")
    header_end = source.index("\n", begin) + 1
    body = source[header_end:end]
    old_lines = {
        m.group(1): m.group(0) for m in re.finditer(r'^    "([^"]+)": .*,$', body, re.MULTILINE)
    }
    lines = ["UNSUPPORTED: dict[str, str] = {"]
    for name, failure in sorted(results.items()):
        if failure is None:
            continue
        if name in old_lines:
            lines.append(old_lines[name])
        else:
            reason = f"TODO review: {failure}".replace("\\", "\\\\").replace('"', "'")
            lines.append(f'    "{name}": "{reason}",')
    lines.append("}")
    Path(__file__).write_text(source[:header_end] + "\n".join(lines) + "\n" + source[end:])


def main(argv: list[str]) -> int:
    results = {name: run_case(name) for name in CASES}
    for name, failure in results.items():
        listed = name in UNSUPPORTED
        if failure is None and listed:
            print(f"NOW PASSES  {name}")
        elif failure is not None and not listed:
            print(f"NEW FAILURE {name}: {failure}")
        elif failure is not None:
            print(f"unsupported {name}: {failure}")
    passing = sum(f is None for f in results.values())
    print(f"{passing}/{len(results)} cases pass")
    if "--update" in argv:
        _update_list(results)
        print(f"updated UNSUPPORTED in {os.path.relpath(__file__)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
