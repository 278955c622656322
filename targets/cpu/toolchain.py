"""The system C compiler: probing it, and building shared libraries through a disk cache.

* **Probing.** The compiler is `$IRC_CC`, else `$CC`, else the first of `cc`, `gcc`, `clang`
  on the PATH. It must build and load a shared library using GNU vector extensions. Optional
  flags are kept when they work here: `-march=native`, `-mprefer-vector-width=512` (gcc
  defaults to 256-bit vectors on AVX-512 machines, PERF_NOTES.md),
  `--param=avoid-fma-max-bits=0` (gcc's tuning for some CPUs, Sapphire Rapids and Zen among
  them, leaves loop-carried multiply-adds unfused, loop by loop: the same source then rounds
  differently on those hosts, and differently in two loops of one kernel) and `-fopenmp` (the
  library must also load). OpenMP is kept for the loops still generated as `omp parallel`
  loops (`IRC_PARFOR` where a marked loop shares its op's block with other statements), and
  `build` passes `-fopenmp` only for a source that has one (`uses_openmp`): every kernel of
  the library (qgemm_dynamic.c's GEMM included) and the marked loop nests outlined as tasks
  (`outline`) split over its own pool (kernels/common/pool.c), so most libraries link no
  OpenMP runtime (MobileNetV2 float and int8, face detection): one kind of thread, none of
  libgomp's spinning or core binding (small_cnn_int8's links it for one float conv loop
  after an int8 -> float conversion in its block). Without OpenMP (that, or a compiler
  lacking it) the default thread count comes from `OMP_NUM_THREADS` or the CPU affinity.
  At build time the ISA profile (`isa.select()`, `$IRC_CPU_ISA`)
  replaces the first two with its own flags (`flags_for`): `-march=native` only for the
  host's best profile, else the profile's `-march` level, plus its defines. Results are
  cached per compiler for the process, and a successful probe on disk (`cpu-probe`
  namespace) keyed by the compiler file's path, size, mtime and inode.
* **Cache.** A library is keyed by the SHA-256 of its source, the flags (so the ISA), the
  compiler's identity (path and `--version` text) and, with `-march=native`, what that
  selects on this CPU (`native_target`: a cache shared by an AVX2 and an AVX-512 machine
  keeps one library per CPU), and lives in the `cpu` directory of
  the private irc cache (`irc.cache`: `$IRC_CACHE_DIR`, else `$XDG_CACHE_HOME/irc`, else
  `~/.cache/irc`, mode 0700) as `<key>.so` plus `<key>.json`, which records the library's
  size and SHA-256. Both are written to a temporary name and renamed into place (atomic),
  under a per-key file lock; right before loading, the library's hash is checked against
  the record, and a missing, truncated or tampered entry is rebuilt, never loaded.
  Each library's soname is its entry's file name. Generated code that calls the kernel
  library (library.py) is built after the library's core and parts (built side by side, and
  beside the code's own compile; `Library.needs`) and linked against them (`Toolchain.link`:
  recorded by soname, found through `$ORIGIN`, so a moved cache directory still works), and
  their file names (their keys) are part of its key.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from irc import cache
from irc.targets.cpu import isa

CACHE_ENV = "IRC_CACHE_DIR"
COMPILER_ENV = "IRC_CC"
PORTABLE_ENV = isa.PORTABLE_ENV
ISA_ENV = isa.ISA_ENV
BASE_FLAGS = ("-O3", "-std=gnu99", "-fPIC", "-shared", "-ffp-contract=fast", "-fno-math-errno")
OPTIONAL_FLAGS = (
    ("-march=native",),
    ("-mprefer-vector-width=512",),
    ("--param=avoid-fma-max-bits=0",),
    ("-fopenmp",),
)
LIBS = ("-lm",)
COMPILE_TIMEOUT_S = 600

_PROBE_SOURCE = r"""
#include <math.h>
typedef float v16 __attribute__((vector_size(64)));
float irc_probe(float x) {
  v16 a = {0.0f};
  v16 b = a + 1.0f;
  float s = 0.0f;
  a += x * b;
#if defined(_OPENMP)
#pragma omp parallel for reduction(+ : s)
#endif
  for (int i = 0; i < 16; ++i) s += a[i];
  return s + expf(0.0f);
}
"""


SPIN_SETTINGS = {"GOMP_SPINCOUNT": "10000", "KMP_BLOCKTIME": "1"}
"""How long idle OpenMP threads spin before they sleep (libgomp: iterations, default 300000;
LLVM's libomp: milliseconds, default 200): briefly, so a worker catches the next parallel
loop of the same run without a futex wake-up, but stops burning a core soon after the run
ends. Measured on the 2-vCPU Xeon (one process, 40 parallel loops of ~60 us per run, 5 ms of
other work between runs): the default spin keeps 0.7-0.8 cores busy in all, 10000 spins
0.58, `OMP_WAIT_POLICY=passive` 0.36 but each run 16-20 % slower (3.03-3.14 ms instead of
2.62: ~10 us per loop for the wake-up); 10000 spins run as fast as the default."""


def prepare_openmp() -> None:
    """Before the OpenMP runtime loads: `OMP_PROC_BIND=true` and the short spin of
    `SPIN_SETTINGS`, each unless the user set it (or `OMP_WAIT_POLICY`, for the spin).

    libgomp reads its settings once, when the first library linking it loads. Unbound, on
    this kind of 2-vCPU machine a parallel loop regularly stalls for a whole scheduler time
    slice (~8 ms instead of 0.1-1 ms, PERF_NOTES.md): the worker spins on the master's core.
    Spinning long after a run steals the cores of whatever the process runs next (the
    user's code, another runtime).
    """
    try:
        with open("/proc/self/maps") as maps:
            loaded = maps.read()
        if "libgomp" in loaded or "libomp" in loaded:
            return  # initialised by someone else already: too late to matter
    except OSError:
        pass
    os.environ.setdefault("OMP_PROC_BIND", "true")
    if "OMP_WAIT_POLICY" not in os.environ:
        for name, value in SPIN_SETTINGS.items():
            os.environ.setdefault(name, value)


def load_library(path: str | Path) -> ctypes.CDLL:
    """`ctypes.CDLL(path)`, keeping the calling thread's CPU affinity: with
    `OMP_PROC_BIND=true`, libgomp binds the thread that loads it to the first core when it
    initialises, which would pin the user's Python thread (and every thread pool it starts
    later, e.g. another runtime's) to one core. The OpenMP workers are bound as they are
    created, so giving the caller its mask back leaves them bound."""
    try:
        before = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return ctypes.CDLL(str(path))
    handle = ctypes.CDLL(str(path))
    with contextlib.suppress(OSError):
        if os.sched_getaffinity(0) != before:
            os.sched_setaffinity(0, before)
    return handle


class CompilerError(Exception):
    """The C compiler failed on generated code (an irc bug) or could not be run."""


@functools.cache
def native_target(compiler: str) -> str:
    """What `-march=native` selects on this CPU for `compiler`: the command lines its driver
    prints with `-###` (gcc's `-march=cascadelake -mavx512f ...`, clang's `-target-cpu` and
    `-target-feature`s), else the CPU's feature flags (`isa.host_features`). Part of the cache
    key of a library built with `-march=native`: the flag's text is the same on every machine,
    so without it a cache shared by several (a home directory on NFS, a CI cache restored on
    another runner: AMD EPYC with AVX2 and Intel Xeon with AVX-512) would hand one CPU's library
    to another, which dies of SIGILL on its first AVX-512 instruction."""
    try:
        run = subprocess.run(
            [compiler, "-march=native", "-###", "-E", "-x", "c", os.devnull],
            capture_output=True,
            text=True,
            timeout=60,
        )
        commands = [line for line in run.stderr.splitlines() if line.startswith(" ")]
    except (OSError, subprocess.SubprocessError):
        commands = []
    if commands:
        return "\n".join(commands)
    return "cpu flags: " + " ".join(sorted(isa.host_features()))


@dataclass(frozen=True)
class Toolchain:
    """A working C compiler and the flags that work with it here."""

    compiler: str
    """Absolute path of the compiler."""
    version: str
    """Its `--version` text (part of the cache key)."""
    flags: tuple[str, ...]
    """Every flag passed when building a library (base + accepted optional flags)."""
    link: tuple[Path, ...] = ()
    """Cached libraries a build links against (a model's glue: its kernel library,
    `library.py`), found at load time next to the built library (`$ORIGIN`: both live in
    the cache directory); in the cache key by file name (their own keys), not directory."""

    @property
    def openmp(self) -> bool:
        return "-fopenmp" in self.flags

    def cache_key(self, source: str) -> str:
        """SHA-256 of the compiler (path, `--version`), the flags and `source`; with
        `-march=native`, also of what that means on this CPU (`native_target`)."""
        digest = hashlib.sha256()
        native = native_target(self.compiler) if "-march=native" in self.flags else ""
        link = " ".join(path.name for path in self.link)
        for part in (self.compiler, self.version, " ".join(self.flags), native, link, source):
            digest.update(part.encode())
            digest.update(b"\0")
        return digest.hexdigest()


@dataclass(frozen=True)
class ProbeResult:
    """A toolchain, or why there is none."""

    toolchain: Toolchain | None
    reason: str = ""


def compiler_candidates() -> list[str]:
    """The compiler names to try, in order (an explicit choice is the only candidate)."""
    for env in (COMPILER_ENV, "CC"):
        if value := os.environ.get(env, "").strip():
            return [value]
    return ["cc", "gcc", "clang"]


def probe() -> ProbeResult:
    """The toolchain of the current environment (cached per compiler choice)."""
    return _probe(tuple(compiler_candidates()))


@functools.cache
def _probe(candidates: tuple[str, ...]) -> ProbeResult:
    reasons = []
    for name in candidates:
        path = shutil.which(name)
        if path is None:
            reasons.append(f"'{name}' not found")
            continue
        result = _probe_compiler(path)
        if result.toolchain is not None:
            return result
        reasons.append(result.reason)
    return ProbeResult(None, "no working C compiler: " + "; ".join(reasons))


def _run(cmd: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


PROBE_NAMESPACE = "cpu-probe"
"""The irc cache directory of successful compiler probes (one JSON entry per compiler)."""


def _probe_key(path: str) -> str:
    """What a probe's answer depends on: the compiler file (resolved path, size, mtime,
    inode: another compiler or an upgrade is a new key), the probe and the flags tried."""
    real = os.path.realpath(path)
    st = os.stat(real)
    parts = (path, real, st.st_size, st.st_mtime_ns, st.st_ino, BASE_FLAGS, OPTIONAL_FLAGS)
    return hashlib.sha256(repr((*parts, _PROBE_SOURCE, os.uname().machine)).encode()).hexdigest()


def _probe_compiler(path: str) -> ProbeResult:
    """`_probe_compiler_now`, remembered on disk: probing runs the compiler five times
    (~0.3 s), which every new process would pay before its first compile. Failures are not
    remembered (they are quick, and a fixed setup should be seen at once)."""
    try:
        key = _probe_key(path)
        record = json.loads(cache.read_verified(PROBE_NAMESPACE, key, ".probe") or b"null")
        if isinstance(record, dict) and record.get("compiler") == path:
            return ProbeResult(Toolchain(path, str(record["version"]), tuple(record["flags"])))
    except (OSError, ValueError, KeyError, TypeError):
        key = None  # no cache (or a bad entry): probe, and try to remember the result
    result = _probe_compiler_now(path)
    if key is not None and result.toolchain is not None:
        entry = dataclasses.asdict(result.toolchain)
        with contextlib.suppress(OSError):
            cache.write_entry(PROBE_NAMESPACE, key, ".probe", json.dumps(entry).encode())
    return result


def _probe_compiler_now(path: str) -> ProbeResult:
    try:
        version = _run([path, "--version"]).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return ProbeResult(None, f"'{path}' cannot be run: {exc}")
    with tempfile.TemporaryDirectory(prefix="irc-cc-probe-") as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text(_PROBE_SOURCE)

        def works(flags: tuple[str, ...], name: str) -> tuple[bool, str]:
            out = Path(tmp) / name
            try:
                proc = _run([path, *flags, "-o", str(out), str(src), *LIBS])
            except (OSError, subprocess.SubprocessError) as exc:
                return False, str(exc)
            if proc.returncode != 0:
                lines = (proc.stderr or proc.stdout).strip().splitlines()
                return False, lines[-1] if lines else f"exit status {proc.returncode}"
            try:
                lib = load_library(out)
                lib.irc_probe.restype = ctypes.c_float
                lib.irc_probe.argtypes = [ctypes.c_float]
                if abs(lib.irc_probe(1.0) - 17.0) > 1e-3:
                    return False, "the probe library computed a wrong result"
            except OSError as exc:
                return False, f"the probe library does not load: {exc}"
            return True, ""

        flags = BASE_FLAGS
        ok, why = works(flags, "base.so")
        if not ok:
            return ProbeResult(None, f"'{path}' cannot build a shared library: {why}")
        for i, extra in enumerate(OPTIONAL_FLAGS):
            if "-fopenmp" in extra:
                prepare_openmp()  # the probe loads the OpenMP runtime
            if works((*flags, *extra), f"opt{i}.so")[0]:
                flags = (*flags, *extra)
    return ProbeResult(Toolchain(path, version, flags))


# ---- The build cache ----------------------------------------------------------------------------

NAMESPACE = "cpu"
"""The build cache's directory under the irc cache root (`irc.cache`)."""


def cache_dir() -> Path:
    """The irc cache root: `$IRC_CACHE_DIR`, else `$XDG_CACHE_HOME/irc`, else `~/.cache/irc`."""
    return cache.cache_root()


@dataclass(frozen=True)
class Library:
    """A built (or cached) shared library."""

    path: Path
    key: str
    from_cache: bool
    """True when the library came from the cache (no compiler run)."""
    compile_seconds: float = 0.0
    isa: str = ""
    """The name of the ISA profile it was built for (`isa.IsaProfile.name`)."""
    needs: tuple[Library, ...] = ()
    """Libraries it links against, to load before it (generated code: its kernel library's
    core and parts, `library.build_glue`)."""


_locks_guard = threading.Lock()
_key_locks: dict[str, threading.Lock] = {}


def _key_lock(key: str) -> threading.Lock:
    """The lock of one cache key in this process: builds of different keys (a model's kernel
    library parts) run side by side; the file lock (`cache.entry_lock`) covers processes."""
    with _locks_guard:
        return _key_locks.setdefault(key, threading.Lock())


def _cached(so_path: Path, meta_path: Path, key: str) -> bool:
    """Whether the cache entry of `key` (at `so_path`, recorded in `meta_path`) verifies."""
    return (so_path, meta_path) == cache.entry_paths(NAMESPACE, key, ".so") and (
        cache.verified_path(NAMESPACE, key, ".so") is not None
    )


TARGET_FLAGS = ("-march=native", "-mprefer-vector-width=512")
"""Probed flags an ISA profile replaces with its own (`isa.IsaProfile.build_flags`)."""


_OPENMP_LOOP = re.compile(r"^[ \t]*IRC_PARFOR\(", re.MULTILINE)


def uses_openmp(source: str) -> bool:
    """Whether `source` has an OpenMP loop: a line starting with `IRC_PARFOR(` (the
    prelude's `#define IRC_PARFOR` is not one)."""
    return _OPENMP_LOOP.search(source) is not None


def for_source(toolchain: Toolchain, source: str) -> Toolchain:
    """`toolchain` without `-fopenmp` when `source` has no OpenMP loop (`uses_openmp`)."""
    if not toolchain.openmp or uses_openmp(source):
        return toolchain
    flags = tuple(f for f in toolchain.flags if f != "-fopenmp")
    return dataclasses.replace(toolchain, flags=flags)


def flags_for(toolchain: Toolchain, profile: isa.IsaProfile) -> Toolchain:
    """`toolchain` with the flags of `profile`: `-march=native` where the profile is this
    host's best and the compiler targets this CPU, else the profile's own `-march` level;
    then its tile defines (and `IRC_PORTABLE` for generic)."""
    native = "-march=native" in toolchain.flags and profile == isa.best()
    base = tuple(f for f in toolchain.flags if f not in TARGET_FLAGS)
    return dataclasses.replace(toolchain, flags=(*base, *profile.build_flags(native)))


def build(source: str, toolchain: Toolchain, profile: isa.IsaProfile | None = None) -> Library:
    """The shared library of `source` for the ISA `profile` (default `isa.select()`:
    `$IRC_CPU_ISA`, `IRC_CPU_PORTABLE=1` for the portable C, else the host's best), from the
    cache or freshly compiled into it; the profile's flags are part of the cache key. A
    cached library is used only when it matches its recorded SHA-256, checked right before
    the caller loads it. `-fopenmp` only when the source has an OpenMP loop (`for_source`).
    Generated code that calls the kernel library (`library.is_glue`) is linked against the
    library's core and the parts it calls, built (or checked in the cache) first, the parts
    side by side while the code itself compiles (`library.plan`); they are the result's
    `needs`, to load before it. Raises `isa.IsaError` for a forced profile this host cannot
    run."""
    from irc.targets.cpu import library  # it imports the kernels' modules: only when needed

    profile = profile or isa.select()
    if not toolchain.link and library.is_glue(source):
        try:
            core, parts = library.dependencies(source)
        except ValueError as exc:
            raise CompilerError(str(exc)) from None
        return _build_glue(source, toolchain, profile, core, parts)
    return build_linked(source, toolchain, profile)


def _build_glue(
    source: str, chain: Toolchain, profile: isa.IsaProfile, core: str, parts: list[str]
) -> Library:
    """Glue `source` linked against the kernel library's `core` and `parts` (C texts): those
    built or checked in the cache first, the parts side by side (one compiler process each)
    while the glue itself compiles; the result's `needs` are the core and the parts."""
    core_path = entry_path(key_for(core, chain, profile))
    linked = dataclasses.replace(chain, link=(core_path,))
    paths = [entry_path(key_for(text, linked, profile)) for text in parts]
    glue_chain = dataclasses.replace(chain, link=(core_path, *paths))

    def dependencies() -> tuple[Library, ...]:
        built_core = build_linked(core, chain, profile)
        workers = max(1, min(len(parts), os.cpu_count() or 1))
        with ThreadPoolExecutor(workers, thread_name_prefix="irc-cc") as pool:
            built = list(pool.map(lambda text: build_linked(text, linked, profile), parts))
        return (built_core, *built)

    with ThreadPoolExecutor(1, thread_name_prefix="irc-cc") as pool:
        needed = pool.submit(dependencies)
        glue = build_linked(source, glue_chain, profile, before_link=needed.result)
        needs = needed.result()
    if [lib.path for lib in needs] != [core_path, *paths]:
        raise CompilerError("the kernel library was built under unexpected names")
    return dataclasses.replace(glue, needs=needs)


def key_for(source: str, toolchain: Toolchain, profile: isa.IsaProfile) -> str:
    """The cache key `build` gives `source` (linking `toolchain.link`) for `profile`."""
    return flags_for(for_source(toolchain, source), profile).cache_key(source)


def entry_path(key: str) -> Path:
    """Where the library of cache key `key` lives (or will)."""
    return cache.entry_paths(NAMESPACE, key, ".so")[0]


def build_linked(
    source: str,
    toolchain: Toolchain,
    profile: isa.IsaProfile,
    before_link: Callable[[], object] | None = None,
) -> Library:
    """`build` of `source` as it is (linking `toolchain.link`, nothing added). With
    `before_link`, a build compiles the object file first, then calls it (it makes the
    libraries to link exist), then links."""
    toolchain = flags_for(for_source(toolchain, source), profile)
    key = toolchain.cache_key(source)
    with _key_lock(key):
        if (found := cache.verified_path(NAMESPACE, key, ".so")) is not None:
            if before_link is not None:
                before_link()
            return Library(found, key, True, isa=profile.name)
        try:
            directory = cache.private_dir(NAMESPACE)
            with cache.entry_lock(NAMESPACE, key):
                # another process may have built it while we waited for the lock
                if (found := cache.verified_path(NAMESPACE, key, ".so")) is not None:
                    if before_link is not None:
                        before_link()
                    return Library(found, key, True, isa=profile.name)
                built = _compile_into_cache(source, toolchain, key, directory, before_link)
                return dataclasses.replace(built, isa=profile.name)
        except OSError as exc:
            raise CompilerError(f"cannot use the build cache: {exc}") from None


def _check(proc: subprocess.CompletedProcess[str], toolchain: Toolchain) -> None:
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-20:])
        raise CompilerError(
            f"{toolchain.compiler} failed on generated code (exit {proc.returncode}):\n{tail}"
        )


