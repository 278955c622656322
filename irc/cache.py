"""irc's on-disk caches: one private directory tree, atomic entries verified by hash.

Every cache irc keeps on disk (CPU shared libraries and compiler probes, OpenCL binaries, OpenCL
work-group choices) goes through this module:

* **Where.** `cache_root()` is `$IRC_CACHE_DIR`, else `$XDG_CACHE_HOME/irc`, else
  `~/.cache/irc`; each cache is a *namespace* directory under it (`cpu`, `opencl`, ...).
* **Private.** `private_dir(namespace)` creates every missing level with mode 0700 and checks
  the root and the namespace directory before each use: a directory owned by another user,
  or a shared one like /tmp, is refused (`CacheError`), and one of ours that others can read
  or write is repaired (`chmod 0700`).
* **Atomic.** An entry is a data file `<key><suffix>` plus a record `<key>.json` holding the
  key and the SHA-256 and size of the data. Both are written to a temporary name in the same
  directory and renamed into place (`install_file`, `write_entry`), so a reader never sees
  half a file; writers of one key take an advisory lock (`entry_lock`) so that two processes
  building the same entry do not interleave their data and records.
* **Verified.** `verified_path` / `read_verified` return an entry only when its record
  belongs to the key and the data has the recorded size and hash; a missing, truncated or
  tampered entry is a miss, and the caller rebuilds it (and overwrites the bad entry).

Entries hold code (shared libraries, device binaries), which is why the checks matter: a
library is hashed immediately before it is loaded, and nothing is loaded from a directory
that another user controls.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from irc.fileio import write_atomically

__all__ = [
    "CACHE_ENV",
    "CacheError",
    "cache_root",
    "entry_lock",
    "entry_paths",
    "install_file",
    "private_dir",
    "read_verified",
    "verified_path",
    "write_entry",
]

CACHE_ENV = "IRC_CACHE_DIR"
"""Environment variable naming the cache root."""

PRIVATE_MODE = 0o700
RECORD_SUFFIX = ".json"

try:  # POSIX advisory locks; elsewhere writers rely on atomic renames alone
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None


class CacheError(OSError):
    """A cache directory irc must not use (owned by another user, not a directory)."""


def cache_root() -> Path:
    """`$IRC_CACHE_DIR`, else `$XDG_CACHE_HOME/irc`, else `~/.cache/irc`."""
    if value := os.environ.get(CACHE_ENV, "").strip():
        return Path(value)
    if xdg := os.environ.get("XDG_CACHE_HOME", "").strip():
        return Path(xdg) / "irc"
    return Path.home() / ".cache" / "irc"


def _make_private(path: Path) -> None:
    """Create `path` (and missing parents) with mode 0700 on every level created."""
    missing: list[Path] = []
    level = path
    while not level.exists():
        missing.append(level)
        if level.parent == level:
            break
        level = level.parent
    for level in reversed(missing):
        try:
            level.mkdir(mode=PRIVATE_MODE)
        except FileExistsError:
            pass  # created by a concurrent process: checked below like any existing level


def _check_private(path: Path) -> None:
    """Refuse `path` unless it is a directory of this user and not a shared one (sticky and
    writable by others, as /tmp); make it mode 0700."""
    info = os.stat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise CacheError(f"irc cache: {path} is not a directory")
    getuid = getattr(os, "getuid", None)
    if getuid is not None and info.st_uid != getuid():
        raise CacheError(
            f"irc cache: {path} belongs to user id {info.st_uid}, not to you "
            f"(user id {getuid()}); set {CACHE_ENV} to a directory of your own"
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode & stat.S_ISVTX and mode & 0o022:
        raise CacheError(
            f"irc cache: {path} is a shared directory (sticky, writable by others); "
            f"set {CACHE_ENV} to a directory of your own"
        )
    if mode & 0o077:
        os.chmod(path, PRIVATE_MODE)


def private_dir(namespace: str) -> Path:
    """The directory of one cache (`cache_root() / namespace`), created and checked: every
    level irc creates is mode 0700, the root and the namespace directory must belong to
    this user (`CacheError` otherwise) and are made mode 0700 when they are not."""
    if not namespace or "/" in namespace or namespace.startswith("."):
        raise ValueError(f"irc cache: bad namespace {namespace!r}")
    root = cache_root()
    directory = root / namespace
    _make_private(directory)
    _check_private(root)
    _check_private(directory)
    return directory


def entry_paths(namespace: str, key: str, suffix: str) -> tuple[Path, Path]:
    """The data file and the record of an entry (the directory is created and checked)."""
    if not key or not all(c.isalnum() or c in "-_" for c in key):
        raise ValueError(f"irc cache: bad key {key!r}")
    directory = private_dir(namespace)
    return directory / f"{key}{suffix}", directory / f"{key}{RECORD_SUFFIX}"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _matches(data: bytes, record_path: Path, key: str) -> bool:
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError):
        return False
    return (
        isinstance(record, dict)
        and record.get("key") == key
        and record.get("size") == len(data)
        and record.get("sha256") == _sha256(data)
    )


def _verified(namespace: str, key: str, suffix: str) -> tuple[Path, bytes] | None:
    try:
        data_path, record_path = entry_paths(namespace, key, suffix)
        data = data_path.read_bytes()
    except OSError:
        return None
    return (data_path, data) if _matches(data, record_path, key) else None


def read_verified(namespace: str, key: str, suffix: str) -> bytes | None:
    """The data of an entry whose record matches it (key, size, SHA-256), else None (a
    miss: absent, truncated, tampered, or the cache directory is unusable)."""
    found = _verified(namespace, key, suffix)
    return None if found is None else found[1]


def verified_path(namespace: str, key: str, suffix: str) -> Path | None:
    """The data file of an entry that verifies (see `read_verified`), to load right away
    (a shared library is hashed here, immediately before it is loaded), else None."""
    found = _verified(namespace, key, suffix)
    return None if found is None else found[0]


def _write_record(record_path: Path, key: str, data: bytes, info: Mapping[str, Any] | None) -> None:
    """The entry's record (its `info`, key, size and sha256 of `data`), written atomically
    with the cache's private mode (0600)."""
    record = {**dict(info or {}), "key": key, "size": len(data), "sha256": _sha256(data)}
    write_atomically(record_path, json.dumps(record, indent=1).encode(), private=True)


