// Test targets (Inputs/partition_targets.py): fakea takes add, sub, mul, relu, tanh, split,
// concat, reshape; fakeb takes add, relu, exp, sigmoid, softmax; both refuse quantized
// tensors ("quantized"); fakecost is fakea with a cost hook that never joins independent
// parts; fakeoff is never available. nn.log and nn.sqrt stay on the host everywhere.
// DEFINE: %{opt} = env PYTHONPATH=%S/Inputs IRC_PLUGINS=partition_targets:FakeA,partition_targets:FakeB,partition_targets:FakeCost,partition_targets:FakeOff irc-opt
// RUN: %{opt} %s --split-input-file -p 'partition{targets=fakea,fakeb}' | filecheck %s
// RUN: %{opt} %s --split-input-file -p 'partition{targets=fakeb,fakea}' | filecheck %s --check-prefix=BA
// RUN: %{opt} %s --split-input-file -p 'partition{targets=fakea,fakeb min-ops=1}' \
// RUN:   | filecheck %s --check-prefix=MIN1
// RUN: %{opt} %s --split-input-file -p 'partition{targets=fakea max-regions=1}' \
// RUN:   | filecheck %s --check-prefix=MAX1
// RUN: %{opt} %s --split-input-file -p 'partition{targets=fakea,fakeb deny-ops=softmax,"nn.exp"}' \
// RUN:   | filecheck %s --check-prefix=DENY
// RUN: %{opt} %s -p 'partition{targets=fakea,fakeb min-ops=1 place="stem:fakeb","#2:host"}' \
// RUN:   | filecheck %s --check-prefix=PLACE
// RUN: %{opt} %s --split-input-file -p 'partition{targets=fakecost}' | filecheck %s --check-prefix=COST
// RUN: %{opt} %s --split-input-file -p 'partition{targets=fakeoff,fakea}' -o %t.mlir 2>&1 \
// RUN:   | filecheck %s --check-prefix=REMARK
// RUN: %{opt} %s -p 'partition{targets=fakea,fakeb report="%t.json"}' -o %t.all.mlir
// RUN: filecheck %s --check-prefix=JSON < %t.json
// RUN: sed -n '/^\/\/ Strict mode/,$p' %s \
// RUN:   | %{opt} --split-input-file --verify-diagnostics -p 'partition{targets=fakea strict=true}'
// RUN: not %{opt} %s -p 'partition{targets=fakea,nope}' 2>&1 | filecheck %s --check-prefix=UNKNOWN

// UNKNOWN: error: unknown target 'nope' (known targets: {{.*}}fakea, fakeb

// The summary remark, one per function (here with an unavailable target first).
// REMARK: remark: @mul_then_add: fakeoff: unavailable (no fake device); fakea: 2 of 2 ops in 1 region; host: 0 ops
// REMARK: remark: @diamond_through_host: fakeoff: unavailable (no fake device); fakea: 4 of 5 ops in 2 regions; host: 1 op

// CHECK-LABEL: func.func @mul_then_add
// CHECK-SAME:    (%[[A:.*]]: tensor<2x2xf32>, %[[B:.*]]: tensor<2x2xf32>)
// CHECK:         %[[R:.*]] = delegate.region "fakea" (%[[A1:.*]] = %[[A]] : tensor<2x2xf32>, %[[B1:.*]] = %[[B]] : tensor<2x2xf32>) -> (tensor<2x2xf32>) {
// CHECK-NEXT:      %[[M:.*]] = nn.mul %[[A1]], %[[B1]]
// CHECK-NEXT:      %[[S:.*]] = nn.add %[[M]], %[[B1]]
// CHECK-NEXT:      delegate.yield %[[S]] : tensor<2x2xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R]]
// BA-LABEL:    func.func @mul_then_add
// BA:            delegate.region "fakea"
func.func @mul_then_add(%a: tensor<2x2xf32>, %b: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %m = nn.mul %a, %b : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  %s = nn.add %m, %b : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  func.return %s : tensor<2x2xf32>
}

