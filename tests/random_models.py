"""A seeded generator of random Keras 2 models, on any family: multi-backend
keras, tf.keras of TensorFlow 1.x, tf_keras (`RandomModel(seed, keras)`).

Each model is a DAG over (batch, STEPS, 3) tensors: Embedding inputs with
and without mask_zero, SplitOutputs layers with 1 - 4 outputs and every mask
rule (fewer outputs than the masks of their inputs too), Dense layers (some
called with a keyword argument), Lambda layers with a mask, Activation('linear')
(it returns its input tensor unchanged), Masking, merges, shared
layers, nested models (some frozen, some on masked tensors where Keras can
build that), Sequential and functional sub-models one to three deep (some
frozen, some on masked tensors), a frozen model in TimeDistributed, Bidirectional
SimpleRNNs of every merge mode, LSTMs started with the states of an encoder LSTM from another branch
(initial_state), Bidirectional LSTMs started with the four states of a
Bidirectional encoder (from keras 2.1.4), RNNs whose cell takes an encoder
state as a constant, recurrent layers given an explicit `mask=` tensor (a
boolean model input, a Lambda comparing new token ids with 0, or, inside a
model of the recurrent layer, MaskOf, a custom layer registered nowhere that
does the same: its class is in `custom_objects` only), a custom layer called
with a tensor keyword argument (Attend()(x, attention_mask=w), `w` a model
input, any open tensor, which may then reach an output, or a Dense made for
it alone), and model boundaries: a chain of Dense and LSTM layers
after an open tensor wrapped in an inner model that is called on that tensor. Every tensor it
makes reaches a model output, so a clone that drops an output cannot pass.
One seed in eight draws a Sequential model instead (Embedding, then
layers of the same kinds, then an LSTM), which clone_model clones with its
Sequential routine.

A model with a boundary has a flat twin: the same layer objects composed
without the boundaries, on the same inputs, which must compute the same
predictions and the same masks.
"""

import random

from custom_layers import STEPS, VOCABULARY, custom_layers
from nested_custom_models import mask_of_class

MAX_OUTPUTS = 4
# (exception, message) the unpatched clone raises when it loses an output of
# a multi-output layer, when it passes a masked tensor into a model (up to
# 2.2.2), and when _standardize_args finds initial_state and constants given
# twice (no message).
OUTPUT_LOST = (AssertionError, "Could not compute output")
MASK_REFUSED = (TypeError, "does not support masking")
STATES_GIVEN_TWICE = (AssertionError, "")
# The unpatched clone makes a nested model from its config, which names a
# custom layer registered nowhere (_bugs.BUGS: "nested custom layers unknown
# in clones", every keras release drawn with, 2.0.7 - 2.3.1).
UNKNOWN_LAYER = (ValueError, "Unknown layer")

# The ways a model is rebuilt, each compared with the model itself (the
# last where the family saves SavedModel folders: TensorFlow 2).
SAVED_MODEL = "load_model of a SavedModel"
ROUTES = ("clone", "clone of the clone", "nested", "called twice", "from_config",
          "model_from_json", "load_model", SAVED_MODEL)

# What the generator asks of a release (tests/models.py says where each
# holds for multi-backend Keras); tf.keras of TensorFlow 1.12+ and tf_keras
# build everything, and their unpatched clones are not asserted here.
FLAGS = ("BIDIRECTIONAL_STATES_ARE_INPUTS", "BIDIRECTIONAL_TAKES_STATES", "HAS_RNN_CONSTANTS",
         "NESTS_ON_MASKED_TENSORS")
UNPATCHED_FLAGS = ("INPUT_REFUSES_MASK", "LAMBDA_BROKEN", "MASKING_BROKEN", "NESTED_MASK_BROKEN",
                   "STATE_ARGUMENTS_RECORDED")


class Release(object):
    """The flags of FLAGS and UNPATCHED_FLAGS for `keras`'s release."""

    def __init__(self, keras):
        if keras.__name__ == "keras":
            import models  # multi-backend Keras only
            for name in FLAGS + UNPATCHED_FLAGS:
                setattr(self, name, getattr(models, name))
        else:
            for name in FLAGS + UNPATCHED_FLAGS:
                setattr(self, name, name in FLAGS)
        # A layer of several outputs may compute one mask (not a list) for
        # them: keras; tf.keras 1.13 refuses it (Layer._set_mask_metadata
        # iterates the mask), and tf_keras draws what tf.keras does.
        self.ONE_MASK_FOR_OUTPUTS = keras.__name__ == "keras"


