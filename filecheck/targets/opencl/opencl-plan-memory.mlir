// RUN: irc-opt %s --split-input-file -p opencl-plan-memory | filecheck %s
// RUN: irc-opt %s --split-input-file -p opencl-plan-memory,opencl-plan-memory | filecheck %s

// Four planned buffers, one per intermediate tensor (what opencl-bufferize makes): b0 and
// b1 are dead when b2 and b3 are written, so the plan keeps two pool buffers; b2 (64 bytes)
// takes b0's, b3 (256 bytes) grows b1's. No launch reads and writes one pool buffer.
// peak_bytes drops from 64+128+64+256 = 512 to 64+256 = 320. Planning twice changes nothing.
// CHECK-LABEL: func.func @entry
// CHECK:         "ocl.execute"(%{{.*}}) <{program = @kernels, peak_bytes = 320 : i64}> ({
// CHECK-NEXT:      "ocl.alloc"() <{id = 0 : i64, bytes = 64 : i64}> : () -> ()
// CHECK-NEXT:      "ocl.alloc"() <{id = 1 : i64, bytes = 256 : i64}> : () -> ()
// CHECK-NEXT:      "ocl.launch"() <{kernel = "k0", args = ["in0", "b0"], global = [16 : i64], local = []}>
// CHECK-NEXT:      "ocl.launch"() <{kernel = "k1", args = ["b0", "b1"], global = [32 : i64], local = []}>
// CHECK-NEXT:      "ocl.launch"() <{kernel = "k0", args = ["b1", "b0"], global = [16 : i64], local = []}>
// CHECK-NEXT:      "ocl.launch"() <{kernel = "k2", args = ["b0", "b1"], global = [64 : i64], local = []}>
// CHECK-NEXT:      "ocl.launch"() <{kernel = "k0", args = ["b1", "out0"], global = [16 : i64], local = []}>
// CHECK-NEXT:    })
delegate.executable private @plan target("opencl") {
  "ocl.program"() <{sym_name = "kernels", source = "/* hand-written */"}> ({
    "ocl.upload"() <{index = 0 : i64, value = dense<1.0> : tensor<4xf32>}> : () -> ()
  }) : () -> ()
  func.func @entry(%x: tensor<16xf32>) -> tensor<16xf32> {
    %0 = "ocl.execute"(%x) <{program = @kernels, peak_bytes = 512 : i64}> ({
      "ocl.alloc"() <{id = 0 : i64, bytes = 64 : i64}> : () -> ()
      "ocl.alloc"() <{id = 1 : i64, bytes = 128 : i64}> : () -> ()
      "ocl.alloc"() <{id = 2 : i64, bytes = 64 : i64}> : () -> ()
      "ocl.alloc"() <{id = 3 : i64, bytes = 256 : i64}> : () -> ()
      "ocl.launch"() <{kernel = "k0", args = ["in0", "b0"], global = [16 : i64], local = []}> : () -> ()
      "ocl.launch"() <{kernel = "k1", args = ["b0", "b1"], global = [32 : i64], local = []}> : () -> ()
      "ocl.launch"() <{kernel = "k0", args = ["b1", "b2"], global = [16 : i64], local = []}> : () -> ()
      "ocl.launch"() <{kernel = "k2", args = ["b2", "b3"], global = [64 : i64], local = []}> : () -> ()
      "ocl.launch"() <{kernel = "k0", args = ["b3", "out0"], global = [16 : i64], local = []}> : () -> ()
    }) : (tensor<16xf32>) -> tensor<16xf32>
    func.return %0 : tensor<16xf32>
  }
}

// -----

// A buffer stays live up to its last reader: the residual b0 is read by the last launch,
// and b1 is read by the launch that writes b2, so the three buffers overlap: no reuse.
// CHECK-LABEL: func.func @entry
// CHECK:         "ocl.execute"(%{{.*}}) <{program = @kernels, peak_bytes = 192 : i64}> ({
// CHECK-COUNT-3: "ocl.alloc"
// CHECK-NEXT:      "ocl.launch"() <{kernel = "k0", args = ["in0", "b0"]
// CHECK-NEXT:      "ocl.launch"() <{kernel = "k0", args = ["in0", "b1"]
// CHECK-NEXT:      "ocl.launch"() <{kernel = "k0", args = ["b1", "b2"]
// CHECK-NEXT:      "ocl.launch"() <{kernel = "k1", args = ["b2", "b0", "out0"]
delegate.executable private @live target("opencl") {
  "ocl.program"() <{sym_name = "kernels", source = "/* hand-written */"}> ({
    "ocl.upload"() <{index = 0 : i64, value = dense<1.0> : tensor<4xf32>}> : () -> ()
  }) : () -> ()
  func.func @entry(%x: tensor<16xf32>) -> tensor<16xf32> {
    %0 = "ocl.execute"(%x) <{program = @kernels, peak_bytes = 192 : i64}> ({
      "ocl.alloc"() <{id = 0 : i64, bytes = 64 : i64}> : () -> ()
      "ocl.alloc"() <{id = 1 : i64, bytes = 64 : i64}> : () -> ()
      "ocl.alloc"() <{id = 2 : i64, bytes = 64 : i64}> : () -> ()
      "ocl.launch"() <{kernel = "k0", args = ["in0", "b0"], global = [16 : i64], local = []}> : () -> ()
      "ocl.launch"() <{kernel = "k0", args = ["in0", "b1"], global = [16 : i64], local = []}> : () -> ()
      "ocl.launch"() <{kernel = "k0", args = ["b1", "b2"], global = [16 : i64], local = []}> : () -> ()
      "ocl.launch"() <{kernel = "k1", args = ["b2", "b0", "out0"], global = [16 : i64], local = []}> : () -> ()
    }) : (tensor<16xf32>) -> tensor<16xf32>
    func.return %0 : tensor<16xf32>
  }
}