// -----

// A -> B -> D and A -> C -> D with C on the host: {A, B, D} would wait for itself through C,
// so the diamond splits into {A, B} and {D, E}, with C between them. With min-ops=1, B joins
// D and E: %a leaves the first region for C anyway, so it costs one more input, while %b no
// longer crosses. (max-regions=1 keeps the first of two equal regions.)
// CHECK-LABEL: func.func @diamond_through_host
// CHECK:         %[[A:.*]], %[[B:.*]] = delegate.region "fakea"
// CHECK-NEXT:      %[[A1:.*]] = nn.add
// CHECK-NEXT:      %[[B1:.*]] = nn.relu %[[A1]]
// CHECK-NEXT:      delegate.yield %[[A1]], %[[B1]]
// CHECK:         %[[C:.*]] = nn.log %[[A]]
// CHECK-NEXT:    %[[E:.*]] = delegate.region "fakea" (%{{.*}} = %[[B]] : tensor<4xf32>, %{{.*}} = %[[C]] : tensor<4xf32>)
// CHECK-NEXT:      nn.add
// CHECK-NEXT:      nn.relu
// CHECK-NEXT:      delegate.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[E]]
// MIN1-LABEL:  func.func @diamond_through_host
// MIN1:          %[[A:.*]] = delegate.region "fakea"
// MIN1-NEXT:       nn.add
// MIN1-NEXT:       delegate.yield
// MIN1:          %[[C:.*]] = nn.log %[[A]]
// MIN1-NEXT:     delegate.region "fakea" (%{{.*}} = %[[A]] : tensor<4xf32>, %{{.*}} = %[[C]] : tensor<4xf32>)
// MIN1-NEXT:       nn.relu
// MIN1-NEXT:       nn.add
// MIN1-NEXT:       nn.relu
// MAX1-LABEL:  func.func @diamond_through_host
// MAX1:          delegate.region "fakea"
// MAX1-NEXT:       nn.add
// MAX1-NEXT:       nn.relu
// MAX1:          nn.log
// MAX1-NEXT:     nn.add
// MAX1-NEXT:     nn.relu
// MAX1-NEXT:     func.return
func.func @diamond_through_host(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %b = nn.relu %a : tensor<4xf32> -> tensor<4xf32>
  %c = nn.log %a : tensor<4xf32> -> tensor<4xf32>
  %d = nn.add %b, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %e = nn.relu %d : tensor<4xf32> -> tensor<4xf32>
  func.return %e : tensor<4xf32>
}

// -----

// Not merely contiguous runs: C does not depend on A or B, so A, B and D share one region,
// placed where D was, after C.
// CHECK-LABEL: func.func @across_independent_host_op
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>)
// CHECK:         %[[C:.*]] = nn.log %[[Y]]
// CHECK-NEXT:    %[[D:.*]] = delegate.region "fakea" (%[[X1:.*]] = %[[X]] : tensor<4xf32>, %[[C1:.*]] = %[[C]] : tensor<4xf32>)
// CHECK-NEXT:      %[[A:.*]] = nn.add %[[X1]], %[[X1]]
// CHECK-NEXT:      %[[B:.*]] = nn.relu %[[A]]
// CHECK-NEXT:      %[[D1:.*]] = nn.add %[[B]], %[[C1]]
// CHECK-NEXT:      delegate.yield %[[D1]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[D]]
func.func @across_independent_host_op(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %c = nn.log %y : tensor<4xf32> -> tensor<4xf32>
  %b = nn.relu %a : tensor<4xf32> -> tensor<4xf32>
  %d = nn.add %b, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %d : tensor<4xf32>
}

// -----

