"""What is affected: which releases of each family have the rebuild bugs
(the version guard), and which of their functions are patched, with which
rules.

A family is a package whose `__version__` decides: `keras` (multi-backend
Keras) or `tensorflow` (its tf.keras). Reads nothing but version strings,
so it costs nothing to import.
"""

import collections
import re

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
         "an earlier call's mask (clone_model does not exist before 2.0.7)"),
        ((2, 0, 7), (2, 2, 5), True,
         "clone_model and calling a model on new tensors keep one output mask "
         "when compute_mask returns one value, and drop or refuse the other "
         "outputs of every multi-output layer"),
        ((2, 2, 5), (2, 4, 0), True,
         "2.2.5 fixed clone_model for layers without masking only: multi-output "
         "masking layers still lose outputs, and nested models lose their masks"),
        ((2, 4, 0), (3, 0, 0), False,
         "Keras >= 2.4 is a front for tf.keras, whose clone_model is correct"),
        ((3, 0, 0), None, False,
         "Keras 3 clones models with new code that is not affected"),
    ),
    "tensorflow": (
        ((0, 0, 0), (1, 12, 0), False,
         "tf.keras before TensorFlow 1.12 has the same bugs, but this release of "
         "keras-clone-fix does not patch it yet: its module paths and routines differ"),
        ((1, 12, 0), (1, 15, 0), True,
         "tf.keras's Network._run_internal_graph writes each call's mask and training "
         "flag into the original's node arguments (kwargs.setdefault): a shared or "
         "nested model's later calls use an earlier call's mask"),
        ((1, 15, 0), None, False,
         "tf.keras of TensorFlow 1.15 and 2.x copies the call arguments: correct"),
    ),
}
FAMILIES = tuple(sorted(RELEASES))

Target = collections.namedtuple("Target", "family module attribute first past rules why")

# What is patched: each target (a function, or Class.method, of a module of
# the family) on the family's releases [first, past), with the rules of
# _fix applied in this order. Every affected release aliases node.arguments.
TARGETS = (
    Target("keras", "keras.models", "_clone_functional_model", (2, 0, 7), (2, 4, 0),
           ("CopyNodeArguments", "LayerCallPropagatesMasks", "RecordedOutputMasks",
            "MapTensorsInCallArguments", "ArgumentsInInputsPassedOnce"),
           "clone_model of a functional model: outputs dropped, masks lost or pinned"),
    Target("keras", "keras.engine.topology", "Container.run_internal_graph", (2, 0, 0), (2, 0, 3),
           ("CopyNodeArguments", "PropagatedMaskNotPassedBack", "MapTensorsInCallArguments"),
           "calling a model on new tensors: each call's masks written into the original's "
           "nodes, and the masks Layer.__call__ recorded there passed back"),
    Target("keras", "keras.engine.topology", "Container.run_internal_graph", (2, 0, 3), (2, 0, 7),
           ("CopyNodeArguments", "MapTensorsInCallArguments"),
           "calling a model on new tensors: each call's masks written into the original's "
           "nodes. (Layer.__call__ before 2.0.7 cannot build a multi-output layer with one "
           "mask, so OneMaskPerOutput has nothing to answer there.)"),
    Target("keras", "keras.engine.topology", "Container.run_internal_graph", (2, 0, 7), (2, 2, 0),
           ("CopyNodeArguments", "OneMaskPerOutput", "MapTensorsInCallArguments"),
           "calling a model on new tensors (nesting, multi_gpu_model, TimeDistributed)"),
    Target("keras", "keras.engine.network", "Network.run_internal_graph", (2, 2, 0), (2, 4, 0),
           ("CopyNodeArguments", "OneMaskPerOutput", "MapTensorsInCallArguments"),
           "calling a model on new tensors (nesting, multi_gpu_model, TimeDistributed); "
           "2.2 moved Container to keras.engine.network.Network"),
    Target("tensorflow", "tensorflow.python.keras.engine.network", "Network._run_internal_graph",
           (1, 12, 0), (1, 15, 0), ("CopyNodeArguments",),
           "calling a tf.keras model on new tensors: each call's mask pinned in the "
           "original's nodes. (Its clone routine only reads node.arguments.)"),
)

_RELEASE_VERSION = re.compile(r"\A(\d+)\.(\d+)\.(\d+)\Z")
_LEADING_RELEASE = re.compile(r"\A(\d+)\.(\d+)\.(\d+)")


def parse_version(version, pattern=_RELEASE_VERSION):
    """'2.2.4' -> (2, 2, 4); None for anything that is not a plain release."""
    match = pattern.match(version) if isinstance(version, str) else None
    return tuple(int(part) for part in match.groups()) if match else None


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
    parsed = parse_version(version, _LEADING_RELEASE)
    return [target for target in TARGETS
            if target.family == family and parsed and target.first <= parsed < target.past]


def target_name(target):
    return "{}.{}".format(target.module, target.attribute)
