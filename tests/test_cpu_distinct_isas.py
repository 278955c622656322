"""`cpu_support.isas_with_distinct_code`: which ISA profiles' builds of one executable compile
different C, so a test need not build the same C twice.

Only the preprocessor runs (no library is built): float code reads no VNNI macro, so the
avx512 build is the C of the avx512vnni one; int8 code takes VNNI branches (two distinct
builds); avx2 and generic differ from both in their vector branches and tile defines.
"""

from __future__ import annotations

import numpy as np
import pytest
from cpu_support import (
    QConvCase,
    build_executable,
    cases_executable,
    isas_with_distinct_code,
    lower,
    needs_compiler,
    op_case,
)

from irc.dialects import nn
from irc.targets.cpu import isa

pytestmark = [
    needs_compiler,
    pytest.mark.skipif(isa.machine() != "x86_64", reason="x86 profiles' flags"),
]

X86 = ("avx512vnni", "avx512", "avx2", "generic")


def test_float_code_is_the_same_c_on_both_avx512_profiles() -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (1, 6, 7, 20)).astype(np.float32)
    w = rng.uniform(-1, 1, (24, 3, 3, 20)).astype(np.float32)
    case = op_case("conv", nn.Conv2DOp, [x, w, None], [1], pads=[1, 1, 1, 1], layout="NHWC")
    module, executable, _ = build_executable([case])
    lower(module)
    assert isas_with_distinct_code(executable, X86) == ("avx512vnni", "avx2", "generic")
    assert isas_with_distinct_code(executable, X86[1:]) == X86[1:]  # the first always stays


def test_int8_code_differs_with_vnni() -> None:
    rng = np.random.default_rng(4)
    case = QConvCase("qconv", rng, (1, 5, 6, 32), 40, (3, 3), pads=(1, 1, 1, 1))
    module, executable, _ = cases_executable("test_cpu_distinct_isas", [case])
    lower(module)
    assert isas_with_distinct_code(executable, X86) == X86
