// RUN: irc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// `writes` on ocl.launch: how many trailing arguments the kernel writes (absent: one). A
// split writes all its pieces in one launch; a launch may not write an entry argument or an
// uploaded constant, nor claim more buffers than it names.

// CHECK-LABEL: func.func @split_entry
// CHECK:         "ocl.launch"() <{kernel = "k0", args = ["in0", "out0", "b0"], global = [4 : i64], local = [], writes = 2 : i64}>
// CHECK-NEXT:    "ocl.launch"() <{kernel = "k1", args = ["b0", "out1"], global = [3 : i64], local = []}>
func.func @split_entry(%x: tensor<4xf32>) -> (tensor<1xf32>, tensor<3xf32>) {
  %a, %b = "ocl.execute"(%x) <{program = @kernels, peak_bytes = 12 : i64}> ({
    "ocl.alloc"() <{id = 0 : i64, bytes = 12 : i64}> : () -> ()
    "ocl.launch"() <{kernel = "k0", args = ["in0", "out0", "b0"], global = [4 : i64], local = [], writes = 2 : i64}> : () -> ()
    "ocl.launch"() <{kernel = "k1", args = ["b0", "out1"], global = [3 : i64], local = []}> : () -> ()
  }) : (tensor<4xf32>) -> (tensor<1xf32>, tensor<3xf32>)
  func.return %a, %b : tensor<1xf32>, tensor<3xf32>
}

// -----

func.func @writes_an_input(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{launch of 'k0' writes 'in0' (read-only: an entry argument or an uploaded constant)}}
  %y = "ocl.execute"(%x) <{program = @kernels, peak_bytes = 0 : i64}> ({
    "ocl.launch"() <{kernel = "k0", args = ["in0", "out0"], global = [4 : i64], local = [], writes = 2 : i64}> : () -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @writes_too_many(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = "ocl.execute"(%x) <{program = @kernels, peak_bytes = 0 : i64}> ({
    // expected-error @+1 {{writes 3: a launch writes between 1 and its 2 arguments}}
    "ocl.launch"() <{kernel = "k0", args = ["in0", "out0"], global = [4 : i64], local = [], writes = 3 : i64}> : () -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @writes_nothing(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = "ocl.execute"(%x) <{program = @kernels, peak_bytes = 0 : i64}> ({
    // expected-error @+1 {{writes 0: a launch writes between 1 and its 2 arguments}}
    "ocl.launch"() <{kernel = "k0", args = ["in0", "out0"], global = [4 : i64], local = [], writes = 0 : i64}> : () -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
