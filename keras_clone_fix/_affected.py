"""What is affected: which releases of each family have the rebuild bugs
(the version guard), and which of their functions are patched, with which
rules.

A family is a package whose `__version__` decides: `keras` (multi-backend
Keras) or `tensorflow` (its tf.keras). Reads nothing but version strings,
so it costs nothing to import.
"""

import sys

# family -> (first release, first release past the range, affected?, why).
# Ranges are half-open and together cover every version.
RELEASES = {
    "keras": (
        ((0, 0, 0), (2, 0, 0), False,
         "Keras 1.x is not multi-backend Keras 2: its rebuild routines are "
         "other code, not examined by this package"),
        ((2, 0, 0), (2, 0, 7), True,
         "calling a model on new tensors writes each call's masks into the "
         "original's node arguments: a shared or nested model's later calls use "
         "an earlier call's mask, and a masked tensor cannot be passed into a model "
         "(clone_model does not exist before 2.0.7)"),
        ((2, 0, 7), (2, 2, 5), True,
         "clone_model and calling a model on new tensors keep one output mask "
         "when compute_mask returns one value, and drop or refuse the other "
         "outputs of every multi-output layer; before 2.2.3 a masked tensor "
         "cannot be passed into a model"),
        ((2, 2, 5), (2, 4, 0), True,
         "2.2.5 fixed clone_model for layers without masking only: multi-output "
         "masking layers still lose outputs, and nested models lose their masks"),
        ((2, 4, 0), (3, 0, 0), False,
         "Keras >= 2.4 is a front for tf.keras, whose clone_model is correct"),
        ((3, 0, 0), None, False,
         "Keras 3 clones models with new code that is not affected"),
    ),
    "tensorflow": (
        ((0, 0, 0), (1, 4, 0), False,
         "TensorFlow before 1.4 has no tf.keras (only tf.contrib.keras): not examined"),
        ((1, 4, 0), (1, 15, 0), True,
         "tf.keras's routine that calls a model on new tensors writes each call's mask "
         "into the original's node arguments: a shared or nested model's later calls use "
         "an earlier call's mask; before 1.11 it and the clone routine also pass back "
         "recorded tensors of the original graph, and before 1.9 they drop outputs; "
         "before 1.13 a masked tensor cannot be passed into a model, and 1.11 - 1.13 "
         "drop the output masks of a model called on new tensors"),
        ((1, 15, 0), None, False,
         "tf.keras of TensorFlow 1.15 and 2.x copies the call arguments: correct"),
    ),
}
FAMILIES = tuple(sorted(RELEASES))


# What a release's rebuild routines get wrong, as what a model has that meets
# it: the risks _check finds in a model. Each rule answers the risks it is
# named for here; a target meets the risks of its rules, and those its row
# declares besides (more_risks=...). A new rule or row adds its risks here, nowhere else.
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
# GivenInputLayersKept answers how a clone is made (on given input_tensors),
# nothing a model has.
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
    "TrainableKept": (FROZEN_NESTED,),
    "TrainableWrittenInConfig": (FROZEN_NESTED,),
    "TrainableReadFromConfig": (FROZEN_NESTED,),
    "GivenInputLayersKept": (),
    "LayerCallsKeptInOrder": (CALLS_OUT_OF_ORDER,),
}
# The checks (_check.CHECKS) that a routine's mistakes endanger: the clone
# routines clone (multi_gpu_model clones too; a Sequential model is cloned by
# the Sequential one, whose risks are its layers', nested models' or not);
# the routine that calls a model on new tensors nests it, calls it twice and
# splits it for multi_gpu_model; Layer.__call__'s mask bookkeeping runs for
# every call of a nested model, whichever routine (or the loading) calls it;
# a model's from_config loads it, and its get_config writes what is loaded.
# Every routine but the clones runs for a model nested in another whenever
# that one is loaded or cloned (multi_gpu_model's cpu_relocation clones).
CLONE_ROUTINES = ("clone_functional_model", "clone_sequential_model")
ROUTINE_CHECKS = {
    "clone_functional_model": ("clone", "clone_of_clone", "multi_gpu", "original_unchanged"),
    "clone_sequential_model": ("clone", "clone_of_clone", "multi_gpu"),
    "run_internal_graph": ("nested", "called_twice", "multi_gpu", "original_unchanged"),
    "set_mask_metadata": ("load", "clone", "clone_of_clone", "nested", "called_twice",
                          "multi_gpu"),
    "from_config": ("load",),
    "get_config": ("load",),
}
NESTED_MODEL_CHECKS = ("load", "clone", "clone_of_clone", "multi_gpu")


