"""What is affected: which releases of each family have the rebuild bugs
(the version guard), and which of their functions are patched, with which
rules.

A family is a package whose `__version__` decides: `keras` (multi-backend
Keras) or `tensorflow` (its tf.keras). Reads nothing but version strings,
so it costs nothing to import.
"""

import sys

from keras_clone_fix._bugs import bugs_at, reason

# family -> (first release, first release past the range, affected?, why
# not). Ranges are half-open and together cover every version. What an
# affected range's releases get wrong is the bugs measured on each release
# (_bugs.BUGS), which is_affected counts; an unaffected range says why, in a
# few words (status() names it beside the other family's).
RELEASES = {
    "keras": (
        # Keras 1.x is not multi-backend Keras 2: its rebuild routines are other code.
        ((0, 0, 0), (2, 0, 0), False, "Keras 1.x is other code, not examined"),
        ((2, 0, 0), (2, 0, 7), True, ""),  # no clone_model: _bugs.CLONE_MODEL_FROM
        ((2, 0, 7), (2, 2, 5), True, ""),
        ((2, 2, 5), (2, 4, 0), True, ""),
        # Its routines are TensorFlow's, which the tensorflow family's rows patch.
        ((2, 4, 0), (2, 5, 0), False, "a front for tf.keras"),
        # keras 2.5 (keras-nightly, which TensorFlow 2.5 installs) and 2.6 (tf.keras of
        # TensorFlow 2.6) are tf.keras's code.
        ((2, 5, 0), (2, 7, 0), True, ""),
        ((2, 7, 0), (3, 0, 0), False,
         "measured right: calls in order, clones on given inputs"),
        ((3, 0, 0), None, False, "Keras 3 clones with new code, not affected"),
    ),
    "tensorflow": (
        ((0, 0, 0), (1, 4, 0), False,
         "no tf.keras before 1.4 (only tf.contrib.keras): not examined"),
        ((1, 4, 0), (1, 15, 0), True, ""),
        ((1, 15, 0), (2, 0, 0), True, ""),
        # Every clone is made from the model's config (reconstruct_from_config).
        ((2, 0, 0), (2, 6, 0), True, ""),
        # tf_keras or Keras 3 from 2.16: the keras family's rows decide.
        ((2, 6, 0), None, False, "its tf.keras is the keras package"),
    ),
}
FAMILIES = tuple(sorted(RELEASES))


# What a release's rebuild routines get wrong, as what a model has that meets
# it: the risks _check finds in a model. Each rule answers the risks it is
# named for here; a target meets the risks of its rules, and those its row
# declares besides (more_risks=...). A new rule or row adds its risks here, and a
# new rule names the bug it fixes in _bugs.BUGS.
MASKED_CALL = "masked call"  # a layer called on a masked tensor: its mask recorded
MULTI_OUTPUT_MASK = "multi-output mask"  # several outputs, one mask between them
TENSOR_ARGUMENTS = "tensor arguments"  # tensors of the original graph among call arguments
STATE_INPUTS = "state inputs"  # an RNN's initial_state / constants: inputs and arguments
SHARED_MODEL = "shared model"  # a model called more than once
NESTED_MASKED = "nested masked"  # a model fed masked tensors
NESTED_OUTPUT_MASKS = "nested output masks"  # a model in a model, its outputs masked
LAMBDA_MASK = "lambda mask"  # Lambda(fn, mask=...): its config has no mask
FROZEN_NESTED = "frozen nested model"  # a model in a model, trainable = False
SURPLUS_MASKS = "surplus masks"  # compute_mask gives more masks than the layer has outputs
# a tensor keyword argument made at or after its call's depth
ARGUMENT_MADE_LATER = "argument made later"
CALLS_OUT_OF_ORDER = "calls out of order"  # a model's from_config makes a layer's calls reordered
# a layer in a Sequential model, fed a mask, whose own compute_mask its flag denies (Bidirectional)
MASK_FLAG_DENIED = "mask flag denied"
INPUT_RETURNED = "input returned"  # a layer returning its masked input tensor unchanged
UNTAKEN_INPUT = "untaken input"  # a model input no layer takes as input (a mask= tensor)
# a tensor argument of a layer call (not one of its inputs) that a model's config leaves out
ARGUMENT_NOT_IN_CONFIG = "argument not in config"
# a layer whose output only call arguments take: the model's walk leaves it out
ARGUMENT_MAKER_LEFT_OUT = "argument maker left out"
# ARGUMENT_NOT_IN_CONFIG inside a nested model: the clone routine made the model from its config
NESTED_ARGUMENT_NOT_IN_CONFIG = "nested argument not in config"
# GivenInputLayersKept and GivenInputLayersTaken answer how a clone is made
# (on given input_tensors), CustomObjectsInScope how a folder is loaded (with
# custom_objects): nothing a model has.
RULE_RISKS = {
    "CopyNodeArguments": (MASKED_CALL, SHARED_MODEL, NESTED_MASKED),
    "PropagatedMaskNotPassedBack": (MASKED_CALL, TENSOR_ARGUMENTS),
    "LayerCallPropagatesMasks": (MASKED_CALL, NESTED_MASKED),
    "RecordedOutputMasks": (MULTI_OUTPUT_MASK, NESTED_MASKED),
    "OneMaskPerOutput": (MULTI_OUTPUT_MASK,),
    "MapTensorsInCallArguments": (TENSOR_ARGUMENTS,),
    "ArgumentsMadeBeforeTheirCalls": (ARGUMENT_MADE_LATER,),
    "ArgumentsInInputsPassedOnce": (STATE_INPUTS,),
    "InputLayerPassesMask": (NESTED_MASKED,),
    "MaskAlreadyComputedKept": (NESTED_OUTPUT_MASKS,),
    "LambdaMaskKept": (LAMBDA_MASK,),
    "LambdaMaskWritten": (LAMBDA_MASK,),
    "LambdaMaskRead": (LAMBDA_MASK,),
    "TrainableKept": (FROZEN_NESTED,),
    "TrainableWrittenInConfig": (FROZEN_NESTED,),
    "TrainableReadFromConfig": (FROZEN_NESTED,),
    "GivenInputLayersKept": (),
    "GivenInputLayersTaken": (),
    "LayerCallsKeptInOrder": (CALLS_OUT_OF_ORDER,),
    "OwnComputeMaskCounted": (MASK_FLAG_DENIED,),
    "MaskSetOnCopiedOutputs": (INPUT_RETURNED,),
    "MaskOnCopiedOutputs": (INPUT_RETURNED,),
    "MasksPairedWithOutputs": (SURPLUS_MASKS,),
    "ExplicitMaskRecorded": (UNTAKEN_INPUT,),
    "TensorArgumentsWritten": (ARGUMENT_NOT_IN_CONFIG,),
    "TensorArgumentsRead": (ARGUMENT_NOT_IN_CONFIG,),
    "ArgumentMakersWalked": (ARGUMENT_MAKER_LEFT_OUT,),
    "NestedModelArgumentsKept": (NESTED_ARGUMENT_NOT_IN_CONFIG,),
    # How a clone finds its nested layers' classes: check loads the model with
    # every class named (its custom objects), and its clones find them alike.
    "NestedLayerClassesKept": (),
    "SavedModelLoadedFromConfig": (),  # its rows' more_risks: which the release gets wrong
    "CustomObjectsInScope": (),
}
# The checks (_check.CHECKS) that a routine's mistakes endanger: the clone
# routines clone (multi_gpu_model clones too; a Sequential model is cloned by
# the Sequential one, whose risks are its layers', nested models' or not);
# the routine that calls a model on new tensors nests it, calls it twice and
# splits it for multi_gpu_model; Layer.__call__'s mask bookkeeping runs for
# every call of a nested model, whichever routine (or the loading) calls it;
# a model's from_config loads it and makes it again from its own config
# (the from_config check), and its get_config writes what both read.
# Every routine but the clones runs for a model nested in another whenever
# that one is loaded or cloned (multi_gpu_model's cpu_relocation clones).
# tf.keras 1.15's clone routine makes the clone's layer calls in _make_new_nodes.
# tf.keras 1.14 - 2.5 (keras 2.5 - 2.6) make each layer with clone_model's clone_function,
# _clone_layer.
CLONE_ROUTINES = ("clone_functional_model", "make_new_nodes", "clone_sequential_model",
                  "clone_layer")