class Tensor(object):
    """A Keras tensor, whether a mask travels with it, the same tensor in
    the flat twin (the tensor itself until a model boundary is crossed), and
    whether its mask reaches it in the unpatched clone (not after a Lambda
    that lost its mask there)."""

    def __init__(self, value, masked, flat=None, unpatched_masked=None):
        self.value, self.masked = value, masked
        self.surplus_masks = False  # made by a layer with more masks than outputs
        self.flat = value if flat is None else flat
        self.unpatched_masked = masked if unpatched_masked is None else unpatched_masked


def output_mask(tensor):
    """The mask Keras computed for `tensor` (None if none)."""
    layer, node_index, tensor_index = tensor._keras_history[:3]
    nodes = getattr(layer, "_inbound_nodes", None) or layer.inbound_nodes  # 2.0-2.1: public
    masks = getattr(nodes[node_index], "output_masks", None)
    if masks is None:  # tf.keras from TensorFlow 1.14, tf_keras: on the tensor
        return getattr(tensor, "_keras_mask", None)
    return masks[tensor_index]


class RandomModel(object):
    def __init__(self, seed, keras):
        self.random = random.Random(seed)
        self.keras, self.L, self.release = keras, keras.layers, Release(keras)
        self.custom_objects = dict(custom_layers(keras))
        self.features = set()        # what this model contains, for the report
        self.upstream_errors = set()  # how the unpatched release may fail to clone it
        self.unpatched_may_differ = False  # its unpatched clone may predict otherwise
        # Its unpatched clone computes from the model's own inputs (a tensor
        # keyword argument passed back as it was): predicting, the backend misses them.
        self.unpatched_misses_inputs = False
        self.inputs, self.open = [], []
        self.layers = []             # (layer, mask rule, unmasked inputs only?) for sharing
        self.flat = None  # the flat twin, where a boundary was drawn
        if self.random.random() < 0.125:
            self.model = self._sequential_model()
            return
        for index in range(self.random.randint(1, 2)):
            self._add_input(index)
        for _ in range(self.random.randint(2, 6)):
            self.random.choice([self._split, self._split, self._dense, self._recurrent,
                                self._merge, self._share, self._nest, self._started,
                                self._boundary, self._lambda, self._attend, self._sub_models,
                                self._wrapped, self._masking, self._bidirectional,
                                self._explicit_mask, self._linear])()
        self.ends = self._outputs()  # what the last LSTMs read
        last = [self._both(lambda x, layer=self.L.LSTM(2): layer(x[0]), [y])
                for y in self.ends]
        self.model = keras.models.Model(self.inputs, [value for value, _ in last])
        if "model boundary" in self.features:
            self.flat = keras.models.Model(self.inputs, [flat for _, flat in last])

    def twin_masks(self):
        """(mask in the model, mask in the flat twin) of each tensor the last LSTMs read."""
        return [(output_mask(y.value), output_mask(y.flat)) for y in self.ends]

    def _tokens(self, name):
        return self.L.Input(shape=(STEPS,), dtype="int32", name=name)

    def _features(self, name=None):
        return self.L.Input(shape=(STEPS, 3), name=name)

    def _add_input(self, index):
        if self.random.random() < 0.25:
            x = self._features("features_{}".format(index))
            self.inputs.append(x)
            self.open.append(Tensor(x, masked=False))
            return
        mask_zero = self.random.random() < 0.7
        self.features.add("embedding(mask_zero={})".format(mask_zero))
        x = self._tokens("tokens_{}".format(index))
        self.inputs.append(x)
        embedded = self.L.Embedding(VOCABULARY, 3, mask_zero=mask_zero)(x)
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
            if (one_mask and self.release.MASKING_BROKEN) or (
                    rule == "none" and self.release.LAMBDA_BROKEN):
                self.upstream_errors.add(OUTPUT_LOST)

    def _split(self):
        rule = self.random.choice(["none", "pass", "list", "inputs"])
        taken = 2 if rule == "inputs" else self.random.randint(1, 2)  # "inputs": masks to spare
        inputs = self._take(taken, masked=False if rule == "none" else None)
        # A list of masks longer than the outputs is taken in order; a
        # shorter one leaves an output without a mask (IndexError in Keras).
        most_outputs = len(inputs) if rule == "inputs" and len(inputs) > 1 else MAX_OUTPUTS
        count = self.random.randint(1, most_outputs)
        one_mask = rule == "pass" or (rule == "inputs" and len(inputs) == 1)
        if one_mask and not self.release.ONE_MASK_FOR_OUTPUTS and any(t.masked for t in inputs):
            count = 1
        layer = self.custom_objects["SplitOutputs"](count, mask_rule=rule)
        self.features.add("mask rule " + rule)
        self._call(layer, inputs, rule)
        if rule == "inputs" and layer.count < len(inputs):
            self.features.add("more masks than outputs")
            for tensor in self.open[-layer.count:]:
                tensor.surplus_masks = True
        # What it may be shared on: no mask where it has none, or one for several outputs
        # where the release cannot build that.
        unmasked_only = rule == "none" or (one_mask and count > 1
                                           and not self.release.ONE_MASK_FOR_OUTPUTS)
        self.layers.append((layer, rule, unmasked_only))

    def _dense(self):
        layer = self.L.Dense(3)
        self._call(layer, self._take(), "pass")
        self.layers.append((layer, "pass", False))

    def _lambda(self):
        """A Lambda that passes its input's mask on (Lambda(fn, mask=...)):
        its config has no mask, so the unpatched clone's has none."""
        inputs = self._take()
        if inputs:
            self.features.add("lambda with a mask")
            self.unpatched_may_differ |= inputs[0].masked
            self._call(self.L.Lambda(lambda x: x * 2.0, mask=lambda x, mask: mask), inputs,
                       "pass")
            self.open[-1].unpatched_masked = False  # the unpatched clone's Lambda has no mask

    def _linear(self):
        """Activation('linear'): returns its input tensor unchanged (issue 45 item 8)."""
        inputs = self._take()
        if inputs:
            self.features.add("activation('linear')" + (
                " on a masked tensor" if inputs[0].masked else ""))
            self._call(self.L.Activation("linear"), inputs, "pass")

    def _masking(self):
        """Masking on an unmasked tensor (make_inputs pads float inputs with
        its mask_value; a Dense keeps the zeros)."""
        inputs = self._take(masked=False)
        if inputs:
            self.features.add("masking")
            self._call(self.L.Masking(), inputs, "pass")
            self.open[-1].masked = self.open[-1].unpatched_masked = True

    def _recurrent(self):
        """An LSTM called with a keyword argument: its node keeps a dict of
        arguments, which unpatched clones write their masks into."""
        inputs = self._take()
        if inputs:
            self.features.add("called with a keyword")
            self._call(self.L.LSTM(3, return_sequences=True), inputs, "pass", training=False)

    def _bidirectional(self):
        """Bidirectional(SimpleRNN) of a merge mode: "concat" is followed by
        a Dense back to 3 features; None gives two outputs, each with the mask."""
        inputs = self._take()
        if not inputs:
            return
        mode = self.random.choice(["sum", "mul", "ave", "concat", None])
        self.features.add("bidirectional(merge_mode={})".format(mode))
        self.unpatched_may_differ = True  # not measured unpatched
        layer = self.L.Bidirectional(self.L.SimpleRNN(3, return_sequences=True), merge_mode=mode)
        self._call(layer, inputs, "pass")
        if mode is None:
            self.open[-1].masked = self.open[-2].masked
            self.open[-1].unpatched_masked = self.open[-2].unpatched_masked
            self.upstream_errors.discard(OUTPUT_LOST)  # a list of masks
        if mode == "concat":
            self._call(self.L.Dense(3), [self.open.pop()], "pass")

    def _explicit_mask(self):
        """A recurrent layer given `mask=m` (issue 45 item 4): `m` a boolean
        model input, or made from new token ids that nothing else takes
        (item 5): by a Lambda comparing them to 0 or, inside a model of the
        recurrent layer called on the ids too, by MaskOf, a custom layer
        registered nowhere (issue 58: a clone makes that model from its
        config, which names the class). Keras keeps the tensor in the call's
        arguments only, not in a config (issue 52: the fix writes it there)."""
        inputs = self._take()
        if not inputs:
            return
        index = len(self.inputs)
        layer, ids = self.L.SimpleRNN(3, return_sequences=True), None
        if self.random.random() < 0.5:
            mask = self.L.Input(shape=(STEPS,), dtype="bool", name="mask_{}".format(index))
            self.inputs.append(mask)
            self.features.add("explicit mask: a model input")
        else:
            ids = self._tokens("mask_tokens_{}".format(index))
            self.inputs.append(ids)
        self.unpatched_may_differ = True  # measured wrong on some releases (item 4)
        # A Lambda or, in a model where the release calls one on the taken
        # tensor, MaskOf: chosen by the parity of the inputs so far, not by a
        # new draw, which would change every later draw of the seeds run before.
        if ids is None or index % 2 == 0 or not (
                self.release.NESTS_ON_MASKED_TENSORS or not inputs[0].masked):
            if ids is not None:
                mask = self.L.Lambda(lambda t: t > 0)(ids)  # no names: made from its config
                self.features.add("explicit mask: made by a Lambda")
            self._call(layer, inputs, "pass", states=[("mask", Tensor(mask, False))])
        else:
            if "MaskOf" not in self.custom_objects:
                self.custom_objects["MaskOf"] = mask_of_class(self.keras)
            # The ids are embedded too: TensorFlow 1.14 alone cannot clone a
            # model with an input that only an argument takes (Could not pack sequence).
            inner_input, inner_ids = self._features(), self._tokens(None)
            embedded = self.L.add([inner_input, self.L.Embedding(VOCABULARY, 3)(inner_ids)])
            inner = self.keras.models.Model([inner_input, inner_ids], layer(
                embedded, mask=self.custom_objects["MaskOf"]()(inner_ids)))
            self._into_a_model(inputs)
            self.features.add("explicit mask: made by a custom layer in a nested model")
            if self.keras.__name__ == "keras":
                self.upstream_errors.add(UNKNOWN_LAYER)
            self._call(inner, inputs + [Tensor(ids, False)], "pass")
        if self.keras.__name__ != "keras":  # keras's output mask is the input's, tf_keras's `mask`
            self.open[-1].masked = self.open[-1].unpatched_masked = True

    def _started(self):
        """An encoder LSTM's last states start an LSTM (initial_state) or
        are the constants of an RNN, or the four states of a Bidirectional
        LSTM start a Bidirectional LSTM, on another open tensor where there is one."""
        encoded = self._take()
        if not encoded:
            return
        L, release = self.L, self.release
        kinds = ["lstm", "lstm"] + ["constants"] * release.HAS_RNN_CONSTANTS + [
            "bidirectional"] * (release.BIDIRECTIONAL_TAKES_STATES
                                and release.BIDIRECTIONAL_STATES_ARE_INPUTS)
        kind = self.random.choice(kinds)
        encoder = L.LSTM(3, return_sequences=True, return_state=True)
        if kind == "bidirectional":  # merge_mode="sum": (batch, STEPS, 3) as every open tensor
            encoder = L.Bidirectional(encoder, merge_mode="sum")
        outputs, flats = self._both(lambda x: encoder(x[0]), encoded)
        sequence = Tensor(outputs[0], encoded[0].masked, flats[0], encoded[0].unpatched_masked)
        encoder_states = [Tensor(value, False, flat) for value, flat in zip(outputs[1:], flats[1:])]
        started = self._take() or [sequence]
        if started[0] is not sequence:
            self.open.append(sequence)
        if kind == "constants":
            self.features.add("rnn called with constants")
            state_h, state_c = encoder_states
            layer = L.RNN(self.custom_objects["ConstantsCell"](3), return_sequences=True)
            states = dict(initial_state=[state_c], constants=[state_h])
        elif kind == "bidirectional":
            self.features.add("bidirectional called with initial_state")
            layer = L.Bidirectional(L.LSTM(3, return_sequences=True), merge_mode="sum")
            states = dict(initial_state=encoder_states)
        else:
            self.features.add("lstm called with initial_state")
            layer = L.LSTM(3, return_sequences=True)
            states = dict(initial_state=encoder_states)
        if release.STATE_ARGUMENTS_RECORDED:
            self.upstream_errors.add(STATES_GIVEN_TWICE)
        self._call(layer, started, "pass", states=states.items())

    def _attend(self):
        """A custom layer called with a tensor keyword argument,
        Attend()(x, attention_mask=w): `w` a new model input, any other
        open tensor, which stays open, or a Dense's output that nothing else
        takes (issue 45 item 5). Keras records `w` in the node's arguments
        only, not as an input (nor in a config: item 6), and its depths count
        inputs only: `w` may reach an output, or a later call, that they put
        after this one."""
        draw = self.random.random()
        if draw < 0.4:
            w = Tensor(self._features("attention_{}".format(len(self.inputs))), masked=False)
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
            if draw < 0.7:
                self.open.append(w)
                self.features.add("tensor keyword argument: an open tensor")
            else:
                dense = self.L.Dense(3)
                value, flat = self._both(lambda x: dense(x[0]), [w])
                w = Tensor(value, w.masked, flat, w.unpatched_masked)
                self.features.add("tensor keyword argument: made for it alone")
        self.unpatched_misses_inputs = True  # every affected release
        self._call(self.custom_objects["Attend"](), inputs, "pass",
                   states=[("attention_mask", w)])

    def _merge(self):
        inputs = self._take(2)
        if len(inputs) == 2:
            self.features.add("merge")
            self._call(self.L.Add(), inputs, "merge")
        else:
            self.open.extend(inputs)

    def _share(self):
        """Call an earlier single-input layer again, on another tensor."""
        if not self.layers:
            return
        layer, rule, unmasked_only = self.random.choice(self.layers)
        inputs = self._take(masked=False if unmasked_only else None)
        self.features.add("shared layer")
        self._call(layer, inputs, rule)

    def _nested_input(self, what):
        """An open tensor for a model to be called on (Keras < 2.2 cannot
        call one on a masked tensor), or []."""
        inputs = self._take(masked=None if self.release.NESTS_ON_MASKED_TENSORS else False)
        self._into_a_model(inputs)
        if inputs and inputs[0].masked:
            self.features.add(what + " on a masked tensor")
            # Unpatched 2.2.5 - 2.3.1 drop its mask, which changes the
            # predictions unless another mask downstream happens to be the same.
            self.unpatched_may_differ |= self.release.NESTED_MASK_BROKEN
        return inputs

    def _into_a_model(self, inputs):
        if any(t.surplus_masks for t in inputs):
            self.features.add("model on a layer with more masks than outputs")

    def _nest(self):
        """A model as a layer: Dense -> SplitOutputs(list) -> add, inside."""
        inner_input = self._features()
        parts = self.custom_objects["SplitOutputs"](2, mask_rule="list")(
            self.L.Dense(3)(inner_input))
        inner = self.keras.models.Model(inner_input, self.L.add(parts))
        if self.random.random() < 0.3:
            self.features.add("frozen nested model")  # the unpatched clone's is trainable
            inner.trainable = False
        inputs = self._nested_input("nested model")
        self.features.add("nested model")
        self._call(inner, inputs, "merge")

    def _sub_model(self, depth):
        """A Sequential or functional model of (STEPS, 3) to (STEPS, 3):
        Dense, then Dense, SimpleRNN or Activation('linear') and, deeper than
        1, a model of depth - 1; some frozen."""
        L = self.L
        parts = [self.random.choice([lambda: L.Dense(3), lambda: L.Activation("linear"),
                                     lambda: L.SimpleRNN(3, return_sequences=True)])()
                 for _ in range(self.random.randint(0, 1))]
        if depth > 1:
            parts.append(self._sub_model(depth - 1))
        kind = self.random.choice(["sequential", "functional"])
        if kind == "sequential":
            model = self.keras.models.Sequential([L.Dense(3, input_shape=(STEPS, 3))] + parts)
        else:
            x = self._features()
            y = L.Dense(3)(x)
            for part in parts:
                y = part(y)
            model = self.keras.models.Model(x, y)
        self.features.add(kind + " sub-model")
        if self.random.random() < 0.3:
            self.features.add("frozen {} sub-model".format(kind))
            model.trainable = False
        return model

    def _sub_models(self):
        """A sub-model one to three deep (models inside models)."""
        depth = self.random.randint(1, 3)
        self.features.add("sub-models {} deep".format(depth))
        self._call(self._sub_model(depth), self._nested_input("sub-model"), "pass")

    def _wrapped(self):
        """TimeDistributed of a frozen model (issue 45 item 3)."""
        inputs = self._take()
        if not inputs:
            return
        inner_input = self.L.Input(shape=(3,))
        inner = self.keras.models.Model(inner_input, self.L.Dense(3)(inner_input))
        inner.trainable = False
        self.features.add("frozen model in TimeDistributed")
        if inputs[0].masked:
            self.features.add("frozen model in TimeDistributed on a masked tensor")
            # Unpatched keras 2.3.1, seed 17 (after an LSTM called with training=False):
            # 0.00164 off; right on an Embedding alone. Not measured further.
            self.unpatched_may_differ |= self.release.NESTED_MASK_BROKEN
        self._call(self.L.TimeDistributed(inner), inputs, "pass")

    def _boundary(self):
        """A model boundary around a chain of Dense and LSTM layers after an
        open tensor: the model calls an inner model of them (built on an
        Input of its own) on the tensor, the flat twin calls the layers."""
        inputs = self._take()
        if not inputs:
            return
        L = self.L
        chain = [self.random.choice([lambda: L.Dense(3), lambda: L.Dense(3),
                                     lambda: L.LSTM(3, return_sequences=True)])()
                 for _ in range(self.random.randint(1, 2))]

        def through_chain(x):
            for layer in chain:
                x = layer(x)
            return x
        start = self._features()
        inner = self.keras.models.Model(start, through_chain(start))
        x = inputs[0]
        self._into_a_model(inputs)
        self.features.add("model boundary")
        if x.masked:
            self.features.add("model boundary on a masked tensor")
            if self.release.INPUT_REFUSES_MASK and x.unpatched_masked:
                self.upstream_errors.add(MASK_REFUSED)
            self.unpatched_may_differ |= self.release.NESTED_MASK_BROKEN  # as _nest's
        self.open.append(Tensor(inner(x.value), x.masked, through_chain(x.flat),
                                x.unpatched_masked))

    def _outputs(self):
        """Merge open tensors into at most three model outputs."""
        self.random.shuffle(self.open)
        outputs = self.open[:3]
        for index, extra in enumerate(self.open[3:]):
            target = outputs[index % 3]
            value, flat = self._both(self.L.Add(), [target, extra])
            outputs[index % 3] = Tensor(value, target.masked or extra.masked, flat,
                                        target.unpatched_masked or extra.unpatched_masked)
        return outputs

    def _sequential_model(self):
        """A Sequential model: Embedding (mask_zero or not), one to four of
        Dense, Activation('linear'), a Lambda passing its mask on, a
        Bidirectional SimpleRNN, a frozen model in TimeDistributed and a
        sub-model (where the release nests on the mask), then an LSTM."""
        L = self.L
        mask_zero = self.random.random() < 0.7
        self.features |= {"sequential model", "embedding(mask_zero={})".format(mask_zero)}
        self.unpatched_may_differ = True  # not measured unpatched
        kinds = ["dense", "linear", "lambda", "bidirectional", "wrapped"] + ["sub-model"] * (
            self.release.NESTS_ON_MASKED_TENSORS or not mask_zero)
        layers = [L.Embedding(VOCABULARY, 3, mask_zero=mask_zero, input_length=STEPS)]
        for _ in range(self.random.randint(1, 4)):
            kind = self.random.choice(kinds)
            self.features.add("sequential model: " + kind)
            if kind == "dense":
                layers.append(L.Dense(3))
            elif kind == "linear":
                layers.append(L.Activation("linear"))
            elif kind == "lambda":
                layers.append(L.Lambda(lambda x: x * 2.0, mask=lambda x, mask: mask))
            elif kind == "bidirectional":
                layers.append(L.Bidirectional(L.SimpleRNN(3, return_sequences=True),
                                              merge_mode=self.random.choice(["sum", "ave"])))
            elif kind == "wrapped":
                inner_input = L.Input(shape=(3,))
                inner = self.keras.models.Model(inner_input, L.Dense(3)(inner_input))
                inner.trainable = False
                layers.append(L.TimeDistributed(inner))
            else:
                layers.append(self._sub_model(self.random.randint(1, 2)))
        return self.keras.models.Sequential(layers + [L.LSTM(2)])
