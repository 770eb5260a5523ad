"""A seeded generator of random functional Keras 2.x models.

Each model is a DAG over (batch, STEPS, 3) tensors: Embedding inputs with
and without mask_zero, SplitOutputs layers with 1 - 4 outputs and every mask
rule (fewer outputs than the masks of their inputs too), Dense layers (some
called with a keyword argument), Lambda layers with a mask, merges, shared
layers, nested models (some frozen, some on masked tensors where Keras can
build that), LSTMs started with the states of an encoder LSTM from another branch
(initial_state), Bidirectional LSTMs started with the four states of a
Bidirectional encoder (from keras 2.1.4), RNNs whose cell takes an encoder
state as a constant, a custom layer called with a tensor keyword argument
(Attend()(x, attention_mask=w), `w` a model input or any open tensor,
which may then reach an output), and model boundaries: a chain of Dense and LSTM layers
after an open tensor wrapped in an inner model that is called on that tensor. Every tensor it
makes reaches a model output, so a clone that drops an output cannot pass.

A model with a boundary has a flat twin: the same layer objects composed
without the boundaries, on the same inputs, which must compute the same
predictions and the same masks.
"""

import random


import keras

from keras import backend as K
from models import (
    BIDIRECTIONAL_STATES_ARE_INPUTS, BIDIRECTIONAL_TAKES_STATES, HAS_RNN_CONSTANTS,
    INPUT_REFUSES_MASK, LAMBDA_BROKEN, MASKING_BROKEN, NESTED_MASK_BROKEN, NESTS_ON_MASKED_TENSORS,
    STATE_ARGUMENTS_RECORDED, Attend, ConstantsCell, SplitOutputs, features, tokens)

MAX_OUTPUTS = 4
# (exception, message) the unpatched clone raises when it loses an output of
# a multi-output layer, when it passes a masked tensor into a model (up to
# 2.2.2), and when _standardize_args finds initial_state and constants given
# twice (no message).
OUTPUT_LOST = (AssertionError, "Could not compute output")
MASK_REFUSED = (TypeError, "does not support masking")
STATES_GIVEN_TWICE = (AssertionError, "")


class Tensor(object):
    """A Keras tensor, whether a mask travels with it, the same tensor in
    the flat twin (the tensor itself until a model boundary is crossed), and
    whether its mask reaches it in the unpatched clone (not after a Lambda
    that lost its mask there)."""

    def __init__(self, value, masked, flat=None, unpatched_masked=None):
        self.value, self.masked = value, masked
        self.flat = value if flat is None else flat
        self.unpatched_masked = masked if unpatched_masked is None else unpatched_masked


def output_mask(tensor):
    """The mask Keras computed for `tensor` (None if none)."""
    layer, node_index, tensor_index = tensor._keras_history
    nodes = getattr(layer, "_inbound_nodes", None) or layer.inbound_nodes  # 2.0-2.1: public
    return nodes[node_index].output_masks[tensor_index]