CLONE_CHECKS = ("clone", "clone_of_clone", "multi_gpu", "original_unchanged")
ROUTINE_CHECKS = {
    "clone_functional_model": CLONE_CHECKS,
    "make_new_nodes": CLONE_CHECKS,
    "clone_sequential_model": ("clone", "clone_of_clone", "multi_gpu"),
    "clone_layer": ("clone", "clone_of_clone", "multi_gpu"),
    "run_internal_graph": ("nested", "called_twice", "multi_gpu", "original_unchanged"),
    "set_mask_metadata": ("load", "clone", "clone_of_clone", "nested", "called_twice",
                          "multi_gpu"),
    "from_config": ("load", "from_config"),
    # What from_config and, from tf.keras 2.0, every clone (multi_gpu_model's
    # cpu_relocation too) rebuild the model with.
    "reconstruct_from_config": ("load", "from_config", "clone", "clone_of_clone", "multi_gpu"),
    # A Sequential computed by its own loop: nested, and where it has no
    # input shape (the model itself: what `load` compares).
    "call_and_compute_mask": ("load", "nested", "called_twice", "multi_gpu"),
    # Layer.__call__ builds the model (and its clone): what `load` compares, and
    # what the routine that calls a model on new tensors, right, is compared with.
    "call": ("load", "nested", "called_twice", "multi_gpu"),
    "set_connectivity_metadata": ("clone", "clone_of_clone", "nested", "called_twice",
                                  "multi_gpu"),
    "get_config": ("load", "from_config"),
    # The SavedModel loader (load_model of a folder).
    "load": ("load",),
    # The walk that gathers a model's layers and nodes (tf.keras 1.4 - 1.6's
    # __init__, _map_graph_network after): what the clone and the model called
    # on new tensors compute from.
    "init": ("clone", "clone_of_clone", "nested", "called_twice", "multi_gpu"),
    "map_graph_network": ("clone", "clone_of_clone", "nested", "called_twice", "multi_gpu"),
}
NESTED_MODEL_CHECKS = ("load", "from_config", "clone", "clone_of_clone", "multi_gpu")
# The SavedModel loader: only load_model of a SavedModel folder runs it, never
# an .h5 file's load, a config or a clone.
SAVED_MODEL_ROUTINES = ("load",)


class Target(object):
    """A patched function of a family's releases [first, past). A plain
    class: collections.namedtuple costs 0.3 ms a class on Python 3.6, in
    every patch(). `risks`: what in a model its release's routine gets
    wrong: what its rules answer (RULE_RISKS), and `more_risks` that its
    rules answer only on some releases. `decorator`: the decorator of the
    def (its text in the source), where what the target holds is the
    function it made; the fix is built from the def and decorated alike."""

    __slots__ = ("family", "module", "attribute", "first", "past", "rules", "why", "risks",
                 "decorator")

    def __init__(self, family, module, attribute, first, past, rules, why, more_risks=(),
                 decorator=None):
        self.family, self.module, self.attribute = family, module, attribute
        self.first, self.past, self.rules, self.why = first, past, rules, why
        self.decorator = decorator
        self.risks = tuple(risk for rule in rules for risk in RULE_RISKS[rule]) + more_risks

    def __repr__(self):
        return "Target({})".format(", ".join(repr(getattr(self, name)) for name in self.__slots__))

    def routine(self):
        """The routine, a key of ROUTINE_CHECKS: the attribute without its
        class and underscores ("call" for __call__)."""
        return self.attribute.rpartition(".")[2].strip("_")


