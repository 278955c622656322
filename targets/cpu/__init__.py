"""The CPU target: C99 (+ OpenMP) generated per executable, built by the system C compiler.

* `target`: `CpuTarget` (availability, `supports`, `lower-cpu`, the runtime);
* `support`: the capability check shared by `supports()` and the code generator;
* `codegen`, `csrc`, `packing`, `resize_tables`: C generation (buffer plan, kernel library,
  weight packing);
* `lower`: the `lower-cpu` pass; `toolchain`: compiler probing and the build cache;
* `runtime`: loading libraries with ctypes and executing entries.
"""
