// RUN: irc-opt %s --split-input-file -p dce | filecheck %s

// A chain of unused pure ops goes in one run; the unused argument stays.
// CHECK-LABEL: func.func @dead_chain
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[A:.*]] = nn.relu %[[X]]
// CHECK-NEXT:    func.return %[[A]] : tensor<4xf32>
func.func @dead_chain(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
  %b = nn.exp %a : tensor<4xf32> -> tensor<4xf32>
  %c = nn.add %b, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %w = nn.constant dense<[1.0, -2.0, 3.0, -4.0]> : tensor<4xf32>
  func.return %a : tensor<4xf32>
}

// -----

// Unused results of a multi-result op keep it alive while one result is used.
// CHECK-LABEL: func.func @partly_used_split
// CHECK-NEXT:    %[[A:.*]], %{{.*}} = nn.split
// CHECK-NEXT:    func.return %[[A]]
func.func @partly_used_split(%x: tensor<1x8xf32>) -> tensor<1x2xf32> {
  %a, %b = nn.split %x axis = 1 sizes = [2, 6] : tensor<1x8xf32> -> tensor<1x2xf32>, tensor<1x6xf32>
  func.return %a : tensor<1x2xf32>
}

// -----

// Must not fire on ops with effects: a delegate.region (no memory-effect trait) stays even
// with its result unused, while the dead op inside it goes; so do an unused func.call and
// the private function it calls.
// CHECK-LABEL: func.func private @helper
// CHECK-LABEL: func.func @effects_stay
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %{{.*}} = delegate.region "cpu" (%[[A:.*]] = %[[X]] : tensor<4xf32>) -> (tensor<4xf32>) {
// CHECK-NEXT:      %[[S:.*]] = nn.relu %[[A]]
// CHECK-NEXT:      delegate.yield %[[S]] : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %{{.*}} = func.call @helper(%[[X]])
// CHECK-NEXT:    func.return %[[X]]
func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
func.func @effects_stay(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = delegate.region "cpu" (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    %s = nn.relu %a : tensor<4xf32> -> tensor<4xf32>
    %dead = nn.neg %a : tensor<4xf32> -> tensor<4xf32>
    delegate.yield %s : tensor<4xf32>
  }
  %c = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %x : tensor<4xf32>
}