# What is patched: each target (a function, or Class.method, of a module of
# the family) on the family's releases [first, past), with the rules of
# _fix applied in this order. Every affected release aliases node.arguments.
# Up to tf.keras 1.13 a layer's config has no Lambda mask and a model's none
# of its trainable, and up to 1.14 a model's config none of its calls' tensor
# arguments: what every clone routine up to there loses, the Sequential one's
# too. Every functional clone routine, to 1.14, leaves the input layers of
# given input_tensors unmapped.
# What the Sequential clone routine's copy of a layer keeps (it has no input
# layers to map). Every clone routine makes a nested model from its config,
# whose from_config finds its layers' classes by name (tf.keras 1.14 - 2.5 in
# _clone_layer).
SEQUENTIAL_KEPT = ("NestedLayerClassesKept", "NestedModelArgumentsKept", "LambdaMaskKept",
                   "TrainableKept")
KEPT_IN_THE_CLONE = SEQUENTIAL_KEPT + ("GivenInputLayersKept",)
CLONE_RULES = ("CopyNodeArguments", "LayerCallPropagatesMasks", "RecordedOutputMasks",
               "MapTensorsInCallArguments", "ArgumentsMadeBeforeTheirCalls",
               "ArgumentsInInputsPassedOnce") + KEPT_IN_THE_CLONE
# keras's routine that calls a model on new tensors, 2.0.7 - 2.3.1. From 2.1.6
# it raises for more masks than outputs: those rows meet SURPLUS_MASKS too.
KERAS_NETWORK_RULES = ("CopyNodeArguments", "OneMaskPerOutput", "MapTensorsInCallArguments",
                       "ArgumentsMadeBeforeTheirCalls")
# tf.keras before 1.9 kept one mask when compute_mask returned None for several outputs.
NETWORK_RULES_BEFORE_1_9 = ("CopyNodeArguments", "OneMaskPerOutput", "MapTensorsInCallArguments",
                            "ArgumentsMadeBeforeTheirCalls", "InputLayerPassesMask")