def _compile_into_cache(
    source: str,
    toolchain: Toolchain,
    key: str,
    directory: Path,
    before_link: Callable[[], object] | None = None,
) -> Library:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=".build-", dir=directory) as tmp:
        src = Path(tmp) / "kernels.c"
        out = Path(tmp) / "kernels.so"
        src.write_text(source)
        # the soname is the entry's file name: a library linking this one (`Toolchain.link`)
        # records that name, which the loader matches against the library already loaded
        soname = entry_path(key).name
        link = [str(path) for path in toolchain.link]
        if link:
            link.append("-Wl,-rpath,$ORIGIN")
        head = [toolchain.compiler, *toolchain.flags, f"-Wl,-soname,{soname}", "-o", str(out)]
        try:
            if before_link is None:
                _check(_run([*head, str(src), *link, *LIBS], timeout=COMPILE_TIMEOUT_S), toolchain)
            else:
                obj = Path(tmp) / "kernels.o"
                compile_flags = [f for f in toolchain.flags if f != "-shared"]
                cmd = [toolchain.compiler, *compile_flags, "-c", "-o", str(obj), str(src)]
                _check(_run(cmd, timeout=COMPILE_TIMEOUT_S), toolchain)
                before_link()
                _check(_run([*head, str(obj), *link, *LIBS], timeout=COMPILE_TIMEOUT_S), toolchain)
        except (OSError, subprocess.SubprocessError) as exc:
            raise CompilerError(f"cannot run {toolchain.compiler}: {exc}") from None
        seconds = time.perf_counter() - start
        info = {
            "compiler": toolchain.compiler,
            "version": toolchain.version.splitlines()[0] if toolchain.version else "",
            "flags": list(toolchain.flags),
        }
        so_path = cache.install_file(NAMESPACE, key, ".so", out, info)
    if cache.verified_path(NAMESPACE, key, ".so") != so_path:
        raise CompilerError(f"the library written to {so_path} does not match its hash")
    return Library(so_path, key, False, seconds)
