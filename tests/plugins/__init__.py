"""Targets for tests, loaded as plugins (`IRC_PLUGINS=tests.plugins.testplugin:TestPluginTarget`).

`tests/` itself has no `__init__.py` (pytest puts it on `sys.path` so test modules import
their helpers directly); `tests` is found as a namespace package from the repository root,
and `irc.targets.load_plugin` looks in the working directory when a plugin module is not
importable otherwise. Always spell the module `tests.plugins.testplugin`: importing it as
`plugins.testplugin` too would create a second class of the same name, and registering it
would clash with the first.
"""
