"""The compile cache: `irc.compile` of a model file it has compiled before, without the passes.

A compilation is a pure function of its inputs; when they are all the same, the compiled
artifact (`CompiledModel.save`'s text and weights) and what `compile` reports (summary,
lowering refusals, the partition report) are read back from the cache (namespace `compile`
of `irc.cache`, verified by hash) instead of importing the model and running the pipeline.
The key is the SHA-256 of everything the result depends on:

* the model file's bytes;
* the arguments: targets, entry, input shapes, bindings, `check`, `strict` and the pipeline
  options (a `report` path is not part of the result: the report is cached and written);
* irc's code: every source file of the `irc` packages (`.py`, kernel `.c` / `.h`), hashed
  once per process, and the versions of Python, xDSL, numpy, onnx and tflite;
* the environment: every `IRC_*` variable but the cache location and the progress delay,
  and each target's availability here (`Target.available()`, which also names a forced ISA).

Only targets whose lowering depends on nothing else take part (`cpu`, `reference`: the
OpenCL target's kernels depend on the device), and only models of static shapes (a model
with dynamic dimensions re-specialises, which needs the model). `IRC_COMPILE_CACHE=0`
turns the cache off.

**Size cap.** The namespace holds at most `IRC_COMPILE_CACHE_MAX_MB` MiB (default 1024; a
DenseNet entry is about 32 MB). After each store, entries are evicted least recently used
first (a hit marks its entry used) until the rest fits. Concurrent processes are safe: one
prune runs at a time (an advisory lock), an entry is evicted meta record first (so a reader
sees a miss, never half an entry), and an entry used or written in the last
`EVICTION_GRACE_SECONDS` is never evicted (a process that has just read it may still be
reading its weights, another may be writing it), so the cap can be exceeded for that long.

The C libraries of the CPU target keep their own cache and key (`toolchain.build`);
loading a cached artifact goes through it as any `irc.load` does.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from irc.cache import (
    CacheError,
    entry_lock,
    private_dir,
    read_verified,
    verified_path,
    write_entry,
)

NAMESPACE = "compile"
ENABLE_ENV = "IRC_COMPILE_CACHE"
"""`0` turns the compile cache off."""
MAX_MB_ENV = "IRC_COMPILE_CACHE_MAX_MB"
"""The size cap of the compile cache in MiB (see the module docstring)."""
DEFAULT_MAX_MB = 1024
EVICTION_GRACE_SECONDS = 600.0
"""An entry used or written this recently is never evicted."""
FORMAT = "irc-compile-cache 1"
"""Changes whenever what an entry holds changes."""

CACHED_TARGETS = frozenset({"cpu", "reference"})
"""Targets whose lowering depends only on the key's inputs."""

_UNKEYED_ENV = frozenset({"IRC_CACHE_DIR", "IRC_PROGRESS_DELAY", ENABLE_ENV, MAX_MB_ENV})
"""`IRC_*` variables that do not change a compilation."""
_SOURCE_SUFFIXES = (".py", ".c", ".h")
_VERSIONED = ("xdsl", "numpy", "onnx", "tflite")


@dataclass(frozen=True)
class CachedCompile:
    """What a cache entry holds: the artifact and what `compile` reported."""

    text: str
    """The artifact's text, naming `weights_name` for its weights (when it has a file)."""
    path: Path
    """Where the text lies in the cache (its weights file is next to it)."""
    weights: Path | None
    """The cached weights file (verified), None when every constant is inline."""
    weights_name: str | None
    summary: str
    refusals: list[dict[str, str]]
    report: Any
    """The partition report (`PartitionReport.to_json()`), None when none ran."""


def enabled() -> bool:
    return os.environ.get(ENABLE_ENV, "1").strip() != "0"


def _package_dirs() -> list[tuple[str, Path]]:
    import irc
    import irc.dialects
    import irc.passes
    import irc.targets

    dirs = [("irc", Path(irc.__file__).parent)]
    for name, package in (
        ("irc.dialects", irc.dialects),
        ("irc.passes", irc.passes),
        ("irc.targets", irc.targets),
    ):
        dirs += [(name, Path(p)) for p in package.__path__]
    return dirs