class Target(object):
    """A patched function of a family's releases [first, past). A plain
    class: collections.namedtuple costs 0.3 ms a class on Python 3.6, in
    every patch(). `risks`: what in a model its release's routine gets
    wrong: what its rules answer (RULE_RISKS), and `more_risks` that its
    rules answer only on some releases."""

    __slots__ = ("family", "module", "attribute", "first", "past", "rules", "why", "risks")

    def __init__(self, family, module, attribute, first, past, rules, why, more_risks=()):
        self.family, self.module, self.attribute = family, module, attribute
        self.first, self.past, self.rules, self.why = first, past, rules, why
        self.risks = tuple(risk for rule in rules for risk in RULE_RISKS[rule]) + more_risks

    def __repr__(self):
        return "Target({})".format(", ".join(repr(getattr(self, name)) for name in self.__slots__))

    def routine(self):
        """The routine, a key of ROUTINE_CHECKS: the attribute without its
        class and leading underscore."""
        return self.attribute.rpartition(".")[2].lstrip("_")


# What is patched: each target (a function, or Class.method, of a module of
# the family) on the family's releases [first, past), with the rules of
# _fix applied in this order. Every affected release aliases node.arguments.
# Up to tf.keras 1.13 a layer's config has no Lambda mask and a model's none
# of its trainable: what every clone routine up to there loses, the
# Sequential one's too. Every functional clone routine, to 1.14, leaves the
# input layers of given input_tensors unmapped.
KEPT_IN_THE_CLONE = ("LambdaMaskKept", "TrainableKept", "GivenInputLayersKept")
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
           ("LambdaMaskKept", "TrainableKept"),
           "clone_model of a Sequential model: each layer made from its config, which has "
           "no Lambda mask and no trainable of a model"),
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
           ("TrainableReadFromConfig",),
           "a model made from its config (loading, and every nested model of a clone): a frozen "
           "model comes back trainable"),
    Target("keras", "keras.engine.topology", "Container.from_config", (2, 0, 7), (2, 2, 0),
           ("LayerCallsKeptInOrder", "TrainableReadFromConfig"),
           "a model made from its config (loading, and every nested model of a clone): a layer's "
           "calls made out of order where one waits for another's (keras-team/keras#11159; "
           "before 2.0.7 such a call raises instead), and a frozen model comes back trainable"),
    Target("keras", "keras.engine.network", "Network.from_config", (2, 2, 0), (2, 2, 5),
           ("LayerCallsKeptInOrder", "TrainableReadFromConfig"),
           "the same routine in Network; 2.2.5 keeps the order"),
    Target("keras", "keras.engine.network", "Network.from_config", (2, 2, 5), (2, 4, 0),
           ("TrainableReadFromConfig",), "the same; a frozen model comes back trainable"),
    Target("keras", "keras.engine.topology", "Container.get_config", (2, 0, 0), (2, 2, 0),
           ("TrainableWrittenInConfig",),
           "a model's config (what a file saves, what loading and a clone's nested models are "
           "made from) has no trainable"),
    Target("keras", "keras.engine.network", "Network.get_config", (2, 2, 0), (2, 4, 0),
           ("TrainableWrittenInConfig",), "the same routine in Network"),
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
    Target("tensorflow", "tensorflow.python.keras._impl.keras.models", "_clone_sequential_model",
           (1, 4, 0), (1, 9, 0), ("LambdaMaskKept", "TrainableKept"),
           "tf.keras's clone of a Sequential model: each layer made from its config, which "
           "has no Lambda mask and no trainable of a model"),
    Target("tensorflow", "tensorflow.python.keras.models", "_clone_sequential_model",
           (1, 9, 0), (1, 14, 0), ("LambdaMaskKept", "TrainableKept"),
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
           ("LayerCallsKeptInOrder", "TrainableReadFromConfig"),
           "a model made from its config (loading, and every nested model of a clone): a layer's "
           "calls made out of order where one waits for another's (keras-team/keras#11159), "
           "and a frozen model comes back trainable"),
    Target("tensorflow", "tensorflow.python.keras._impl.keras.engine.network",
           "Network.from_config", (1, 7, 0), (1, 9, 0),
           ("LayerCallsKeptInOrder", "TrainableReadFromConfig"),
           "the same routine, moved to tf.keras's Network in 1.7"),
    Target("tensorflow", "tensorflow.python.keras.engine.network", "Network.from_config",
           (1, 9, 0), (1, 14, 0), ("LayerCallsKeptInOrder", "TrainableReadFromConfig"),
           "the same, out of _impl in 1.9"),
    Target("tensorflow", "tensorflow.python.keras.engine.network", "Network.from_config",
           (1, 14, 0), (1, 15, 0), ("LayerCallsKeptInOrder",),
           "the same; 1.14's trainable setter sets a model's layers' flags, which their "
           "configs carry"),
    Target("tensorflow", "tensorflow.python.keras._impl.keras.engine.topology",
           "Network.get_config", (1, 4, 0), (1, 7, 0), ("TrainableWrittenInConfig",),
           "a model's config (what a file saves, what loading and a clone's nested models are "
           "made from) has no trainable"),
    Target("tensorflow", "tensorflow.python.keras._impl.keras.engine.network",
           "Network.get_config", (1, 7, 0), (1, 9, 0), ("TrainableWrittenInConfig",),
           "the same routine, moved to tf.keras's Network in 1.7"),
    Target("tensorflow", "tensorflow.python.keras.engine.network", "Network.get_config",
           (1, 9, 0), (1, 14, 0), ("TrainableWrittenInConfig",), "the same, out of _impl in 1.9"),
    Target("tensorflow", "tensorflow.python.keras.engine.base_layer", "Layer._set_mask_metadata",
           (1, 11, 0), (1, 14, 0), ("MaskAlreadyComputedKept",),
           "Layer.__call__'s mask bookkeeping: a model called on new tensors has its output "
           "masks, which its own run computed, overwritten with None"),
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