class RandomModel(object):
    def __init__(self, seed):
        self.random = random.Random(seed)
        self.features = set()        # what this model contains, for the report
        self.upstream_errors = set()  # how the unpatched release may fail to clone it
        self.unpatched_may_differ = False  # its unpatched clone may predict otherwise
        # Its unpatched clone computes from the model's own inputs (a tensor
        # keyword argument passed back as it was): predicting, the backend misses them.
        self.unpatched_misses_inputs = False
        self.inputs, self.open = [], []
        self.layers = []             # (layer, takes masked input?) for sharing
        for index in range(self.random.randint(1, 2)):
            self._add_input(index)
        for _ in range(self.random.randint(2, 6)):
            self.random.choice([self._split, self._split, self._dense, self._recurrent,
                                self._merge, self._share, self._nest, self._started,
                                self._boundary, self._lambda, self._attend])()
        self.ends = self._outputs()  # what the last LSTMs read
        last = [self._both(lambda x, layer=keras.layers.LSTM(2): layer(x[0]), [y])
                for y in self.ends]
        self.model = keras.models.Model(self.inputs, [value for value, _ in last])
        self.flat = None  # the flat twin, where a boundary was drawn
        if "model boundary" in self.features:
            self.flat = keras.models.Model(self.inputs, [flat for _, flat in last])

    def twin_masks(self):
        """(mask in the model, mask in the flat twin) of each tensor the last LSTMs read."""
        return [(output_mask(y.value), output_mask(y.flat)) for y in self.ends]

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

    @staticmethod
    def _both(call, tensors):
        """`call` on the list of the Keras tensors of `tensors` in the model
        and, where the flat twin has other tensors, on those: (model's, twin's)."""
        outputs = call([t.value for t in tensors])
        if all(t.flat is t.value for t in tensors):
            return outputs, outputs
        return outputs, call([t.flat for t in tensors])

    def _call(self, layer, inputs, rule, states=(), **arguments):
        """Call `layer` on `inputs` (and on the keyword arguments of tensors
        `states`, (argument, [tensors]) pairs for a list and (argument,
        tensor) for one tensor); record the outputs and whether the
        unpatched release loses any of them."""
        if not inputs:
            return
        states = sorted(states, key=lambda state: state[0])

        def listed(tensors):
            return tensors if isinstance(tensors, list) else [tensors]

        def call(values):
            keywords, given = dict(arguments), values[len(inputs):]
            for name, tensors in states:
                count = len(listed(tensors))
                keywords[name] = given[:count] if isinstance(tensors, list) else given[0]
                given = given[count:]
            values = values[:len(inputs)]
            return layer(values if len(values) > 1 else values[0], **keywords)
        outputs, flats = self._both(call, inputs + [t for _, tensors in states
                                                    for t in listed(tensors)])
        outputs = outputs if isinstance(outputs, list) else [outputs]
        flats = flats if isinstance(flats, list) else [flats]

        def masked(index, attribute):
            """Whether output `index` has a mask (in the unpatched clone: "unpatched_masked")."""
            if rule == "inputs" and len(inputs) > 1:  # output i takes input i's mask
                return getattr(inputs[index], attribute)
            first = getattr(inputs[0], attribute) or (
                rule == "merge" and any(getattr(t, attribute) for t in inputs))
            return first and rule != "none" and not (rule == "list" and index > 0)
        for index, (output, flat) in enumerate(zip(outputs, flats)):
            self.open.append(Tensor(output, masked(index, "masked"), flat,
                                    masked(index, "unpatched_masked")))
        if len(outputs) > 1:
            self.features.add("{} outputs".format(len(outputs)))
            # One mask (not a list) for every output: "pass", and "inputs" on one input.
            one_mask = rule == "pass" or (rule == "inputs" and len(inputs) == 1)
            if (one_mask and MASKING_BROKEN) or (rule == "none" and LAMBDA_BROKEN):
                self.upstream_errors.add(OUTPUT_LOST)

    def _split(self):
        rule = self.random.choice(["none", "pass", "list", "inputs"])
        taken = 2 if rule == "inputs" else self.random.randint(1, 2)  # "inputs": masks to spare
        inputs = self._take(taken, masked=False if rule == "none" else None)
        # A list of masks longer than the outputs is taken in order; a
        # shorter one leaves an output without a mask (IndexError in Keras).
        most_outputs = len(inputs) if rule == "inputs" and len(inputs) > 1 else MAX_OUTPUTS
        layer = SplitOutputs(self.random.randint(1, most_outputs), mask_rule=rule)
        self.features.add("mask rule " + rule)
        if rule == "inputs" and layer.count < len(inputs):
            self.features.add("more masks than outputs")
        self._call(layer, inputs, rule)
        self.layers.append((layer, rule))

    def _dense(self):
        layer = keras.layers.Dense(3)
        self._call(layer, self._take(), "pass")
        self.layers.append((layer, "pass"))

    def _lambda(self):
        """A Lambda that passes its input's mask on (Lambda(fn, mask=...)):
        its config has no mask, so the unpatched clone's has none."""
        inputs = self._take()
        if inputs:
            self.features.add("lambda with a mask")
            self.unpatched_may_differ |= inputs[0].masked
            self._call(keras.layers.Lambda(lambda x: x * 2.0, mask=lambda x, mask: mask), inputs,
                       "pass")
            self.open[-1].unpatched_masked = False  # the unpatched clone's Lambda has no mask

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
        are the constants of an RNN, or the four states of a Bidirectional
        LSTM start a Bidirectional LSTM, on another open tensor where there is one."""
        encoded = self._take()
        if not encoded:
            return
        kinds = ["lstm", "lstm"] + ["constants"] * HAS_RNN_CONSTANTS + ["bidirectional"] * (
            BIDIRECTIONAL_TAKES_STATES and BIDIRECTIONAL_STATES_ARE_INPUTS)
        kind = self.random.choice(kinds)
        encoder = keras.layers.LSTM(3, return_sequences=True, return_state=True)
        if kind == "bidirectional":  # merge_mode="sum": (batch, STEPS, 3) as every open tensor
            encoder = keras.layers.Bidirectional(encoder, merge_mode="sum")
        outputs, flats = self._both(lambda x: encoder(x[0]), encoded)
        sequence = Tensor(outputs[0], encoded[0].masked, flats[0], encoded[0].unpatched_masked)
        encoder_states = [Tensor(value, False, flat) for value, flat in zip(outputs[1:], flats[1:])]
        started = self._take() or [sequence]
        if started[0] is not sequence:
            self.open.append(sequence)
        if kind == "constants":
            self.features.add("rnn called with constants")
            state_h, state_c = encoder_states
            layer = keras.layers.RNN(ConstantsCell(3), return_sequences=True)
            states = dict(initial_state=[state_c], constants=[state_h])
        elif kind == "bidirectional":
            self.features.add("bidirectional called with initial_state")
            layer = keras.layers.Bidirectional(keras.layers.LSTM(3, return_sequences=True),
                                               merge_mode="sum")
            states = dict(initial_state=encoder_states)
        else:
            self.features.add("lstm called with initial_state")
            layer = keras.layers.LSTM(3, return_sequences=True)
            states = dict(initial_state=encoder_states)
        if STATE_ARGUMENTS_RECORDED:
            self.upstream_errors.add(STATES_GIVEN_TWICE)
        self._call(layer, started, "pass", states=states.items())

    def _attend(self):
        """A custom layer called with a tensor keyword argument,
        Attend()(x, attention_mask=w): `w` a new model input, or any other
        open tensor, which stays open. Keras records `w` in the node's
        arguments only, not as an input, and its depths count inputs only:
        `w` may reach an output, or a later call, that they put after this
        one."""
        if self.random.random() < 0.5:
            w = Tensor(features("attention_{}".format(len(self.inputs))), masked=False)
            self.inputs.append(w.value)
            inputs = self._take()
            if not inputs:  # nothing to attend to: the input is open instead
                self.open.append(w)
                return
            self.features.add("tensor keyword argument: a model input")
        else:
            taken = self._take(2)
            if len(taken) < 2:
                self.open.extend(taken)
                return
            inputs, w = taken[:1], taken[1]
            self.open.append(w)
            self.features.add("tensor keyword argument: an open tensor")
        self.unpatched_misses_inputs = True  # every affected release
        self._call(Attend(), inputs, "pass", states=[("attention_mask", w)])

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
        if self.random.random() < 0.3:
            self.features.add("frozen nested model")  # the unpatched clone's is trainable
            inner.trainable = False
        # Keras < 2.2 cannot call a model on a masked tensor.
        inputs = self._take(masked=None if NESTS_ON_MASKED_TENSORS else False)
        if inputs and inputs[0].masked:
            self.features.add("nested model on a masked tensor")
            # Unpatched 2.2.5 - 2.3.1 drop its mask, which changes the
            # predictions unless another mask downstream happens to be the same.
            self.unpatched_may_differ |= NESTED_MASK_BROKEN
        self.features.add("nested model")
        self._call(inner, inputs, "merge")

    def _boundary(self):
        """A model boundary around a chain of Dense and LSTM layers after an
        open tensor: the model calls an inner model of them (built on an
        Input of its own) on the tensor, the flat twin calls the layers."""
        inputs = self._take()
        if not inputs:
            return
        chain = [self.random.choice([lambda: keras.layers.Dense(3), lambda: keras.layers.Dense(3),
                                     lambda: keras.layers.LSTM(3, return_sequences=True)])()
                 for _ in range(self.random.randint(1, 2))]

        def through_chain(x):
            for layer in chain:
                x = layer(x)
            return x
        start = keras.layers.Input(shape=K.int_shape(inputs[0].value)[1:])
        inner = keras.models.Model(start, through_chain(start))
        x = inputs[0]
        self.features.add("model boundary")
        if x.masked:
            self.features.add("model boundary on a masked tensor")
            if INPUT_REFUSES_MASK and x.unpatched_masked:
                self.upstream_errors.add(MASK_REFUSED)
            self.unpatched_may_differ |= NESTED_MASK_BROKEN  # as _nest's
        self.open.append(Tensor(inner(x.value), x.masked, through_chain(x.flat),
                                x.unpatched_masked))

    def _outputs(self):
        """Merge open tensors into at most three model outputs."""
        self.random.shuffle(self.open)
        outputs = self.open[:3]
        for index, extra in enumerate(self.open[3:]):
            target = outputs[index % 3]
            value, flat = self._both(keras.layers.Add(), [target, extra])
            outputs[index % 3] = Tensor(value, target.masked or extra.masked, flat,
                                        target.unpatched_masked or extra.unpatched_masked)
        return outputs
