"""Compilation targets: the Target protocol and registry (`base`), and the built-in targets.

`irc.targets.register(MyTarget)` adds an in-process plugin; installed packages add targets
through the `irc.targets` entry-point group; `IRC_PLUGINS=module:attr` loads one by path.
"""

from irc.targets.base import (
    Availability,
    DeviceValue,
    LoadedExecutable,
    Support,
    Target,
    TargetError,
    TargetRuntime,
    get_target,
    load_plugin,
    register,
    registered_targets,
)

__all__ = [
    "Availability",
    "DeviceValue",
    "LoadedExecutable",
    "Support",
    "Target",
    "TargetError",
    "TargetRuntime",
    "get_target",
    "load_plugin",
    "register",
    "registered_targets",
]
