"""Hostile model files and IR text: every one ends in the project's clear error, never a
traceback, a hang or a runaway allocation (issue #10 item 1).

Each test named `test_fuzz_*` is a crash the mutation fuzzer (fuzz/fuzz_frontends.py) found,
reduced to its cause and kept as a regression test.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from tflite_builder import T, build_op_model
from xdsl.parser import ParseError

import irc
from irc.diagnostics import IrcDiagnosticError
from irc.importers import ModelImportError, import_model, import_model_bytes
from irc.importers.common import MAX_TENSOR_BYTES
from irc.importers.onnx.untrusted import MAX_SUBGRAPH_DEPTH


@contextmanager
def no_hang(seconds: float = 20.0) -> Iterator[None]:
    """Fail (rather than hang CI) when the body runs away: a correctness bound, not a timing."""

    def expire(signum: int, frame: object) -> None:
        raise AssertionError(f"still running after {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ---- TFLite ------------------------------------------------------------------------------------


def add_model() -> bytes:
    return build_op_model(
        "ADD",
        [T([1, 4], "float32"), T([1, 4], "float32", data=np.ones(4))],
        [T([1, 4], "float32")],
    )


def test_tflite_truncated_at_every_length_is_a_clear_error(tmp_path: Path) -> None:
    data = add_model()
    refused = []
    for length in range(0, len(data), 3):
        try:
            import_model_bytes(data[:length], tmp_path / "model.tflite")
        except ModelImportError as exc:
            refused.append(str(exc))
    assert all(message.startswith(f"{tmp_path / 'model.tflite'}: ") for message in refused)
    assert len(refused) > len(data) // 6  # most truncations lose data the model needs


def test_tflite_root_offset_past_the_end(tmp_path: Path) -> None:
    data = bytearray(add_model())
    data[0:4] = (len(data) + 1000).to_bytes(4, "little")
    with pytest.raises(ModelImportError, match="corrupt or truncated TFLite flatbuffer"):
        import_model_bytes(bytes(data), tmp_path / "m.tflite")


def test_tflite_every_word_at_boundary_values_is_handled(tmp_path: Path) -> None:
    """Each 32-bit word of a small model set to values that break offsets and lengths."""
    data = add_model()
    for position in range(0, len(data) - 3, 4):
        for value in (0xFFFFFFFF, 0x7FFFFFFF, len(data)):
            mutated = bytearray(data)
            mutated[position : position + 4] = value.to_bytes(4, "little")
            try:
                import_model_bytes(bytes(mutated), tmp_path / "m.tflite")
            except ModelImportError:
                pass


def test_tflite_buffer_past_the_end_of_the_file() -> None:
    """A buffer of a >2 GB model keeps its data after the flatbuffer (offset, size): both
    are checked against the file before any slice is taken."""
    import flatbuffers
    import tflite

    from irc.importers.tflite.reader import _Corrupt, _Reader

    b = flatbuffers.Builder(64)
    tflite.BufferStart(b)
    tflite.BufferAddOffset(b, 10_000)
    tflite.BufferAddSize(b, 64)
    b.Finish(tflite.BufferEnd(b))
    forged = tflite.Buffer.GetRootAs(bytes(b.Output()), 0)

    class ForgedRoot:
        def Buffers(self, index: int) -> tflite.Buffer:
            return forged

    reader = _Reader(add_model())
    reader.root = ForgedRoot()
    with pytest.raises(_Corrupt, match="buffer 1 lies beyond the end of the file"):
        reader.buffer(1)


def test_tflite_vector_length_larger_than_the_file(tmp_path: Path) -> None:
    from irc.importers.tflite.reader import _Corrupt, _Reader

    reader = _Reader(add_model())
    with pytest.raises(_Corrupt, match="more than the file can hold"):
        reader.count(2**31, "the tensor list")


# ---- ONNX --------------------------------------------------------------------------------------


def add_onnx(*, initializer: TensorProto | None = None) -> onnx.ModelProto:
    w = initializer or numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        initializer=[w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 10
    return model


def external(tensor: TensorProto, location: str, **entries: int) -> None:
    tensor.ClearField("raw_data")
    tensor.ClearField("float_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in {"location": location, **{k: str(v) for k, v in entries.items()}}.items():
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value


def import_onnx_file(folder: Path, model: onnx.ModelProto) -> object:
    path = folder / "model.onnx"
    path.write_bytes(model.SerializeToString())
    return import_model(path)


def test_external_data_inside_the_folder_is_loaded(tmp_path: Path) -> None:
    (tmp_path / "weights.bin").write_bytes(b"\0" * 8 + np.arange(4, dtype="<f4").tobytes())
    model = add_onnx()
    external(model.graph.initializer[0], "weights.bin", offset=8, length=16)
    module = import_onnx_file(tmp_path, model)
    outputs = irc.run(module, {"x": np.ones(4, np.float32)})
    np.testing.assert_array_equal(next(iter(outputs.values())), [1, 2, 3, 4])


@pytest.mark.parametrize(
    "location", ["../../etc/passwd", "../secret.bin", "sub/../../secret.bin", "/etc/passwd"]
)
def test_external_data_escaping_the_folder_is_refused(tmp_path: Path, location: str) -> None:
    folder = tmp_path / "model"
    (folder / "sub").mkdir(parents=True)
    (tmp_path / "secret.bin").write_bytes(np.arange(4, dtype="<f4").tobytes())
    model = add_onnx()
    external(model.graph.initializer[0], location)
    with pytest.raises(ModelImportError, match=r"(outside the model's folder|relative to the)"):
        import_onnx_file(folder, model)


def test_external_data_through_a_symlink_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (tmp_path / "secret.bin").write_bytes(np.arange(4, dtype="<f4").tobytes())
    os.symlink(tmp_path / "secret.bin", folder / "weights.bin")
    model = add_onnx()
    external(model.graph.initializer[0], "weights.bin")
    with pytest.raises(ModelImportError, match="outside the model's folder; refused"):
        import_onnx_file(folder, model)


@pytest.mark.parametrize(("offset", "length"), [(0, 64), (-4, 16), (2**40, 16), (12, 8), (0, -1)])
def test_external_data_outside_the_file_is_refused(
    tmp_path: Path, offset: int, length: int
) -> None:
    (tmp_path / "weights.bin").write_bytes(np.arange(4, dtype="<f4").tobytes())
    model = add_onnx()
    external(model.graph.initializer[0], "weights.bin", offset=offset, length=length)
    with pytest.raises(ModelImportError, match="lie outside the 16-byte file"):
        import_onnx_file(tmp_path, model)


def test_external_data_in_a_subgraph_is_checked_too(tmp_path: Path) -> None:
    tensor = numpy_helper.from_array(np.ones(4, np.float32), "c")
    external(tensor, "../../etc/passwd")
    branch = helper.make_graph(
        [helper.make_node("Constant", [], ["b"], value=tensor)],
        "then",
        [],
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, [4])],
    )
    model = add_onnx()
    model.graph.initializer.append(helper.make_tensor("cond", TensorProto.BOOL, [], [True]))
    model.graph.node.append(
        helper.make_node("If", ["cond"], ["z"], then_branch=branch, else_branch=branch)
    )
    with pytest.raises(ModelImportError, match="outside the model's folder"):
        import_onnx_file(tmp_path, model)


def test_external_data_without_a_folder_is_refused() -> None:
    from irc.importers.onnx.untrusted import check_model_tensors

    model = add_onnx()
    external(model.graph.initializer[0], "weights.bin")
    with pytest.raises(ModelImportError, match="needs the model's folder"):
        check_model_tensors(model, None)


def test_subgraphs_nested_too_deep_are_refused(tmp_path: Path) -> None:
    leaf = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y0"])],
        "b0",
        [],
        [helper.make_tensor_value_info("y0", TensorProto.FLOAT, [4])],
    )
    inner = leaf
    for level in range(1, MAX_SUBGRAPH_DEPTH + 3):
        node = helper.make_node("If", ["cond"], [f"y{level}"], then_branch=inner, else_branch=leaf)
        inner = helper.make_graph(
            [node], f"b{level}", [], [helper.make_tensor_value_info(f"y{level}", 1, [4])]
        )
    model = add_onnx()
    model.graph.initializer.append(helper.make_tensor("cond", TensorProto.BOOL, [], [True]))
    model.graph.node.append(
        helper.make_node("If", ["cond"], ["z"], then_branch=inner, else_branch=leaf)
    )
    with pytest.raises(ModelImportError, match=f"nest more than {MAX_SUBGRAPH_DEPTH} levels"):
        import_model_bytes(model.SerializeToString(), tmp_path / "m.onnx")


def shape_model(op: str, shape: list[int], **attrs: object) -> onnx.ModelProto:
    """`op(x_const, shape)` where `shape` is a constant: the importer folds it."""
    inputs = ["s"] if op == "ConstantOfShape" else ["c", "s"]
    graph = helper.make_graph(
        [
            helper.make_node(op, inputs, ["big"], **attrs),
            helper.make_node("Add", ["x", "x"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("big", TensorProto.FLOAT, ["d"] * len(shape))],
        initializer=[
            numpy_helper.from_array(np.array(shape, np.int64), "s"),
            numpy_helper.from_array(np.ones([1] * len(shape), np.float32), "c"),
        ],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 10
    return model


@pytest.mark.parametrize(
    ("op", "shape"),
    [
        ("ConstantOfShape", [2**20, 2**20]),
        ("ConstantOfShape", [2**31 + 1]),
        ("Expand", [2**16, 2**16]),
        ("Tile", [2**16, 2**16]),
    ],
)
def test_folded_constants_are_bounded_before_allocation(
    tmp_path: Path, op: str, shape: list[int]
) -> None:
    model = shape_model(op, shape)
    with (
        no_hang(),
        pytest.raises(ModelImportError, match=f"over irc's limit of {MAX_TENSOR_BYTES}"),
    ):
        import_model_bytes(model.SerializeToString(), tmp_path / "m.onnx")


def test_initializer_declaring_more_data_than_it_holds(tmp_path: Path) -> None:
    tensor = numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
    del tensor.dims[:]
    tensor.dims.extend([2**40])
    with pytest.raises(ModelImportError, match=r"m\.onnx: "):
        import_model_bytes(add_onnx(initializer=tensor).SerializeToString(), tmp_path / "m.onnx")


# ---- IR text -----------------------------------------------------------------------------------


def test_fuzz_invalid_utf8_is_a_located_parse_error() -> None:
    with pytest.raises(ParseError) as info:
        irc.parse_module(b"func.func @f() {\n  // \xff\xfe\n  func.return\n}\n", filename="f.mlir")
    assert "f.mlir:2:6" in str(info.value)
    assert "invalid UTF-8 byte 0xff" in str(info.value)


def test_fuzz_unterminated_string_does_not_backtrack_exponentially() -> None:
    text = '"delegate.yield' + "usion, ocl.yield and ocl.kernel, one case each." * 8 + "\n}\n"
    with no_hang(), pytest.raises(ParseError, match="closing string literal"):
        irc.parse_module(text)


@pytest.mark.parametrize(
    "text",
    [
        "func.func @f(%a: " + "tensor<" * 2000,
        "func.func @f(%a: " + "(" * 3000,
        '"builtin.module"() ({\n' * 1000,
        "func.func @f() {\n  %c = nn.constant dense<" + "[" * 3000,
    ],
)
def test_fuzz_deep_nesting_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="nesting too deep"):
        irc.parse_module(text)
    assert sys.getrecursionlimit() >= 1000


def test_fuzz_huge_integer_width_is_refused() -> None:
    text = "func.func @f(%a: tensor<2xi2147483648>) {\n  func.return\n}\n"
    with no_hang(), pytest.raises(ParseError, match="width exceeds the limit of 16777215"):
        irc.parse_module(text)


@pytest.mark.parametrize(
    "text",
    [
        # an i64 literal out of range, in an nn property
        "func.func @f(%r: tensor<4xf32>) {\n"
        "  %b = nn.reshape %r shape = [99999999999999999999999, 2] : "
        "tensor<4xf32> -> tensor<2x2xf32>\n  func.return\n}\n",
        # a dimension beyond an index-sized integer
        "func.func @f() {\n  %c = nn.constant dense<1.0> : "
        "tensor<99999999999999999999999xf32>\n  func.return\n}\n",
    ],
)
def test_fuzz_out_of_range_values_are_parse_errors(text: str) -> None:
    with pytest.raises(ParseError):
        irc.parse_module(text)


def test_fuzz_value_used_before_its_definition_in_a_graph_region() -> None:
    text = """builtin.module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = delegate.region "cpu" (%x_1 = %x : tensor<4xf32>) -> (tensor<4xf32>) {
      delegate.yield %c_1 : tensor<4xf32>
    }
    %c_1 = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
    func.return %a : tensor<4xf32>
  }
}
"""
    with pytest.raises((ParseError, IrcDiagnosticError)):
        irc.parse_module(text)


def test_irc_opt_reports_invalid_utf8_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from irc.tools.irc_opt import main

    path = tmp_path / "bad.mlir"
    path.write_bytes(b"func.func @f() {\n  func.return \xc3\x28\n}\n")
    assert main([str(path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "bad.mlir:2:" in err
    assert "invalid UTF-8" in err


KERNEL_WITHOUT_NAME = """"ocl.program"() <{sym_name = "kernels", source = ""}> ({
  "ocl.kernel"() <{ofsym_name = "main", body = "", description = "x"}> : () -> ()
}) : () -> ()
"""

ALLOC_WITHOUT_BYTES = """delegate.executable private @plan target("opencl") {
  "ocl.program"() <{sym_name = "kernels", source = ""}> ({
    "ocl.upload"() <{index = 0 : i64, value = dense<1.0> : tensor<4xf32>}> : () -> ()
  }) : () -> ()
  func.func @entry(%x: tensor<16xf32>) -> tensor<16xf32> {
    %0 = "ocl.execute"(%x) <{program = @kernels, peak_bytes = 512 : i64}> ({
      "ocl.alloc"() <{id = 0 : i64, b0tes = 128 : i64}> : () -> ()
    }) : (tensor<16xf32>) -> tensor<16xf32>
    func.return %0 : tensor<16xf32>
  }
}
"""


@pytest.mark.parametrize("text", [KERNEL_WITHOUT_NAME, ALLOC_WITHOUT_BYTES])
def test_fuzz_generic_form_without_a_required_property(text: str) -> None:
    with pytest.raises(IrcDiagnosticError, match="missing property"):
        irc.parse_module(text)


def test_fuzz_dense_data_of_an_unpackable_integer_type() -> None:
    text = "func.func @f() {\n  %w = nn.constant dense<[1, -2]> : tensor<2xi65536>\n}\n"
    with pytest.raises(ParseError, match="not implemented for i65536"):
        irc.parse_module(text)


def test_fuzz_external_data_location_of_invalid_utf8(tmp_path: Path) -> None:
    model = add_onnx()
    external(model.graph.initializer[0], "weightsA.bin")
    data = model.SerializeToString().replace(b"weightsA.bin", b"weights\xff.bin")
    with pytest.raises(ModelImportError, match="location is not valid UTF-8"):
        import_model_bytes(data, tmp_path / "m.onnx")


def test_tflite_input_declaring_a_huge_shape_is_refused(tmp_path: Path) -> None:
    data = build_op_model("RELU", [T([2**20, 2**20], "float32")], [T([2**20, 2**20], "float32")])
    with pytest.raises(ModelImportError, match=r"input 't0': shape .* over irc's limit"):
        import_model_bytes(data, tmp_path / "m.tflite")


def test_onnx_input_declaring_a_huge_shape_is_refused(tmp_path: Path) -> None:
    model = add_onnx()
    for dim in model.graph.input[0].type.tensor_type.shape.dim:
        dim.dim_value = 2**40
    with pytest.raises(ModelImportError, match=r"input 'x': shape .* over irc's limit"):
        import_model_bytes(model.SerializeToString(), tmp_path / "m.onnx")
