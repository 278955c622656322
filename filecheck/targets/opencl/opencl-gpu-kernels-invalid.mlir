// RUN: irc-opt %s --verify-diagnostics -p 'lower-opencl{kernels=tpu}'

// The kernel style is cpu or gpu; anything else is refused at the executable.
// expected-error @+1 {{lower-opencl: kernels must be cpu or gpu, got 'tpu'}}
delegate.executable private @bad_style target("opencl") {
  func.func @entry(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
}