@functools.cache
def code_fingerprint() -> str:
    """SHA-256 of irc's source files (path and bytes) and of the versions it runs with."""
    digest = hashlib.sha256()
    for name, folder in _package_dirs():
        for path in sorted(folder.rglob("*")):
            if path.suffix not in _SOURCE_SUFFIXES or "__pycache__" in path.parts:
                continue
            if name == "irc" and path.relative_to(folder).parts[0] in ("dialects", "passes"):
                continue  # a checkout's irc/ holds no copies; an install maps them once
            digest.update(f"{name}/{path.relative_to(folder).as_posix()}\0".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    digest.update(sys.version.encode())
    for package in _VERSIONED:
        try:
            version = metadata.version(package)
        except metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"\0{package}={version}".encode())
    return digest.hexdigest()


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"not a key value: {type(value).__name__}")


def compile_key(
    model: object,
    targets: Sequence[str],
    *,
    entry: str,
    input_shapes: Mapping[str, Sequence[int]] | None,
    bind: Mapping[str, int | float] | None,
    check: bool,
    strict: bool,
    options: Mapping[str, Any],
) -> str | None:
    """The key of compiling the model file `model` with these arguments, or None when the
    compile cache does not apply (see the module docstring)."""
    if not enabled() or os.environ.get("IRC_PLUGINS"):
        return None
    if not isinstance(model, str | os.PathLike) or not set(targets) <= CACHED_TARGETS:
        return None
    from irc.targets import get_target

    built_in = all(type(get_target(t)).__module__.startswith("irc.targets.") for t in targets)
    if not built_in:
        return None
    try:
        with open(model, "rb") as stream:
            model_hash = hashlib.file_digest(stream, "sha256").hexdigest()
    except OSError:
        return None  # `compile` reports it
    try:
        arguments = _jsonable(
            {
                "targets": list(targets),
                "entry": entry,
                "input_shapes": {k: list(v) for k, v in (input_shapes or {}).items()},
                "bind": dict(bind or {}),
                "check": check,
                "strict": strict,
                "options": {k: v for k, v in options.items() if k != "report"},
            }
        )
    except TypeError:
        return None  # an option value that is not plain data: never guess its identity
    environment = {k: v for k, v in os.environ.items() if k.startswith("IRC_")}
    for name in _UNKEYED_ENV:
        environment.pop(name, None)
    availability = {}
    for name in targets:
        answer = get_target(name).available()
        availability[name] = [bool(answer), answer.reason]
    record = {
        "format": FORMAT,
        "code": code_fingerprint(),
        "model": model_hash,
        "arguments": arguments,
        "environment": dict(sorted(environment.items())),
        "availability": availability,
    }
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()


def _names(key: str) -> tuple[str, str, str]:
    """(meta, text, weights) entry keys of one compilation."""
    return f"{key}-m", f"{key}-t", f"{key}-w"


def weights_file_name(key: str) -> str:
    """The name the cached artifact's text gives its weights file (the entry's data)."""
    return f"{_names(key)[2]}.weights"


def load(key: str) -> CachedCompile | None:
    """The entry of `key` when all its parts verify, else None (a miss)."""
    meta_key, text_key, weights_key = _names(key)
    _mark_used(meta_key)
    try:
        meta_bytes = read_verified(NAMESPACE, meta_key, ".meta")
        if meta_bytes is None:
            return None
        meta = json.loads(meta_bytes)
        path = verified_path(NAMESPACE, text_key, ".mlir")
        if path is None or meta.get("format") != FORMAT:
            return None
        text = path.read_bytes()
        weights = None
        if meta["weights"]:
            weights = verified_path(NAMESPACE, weights_key, ".weights")
            if weights is None:
                return None
    except (OSError, ValueError, KeyError):
        return None
    return CachedCompile(
        text.decode(),
        path,
        weights,
        weights_file_name(key) if meta["weights"] else None,
        meta["summary"],
        meta["refusals"],
        meta["report"],
    )


