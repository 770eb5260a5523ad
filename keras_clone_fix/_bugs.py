"""The bugs this package fixes, as users meet them: one entry a class of
bug, the source of every sentence that says what a release gets wrong: the
one line of RELEASES' reasons (how many bugs, which routes: status(), the
pytest header, the self-check and `check`), the list of `python -m
keras_clone_fix --bugs` and the matrix of docs/releases.md.

To add a bug (a new rule fixes something): add a Bug to BUGS with its words
for users, the routes it breaks, for each family the releases where
unpatched Keras was MEASURED wrong (a test's strict-xfail range in tests/,
whose measurement the commit that set it records; not the range the rule's
targets cover), the rules that fix it and a test that fails unpatched on a
release of each range. A new rule names its bug here (tests/test_affected.py:
every rule fixes a bug of this table). Then rewrite the matrix:
`RELEASES_MATRIX=write pytest tests/test_docs.py` (and the README samples if
a line they show changed: tests/test_readme_samples.py).

Data only, read by _affected.is_affected: it costs nothing to import.
"""

# The routes a bug breaks, in the order a reason names them.
CLONE, CALL, LOAD = "clone", "call", "load"
# Where a short reason sends people for the bugs it counts.
LISTED_BY = "list: python -m keras_clone_fix --bugs"
ROUTE_WORDS = {CLONE: "clone_model", CALL: "calling a model on new tensors",
               LOAD: "loading (from_config)"}
ROUTES = (CLONE, CALL, LOAD)

KERAS_FAMILY = (2, 0, 7), (2, 4, 0)  # keras with clone_model, affected
EVERY_KERAS_2 = (2, 0, 0), (2, 4, 0)  # multi-backend Keras 2.0.0 - 2.3.1
TF_1 = (1, 4, 0), (1, 15, 0)  # tf.keras of TensorFlow 1.4 - 1.14
# Every model there, every rebuild (clone, clone of the clone, nested, called twice, multi_gpu)
EVERY_REBUILD = ("tests/test_faithful_clones.py::"
                 "test_every_rebuild_computes_what_the_model_computes")


class Bug(object):
    """name: a short key; words: what users read; routes: of ROUTES;
    keras, tensorflow: the (first, past) ranges of the family's releases
    measured wrong, unpatched; rules: those that fix it; tests: a test
    (path::name) that fails unpatched on a release of each family's ranges."""
    __slots__ = ("name", "words", "routes", "keras", "tensorflow", "rules", "tests")

    def __init__(self, name, words, routes, keras=(), tensorflow=(), rules=(), tests=()):
        self.name, self.words, self.routes = name, words, routes
        self.keras, self.tensorflow, self.rules, self.tests = keras, tensorflow, rules, tests

    def measured(self, family):
        return getattr(self, family)

    def __repr__(self):
        return "Bug({!r})".format(self.name)


