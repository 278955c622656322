"""The command-line tools' shared error handling: a closed pipe ends a tool quietly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_closed_stdout_pipe_ends_quietly(tmp_path: Path) -> None:
    """`irc-run big.mlir | head -c 1`: the reader closes the pipe while the tool still writes
    (the output is far larger than a pipe's buffer); no 'internal error', no traceback."""
    count = 2000  # ~2 printed lines per result: far beyond a pipe's 64 KiB buffer
    types = ", ".join(["tensor<4xf32>"] * count)
    lines = [f"func.func @main(%x: tensor<4xf32>) -> ({types}) {{"]
    lines += [f"  %y{i} = nn.relu %x : tensor<4xf32> -> tensor<4xf32>" for i in range(count)]
    lines += [f"  func.return {', '.join(f'%y{i}' for i in range(count))} : {types}", "}"]
    source = tmp_path / "big.mlir"
    source.write_text("\n".join(lines) + "\n")
    script = "import sys\nfrom irc.tools.irc_run import main\nsys.exit(main(sys.argv[1:]))\n"
    process = subprocess.Popen(
        [sys.executable, "-c", script, str(source)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    process.stdout.read(1)  # the tool has started writing ...
    process.stdout.close()  # ... and the reader goes away
    stderr = process.stderr.read().decode()
    process.stderr.close()
    process.wait(timeout=60)
    assert "internal error" not in stderr
    assert "Traceback" not in stderr


def test_write_output_turns_oserror_into_one_tool_message(tmp_path: Path) -> None:
    import pytest

    from irc.tools.common import ToolError, write_output

    target = tmp_path / "missing dir" / "out.mlir"
    with pytest.raises(ToolError) as info:
        write_output(str(target), "text", "the module")
    assert str(info.value) == (
        f"could not write the module to '{target}': No such file or directory"
    )
    write_output(str(tmp_path / "ok.mlir"), "text", "the module")
    assert (tmp_path / "ok.mlir").read_text() == "text"


def test_target_options_are_parsed_and_checked_here() -> None:
    import pytest

    from irc.tools.common import ToolError, load_plugins, parse_targets

    assert parse_targets(" opencl, cpu ,") == ["opencl", "cpu"]
    with pytest.raises(ToolError, match="bad --targets ' , ': expected target names"):
        parse_targets(" , ")
    with pytest.raises(ToolError, match="unknown target 'nosuch'"):
        load_plugins(None, ["reference", "nosuch"])
