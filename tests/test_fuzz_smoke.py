"""A few hundred mutation-fuzzing cases over the three front ends (issue #10 item 2).

The long run is `python fuzz/fuzz_frontends.py --cases 100000 --seed 1` (see fuzz/README.md);
this smoke version keeps the harness working and catches the easy regressions in CI.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

FUZZ_SCRIPT = Path(__file__).resolve().parent.parent / "fuzz" / "fuzz_frontends.py"


@pytest.fixture(scope="module")
def fuzz() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fuzz_frontends", FUZZ_SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def seeds(fuzz: ModuleType) -> dict[str, list[object]]:
    return fuzz.all_seeds()


def test_seeds_cover_the_three_front_ends(fuzz: ModuleType, seeds: dict[str, list]) -> None:
    for frontend in fuzz.FRONTENDS:
        assert len(seeds[frontend]) >= 5, frontend


def test_mutations_are_deterministic(fuzz: ModuleType, seeds: dict[str, list]) -> None:
    import random

    for frontend in fuzz.FRONTENDS:
        seed = seeds[frontend][0]
        pool = [s.data for s in seeds[frontend]]
        first = fuzz.make_input(seed, random.Random("7:1"), pool)
        second = fuzz.make_input(seed, random.Random("7:1"), pool)
        assert first == second


def test_smoke_run_has_no_findings(fuzz: ModuleType, seeds: dict[str, list]) -> None:
    report = fuzz.fuzz(300, seed=20261122, seeds=seeds, timeout=20.0)
    assert report.total == 300
    for frontend in fuzz.FRONTENDS:
        assert report.executions[frontend] == 100
        # The mutations reach both outcomes: some inputs still import, most are refused.
        assert report.outcomes.get(f"{frontend}:error", 0) > 0, frontend
        assert report.outcomes.get(f"{frontend}:ok", 0) > 0, frontend
    found = [f"[{f.frontend}] {f.kind} at {f.where}: {f.message}" for f in report.findings]
    assert not found, "\n".join(found)


def test_a_crash_is_reported_as_a_finding(fuzz: ModuleType, tmp_path: Path) -> None:
    """The harness itself: an exception other than the clear errors is a finding."""

    class CrashingRunner(fuzz.FrontendRunner):
        def run(self, frontend: str, data: bytes) -> None:
            raise KeyError("boom")

    seed = fuzz.Seed("mlir", "s", b"")
    outcome, finding = fuzz.run_case(CrashingRunner(tmp_path), "mlir", seed, 0, b"x", 5.0)
    assert outcome == "KeyError"
    assert finding is not None
    assert finding.kind == "KeyError"


def test_a_hang_is_reported_as_a_finding(fuzz: ModuleType, tmp_path: Path) -> None:
    class HangingRunner(fuzz.FrontendRunner):
        def run(self, frontend: str, data: bytes) -> None:
            while True:
                pass

    seed = fuzz.Seed("onnx", "s", b"")
    outcome, finding = fuzz.run_case(HangingRunner(tmp_path), "onnx", seed, 0, b"x", 0.2)
    assert outcome == "CaseTimeout"
    assert finding is not None