BUGS = (
    # Masks and outputs of a model's layers
    Bug("multi-output outputs in clones",
        "a clone drops a multi-output layer's outputs or masks",
        (CLONE,), keras=(KERAS_FAMILY,), tensorflow=(((1, 4, 0), (1, 11, 0)),),
        rules=("RecordedOutputMasks",),
        tests=("tests/test_fix.py::test_clone_predicts_like_original",
               "tests/test_tf_keras.py::test_two_output_model_cloned")),
    Bug("multi-output outputs in calls",
        "a multi-output layer's outputs dropped or refused in a model called on new tensors",
        (CALL,), keras=(KERAS_FAMILY,), tensorflow=(((1, 4, 0), (1, 9, 0)),),
        rules=("OneMaskPerOutput",),
        tests=("tests/test_call_on_new_tensors.py::test_nested_model_builds_predicts_and_clones",
               "tests/test_tf_keras.py::test_two_output_model_nested")),
    Bug("surplus masks",
        "a layer of one output given several masks: the model after it raises or computes "
        "otherwise",
        (CALL, CLONE), keras=(((2, 1, 6), (2, 4, 0)),), tensorflow=(((1, 10, 0), (1, 14, 0)),),
        rules=("OneMaskPerOutput", "MasksPairedWithOutputs"),
        tests=(EVERY_REBUILD,)),
    Bug("nested masks lost in clones",
        "a clone loses a nested model's masks",
        (CLONE,), keras=(((2, 2, 5), (2, 4, 0)),),
        rules=("RecordedOutputMasks",),
        tests=("tests/test_fix.py::test_clone_predicts_like_original",)),
    Bug("masks pinned in clones",
        "a masked model's clone keeps the original's masks: cloned again or nested, it raises",
        (CLONE,), keras=(KERAS_FAMILY,), tensorflow=(((1, 4, 0), (1, 10, 0)),),
        rules=("LayerCallPropagatesMasks",),
        tests=("tests/test_fix.py::test_clone_cloned_again_or_nested_predicts_like_the_original",
               "tests/test_tf_keras.py::test_masked_clone_cloned_again")),
    Bug("masks written into the original",
        "masks written into the original: a shared masked model's second call uses the first "
        "call's",
        (CALL, CLONE), keras=(EVERY_KERAS_2,), tensorflow=(TF_1,),
        rules=("CopyNodeArguments",),
        tests=("tests/test_call_on_new_tensors.py::"
               "test_shared_model_called_twice_uses_each_calls_own_mask",
               "tests/test_tf_keras.py::"
               "test_shared_masked_model_called_twice_uses_each_calls_own_mask")),
    Bug("recorded masks passed back",
        "a masked model called on new tensors is given the original's mask",
        (CALL,), keras=(((2, 0, 0), (2, 0, 3)),),
        rules=("PropagatedMaskNotPassedBack",),
        tests=("tests/test_model_boundary.py::test_a_model_boundary_changes_nothing",)),
    Bug("masked tensors refused",
        "a masked tensor refused by a model (does not support masking)",
        (CALL,), keras=(((2, 0, 0), (2, 2, 3)),), tensorflow=(((1, 4, 0), (1, 13, 0)),),
        rules=("InputLayerPassesMask",),
        tests=("tests/test_model_boundary.py::test_a_model_boundary_changes_nothing",)),
    Bug("called model's output masks lost",
        "a model called on new tensors loses its output masks",
        (CALL, LOAD), tensorflow=(((1, 11, 0), (1, 14, 0)),),
        rules=("MaskAlreadyComputedKept",),
        tests=("tests/test_model_boundary.py::test_a_model_boundary_changes_nothing",)),
    Bug("nested Sequential drops masks",
        "a nested Sequential drops a Bidirectional's mask",
        (CALL, LOAD), tensorflow=(((1, 11, 0), (1, 14, 0)),),
        rules=("OwnComputeMaskCounted",),
        tests=("tests/test_model_boundary.py::test_a_model_boundary_changes_nothing",)),
    Bug("returned input loses its mask",
        "a layer returning its masked input loses the mask",
        (CLONE, CALL), tensorflow=(((1, 4, 0), (1, 14, 0)),),
        rules=("MaskSetOnCopiedOutputs", "MaskOnCopiedOutputs"),
        tests=(EVERY_REBUILD,)),
    Bug("explicit mask replaced",
        "an explicit mask= replaced by the propagated mask",
        (CLONE, CALL), tensorflow=(((1, 10, 0), (1, 15, 0)),),
        rules=("ExplicitMaskRecorded",),
        tests=(EVERY_REBUILD,)),
    # A call's tensor arguments
    Bug("original's tensors in clones",
        "a tensor keyword argument is the original's in the clone",
        (CLONE,), keras=(KERAS_FAMILY,), tensorflow=(((1, 4, 0), (2, 0, 0)),),
        rules=("MapTensorsInCallArguments",),
        tests=("tests/test_call_arguments.py::test_custom_layer_with_a_tensor_keyword_argument",
               "tests/test_tf_keras.py::test_tensor_keyword_argument")),
    Bug("original's tensors in calls",
        "a tensor keyword argument is the original's in a model called on new tensors",
        (CALL,), keras=(EVERY_KERAS_2,), tensorflow=(TF_1,),
        rules=("MapTensorsInCallArguments",),
        tests=("tests/test_call_arguments.py::test_custom_layer_with_a_tensor_keyword_argument",
               "tests/test_tf_keras.py::test_tensor_keyword_argument")),
    Bug("keyword tensors made after their call",
        "a keyword tensor made after its call: the call takes the original's",
        (CALL, CLONE), keras=(EVERY_KERAS_2,), tensorflow=(TF_1,),
        rules=("ArgumentsMadeBeforeTheirCalls",),
        tests=("tests/test_call_arguments.py::test_custom_layer_with_a_tensor_keyword_argument",
               EVERY_REBUILD)),
    Bug("keyword tensors' makers left out",
        "a layer making only a keyword tensor left out of the model",
        (CALL, CLONE), keras=(EVERY_KERAS_2,), tensorflow=(TF_1,),
        rules=("ArgumentMakersWalked",),
        tests=("tests/test_call_on_new_tensors.py::"
               "test_keyword_tensor_of_a_layer_nothing_else_takes",
               EVERY_REBUILD)),
    Bug("states passed twice in clones",
        "a seq2seq clone passes initial_state or constants twice",
        (CLONE,), keras=(((2, 0, 9), (2, 2, 5)),), tensorflow=(((1, 5, 0), (1, 15, 0)),),
        rules=("ArgumentsInInputsPassedOnce",),
        tests=("tests/test_call_arguments.py::test_seq2seq_clone",
               "tests/test_tf_keras.py::test_seq2seq_cloned",
               "tests/test_tf_keras.py::test_bidirectional_seq2seq")),
    Bug("original's states in calls",
        "a seq2seq model called on new tensors runs on the original's states",
        (CALL,), keras=(((2, 0, 9), (2, 2, 3)),),
        tensorflow=(((1, 5, 0), (1, 11, 0)), ((1, 14, 0), (1, 15, 0))),
        rules=("MapTensorsInCallArguments", "ArgumentsInInputsPassedOnce"),
        tests=("tests/test_call_arguments.py::test_seq2seq_nested",
               "tests/test_tf_keras.py::test_seq2seq_nested",
               "tests/test_tf_keras.py::test_bidirectional_seq2seq")),
    Bug("tensor arguments left out of configs",
        "tensor arguments lost when loaded (left out of a model's config)",
        (LOAD,), keras=(EVERY_KERAS_2,), tensorflow=(TF_1,),
        rules=("TensorArgumentsWritten", "TensorArgumentsRead"),
        tests=("tests/test_faithful_clones.py::test_a_tensor_argument_is_kept_in_the_config",)),
    Bug("nested models' tensor arguments lost in clones",
        "a clone of a model holding a model with a tensor argument computes without it",
        (CLONE,), keras=(KERAS_FAMILY,), tensorflow=(TF_1,),
        rules=("TensorArgumentsWritten", "TensorArgumentsRead", "NestedModelArgumentsKept"),
        tests=("tests/test_faithful_clones.py::"
               "test_a_nested_model_keeps_its_tensor_arguments_in_the_clone",)),
    Bug("nested custom layers unknown in clones",
        "a clone refuses a nested model's custom layer not registered (Unknown layer)",
        (CLONE,), keras=(KERAS_FAMILY, ((2, 5, 0), (2, 7, 0))),
        tensorflow=(((1, 4, 0), (2, 6, 0)),),
        rules=("NestedLayerClassesKept",),
        tests=("tests/test_faithful_clones.py::"
               "test_a_nested_model_is_cloned_with_its_layers_own_classes",
               "tests/test_tf2_keras.py::"
               "test_a_nested_model_is_cloned_with_its_layers_own_classes")),
    # What a layer's config leaves out
    Bug("Lambda mask lost in clones",
        "a clone loses a Lambda's mask",
        (CLONE,), keras=(KERAS_FAMILY,), tensorflow=(((1, 4, 0), (1, 14, 0)),),
        rules=("LambdaMaskKept",),
        tests=(EVERY_REBUILD,)),
    Bug("Lambda mask lost when loaded",
        "a loaded model loses a Lambda's mask",
        (LOAD,), keras=(EVERY_KERAS_2,), tensorflow=(((1, 4, 0), (1, 14, 0)),),
        rules=("LambdaMaskWritten", "LambdaMaskRead"),
        tests=("tests/test_faithful_clones.py::test_lambda_mask_kept_from_its_config_and_file",)),
    Bug("frozen nested models unfrozen in clones",
        "a clone's frozen nested model is trainable",
        (CLONE,), keras=(KERAS_FAMILY,), tensorflow=(((1, 4, 0), (1, 14, 0)),),
        rules=("TrainableKept",),
        tests=("tests/test_faithful_clones.py::test_frozen_model_stays_frozen_in_the_clone",)),
    Bug("frozen models unfrozen when loaded",
        "a loaded model's frozen nested model is trainable",
        (LOAD,), keras=(EVERY_KERAS_2,), tensorflow=(((1, 4, 0), (1, 14, 0)),),
        rules=("TrainableWrittenInConfig", "TrainableReadFromConfig"),
        tests=("tests/test_faithful_clones.py::"
               "test_frozen_model_stays_frozen_from_its_config_and_file",)),
    # How a model is made again
    Bug("layer calls reordered",
        "a layer's calls made out of order by from_config (a nested model cloned, a model "
        "loaded)",
        (CLONE, LOAD), keras=(((2, 0, 7), (2, 2, 5)), ((2, 5, 0), (2, 7, 0))),
        tensorflow=(((1, 4, 0), (2, 6, 0)),),
        rules=("LayerCallsKeptInOrder",),
        tests=("tests/test_faithful_clones.py::"
               "test_layer_calls_keep_their_order_in_a_clone_and_a_loaded_model",
               "tests/test_tf2_keras.py::test_layer_calls_keep_their_order",
               "tests/test_tf2_keras.py::"
               "test_model_to_estimator_predicts_what_the_model_predicts")),
    Bug("clones on input_tensors do not reload",
        "a clone on given input_tensors, saved, does not load",
        (CLONE,), keras=(KERAS_FAMILY,), tensorflow=(((1, 4, 0), (2, 0, 0)),),
        rules=("GivenInputLayersKept",),
        tests=("tests/test_faithful_clones.py::test_clone_on_given_inputs_saves_and_loads",)),
    # A SavedModel folder (model.save(path) on TensorFlow 2) revived from its traced functions
    # (CustomObjectsInScope: a model of custom layers given as load_model's
    # custom_objects is made from its config too, on 2.0 - 2.1.)
    Bug("SavedModel masks lost",
        "a model loaded from a SavedModel folder computes without its masks",
        (LOAD,), tensorflow=(((2, 0, 0), (2, 2, 0)),),
        rules=("SavedModelLoadedFromConfig", "CustomObjectsInScope"),
        tests=("tests/test_saved_model.py::test_loads_the_model_it_was",
               "tests/test_saved_model.py::test_loads_custom_layers_given_either_way")),
    Bug("SavedModel nested models not loaded",
        "a SavedModel folder of a model holding a functional model does not load",
        (LOAD,), tensorflow=(((2, 1, 0), (2, 2, 0)),),
        rules=("SavedModelLoadedFromConfig", "CustomObjectsInScope"),
        tests=("tests/test_saved_model.py::test_loads_the_model_it_was",
               "tests/test_saved_model.py::test_loads_custom_layers_given_either_way")),
    Bug("SavedModel frozen models unfrozen",
        "a model loaded from a SavedModel folder has its frozen nested model trainable",
        (LOAD,), tensorflow=(((2, 2, 0), (2, 5, 0)),),
        rules=("SavedModelLoadedFromConfig",),
        tests=("tests/test_saved_model.py::test_loads_the_model_it_was",
               "tests/test_saved_model.py::test_loads_custom_layers_given_either_way")),
    Bug("SavedModel MultiHeadAttention computes otherwise",
        "a model of MultiHeadAttention loaded from a SavedModel folder computes other numbers",
        (LOAD,), tensorflow=(((2, 4, 0), (2, 5, 0)),),
        rules=("SavedModelLoadedFromConfig",),
        tests=("tests/test_saved_model.py::test_loads_the_model_it_was",)),
    Bug("clones ignore input_tensors",
        "a clone on given input_tensors is built on the model's own inputs",
        (CLONE,), keras=(((2, 5, 0), (2, 7, 0)),), tensorflow=(((2, 0, 0), (2, 6, 0)),),
        rules=("GivenInputLayersTaken",),
        tests=("tests/test_tf2_keras.py::test_clone_on_given_inputs",)),
)


# keras has clone_model from 2.0.7: before, a bug of clones and calls is one of calls.
CLONE_MODEL_FROM = {"keras": (2, 0, 7), "tensorflow": (1, 4, 0)}


def bugs_at(family, release):
    """The bugs measured wrong on a release ((2, 2, 4)) of a family, in BUGS' order."""
    return [bug for bug in BUGS
            if any(first <= release < past for first, past in bug.measured(family))]


def routes_broken(bugs, family, release):
    """The routes (ROUTES' order) that these bugs break on a release: a bug
    of clones is one of calls alone before clone_model (CLONE_MODEL_FROM)."""
    broken = set(route for bug in bugs for route in bug.routes
                 if route != CLONE or release >= CLONE_MODEL_FROM[family])
    return [route for route in ROUTES if route in broken]


def reason(family, release):
    """What a release gets wrong, in a few words: how many bugs, and the
    routes they break ("19 bugs (clone, call, load)"); LISTED_BY names them."""
    bugs = bugs_at(family, release)
    return "{} bug{} ({})".format(len(bugs), "" if len(bugs) == 1 else "s",
                                  ", ".join(routes_broken(bugs, family, release)))
