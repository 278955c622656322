"""Where the test suite's CPU time goes: a pytest plugin that records each test's CPU seconds
(the process's own and its waited-for children's: gcc, qemu, tool subprocesses) and wall
time, one JSON line per test in one file per xdist worker; and a report of the costliest
files and tests, with each file's worker and start (the balance of `--dist loadfile`).

Measure the README's pytest command cold (empty irc and PoCL caches), then report:

    d=$(mktemp -d); IRC_CACHE_DIR=$d/irc POCL_CACHE_DIR=$d/pocl TEST_COST_DIR=$d/cost \\
      PYTHONPATH=benchmarks pytest -W error -q -n auto --dist loadfile -p suite_cost
    python benchmarks/suite_cost.py $d/cost --files 25 --tests 40

CPU seconds are what to compare between runs on a shared machine; wall times follow the load.
PoCL's kernel compiles run in the worker process (its own CPU time), gcc in children.

`--pocl $d/pocl` also counts what PoCL compiled into its kernel cache, per file: programs
(`<hash>/program.bc`: one per distinct source and build options) and kernel variants
(`<hash>/<kernel>/<local size...>/*.so`: one per kernel and local size first launched), each
given to the test that was running when it was written (exact with one worker, `-n 0`;
with several workers an entry written while two tests ran goes to the first).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

OUT_ENV = "TEST_COST_DIR"
"""The folder of the per-worker `<worker>.jsonl` files (the plugin records nothing without it)."""

_out: Any = None


def _cpu() -> tuple[float, float]:
    t = os.times()
    return t.user + t.system, t.children_user + t.children_system


def _write(record: dict[str, Any]) -> None:
    global _out
    folder = os.environ.get(OUT_ENV)
    if not folder:
        return
    if _out is None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _out = (Path(folder) / f"{worker}.jsonl").open("a")
    _out.write(json.dumps(record) + "\n")
    _out.flush()


def pytest_sessionstart(session: pytest.Session) -> None:
    own, children = _cpu()
    _write({"event": "start", "t": time.time(), "self": own, "child": children})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    own, children, start = *_cpu(), time.time()
    yield
    own_after, children_after = _cpu()
    _write(
        {
            "id": item.nodeid,
            "t0": start,
            "t1": time.time(),
            "self": own_after - own,
            "child": children_after - children,
        }
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    global _out
    own, children = _cpu()
    _write({"event": "end", "t": time.time(), "self": own, "child": children})
    if _out is not None:  # closed here: `-W error` would make the unclosed file fatal at exit
        _out.close()
        _out = None


def pocl_entries(cache: Path) -> tuple[list[float], list[float]]:
    """The write times of the programs and of the kernel variants in PoCL's cache `cache`."""
    programs = [p.stat().st_mtime for p in cache.glob("*/*/program.bc")]
    variants = [p.stat().st_mtime for p in cache.glob("*/*/*/*/*.so")]
    return programs, variants


def _attribute(times: list[float], spans: list[tuple[float, float, str]]) -> dict[str, int]:
    """How many of `times` fall in each file's test spans (file -> count)."""
    counts: dict[str, int] = collections.Counter()
    for t in times:
        for t0, t1, name in spans:
            if t0 <= t <= t1:
                counts[name] += 1
                break
        else:
            counts["(between tests)"] += 1
    return counts


def report(folder: Path, files: int, tests: int, pocl: Path | None = None) -> None:
    """Print the workers' totals, the `files` costliest files and `tests` costliest tests
    (with `pocl`, PoCL's cache of the run: its programs and kernel variants per file)."""
    per_file: dict[str, dict[str, Any]] = collections.defaultdict(
        lambda: {"self": 0.0, "child": 0.0, "wall": 0.0, "n": 0, "worker": "", "t0": None}
    )
    workers: dict[str, dict[str, Any]] = {}
    per_test: list[tuple[float, str]] = []
    spans: list[tuple[float, float, str]] = []
    for path in sorted(folder.glob("*.jsonl")):
        worker = path.stem
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if "event" in record:
                workers.setdefault(worker, {})[record["event"]] = record
                continue
            entry = per_file[record["id"].split("::")[0]]
            entry["self"] += record["self"]
            entry["child"] += record["child"]
            entry["wall"] += record["t1"] - record["t0"]
            entry["n"] += 1
            entry["worker"] = worker
            entry["t0"] = record["t0"] if entry["t0"] is None else min(entry["t0"], record["t0"])
            per_test.append((record["self"] + record["child"], record["id"]))
            spans.append((record["t0"], record["t1"], record["id"].split("::")[0]))
    if not workers:
        raise SystemExit(f"no records in {folder}")
    origin = min(w["start"]["t"] for w in workers.values() if "start" in w)
    total = sum(e["self"] + e["child"] for e in per_file.values())
    print(f"{total:.0f} CPU s in {len(per_test)} tests of {len(per_file)} files")
    for worker, events in sorted(workers.items()):
        if "start" in events and "end" in events:
            wall = events["end"]["t"] - events["start"]["t"]
            print(f"{worker}: wall {wall:.0f} s")
    programs: dict[str, int] = {}
    variants: dict[str, int] = {}
    pocl_columns = ""
    if pocl is not None:
        program_times, variant_times = pocl_entries(pocl)
        programs = _attribute(program_times, spans)
        variants = _attribute(variant_times, spans)
        print(f"PoCL cache: {len(program_times)} programs, {len(variant_times)} kernel variants")
        pocl_columns = f" {'progs':>5} {'vars':>5}"
    print(
        f"{'cpu':>7} {'own':>6} {'child':>6} {'wall':>6} {'tests':>5}{pocl_columns}"
        " worker start  file"
    )
    ranked = sorted(per_file.items(), key=lambda kv: -(kv[1]["self"] + kv[1]["child"]))
    for name, e in ranked[:files]:
        counts = f" {programs.get(name, 0):5d} {variants.get(name, 0):5d}" if pocl else ""
        print(
            f"{e['self'] + e['child']:7.1f} {e['self']:6.1f} {e['child']:6.1f} {e['wall']:6.1f}"
            f" {e['n']:5d}{counts} {e['worker']:>6} {e['t0'] - origin:5.0f}  {name}"
        )
    if pocl is not None and (programs.get("(between tests)") or variants.get("(between tests)")):
        print(
            f"outside any test: {programs.get('(between tests)', 0)} programs,"
            f" {variants.get('(between tests)', 0)} variants"
        )
    for cpu, nodeid in sorted(per_test, reverse=True)[:tests]:
        print(f"{cpu:7.1f} {nodeid}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the TEST_COST_DIR of a run")
    parser.add_argument("--files", type=int, default=25, help="costliest files to list")
    parser.add_argument("--tests", type=int, default=0, help="costliest tests to list")
    parser.add_argument(
        "--pocl", type=Path, help="the run's POCL_CACHE_DIR: count its programs and variants"
    )
    args = parser.parse_args()
    report(args.folder, args.files, args.tests, args.pocl)


if __name__ == "__main__":
    main()
