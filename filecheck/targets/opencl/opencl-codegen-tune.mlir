// RUN: env IRC_OPENCL_DEVICE=nope:nope IRC_CACHE_DIR=%t irc-opt %s --verify-diagnostics -p 'opencl-codegen{tune=true}'

// tune=true measures on the device: without one, an error at the executable.
// expected-error @+1 {{opencl-codegen: tune=true needs the OpenCL device:}}
delegate.executable private @gen target("opencl") {
  "ocl.program"() <{sym_name = "kernels", source = ""}> ({
    "ocl.kernel"() <{sym_name = "k0", body = "__kernel void KERNEL_NAME(__global const float* restrict x0, __global float* restrict y) {\0A    const int gid = get_global_id(0);\0A    y[gid] = x0[gid];\0A}\0A", description = "copy float"}> : () -> ()
  }) : () -> ()
  func.func @entry(%x: tensor<128xf32>) -> tensor<128xf32> {
    %0 = "ocl.execute"(%x) <{program = @kernels, peak_bytes = 0 : i64}> ({
      "ocl.launch"() <{kernel = "k0", args = ["in0", "out0"], global = [128 : i64], local = []}> : () -> ()
    }) : (tensor<128xf32>) -> tensor<128xf32>
    func.return %0 : tensor<128xf32>
  }
}
