"""The OpenCL target: generated OpenCL C kernels run through pyopencl (docs/design.md §4)."""