TARGETS = (
    Target("keras", "keras.models", "_clone_functional_model", (2, 0, 7), (2, 4, 0),
           CLONE_RULES,
           "clone_model of a functional model: outputs dropped, masks lost or pinned"),
    Target("keras", "keras.models", "_clone_sequential_model", (2, 0, 7), (2, 4, 0),
           SEQUENTIAL_KEPT,
           "clone_model of a Sequential model: each layer made from its config, which has "
           "no Lambda mask, no trainable of a model and no tensor argument of a call in a "
           "nested model"),
    Target("keras", "keras.engine.topology", "Container.run_internal_graph", (2, 0, 0), (2, 0, 3),
           ("CopyNodeArguments", "PropagatedMaskNotPassedBack", "MapTensorsInCallArguments",
            "ArgumentsMadeBeforeTheirCalls", "InputLayerPassesMask"),
           "calling a model on new tensors: each call's masks written into the original's "
           "nodes, and the masks Layer.__call__ recorded there passed back; a masked tensor "
           "refused by the model's input layer"),
    Target("keras", "keras.engine.topology", "Container.run_internal_graph", (2, 0, 3), (2, 0, 7),
           ("CopyNodeArguments", "MapTensorsInCallArguments", "ArgumentsMadeBeforeTheirCalls",
            "InputLayerPassesMask"),
           "calling a model on new tensors: each call's masks written into the original's "
           "nodes; a masked tensor refused by the model's input layer. (Layer.__call__ before "
           "2.0.7 cannot build a multi-output layer with one mask, so OneMaskPerOutput has "
           "nothing to answer there.)"),
    Target("keras", "keras.engine.topology", "Container.run_internal_graph", (2, 0, 7), (2, 1, 6),
           KERAS_NETWORK_RULES + ("InputLayerPassesMask",),
           "calling a model on new tensors (nesting, multi_gpu_model, TimeDistributed)"),
    Target("keras", "keras.engine.topology", "Container.run_internal_graph", (2, 1, 6), (2, 2, 0),
           KERAS_NETWORK_RULES + ("InputLayerPassesMask",),
           "the same; from 2.1.6 more masks than outputs raise (zip kept the first before)",
           more_risks=(SURPLUS_MASKS,)),
    Target("keras", "keras.engine.network", "Network.run_internal_graph", (2, 2, 0), (2, 2, 3),
           KERAS_NETWORK_RULES + ("InputLayerPassesMask",),
           "calling a model on new tensors (nesting, multi_gpu_model, TimeDistributed); "
           "2.2 moved Container to keras.engine.network.Network", more_risks=(SURPLUS_MASKS,)),
    Target("keras", "keras.engine.network", "Network.run_internal_graph", (2, 2, 3), (2, 4, 0),
           KERAS_NETWORK_RULES,
           "calling a model on new tensors; from 2.2.3 InputLayer supports masking itself",
           more_risks=(SURPLUS_MASKS,)),
    Target("keras", "keras.engine.topology", "Container.from_config", (2, 0, 0), (2, 0, 7),
           ("LambdaMaskRead", "TrainableReadFromConfig", "TensorArgumentsRead"),
           "a model made from its config (loading, and every nested model of a clone): a frozen "
           "model comes back trainable, and a call without its tensor arguments"),
    Target("keras", "keras.engine.topology", "Container.from_config", (2, 0, 7), (2, 2, 0),
           ("LayerCallsKeptInOrder", "LambdaMaskRead", "TrainableReadFromConfig",
            "TensorArgumentsRead"),
           "a model made from its config (loading, and every nested model of a clone): a layer's "
           "calls made out of order where one waits for another's (keras-team/keras#11159; "
           "before 2.0.7 such a call raises instead), and a frozen model comes back trainable"),
    Target("keras", "keras.engine.network", "Network.from_config", (2, 2, 0), (2, 2, 5),
           ("LayerCallsKeptInOrder", "LambdaMaskRead", "TrainableReadFromConfig",
            "TensorArgumentsRead"),
           "the same routine in Network; 2.2.5 keeps the order"),
    Target("keras", "keras.engine.network", "Network.from_config", (2, 2, 5), (2, 4, 0),
           ("LambdaMaskRead", "TrainableReadFromConfig", "TensorArgumentsRead"),
           "the same; a frozen model comes back trainable"),
    Target("keras", "keras.engine.topology", "Container.get_config", (2, 0, 0), (2, 2, 0),
           ("TrainableWrittenInConfig", "LambdaMaskWritten", "TensorArgumentsWritten"),
           "a model's config (what a file saves, what loading and a clone's nested models are "
           "made from) has no trainable and no Lambda's mask, and leaves a call's tensor "
           "arguments out"),
    Target("keras", "keras.engine.network", "Network.get_config", (2, 2, 0), (2, 4, 0),
           ("TrainableWrittenInConfig", "LambdaMaskWritten", "TensorArgumentsWritten"),
           "the same routine in Network"),
    Target("keras", "keras.models", "Sequential.get_config", (2, 0, 0), (2, 2, 0),
           ("TrainableWrittenInConfig", "LambdaMaskWritten"),
           "a Sequential model's config: the list of its layers' configs, which leave a frozen "
           "Sequential model's layers trainable (its flag does not set theirs): nested in "
           "another, it comes back trainable from a config or file"),
    Target("keras", "keras.engine.sequential", "Sequential.get_config", (2, 2, 0), (2, 4, 0),
           ("TrainableWrittenInConfig", "LambdaMaskWritten"),
           "the same routine, moved to keras.engine.sequential in 2.2 (a dict of its name and "
           "its layers' configs from 2.2.3)"),
    Target("keras", "keras.models", "Sequential.from_config", (2, 0, 0), (2, 2, 0),
           ("LambdaMaskRead",),
           "a Sequential model made from its config: its Lambdas made without their masks"),
    Target("keras", "keras.engine.sequential", "Sequential.from_config", (2, 2, 0), (2, 4, 0),
           ("LambdaMaskRead",), "the same routine, moved to keras.engine.sequential in 2.2"),
    # tf.keras: the same routines, moved from module to module by TensorFlow.
    Target("tensorflow", "tensorflow.python.keras._impl.keras.models", "_clone_functional_model",
           (1, 4, 0), (1, 9, 0), CLONE_RULES,
           "tf.keras's clone routine (used by model_to_estimator) is the Keras 2.0.8 one, with "
           "tf.keras's masks recorded on the tensors"),
    Target("tensorflow", "tensorflow.python.keras.models", "_clone_functional_model",
           (1, 9, 0), (1, 11, 0), CLONE_RULES,
           "the clone routine, moved out of _impl in 1.9"),
    Target("tensorflow", "tensorflow.python.keras.models", "_clone_functional_model",
           (1, 11, 0), (1, 13, 0),
           ("MapTensorsInCallArguments", "ArgumentsMadeBeforeTheirCalls",
            "ArgumentsInInputsPassedOnce") + KEPT_IN_THE_CLONE,
           "the clone routine of 1.11 keeps no masks and only reads node.arguments, but still "
           "passes an RNN's initial_state both as input and as argument (AssertionError); "
           "1.13 clones a seq2seq right (measured)"),
    Target("tensorflow", "tensorflow.python.keras.models", "_clone_functional_model",
           (1, 13, 0), (1, 14, 0),
           ("MapTensorsInCallArguments", "ArgumentsMadeBeforeTheirCalls",
            "ArgumentsInInputsPassedOnce") + KEPT_IN_THE_CLONE,
           "the clone routine of 1.13 makes each layer from its config, which has no Lambda "
           "mask and no trainable of a model: the clone's Lambda has no mask, and a frozen "
           "nested model is trainable (1.14 writes the mask into Lambda's config and sets "
           "a model's trainable on its layers); a tensor keyword argument (a custom layer's, "
           "Bidirectional's initial_state) is passed back as it was"),
    Target("tensorflow", "tensorflow.python.keras.models", "_clone_functional_model",
           (1, 14, 0), (1, 15, 0),
           ("MapTensorsInCallArguments", "ArgumentsMadeBeforeTheirCalls",
            "ArgumentsInInputsPassedOnce", "GivenInputLayersKept"),
           "the clone routine of 1.14 (kwargs = node.arguments or {}) still passes a tensor "
           "keyword argument back as it was, and Bidirectional's initial_state twice; a clone "
           "on given input tensors cannot be loaded once saved"),
    Target("tensorflow", "tensorflow.python.keras.models", "_clone_layer", (1, 14, 0), (1, 15, 0),
           ("NestedLayerClassesKept", "NestedModelArgumentsKept"),
           "the copy of each layer that 1.14's clone routines make (clone_model's default "
           "clone_function, which it reads when called): a nested model made from its config, "
           "which leaves a call's tensor arguments out (1.15 writes them), its layers' classes "
           "found by name"),
    Target("tensorflow", "tensorflow.python.keras.models", "_clone_layer", (1, 15, 0), (2, 6, 0),
           ("NestedLayerClassesKept",),
           "the same copy of each layer: a nested model's layers' classes found by name "
           "(Unknown layer for a custom one not registered)"),
    # 1.15 (tensorflow_core, imported as tensorflow.python...): the call
    # loop moved to _make_new_nodes, whose depths count keyword arguments.
    Target("tensorflow", "tensorflow.python.keras.models", "_make_new_nodes",
           (1, 15, 0), (2, 0, 0), ("MapTensorsInCallArguments",),
           "the clone routine's layer calls, moved to _make_new_nodes in 1.15 (kwargs = "
           "node.arguments or {}): a tensor keyword argument passed back as it was, and the "
           "clone refused (Graph disconnected)"),
    Target("tensorflow", "tensorflow.python.keras.models", "_clone_functional_model",
           (1, 15, 0), (2, 0, 0), ("GivenInputLayersKept",),
           "the clone routine of 1.15: a clone on given input tensors calls a copy of the "
           "model's input layer on them, and cannot be loaded once saved"),
    Target("tensorflow", "tensorflow.python.keras._impl.keras.models", "_clone_sequential_model",
           (1, 4, 0), (1, 9, 0),
           SEQUENTIAL_KEPT,
           "tf.keras's clone of a Sequential model: each layer made from its config, which "
           "has no Lambda mask and no trainable of a model"),
    Target("tensorflow", "tensorflow.python.keras.models", "_clone_sequential_model",
           (1, 9, 0), (1, 14, 0),
           SEQUENTIAL_KEPT,
           "the same, moved out of _impl in 1.9 (1.14 writes the mask into Lambda's config "
           "and sets a model's trainable on its layers)"),
    Target("tensorflow", "tensorflow.python.layers.base", "Network._run_internal_graph",
           (1, 4, 0), (1, 5, 0), NETWORK_RULES_BEFORE_1_9,
           "calling a tf.keras model on new tensors: the first call's mask pinned in the "
           "original's nodes (kwargs['mask'] = ... unless there), and a None mask flattened "
           "to one mask for all outputs (Could not compute output)"),
    Target("tensorflow", "tensorflow.python.layers.network", "GraphNetwork._run_internal_graph",
           (1, 5, 0), (1, 7, 0), NETWORK_RULES_BEFORE_1_9,
           "the same routine, moved to tf.layers' GraphNetwork in 1.5"),
    Target("tensorflow", "tensorflow.python.keras._impl.keras.engine.network",
           "Network._run_internal_graph", (1, 7, 0), (1, 9, 0), NETWORK_RULES_BEFORE_1_9,
           "the same routine, moved to tf.keras's Network in 1.7 (kwargs.setdefault)"),
    Target("tensorflow", "tensorflow.python.keras.engine.network", "Network._run_internal_graph",
           (1, 9, 0), (1, 11, 0),
           ("CopyNodeArguments", "MapTensorsInCallArguments", "ArgumentsMadeBeforeTheirCalls",
            "InputLayerPassesMask"),
           "the same routine, out of _impl in 1.9, which expands a None mask itself"),
    Target("tensorflow", "tensorflow.python.keras.engine.network", "Network._run_internal_graph",
           (1, 11, 0), (1, 13, 0),
           ("CopyNodeArguments", "MapTensorsInCallArguments", "ArgumentsMadeBeforeTheirCalls",
            "InputLayerPassesMask"),
           "calling a tf.keras model on new tensors: each call's mask pinned in the "
           "original's nodes, a tensor keyword argument of a custom layer passed back as it "
           "was, and a masked tensor refused by the model's input layer (an RNN's states "
           "reach it as inputs from 1.11)"),
    Target("tensorflow", "tensorflow.python.keras.engine.network", "Network._run_internal_graph",
           (1, 13, 0), (1, 14, 0),
           ("CopyNodeArguments", "MapTensorsInCallArguments", "ArgumentsMadeBeforeTheirCalls"),
           "the same; from 1.13 InputLayer supports masking itself"),
    Target("tensorflow", "tensorflow.python.keras.engine.network", "Network._run_internal_graph",
           (1, 14, 0), (1, 15, 0),
           ("CopyNodeArguments", "MapTensorsInCallArguments", "ArgumentsMadeBeforeTheirCalls",
            "ArgumentsInInputsPassedOnce"),
           "the same, rewritten in 1.14 to call each layer on all its node's inputs: "
           "Bidirectional gets its initial_state twice"),
    Target("tensorflow", "tensorflow.python.keras._impl.keras.engine.topology",
           "Network.from_config", (1, 4, 0), (1, 7, 0),
           ("LayerCallsKeptInOrder", "LambdaMaskRead", "TrainableReadFromConfig",
            "TensorArgumentsRead"),
           "a model made from its config (loading, and every nested model of a clone): a layer's "
           "calls made out of order where one waits for another's (keras-team/keras#11159), "
           "and a frozen model comes back trainable"),
    Target("tensorflow", "tensorflow.python.keras._impl.keras.engine.network",
           "Network.from_config", (1, 7, 0), (1, 9, 0),
           ("LayerCallsKeptInOrder", "LambdaMaskRead", "TrainableReadFromConfig",
            "TensorArgumentsRead"),
           "the same routine, moved to tf.keras's Network in 1.7"),
    Target("tensorflow", "tensorflow.python.keras.engine.network", "Network.from_config",
           (1, 9, 0), (1, 14, 0),
           ("LayerCallsKeptInOrder", "LambdaMaskRead", "TrainableReadFromConfig",
            "TensorArgumentsRead"),
           "the same, out of _impl in 1.9"),
    Target("tensorflow", "tensorflow.python.keras.engine.network", "Network.from_config",
           (1, 14, 0), (1, 15, 0), ("LayerCallsKeptInOrder", "TensorArgumentsRead"),
           "the same; 1.14's trainable setter sets a model's layers' flags, which their "
           "configs carry"),
    Target("tensorflow", "tensorflow.python.keras.engine.network", "Network.from_config",
           (1, 15, 0), (2, 0, 0), ("LayerCallsKeptInOrder",),
           "the same; 1.15's (tensorflow_core) deserializes a call's tensor arguments itself"),
    # tf.keras 2.x, and the keras package 2.6 that is tf.keras of TensorFlow 2.6.
    Target("tensorflow", "tensorflow.python.keras.models", "_clone_functional_model",
           (2, 0, 0), (2, 6, 0), ("GivenInputLayersTaken",),
           "clone_model on given input tensors: each of the model's input layers mapped to "
           "itself, and the clone built on the model's own inputs"),
    Target("keras", "keras.models", "_clone_functional_model", (2, 5, 0), (2, 7, 0),
           ("GivenInputLayersTaken",),
           "the same routine, tf.keras's, in the keras package 2.5 (keras-nightly) and 2.6"),
    Target("keras", "keras.models", "_clone_layer", (2, 5, 0), (2, 7, 0),
           ("NestedLayerClassesKept",),
           "tf.keras's copy of each layer (clone_model's default clone_function), in the keras "
           "package 2.5 and 2.6: a nested model's layers' classes found by name"),
    Target("tensorflow", "tensorflow.python.keras.engine.network", "reconstruct_from_config",
           (2, 0, 0), (2, 3, 0), ("LayerCallsKeptInOrder",),
           "a model made from its config (from_config, loading, and every clone: from 2.0 the "
           "clone routine makes it from its config too): a layer's calls made out of order "
           "where one waits for another's, in eager and in graph mode; the node indices the "
           "clone maps count the calls in the order this makes them"),
    Target("tensorflow", "tensorflow.python.keras.engine.functional", "reconstruct_from_config",
           (2, 3, 0), (2, 6, 0), ("LayerCallsKeptInOrder",),
           "the same, moved to functional.py in 2.3 (2.4 defers a call whose tensor keyword "
           "argument is not made yet, IndexError, to the same queue)"),
    Target("keras", "keras.engine.functional", "reconstruct_from_config", (2, 5, 0), (2, 7, 0),
           ("LayerCallsKeptInOrder",),
           "the same, tf.keras's, in the keras package 2.5 (keras-nightly) and 2.6; 2.7 keeps "
           "the order"),
    Target("tensorflow", "tensorflow.python.keras.saving.saved_model.load", "load", (2, 0, 0),
           (2, 2, 0), ("SavedModelLoadedFromConfig", "CustomObjectsInScope"),
           "load_model of a SavedModel folder: the model revived from the functions traced "
           "when it was saved, not made from its config: its masks lost (other numbers, or no "
           "load), and on 2.1 a model holding a functional model not loaded; load_model gives "
           "it no custom_objects (2.2 loads in their scope)",
           more_risks=(MASKED_CALL,)),
    Target("tensorflow", "tensorflow.python.keras.saving.saved_model.load", "load", (2, 2, 0),
           (2, 5, 0), ("SavedModelLoadedFromConfig",),
           "the same loader: a frozen model nested in another (in TimeDistributed) loaded "
           "trainable; on 2.4 a model of MultiHeadAttention computes other numbers",
           more_risks=(FROZEN_NESTED,)),
    Target("tensorflow", "tensorflow.python.keras._impl.keras.engine.topology",
           "Network.get_config", (1, 4, 0), (1, 7, 0),
           ("TrainableWrittenInConfig", "LambdaMaskWritten", "TensorArgumentsWritten"),
           "a model's config (what a file saves, what loading and a clone's nested models are "
           "made from) has no trainable and no Lambda's mask, and leaves a call's tensor "
           "arguments out"),
    Target("tensorflow", "tensorflow.python.keras._impl.keras.engine.network",
           "Network.get_config", (1, 7, 0), (1, 9, 0),
           ("TrainableWrittenInConfig", "LambdaMaskWritten", "TensorArgumentsWritten"),
           "the same routine, moved to tf.keras's Network in 1.7"),
    Target("tensorflow", "tensorflow.python.keras.engine.network", "Network.get_config",
           (1, 9, 0), (1, 14, 0),
           ("TrainableWrittenInConfig", "LambdaMaskWritten", "TensorArgumentsWritten"),
           "the same, out of _impl in 1.9"),
    Target("tensorflow", "tensorflow.python.keras.engine.network", "Network.get_config",
           (1, 14, 0), (1, 15, 0), ("TensorArgumentsWritten",),
           "the same; 1.14's layers carry a frozen model's flag in their configs, and 1.15 "
           "writes a tensor argument as [layer name, node index, tensor index]"),
    Target("tensorflow", "tensorflow.python.keras._impl.keras.models", "Sequential.get_config",
           (1, 4, 0), (1, 7, 0), ("TrainableWrittenInConfig", "LambdaMaskWritten"),
           "tf.keras's Sequential config: the list of its layers' configs, which leave a frozen "
           "Sequential model's layers trainable: nested in another, it comes back trainable from "
           "a config or file (1.14's trainable setter sets its layers' flags)"),
    Target("tensorflow", "tensorflow.python.keras._impl.keras.engine.sequential",
           "Sequential.get_config", (1, 7, 0), (1, 9, 0),
           ("TrainableWrittenInConfig", "LambdaMaskWritten"),
           "the same routine, moved to tf.keras's engine in 1.7"),
    Target("tensorflow", "tensorflow.python.keras.engine.sequential", "Sequential.get_config",
           (1, 9, 0), (1, 14, 0), ("TrainableWrittenInConfig", "LambdaMaskWritten"),
           "the same, out of _impl in 1.9 (a dict of its name and its layers' configs from 1.11)"),
    Target("tensorflow", "tensorflow.python.keras._impl.keras.models", "Sequential.from_config",
           (1, 4, 0), (1, 7, 0), ("LambdaMaskRead",),
           "a Sequential model made from its config: its Lambdas made without their masks (1.14 "
           "writes a Lambda's mask into its config)"),
    Target("tensorflow", "tensorflow.python.keras._impl.keras.engine.sequential",
           "Sequential.from_config", (1, 7, 0), (1, 9, 0), ("LambdaMaskRead",),
           "the same routine, moved to tf.keras's engine in 1.7"),
    Target("tensorflow", "tensorflow.python.keras.engine.sequential", "Sequential.from_config",
           (1, 9, 0), (1, 14, 0), ("LambdaMaskRead",), "the same, out of _impl in 1.9"),
    Target("tensorflow", "tensorflow.python.keras.engine.base_layer", "Layer._set_mask_metadata",
           (1, 9, 0), (1, 11, 0), ("MasksPairedWithOutputs",),
           "Layer.__call__'s mask bookkeeping: masks given to the outputs by their structure, "
           "a lone output taking a whole list of masks (1.14 pairs flat outputs with flat masks)"),
    Target("tensorflow", "tensorflow.python.keras.engine.base_layer", "Layer._set_mask_metadata",
           (1, 11, 0), (1, 14, 0), ("MaskAlreadyComputedKept", "MasksPairedWithOutputs"),
           "the same, and a model called on new tensors has its output masks, which its own "
           "run computed, overwritten with None"),
    Target("tensorflow", "tensorflow.python.keras.engine.sequential",
           "Sequential._call_and_compute_mask", (1, 11, 0), (1, 14, 0), ("OwnComputeMaskCounted",),
           "a Sequential model computed layer by layer (nested, asked for its mask, built "
           "without an input shape) drops the mask of a Bidirectional, whose supports_masking "
           "Layer.__init__ resets; 1.14 computes it with Layer.__call__"),
    Target("tensorflow", "tensorflow.python.layers.base", "Layer.__call__", (1, 4, 0), (1, 9, 0),
           ("MaskOnCopiedOutputs",),
           "tf.layers' Layer.__call__, which tf.keras's calls: it sets the output masks, then "
           "copies an output that is an input without its mask"),
    Target("tensorflow", "tensorflow.python.keras.engine.base_layer", "Layer.__call__",
           (1, 9, 0), (1, 14, 0), ("MaskSetOnCopiedOutputs",),
           "a layer call sets the output masks before it copies an output that is an input "
           "(Activation('linear'), GaussianNoise with training=False): the copy has no mask; "
           "1.14 sets them after"),
    Target("tensorflow", "tensorflow.python.keras.engine.base_layer",
           "Layer._set_connectivity_metadata_", (1, 10, 0), (1, 15, 0), ("ExplicitMaskRecorded",),
           "a layer call records its arguments without the mask the caller gave (mask=m): the "
           "clone and the model called on new tensors compute with the propagated one"),
    # The walk that gathers a model's nodes and layers follows the tensors a
    # call takes as inputs, not those in its keyword arguments, to tf.keras
    # 1.14 (1.15 follows both). Keras 2.0.0 - 2.1.6 walk in Container.__init__,
    # which legacy_model_constructor_support wraps (Keras 1's argument names).
    Target("keras", "keras.engine.topology", "Container.__init__", (2, 0, 0), (2, 0, 4),
           ("ArgumentMakersWalked",),
           "a model's walk of its graph, in Container.__init__, setting the depths as it goes "
           "(build_map_of_graph): a layer whose output only a keyword argument takes is left "
           "out of the model",
           decorator="interfaces.legacy_model_constructor_support"),
    Target("keras", "keras.engine.topology", "Container.__init__", (2, 0, 4), (2, 2, 0),
           ("ArgumentMakersWalked",),
           "a model's walk of its graph, in Container.__init__ (the function Keras 1's "
           "argument names are converted for): a layer whose output only a keyword argument "
           "takes is left out of the model",
           decorator="interfaces.legacy_model_constructor_support"),
    Target("keras", "keras.engine.network", "_map_graph_network", (2, 2, 0), (2, 4, 0),
           ("ArgumentMakersWalked",),
           "a model's walk of its graph, from its outputs through its calls' inputs: a layer "
           "whose output only a keyword argument takes is left out of the model"),
    Target("tensorflow", "tensorflow.python.layers.base", "Network.__init__", (1, 4, 0),
           (1, 5, 0), ("ArgumentMakersWalked",),
           "a tf.keras model's walk of its graph (tf.layers' Network): a layer whose output "
           "only a keyword argument takes is left out of the model"),
    Target("tensorflow", "tensorflow.python.layers.network", "GraphNetwork.__init__", (1, 5, 0),
           (1, 7, 0), ("ArgumentMakersWalked",), "the same walk, in tf.layers' GraphNetwork"),
    Target("tensorflow", "tensorflow.python.keras._impl.keras.engine.network",
           "_map_graph_network", (1, 7, 0), (1, 9, 0), ("ArgumentMakersWalked",),
           "the same walk, a function of tf.keras's network.py from 1.7"),
    Target("tensorflow", "tensorflow.python.keras.engine.network", "_map_graph_network",
           (1, 9, 0), (1, 15, 0), ("ArgumentMakersWalked",),
           "the same, out of _impl in 1.9; 1.15 walks the call arguments too"),
)

