"""A seeded generator of random functional Keras 2.x models.

Each model is a DAG over (batch, STEPS, 3) tensors: Embedding inputs with
and without mask_zero, SplitOutputs layers with 1 - 4 outputs and every mask
rule, Dense layers (some called with a keyword argument), merges, shared
layers, nested models (on masked tensors too, where Keras can build
that), LSTMs started with the states of an encoder LSTM from another branch
(initial_state) and RNNs whose cell takes an encoder state as a constant.
Every tensor it makes reaches a model output, so a clone that drops
an output cannot pass.
"""

import random


import keras

from models import (
    HAS_RNN_CONSTANTS, LAMBDA_BROKEN, MASKING_BROKEN, NESTED_MASK_BROKEN,
    NESTS_ON_MASKED_TENSORS, STATE_ARGUMENTS_RECORDED, ConstantsCell, SplitOutputs, features,
    lstm, tokens)

MAX_OUTPUTS = 4


class Tensor(object):
    """A Keras tensor and whether a mask travels with it."""

    def __init__(self, value, masked):
        self.value, self.masked = value, masked


class RandomModel(object):
    def __init__(self, seed):
        self.random = random.Random(seed)
        self.features = set()        # what this model contains, for the report
        self.breaks_upstream = False  # the unpatched release cannot clone it
        self.unpatched_may_differ = False  # its unpatched clone may predict otherwise
        self.state_arguments = False  # the unpatched release refuses to clone it
        self.inputs, self.open = [], []
        self.layers = []             # (layer, takes masked input?) for sharing
        for index in range(self.random.randint(1, 2)):
            self._add_input(index)
        for _ in range(self.random.randint(2, 6)):
            self.random.choice([self._split, self._split, self._dense, self._recurrent,
                                self._merge, self._share, self._nest, self._started])()
        self.model = keras.models.Model(self.inputs, [lstm(y.value) for y in self._outputs()])

    def _add_input(self, index):
        if self.random.random() < 0.25:
            x = features("features_{}".format(index))
            self.inputs.append(x)
            self.open.append(Tensor(x, masked=False))
            return
        mask_zero = self.random.random() < 0.7
        self.features.add("embedding(mask_zero={})".format(mask_zero))
        x = tokens("tokens_{}".format(index))
        self.inputs.append(x)
        embedded = keras.layers.Embedding(20, 3, mask_zero=mask_zero)(x)
        self.open.append(Tensor(embedded, masked=mask_zero))

    def _take(self, most=1, masked=None):
        """Remove and return up to `most` open tensors (those with `masked` if given)."""
        candidates = [t for t in self.open if masked is None or t.masked == masked]
        chosen = self.random.sample(candidates, min(most, len(candidates)))
        for tensor in chosen:
            self.open.remove(tensor)
        return chosen

    def _call(self, layer, inputs, rule, **arguments):
        """Call `layer` on `inputs`; record the outputs and whether the
        unpatched release loses any of them."""
        if not inputs:
            return
        values = [t.value for t in inputs]
        outputs = layer(values if len(values) > 1 else values[0], **arguments)
        outputs = outputs if isinstance(outputs, list) else [outputs]
        first_masked = inputs[0].masked or (rule == "merge" and any(t.masked for t in inputs))
        for index, output in enumerate(outputs):
            masked = first_masked and rule != "none" and not (rule == "list" and index > 0)
            self.open.append(Tensor(output, masked))
        if len(outputs) > 1:
            self.features.add("{} outputs".format(len(outputs)))
            self.breaks_upstream |= (rule == "pass" and MASKING_BROKEN) or (
                rule == "none" and LAMBDA_BROKEN)

    def _split(self):
        rule = self.random.choice(["none", "pass", "list"])
        inputs = self._take(self.random.randint(1, 2), masked=False if rule == "none" else None)
        layer = SplitOutputs(self.random.randint(1, MAX_OUTPUTS), mask_rule=rule)
        self.features.add("mask rule " + rule)
        self._call(layer, inputs, rule)
        self.layers.append((layer, rule))

    def _dense(self):
        layer = keras.layers.Dense(3)
        self._call(layer, self._take(), "pass")
        self.layers.append((layer, "pass"))

    def _recurrent(self):
        """An LSTM called with a keyword argument: its node keeps a dict of
        arguments, which unpatched clones write their masks into."""
        inputs = self._take()
        if inputs:
            self.features.add("called with a keyword")
            self._call(keras.layers.LSTM(3, return_sequences=True), inputs, "pass",
                       training=False)

    def _started(self):
        """An encoder LSTM's last states start an LSTM (initial_state) or
        are the constants of an RNN, on another open tensor where there is one."""
        encoded = self._take()
        if not encoded:
            return
        sequence, state_h, state_c = keras.layers.LSTM(
            3, return_sequences=True, return_state=True)(encoded[0].value)
        started = self._take() or [Tensor(sequence, encoded[0].masked)]
        if started[0].value is not sequence:
            self.open.append(Tensor(sequence, encoded[0].masked))
        if HAS_RNN_CONSTANTS and self.random.random() < 0.4:
            self.features.add("rnn called with constants")
            layer = keras.layers.RNN(ConstantsCell(3), return_sequences=True)
            arguments = dict(initial_state=[state_c], constants=[state_h])
        else:
            self.features.add("lstm called with initial_state")
            layer = keras.layers.LSTM(3, return_sequences=True)
            arguments = dict(initial_state=[state_h, state_c])
        self.state_arguments |= STATE_ARGUMENTS_RECORDED
        self._call(layer, started, "pass", **arguments)

    def _merge(self):
        inputs = self._take(2)
        if len(inputs) == 2:
            self.features.add("merge")
            self._call(keras.layers.Add(), inputs, "merge")
        else:
            self.open.extend(inputs)

    def _share(self):
        """Call an earlier single-input layer again, on another tensor."""
        if not self.layers:
            return
        layer, rule = self.random.choice(self.layers)
        inputs = self._take(masked=False if rule == "none" else None)
        self.features.add("shared layer")
        self._call(layer, inputs, rule)

    def _nest(self):
        """A model as a layer: Dense -> SplitOutputs(list) -> add, inside."""
        inner_input = features()
        parts = SplitOutputs(2, mask_rule="list")(keras.layers.Dense(3)(inner_input))
        inner = keras.models.Model(inner_input, keras.layers.add(parts))
        # Keras < 2.2 cannot call a model on a masked tensor.
        inputs = self._take(masked=None if NESTS_ON_MASKED_TENSORS else False)
        if inputs and inputs[0].masked:
            self.features.add("nested model on a masked tensor")
            # Unpatched 2.2.5 - 2.3.1 drop its mask, which changes the
            # predictions unless another mask downstream happens to be the same.
            self.unpatched_may_differ |= NESTED_MASK_BROKEN
        self.features.add("nested model")
        self._call(inner, inputs, "merge")

    def _outputs(self):
        """Merge open tensors into at most three model outputs."""
        self.random.shuffle(self.open)
        outputs = self.open[:3]
        for index, extra in enumerate(self.open[3:]):
            target = outputs[index % 3]
            outputs[index % 3] = Tensor(keras.layers.add([target.value, extra.value]),
                                        target.masked or extra.masked)
        return outputs
