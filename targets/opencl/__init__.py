"""The OpenCL target: generated OpenCL C kernels run through pyopencl (DESIGN.md §4)."""