DIGITS = "0123456789"


def parse_version(version, leading=False):
    """'2.2.4' -> (2, 2, 4); None for anything that is not a plain release.
    leading=True takes the release a version starts with: '2.2.4rc1' and
    '2.2.4-tf' -> (2, 2, 4). (No regular expression: compiling one costs
    more than the rest of this module, at every `import keras`.)"""
    if not isinstance(version, str):
        return None
    parts = version.split(".", 2)
    if len(parts) == 3 and leading:
        last = parts[2]
        end = 0
        while end < len(last) and last[end] in DIGITS:
            end += 1
        parts[2] = last[:end]
    if len(parts) != 3 or not all(part and all(digit in DIGITS for digit in part)
                                  for part in parts):
        return None
    return tuple(int(part) for part in parts)


def package_of(keras):
    """The package a keras module is of: 'keras', 'tensorflow' (tf.keras;
    TensorFlow 2.0 - 2.1 name it tensorflow_core.keras or
    tensorflow_core.python.keras.api._v2.keras), 'tf_keras'."""
    package = keras.__name__.split(".")[0]
    return "tensorflow" if package == "tensorflow_core" else package


def keras_version(keras):
    """A keras module's version string: its `__version__`; tf.keras of
    TensorFlow 1.4 - 1.8 has none, the Keras inside that TensorFlow has it
    ('2.1.5-tf' on 1.8). None where neither says."""
    version = getattr(keras, "__version__", None)
    if version is None and package_of(keras) == "tensorflow":
        inside = sys.modules.get("tensorflow.python.keras._impl.keras")
        version = getattr(inside, "__version__", None)
    return version


