"""What ArgumentMakersWalked costs each model built on keras 2.2 - 2.3.1,
where it rewrites `_map_graph_network` (run by every functional model's
construction): prints one line, asserts nothing.

    python benchmarks/walk_time.py [LAYERS]

Builds a chain of LAYERS Dense layers (default 400) and times the release's
walk (the wrapper's `__wrapped__`) and the patched one (wrapper and twin)
on its inputs and outputs, best of 30 each, twice, then the rule's two
helpers alone on the model's nodes (no call arguments: what every model
without tensor keyword arguments pays).
"""

import sys
import time

import keras
from keras.engine import network

import keras_clone_fix
from keras_clone_fix._runtime import argument_tensors_to_walk, walked_argument_makers_placed

clock = getattr(time, "perf_counter", time.time)


def best(function, *args):
    times = []
    for _ in range(30):
        start = clock()
        function(*args)
        times.append(clock() - start)
    return min(times)


def helpers(nodes, depths, layers_depths, inputs):
    for _ in argument_tensors_to_walk(nodes, depths, inputs):
        pass
    walked_argument_makers_placed(nodes, depths, layers_depths)


def main(layers=400):
    assert keras_clone_fix.status().targets["keras.engine.network._map_graph_network"]
    x = keras.layers.Input(shape=(8,))
    h = x
    for _ in range(layers):
        h = keras.layers.Dense(8)(h)
    model = keras.models.Model(x, h)
    fixed = network._map_graph_network
    for _ in range(2):
        print("keras {}, {} layers: the release's walk {:.1f} ms, patched {:.1f} ms".format(
            keras.__version__, layers, best(fixed.__wrapped__, model.inputs, model.outputs) * 1e3,
            best(fixed, model.inputs, model.outputs) * 1e3))
    depths = dict((node, depth) for depth, nodes in model._nodes_by_depth.items()
                  for node in nodes)
    layers_depths = dict((node.outbound_layer, depth) for node, depth in depths.items())
    print("the rule's helpers on its {} nodes: {:.0f} us".format(len(depths), best(
        helpers, list(depths), depths, layers_depths, model.inputs) * 1e6))


if __name__ == "__main__":
    main(*[int(argument) for argument in sys.argv[1:]])