def store(
    key: str,
    text: str,
    blob: bytes | None,
    *,
    summary: str,
    refusals: Sequence[Mapping[str, str]],
    report: Any,
) -> Path | None:
    """Write an entry (weights, text, then the meta entry that makes it a hit); returns the
    text's path, or None when the cache is not writable (compiling goes on without it)."""
    meta_key, text_key, weights_key = _names(key)
    meta = {
        "format": FORMAT,
        "weights": blob is not None,
        "summary": summary,
        "refusals": [dict(r) for r in refusals],
        "report": report,
    }
    try:
        if blob is not None:
            write_entry(NAMESPACE, weights_key, ".weights", blob)
        path = write_entry(NAMESPACE, text_key, ".mlir", text.encode())
        write_entry(NAMESPACE, meta_key, ".meta", json.dumps(meta).encode())
    except (OSError, CacheError):
        return None
    try:
        prune()
    except OSError:
        pass  # a cache that cannot be pruned now is pruned by the next store
    return path


def max_bytes() -> int:
    """The compile cache's size cap in bytes (`IRC_COMPILE_CACHE_MAX_MB`, default 1 GiB; a
    value that is not a non-negative number means the default)."""
    value = os.environ.get(MAX_MB_ENV, "").strip()
    try:
        megabytes = float(value) if value else DEFAULT_MAX_MB
    except ValueError:
        megabytes = DEFAULT_MAX_MB
    if not megabytes >= 0:  # negative or NaN
        megabytes = DEFAULT_MAX_MB
    return int(megabytes * 1024 * 1024)


def _mark_used(meta_key: str) -> None:
    """Mark an entry used now (its meta record's mtime), before reading it, so that a
    concurrent prune leaves it alone for `EVICTION_GRACE_SECONDS`."""
    try:
        path = private_dir(NAMESPACE) / f"{meta_key}.meta"
        os.utime(path)
    except OSError:
        pass  # absent: a miss


@dataclass
class _Entry:
    """One compilation's files in the cache directory (data, records, locks)."""

    files: list[Path]
    size: int = 0
    last_used: float = 0.0


def _entries(directory: Path) -> dict[str, _Entry]:
    """The entries in the directory by key (a file `<key>-<part><suffix>`)."""
    entries: dict[str, _Entry] = {}
    for path in directory.iterdir():
        key, dash, _ = path.name.partition("-")
        if not dash or not key:
            continue
        try:
            info = path.stat()
        except OSError:
            continue  # removed meanwhile
        entry = entries.setdefault(key, _Entry([]))
        entry.files.append(path)
        entry.size += info.st_size
        entry.last_used = max(entry.last_used, info.st_mtime)
    return entries


def prune(limit: int | None = None, *, now: float | None = None) -> list[str]:
    """Evict least recently used entries until the compile cache holds at most `limit`
    bytes (default `max_bytes()`), never one used within `EVICTION_GRACE_SECONDS` of
    `now`; returns the evicted keys. One process prunes at a time."""
    limit = max_bytes() if limit is None else limit
    now = time.time() if now is None else now
    directory = private_dir(NAMESPACE)
    evicted: list[str] = []
    with entry_lock(NAMESPACE, "prune"):
        entries = _entries(directory)
        total = sum(e.size for e in entries.values())
        for key, entry in sorted(entries.items(), key=lambda item: item[1].last_used):
            if total <= limit:
                break
            if now - entry.last_used < EVICTION_GRACE_SECONDS:
                continue
            # the meta entry first: from then on a reader sees a miss
            for path in sorted(entry.files, key=lambda p: not p.name.startswith(f"{key}-m")):
                path.unlink(missing_ok=True)
            total -= entry.size
            evicted.append(key)
    return evicted


def renamed_weights(text: str, old_name: str, new_name: str) -> str:
    """The artifact `text` with its weights section naming `new_name` instead of `old_name`
    (only the section header at the top of the text changes)."""
    end = text.index("#-}\n") + len("#-}\n")
    header = text[:end]
    old = f'file: "{old_name}"'
    if old not in header:
        raise ValueError("the cached artifact does not name its weights file")
    return header.replace(old, f'file: "{new_name}"', 1) + text[end:]