// The log uses %a, which the region computes: it moves down after the region, and the
// region yields %a as well as %c.
// CHECK-LABEL: func.func @host_user_moves_down
// CHECK:         %[[A:.*]], %[[C:.*]] = delegate.region "fakea"
// CHECK-NEXT:      %[[A1:.*]] = nn.add
// CHECK-NEXT:      %[[B1:.*]] = nn.relu
// CHECK-NEXT:      %[[C1:.*]] = nn.add %[[A1]], %[[B1]]
// CHECK-NEXT:      delegate.yield %[[A1]], %[[C1]] : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[H:.*]] = nn.log %[[A]]
// CHECK-NEXT:    func.return %[[H]], %[[C]]
func.func @host_user_moves_down(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %h = nn.log %a : tensor<4xf32> -> tensor<4xf32>
  %b = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
  %c = nn.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %h, %c : tensor<4xf32>, tensor<4xf32>
}

// -----

// Priority: add and relu go to the first target that takes them.
// CHECK-LABEL: func.func @priority
// CHECK:         %[[R:.*]] = delegate.region "fakea"
// CHECK-NEXT:      nn.add
// CHECK-NEXT:      nn.relu
// CHECK:         delegate.region "fakeb" (%{{.*}} = %[[R]] : tensor<4xf32>)
// CHECK-NEXT:      nn.softmax
// CHECK-NEXT:      nn.exp
// BA-LABEL:    func.func @priority
// BA:            delegate.region "fakeb"
// BA-NEXT:         nn.add
// BA-NEXT:         nn.relu
// BA-NEXT:         nn.softmax
// BA-NEXT:         nn.exp
// BA-NEXT:         delegate.yield
// BA-NEXT:       }
// BA-NEXT:       func.return
// DENY-LABEL:  func.func @priority
// DENY:          %[[R:.*]] = delegate.region "fakea"
// DENY:          %[[S:.*]] = nn.softmax %[[R]]
// DENY-NEXT:     nn.exp %[[S]]
func.func @priority(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %r = nn.relu %a : tensor<4xf32> -> tensor<4xf32>
  %s = nn.softmax %r axis = 0 : tensor<4xf32> -> tensor<4xf32>
  %e = nn.exp %s : tensor<4xf32> -> tensor<4xf32>
  func.return %e : tensor<4xf32>
}

// -----

// The add alone would be a region of 1 op for fakea, below min-ops: it falls back to fakeb,
// which then has all three. With min-ops=1 each target keeps its own.
// CHECK-LABEL: func.func @fallback_to_next_target
// CHECK:         delegate.region "fakeb"
// CHECK-NEXT:      nn.softmax
// CHECK-NEXT:      nn.add
// CHECK-NEXT:      nn.exp
// CHECK-NEXT:      delegate.yield
// MIN1-LABEL:  func.func @fallback_to_next_target
// MIN1:          delegate.region "fakeb"
// MIN1-NEXT:       nn.softmax
// MIN1:          delegate.region "fakea"
// MIN1-NEXT:       nn.add
// MIN1:          delegate.region "fakeb"
// MIN1-NEXT:       nn.exp
func.func @fallback_to_next_target(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = nn.softmax %x axis = 0 : tensor<4xf32> -> tensor<4xf32>
  %a = nn.add %s, %s : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %e = nn.exp %a : tensor<4xf32> -> tensor<4xf32>
  func.return %e : tensor<4xf32>
}

// -----

// max-regions=1 keeps the larger of the two regions.
// CHECK-LABEL: func.func @max_regions
// CHECK-COUNT-2: delegate.region "fakea"
// MAX1-LABEL:  func.func @max_regions
// MAX1:          nn.add
// MAX1-NEXT:     nn.relu
// MAX1-NEXT:     nn.log
// MAX1-NEXT:     delegate.region "fakea"
// MAX1-NEXT:       nn.add
// MAX1-NEXT:       nn.relu
// MAX1-NEXT:       nn.tanh
func.func @max_regions(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %b = nn.relu %a : tensor<4xf32> -> tensor<4xf32>
  %l = nn.log %b : tensor<4xf32> -> tensor<4xf32>
  %c = nn.add %l, %l : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %d = nn.relu %c : tensor<4xf32> -> tensor<4xf32>
  %e = nn.tanh %d : tensor<4xf32> -> tensor<4xf32>
  func.return %e : tensor<4xf32>
}

