// RUN: irc-opt %s -p opencl-bufferize | filecheck %s
// RUN: irc-opt %s -p opencl-bufferize,opencl-plan-memory | filecheck %s --check-prefix=PLAN

// An op with several results: opencl-bufferize gives each piece of the split its own
// planned buffer, all written by the split's one launch (`writes = 2`: the last two
// arguments); opencl-plan-memory keeps the pieces apart from each other and from the
// split's input (all live in that launch) and reuses the input's buffer afterwards.

// CHECK:      "ocl.launch"() <{kernel = "k0", args = ["in0", "b0"], global = [12 : i64], local = []}>
// CHECK-NEXT: "ocl.launch"() <{kernel = "k1", args = ["b0", "b1", "b2"], global = [12 : i64], local = [], writes = 2 : i64}>
// CHECK-NEXT: "ocl.launch"() <{kernel = "k2", args = ["b1", "b2", "b3"], global = [6 : i64], local = []}>

// PLAN:      "ocl.execute"(%x) <{program = @kernels, peak_bytes = 96 : i64}>
// PLAN:      "ocl.launch"() <{kernel = "k1", args = ["b0", "b1", "b2"], global = [12 : i64], local = [], writes = 2 : i64}>
// PLAN-NEXT: "ocl.launch"() <{kernel = "k2", args = ["b1", "b2", "b0"], global = [6 : i64], local = []}>
delegate.executable private @split_opencl_0 target("opencl") {
  func.func @entry(%x: tensor<2x6xf32>) -> tensor<2x3xf32> {
    %r = nn.relu %x : tensor<2x6xf32> -> tensor<2x6xf32>
    %a, %b = nn.split %r axis = 1 sizes = [3, 3] : tensor<2x6xf32> -> tensor<2x3xf32>, tensor<2x3xf32>
    %s = nn.add %a, %b : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    %t = nn.tanh %s : tensor<2x3xf32> -> tensor<2x3xf32>
    %u = nn.sigmoid %t : tensor<2x3xf32> -> tensor<2x3xf32>
    func.return %u : tensor<2x3xf32>
  }
}