def api_version(keras):
    """The Keras API version of a keras module: keras's own, or tf.keras's
    ('2.1.6-tf' -> (2, 1, 6)); (0, 0, 0) for anything else."""
    return parse_version((keras_version(keras) or "").split("-")[0]) or (0, 0, 0)


def is_affected(family, version):
    """(affected: bool or None, reason: str) for a version string of a family.

    None means the version is not recognised: the caller must not guess.
    """
    parsed = parse_version(version)
    if parsed is None:
        return None, ("{} version {!r} is not a release this package "
                      "recognises".format(family, version))
    for first, past, affected, why in RELEASES[family]:
        if first <= parsed and (past is None or parsed < past):
            if affected:
                why = reason(family, parsed)
            return affected, "{} {}: {}".format(family, version, why)
    raise AssertionError("RELEASES[{!r}] does not cover {}".format(family, version))


def bugs_of(family, version):
    """The bugs (_bugs.BUGS) measured on a release (a version string) of a
    family, in BUGS' order; none where it is not affected or not recognised."""
    return bugs_at(family, parse_version(version)) if is_affected(family, version)[0] else []


def imported_version(family):
    """The `__version__` of a family imported in this process, else None."""
    return getattr(sys.modules.get(family), "__version__", None)


# Where a family's releases run the other family's code: keras 2.4 is a front
# for tf.keras (its routines are TensorFlow's), and tf.keras of TensorFlow
# 2.6 - 2.15 is the keras package. (family, first, past, the family whose
# release decides.)
FRONTS = (("keras", (2, 4, 0), (2, 5, 0), "tensorflow"),
          ("tensorflow", (2, 6, 0), (2, 16, 0), "keras"))