def keras_version(keras):
    """A keras module's version string: its `__version__`; tf.keras of
    TensorFlow 1.4 - 1.8 has none, the Keras inside that TensorFlow has it
    ('2.1.5-tf' on 1.8). None where neither says."""
    version = getattr(keras, "__version__", None)
    if version is None and keras.__name__.split(".")[0] == "tensorflow":
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
            return affected, "{} {}: {}".format(family, version, why)
    raise AssertionError("RELEASES[{!r}] does not cover {}".format(family, version))


def targets_for(family, version):
    """The targets to patch in a family of this version string. A version
    that is not recognised (patched only when forced) is taken by the
    release it starts with: '2.2.4-custom' as 2.2.4; 'custom' has none."""
    parsed = parse_version(version, leading=True)
    return [target for target in TARGETS
            if target.family == family and parsed and target.first <= parsed < target.past]


def target_name(target):
    return "{}.{}".format(target.module, target.attribute)


def endangered_checks(family, version, risk, in_nested_model):
    """The checks a risk of a model endangers on a release (a version string
    of a family), in no order: those of each routine patched there that gets
    the risk wrong; none where the release is not affected."""
    checks = set()
    for target in targets_for(family, version):
        if risk in target.risks:
            routine = target.routine()
            checks.update(ROUTINE_CHECKS[routine])
            if in_nested_model and routine not in CLONE_ROUTINES:
                checks.update(NESTED_MODEL_CHECKS)
    return checks