def install_file(
    namespace: str, key: str, suffix: str, source: Path, info: Mapping[str, Any] | None = None
) -> Path:
    """Move `source` (a file in the namespace directory, e.g. a compiler's output in a
    temporary subdirectory) into place as the entry's data, then write its record; returns
    the data path. Call it holding `entry_lock(namespace, key)`."""
    data_path, record_path = entry_paths(namespace, key, suffix)
    data = source.read_bytes()
    os.chmod(source, 0o600)
    os.replace(source, data_path)
    _write_record(record_path, key, data, info)
    return data_path


def write_entry(
    namespace: str, key: str, suffix: str, data: bytes, info: Mapping[str, Any] | None = None
) -> Path:
    """Write an entry (data, then record, each atomically) under its lock; returns the
    data path. Raises `OSError` (`CacheError` included) when the cache is not writable."""
    data_path, record_path = entry_paths(namespace, key, suffix)
    with entry_lock(namespace, key):
        write_atomically(data_path, data, private=True)
        _write_record(record_path, key, data, info)
    return data_path


@contextlib.contextmanager
def entry_lock(namespace: str, key: str) -> Iterator[None]:
    """Hold the advisory lock of one entry (`<key>.lock`, flock) while building or writing
    it, so that concurrent writers (threads or processes) take turns."""
    lock_path, _ = entry_paths(namespace, key, ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