def fronted_family(family, version):
    """The family whose routines a release of `family` runs, where it is a
    front for it (FRONTS); else None."""
    parsed = parse_version(version, leading=True)
    for front, first, past, other in FRONTS:
        if front == family and parsed and first <= parsed < past:
            return other
    return None


def deciding_release(family, version, version_of):
    """(family, version) of the release whose routines a release of `family`
    runs: the other family's where this one is a front for it (FRONTS;
    version_of(family) -> its version string, or None), else its own. For
    `check`, which loads a model with either family's API."""
    other = fronted_family(family, version)
    if other and version_of(other):
        return other, version_of(other)
    return family, version


def is_affected_running(family, version, version_of):
    """is_affected() of the release that runs (deciding_release), with both
    reasons where that is the other family's."""
    decides = deciding_release(family, version, version_of)
    affected, reason = is_affected(*decides)
    if decides[0] != family:
        reason = "{}; {}".format(is_affected(family, version)[1], reason)
    return affected, reason


def bugs_running(family, version, version_of):
    """bugs_of() the release that runs (deciding_release)."""
    return bugs_of(*deciding_release(family, version, version_of))


def targets_for(family, version):
    """The targets to patch in a family of this version string. A version
    that is not recognised (patched only when forced) is taken by the
    release it starts with: '2.2.4-custom' as 2.2.4; 'custom' has none."""
    parsed = parse_version(version, leading=True)
    return [target for target in TARGETS
            if target.family == family and parsed and target.first <= parsed < target.past]


def target_name(target):
    return "{}.{}".format(target.module, target.attribute)


def endangered_checks(family, version, risk, in_nested_model, saved_model=False):
    """The checks a risk of a model endangers on a release (a version string
    of a family), in no order: those of each routine patched there that gets
    the risk wrong, and that the model's route runs (`saved_model`: it is
    loaded from a SavedModel folder); none where the release is not affected."""
    checks = set()
    for target in targets_for(family, version):
        routine = target.routine()
        if risk in target.risks and (saved_model or routine not in SAVED_MODEL_ROUTINES):
            checks.update(ROUTINE_CHECKS[routine])
            if in_nested_model and routine not in CLONE_ROUTINES + SAVED_MODEL_ROUTINES:
                checks.update(NESTED_MODEL_CHECKS)
    return checks