// -----

// place= pins by name location ("stem") and by index (#2, in every function).
// CHECK-LABEL: func.func @place
// CHECK:         delegate.region "fakea"
// CHECK-NEXT:      nn.add
// CHECK-NEXT:      nn.relu
// CHECK-NEXT:      nn.add
// PLACE-LABEL: func.func @place
// PLACE:         delegate.region "fakeb"
// PLACE-NEXT:      nn.add
// PLACE:         delegate.region "fakea"
// PLACE-NEXT:      nn.relu
// PLACE:         nn.add
// PLACE-NEXT:    func.return
func.func @place(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("stem")
  %b = nn.relu %a : tensor<4xf32> -> tensor<4xf32>
  %c = nn.add %b, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

// irc.target pins: the relu goes to fakeb although fakea comes first, the tanh stays.
// CHECK-LABEL: func.func @pinned_by_attribute
// CHECK:         %[[B:.*]] = delegate.region "fakea"
// CHECK-NEXT:      nn.add
// CHECK-NEXT:      nn.add
// CHECK:         %[[E:.*]] = delegate.region "fakeb" (%{{.*}} = %[[B]] : tensor<4xf32>)
// CHECK-NEXT:      nn.relu %{{.*}} {irc.target = "fakeb"}
// CHECK-NEXT:      nn.exp
// CHECK:         nn.tanh %[[E]] {irc.target = "host"}
func.func @pinned_by_attribute(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %b = nn.add %a, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %r = nn.relu %b {irc.target = "fakeb"} : tensor<4xf32> -> tensor<4xf32>
  %e = nn.exp %r : tensor<4xf32> -> tensor<4xf32>
  %t = nn.tanh %e {irc.target = "host"} : tensor<4xf32> -> tensor<4xf32>
  func.return %t : tensor<4xf32>
}

// -----

// Both targets refuse quantized tensors (code "quantized", see the JSON report): the float
// add and relu between dcast and qcast go to fakea, the quantized add stays.
// CHECK-LABEL: func.func @quantized
// CHECK:         %[[D:.*]] = quant.dcast
// CHECK-NEXT:    %[[R:.*]] = delegate.region "fakea" (%{{.*}} = %[[D]] : tensor<4xf32>)
// CHECK:         quant.qcast %[[R]]
// CHECK-NEXT:    nn.add %{{.*}} : tensor<4x!quant.uniform<i8:f32, 0.5>>
// JSON:        "name": "quantized",
// JSON:        "host": [
// JSON:            "op": "quant.dcast",
// JSON:            "op": "quant.qcast",
// JSON:            "index": 4,
// JSON-NEXT:       "op": "nn.add",
// JSON-NEXT:       "name": null,
// JSON-NEXT:       "reasons": {
// JSON-NEXT:         "fakea": {
// JSON-NEXT:           "code": "quantized",
// JSON-NEXT:           "reason": "fakea: quantized 'nn.add' is not supported"
// JSON-NEXT:         },
// JSON-NEXT:         "fakeb": {
// JSON-NEXT:           "code": "quantized",
func.func @quantized(%q: tensor<4x!quant.uniform<i8:f32, 0.5>>) -> (tensor<4x!quant.uniform<i8:f32, 0.5>>, tensor<4x!quant.uniform<i8:f32, 0.5>>) {
  %d = quant.dcast %q : tensor<4x!quant.uniform<i8:f32, 0.5>> to tensor<4xf32>
  %a = nn.add %d, %d : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %r = nn.relu %a : tensor<4xf32> -> tensor<4xf32>
  %o = quant.qcast %r : tensor<4xf32> to tensor<4x!quant.uniform<i8:f32, 0.5>>
  %qa = nn.add %q, %q : tensor<4x!quant.uniform<i8:f32, 0.5>>, tensor<4x!quant.uniform<i8:f32, 0.5>> -> tensor<4x!quant.uniform<i8:f32, 0.5>>
  func.return %o, %qa : tensor<4x!quant.uniform<i8:f32, 0.5>>, tensor<4x!quant.uniform<i8:f32, 0.5>>
}

// -----

// A region with two results, one of them the second result of a split.
// CHECK-LABEL: func.func @multiple_outputs
// CHECK:         %[[T:.*]], %[[U:.*]] = delegate.region "fakea" (%{{.*}}) -> (tensor<2xf32>, tensor<2xf32>)
// CHECK-NEXT:      nn.add
// CHECK-NEXT:      %[[S1:.*]], %[[T1:.*]] = nn.split
// CHECK-NEXT:      %[[U1:.*]] = nn.tanh %[[S1]]
// CHECK-NEXT:      delegate.yield %[[T1]], %[[U1]]
// CHECK:         %[[V:.*]] = nn.log %[[T]]
// CHECK-NEXT:    func.return %[[U]], %[[V]]
// JSON:        "name": "multiple_outputs",
// JSON:            "outputs": [
// JSON-NEXT:         {
// JSON-NEXT:           "op": 1,
// JSON-NEXT:           "result": 1,
func.func @multiple_outputs(%x: tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %a = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %s, %t = nn.split %a axis = 0 sizes = [2, 2] : tensor<4xf32> -> tensor<2xf32>, tensor<2xf32>
  %u = nn.tanh %s : tensor<2xf32> -> tensor<2xf32>
  %v = nn.log %t : tensor<2xf32> -> tensor<2xf32>
  func.return %u, %v : tensor<2xf32>, tensor<2xf32>
}

// -----

// Constants are never captured: %only moves into the region, %shared is cloned into each
// region that uses it and stays for the host's add and the return.
// CHECK-LABEL: func.func @captured_constants
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK:         %[[SHARED:.*]] = nn.constant dense<2.000000e+00>
// CHECK-NEXT:    delegate.region "fakea" (%{{.*}} = %[[X]] : tensor<4xf32>) -> (tensor<4xf32>) {
// CHECK-DAG:       %[[ONLY:.*]] = nn.constant dense<1.000000e+00>
// CHECK-DAG:       %[[COPY:.*]] = nn.constant dense<2.000000e+00>
// CHECK:           %[[A:.*]] = nn.add %{{.*}}, %[[ONLY]]
// CHECK-NEXT:      nn.mul %[[A]], %[[COPY]]
// CHECK:         nn.add %{{.*}}, %[[SHARED]]
// MIN1-LABEL:  func.func @captured_constants
// MIN1:          %[[SHARED:.*]] = nn.constant dense<2.000000e+00>
// MIN1:          delegate.region "fakea"
// MIN1:            nn.constant dense<2.000000e+00>
// MIN1:          delegate.region "fakea"
// MIN1-NEXT:       %[[COPY:.*]] = nn.constant dense<2.000000e+00>
// MIN1-NEXT:       nn.add %{{.*}}, %[[COPY]]
// MIN1:          func.return %{{.*}}, %[[SHARED]]
// JSON:        "name": "captured_constants",
// JSON:        "host": [
// JSON:        "constants": [
// JSON-NEXT:     {
// JSON-NEXT:       "index": 0,
// JSON-NEXT:       "op": "nn.constant",
// JSON-NEXT:       "name": null,
// JSON-NEXT:       "regions": [
// JSON-NEXT:         0
// JSON-NEXT:       ],
// JSON-NEXT:       "host": false
// JSON-NEXT:     },
// JSON-NEXT:     {
// JSON-NEXT:       "index": 1,
// JSON-NEXT:       "op": "nn.constant",
// JSON-NEXT:       "name": null,
// JSON-NEXT:       "regions": [
// JSON-NEXT:         0
// JSON-NEXT:       ],
// JSON-NEXT:       "host": true
func.func @captured_constants(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %only = nn.constant dense<1.0> : tensor<4xf32>
  %shared = nn.constant dense<2.0> : tensor<4xf32>
  %a = nn.add %x, %only : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %b = nn.mul %a, %shared : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %h = nn.log %b : tensor<4xf32> -> tensor<4xf32>
  %c = nn.add %h, %shared : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %c, %shared : tensor<4xf32>, tensor<4xf32>
}

// -----

// Independent parts of one target share a region (one dispatch), unless the cost hook
// says otherwise. With fakeb first, the relus run on fakeb and the tanhs on fakea.
// CHECK-LABEL: func.func @independent_chains
// CHECK:         delegate.region "fakea"
// CHECK-NEXT:      nn.relu
// CHECK-NEXT:      nn.tanh
// CHECK-NEXT:      nn.relu
// CHECK-NEXT:      nn.tanh
// CHECK-NEXT:      delegate.yield
// BA-LABEL:    func.func @independent_chains
// BA:            delegate.region "fakeb"
// BA-NEXT:         nn.relu
// BA-NEXT:         nn.relu
// BA:            delegate.region "fakea"
// BA-NEXT:         nn.tanh
// BA-NEXT:         nn.tanh
// COST-LABEL:  func.func @independent_chains
// COST:          delegate.region "fakecost"
// COST-NEXT:       nn.relu
// COST-NEXT:       nn.tanh
// COST-NEXT:       delegate.yield
// COST:          delegate.region "fakecost"
// COST-NEXT:       nn.relu
// COST-NEXT:       nn.tanh
// COST-NEXT:       delegate.yield
func.func @independent_chains(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
  %b = nn.tanh %a : tensor<4xf32> -> tensor<4xf32>
  %c = nn.relu %y : tensor<4xf32> -> tensor<4xf32>
  %d = nn.tanh %c : tensor<4xf32> -> tensor<4xf32>
  func.return %b, %d : tensor<4xf32>, tensor<4xf32>
}

// -----

// Nothing any target takes: the function is unchanged.
// CHECK-LABEL: func.func @nothing_to_delegate
// CHECK-NEXT:    nn.log
// CHECK-NEXT:    nn.sqrt
// CHECK-NEXT:    func.return
func.func @nothing_to_delegate(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.log %x : tensor<4xf32> -> tensor<4xf32>
  %b = nn.sqrt %a : tensor<4xf32> -> tensor<4xf32>
  func.return %b : tensor<4xf32>
}

// -----

// Strict mode cases: the --verify-diagnostics RUN line reads the file from here on, with
// partition{targets=fakea strict=true}.

// Every op left on the host is listed: one error at the first, a note at each.
func.func @strict_fails(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %b = nn.relu %a : tensor<4xf32> -> tensor<4xf32>
  // expected-error @+2 {{strict=true: 2 ops would stay on the host}}
  // expected-note @+1 {{'nn.log' stays on the host: fakea (op): fakea: 'nn.log' is not supported}}
  %l = nn.log %b : tensor<4xf32> -> tensor<4xf32>
  // expected-note @+1 {{'nn.exp' stays on the host: fakea (op): fakea: 'nn.exp' is not supported}}
  %e = nn.exp %l : tensor<4xf32> -> tensor<4xf32>
  func.return %e : tensor<4xf32>
}

// -----

// expected-remark @+1 {{@strict_passes: fakea: 2 of 2 ops in 1 region; host: 0 ops}}
func.func @strict_passes(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %b = nn.relu %a : tensor<4xf32> -> tensor<4xf32>
  func.return %b : tensor<4xf32>
}
