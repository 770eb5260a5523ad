"""The version guard table."""

import pytest

from keras_clone_fix import FAMILIES, _build
from keras_clone_fix._affected import (
    FRONTS, NESTED_MODEL_CHECKS, RELEASES, ROUTINE_CHECKS, RULE_RISKS, TARGETS, bugs_of,
    deciding_release, endangered_checks, is_affected, is_affected_running, parse_version,
    target_name, targets_for)
from keras_clone_fix._bugs import BUGS, LISTED_BY, ROUTES, bugs_at
from keras_clone_fix._check import CHECKS


@pytest.mark.parametrize("version, affected", [
    ("1.2.2", False), ("2.0.0", True), ("2.0.6", True),
    ("2.0.7", True), ("2.1.6", True), ("2.2.4", True), ("2.2.5", True), ("2.3.1", True),
    ("2.4.0", False), ("2.5.0", True), ("2.6.0", True), ("2.7.0", False), ("2.15.0", False),
    ("3.0.0", False), ("3.15.1", False),
])
def test_keras_releases(version, affected):
    assert is_affected("keras", version)[0] is affected


@pytest.mark.parametrize("version", ["2.2.4-tf", "2.3.0rc1", "2.2", "", None, 2.2])
def test_unrecognised_versions_are_not_guessed(version):
    affected, reason = is_affected("keras", version)
    assert affected is None and repr(version) in reason


@pytest.mark.parametrize("family", FAMILIES)
def test_ranges_cover_every_version_once_with_a_reason(family):
    ranges = RELEASES[family]
    # an affected range's reason is its bugs' (test_every_affected_release_has_a_bug_measured)
    for (_, past, affected, why), (first, _, _, _) in zip(ranges, ranges[1:]):
        assert past == first and (why or affected)
    assert ranges[0][0] == (0, 0, 0) and ranges[-1][1] is None and ranges[-1][3]


def test_the_watcher_waits_for_every_family_of_the_table():
    assert sorted(FAMILIES) == sorted(RELEASES)


@pytest.mark.parametrize("version, plain, leading", [
    ("2.10.3", (2, 10, 3), (2, 10, 3)),
    ("2.2.4-tf", None, (2, 2, 4)),
    ("2.2.4rc1", None, (2, 2, 4)),
    ("1.15.0.post1", None, (1, 15, 0)),
    ("2.2", None, None),
    ("2.x.4", None, None),
    ("2.2.", None, None),
    ("2.2.4\n", None, (2, 2, 4)),
    ("custom", None, None),
    (None, None, None),
])
def test_parse_version(version, plain, leading):
    assert parse_version(version) == plain
    assert parse_version(version, leading=True) == leading


CONTAINER = ["keras.engine.topology.Container.run_internal_graph",
             "keras.engine.topology.Container.from_config",
             "keras.engine.topology.Container.get_config"]
CLONES = ["keras.models._clone_functional_model", "keras.models._clone_sequential_model"]
# A Sequential model's own get_config (a frozen one nested in another).
CONTAINER_AND_SEQUENTIAL = CONTAINER + ["keras.models.Sequential.get_config",
                                        "keras.models.Sequential.from_config"]
# keras 2.0.0 - 2.1.6 walk the graph in Container.__init__ (decorated).
CONTAINER_WALK = CONTAINER_AND_SEQUENTIAL + ["keras.engine.topology.Container.__init__"]
NETWORK_2_2 = CLONES + ["keras.engine.network.Network.run_internal_graph",
                        "keras.engine.network.Network.from_config",
                        "keras.engine.network.Network.get_config",
                        "keras.engine.sequential.Sequential.get_config",
                        "keras.engine.sequential.Sequential.from_config",
                        "keras.engine.network._map_graph_network"]


@pytest.mark.parametrize("version, patched", [
    ("2.0.3", CONTAINER_WALK), ("2.0.4", CONTAINER_WALK), ("2.0.6", CONTAINER_WALK),
    ("2.0.7", CLONES + CONTAINER_WALK), ("2.1.6", CLONES + CONTAINER_WALK),
    ("2.2.0", NETWORK_2_2), ("2.2.4-custom", NETWORK_2_2), ("2.2.5", NETWORK_2_2),
    ("2.3.1", NETWORK_2_2), ("2.4.0", []),
    ("2.5.0", ["keras.models._clone_functional_model", "keras.models._clone_layer",
               "keras.engine.functional.reconstruct_from_config"]),
    ("2.6.0", ["keras.models._clone_functional_model", "keras.models._clone_layer",
               "keras.engine.functional.reconstruct_from_config"]),
    ("2.7.0", []), ("custom", []), (None, []),
])
def test_keras_targets_for(version, patched):
    assert [target_name(target) for target in targets_for("keras", version)] == patched


@pytest.mark.parametrize("version, affected", [
    ("1.3.0", False), ("1.4.0", True), ("1.5.1", True), ("1.10.1", True), ("1.14.0", True),
    ("1.15.0", True), ("1.15.5", True), ("2.0.4", True), ("2.1.4", True), ("2.2.3", True),
    ("2.5.3", True), ("2.6.5", False), ("2.7.4", False), ("2.21.0", False),
])
def test_tensorflow_releases(version, affected):
    assert is_affected("tensorflow", version)[0] is affected


NETWORK = "tensorflow.python.keras.engine.network.Network._run_internal_graph"
CLONE = "tensorflow.python.keras.models._clone_functional_model"
SEQUENTIAL = "tensorflow.python.keras.models._clone_sequential_model"
CLONE_LAYER = "tensorflow.python.keras.models._clone_layer"  # clone_model's default clone_function
FROM_CONFIG = "tensorflow.python.keras.engine.network.Network.from_config"
GET_CONFIG = "tensorflow.python.keras.engine.network.Network.get_config"
MASKS = "tensorflow.python.keras.engine.base_layer.Layer._set_mask_metadata"
SEQUENTIAL_MASKS = "tensorflow.python.keras.engine.sequential.Sequential._call_and_compute_mask"
CALL = "tensorflow.python.keras.engine.base_layer.Layer.__call__"
ARGUMENTS = "tensorflow.python.keras.engine.base_layer.Layer._set_connectivity_metadata_"
IMPL = "tensorflow.python.keras._impl.keras."
IMPL_CLONES = [IMPL + "models._clone_functional_model", IMPL + "models._clone_sequential_model"]
SEQUENTIAL_CONFIG = "tensorflow.python.keras.engine.sequential.Sequential.get_config"
CONFIG_1_9 = [CLONE, SEQUENTIAL, NETWORK, FROM_CONFIG, GET_CONFIG, SEQUENTIAL_CONFIG,
              "tensorflow.python.keras.engine.sequential.Sequential.from_config"]
WALK = "tensorflow.python.keras.engine.network._map_graph_network"
SAVED_MODEL_LOAD = "tensorflow.python.keras.saving.saved_model.load.load"
LAYERS_CALL = "tensorflow.python.layers.base.Layer.__call__"  # tf.layers', to 1.8


@pytest.mark.parametrize("version, patched", [
    ("1.4.1", IMPL_CLONES + ["tensorflow.python.layers.base.Network._run_internal_graph",
                             IMPL + "engine.topology.Network.from_config",
                             IMPL + "engine.topology.Network.get_config",
                             IMPL + "models.Sequential.get_config",
                             IMPL + "models.Sequential.from_config", LAYERS_CALL,
                             "tensorflow.python.layers.base.Network.__init__"]),
    ("1.5.1", IMPL_CLONES + ["tensorflow.python.layers.network.GraphNetwork._run_internal_graph",
                             IMPL + "engine.topology.Network.from_config",
                             IMPL + "engine.topology.Network.get_config",
                             IMPL + "models.Sequential.get_config",
                             IMPL + "models.Sequential.from_config", LAYERS_CALL,
                             "tensorflow.python.layers.network.GraphNetwork.__init__"]),
    ("1.8.0", IMPL_CLONES + [IMPL + "engine.network.Network._run_internal_graph",
                             IMPL + "engine.network.Network.from_config",
                             IMPL + "engine.network.Network.get_config",
                             IMPL + "engine.sequential.Sequential.get_config",
                             IMPL + "engine.sequential.Sequential.from_config", LAYERS_CALL,
                             IMPL + "engine.network._map_graph_network"]),
    ("1.10.1", CONFIG_1_9 + [MASKS, CALL, ARGUMENTS, WALK]),
    ("1.11.0", CONFIG_1_9 + [MASKS, SEQUENTIAL_MASKS, CALL, ARGUMENTS, WALK]),
    ("1.12.3", CONFIG_1_9 + [MASKS, SEQUENTIAL_MASKS, CALL, ARGUMENTS, WALK]),
    ("1.13.2", CONFIG_1_9 + [MASKS, SEQUENTIAL_MASKS, CALL, ARGUMENTS, WALK]),
    ("1.14.0", [CLONE, "tensorflow.python.keras.models._clone_layer", NETWORK, FROM_CONFIG,
                GET_CONFIG, ARGUMENTS, WALK]),
    ("1.15.0", [CLONE_LAYER, "tensorflow.python.keras.models._make_new_nodes", CLONE,
                FROM_CONFIG]),
    ("1.15.5", [CLONE_LAYER, "tensorflow.python.keras.models._make_new_nodes", CLONE,
                FROM_CONFIG]),
    ("2.0.0", [CLONE_LAYER, CLONE,
               "tensorflow.python.keras.engine.network.reconstruct_from_config",
               SAVED_MODEL_LOAD]),
    ("2.1.4", [CLONE_LAYER, CLONE,
               "tensorflow.python.keras.engine.network.reconstruct_from_config",
               SAVED_MODEL_LOAD]),
    ("2.2.3", [CLONE_LAYER, CLONE,
               "tensorflow.python.keras.engine.network.reconstruct_from_config",
               SAVED_MODEL_LOAD]),
    ("2.3.4", [CLONE_LAYER, CLONE,
               "tensorflow.python.keras.engine.functional.reconstruct_from_config",
               SAVED_MODEL_LOAD]),
    ("2.4.4", [CLONE_LAYER, CLONE,
               "tensorflow.python.keras.engine.functional.reconstruct_from_config",
               SAVED_MODEL_LOAD]),
    ("2.5.3", [CLONE_LAYER, CLONE,
               "tensorflow.python.keras.engine.functional.reconstruct_from_config"]),
    ("2.6.5", []),
])
def test_tensorflow_targets_for(version, patched):
    assert [target_name(target) for target in targets_for("tensorflow", version)] == patched


@pytest.mark.parametrize("family", FAMILIES)
def test_every_target_is_within_the_affected_releases_with_known_rules(family):
    affected = [(first, past) for first, past, is_affected_, _ in RELEASES[family] if is_affected_]
    for target in [target for target in TARGETS if target.family == family]:
        assert affected[0][0] <= target.first < target.past <= affected[-1][1]
        assert target.rules and target.why
        assert all(rule in _build.RULES for rule in target.rules)


# How a clone is made (on given input tensors; its nested layers' classes found
# without their names), no risk of a model: check loads it with every class named.
CLONE_MAKING_RULES = {"GivenInputLayersKept", "GivenInputLayersTaken", "NestedLayerClassesKept"}


@pytest.mark.parametrize("family, version, other, decides", [
    ("keras", "2.4.3", "2.3.4", ("tensorflow", "2.3.4")),  # keras 2.4: a front for tf.keras
    ("keras", "2.5.0", "2.5.3", ("keras", "2.5.0")),  # keras-nightly 2.5: its own copy
    ("keras", "2.6.0", "2.6.5", ("keras", "2.6.0")),
    ("tensorflow", "2.6.5", "2.6.0", ("keras", "2.6.0")),  # tf.keras 2.6 is the keras package
    ("tensorflow", "2.5.3", "2.4.3", ("tensorflow", "2.5.3")),
    ("tensorflow", "2.16.1", "3.3.3", ("tensorflow", "2.16.1")),  # Keras 3: its own
    ("keras", "2.4.3", None, ("keras", "2.4.3")),
])
def test_the_release_that_runs_decides(family, version, other, decides):
    assert deciding_release(family, version, lambda _: other) == decides


def test_every_target_meets_risks_that_endanger_checks_of_its_routine():
    assert set(RULE_RISKS) == set(rule for target in TARGETS for rule in target.rules)
    for target in TARGETS:
        assert target.risks or set(target.rules) <= CLONE_MAKING_RULES, target
        assert target.routine() in ROUTINE_CHECKS, target
    assert set(NESTED_MODEL_CHECKS).union(*ROUTINE_CHECKS.values()) <= set(CHECKS)


@pytest.mark.parametrize("family, version, risk, nested, checks", [
    # keras 2.0.0 - 2.0.6: no clone routine patched (clone_model comes in 2.0.7)
    ("keras", "2.0.6", "masked call", False, {"nested", "called_twice", "multi_gpu",
                                              "original_unchanged"}),
    ("keras", "2.2.4", "state inputs", False, {"clone", "clone_of_clone", "multi_gpu",
                                               "original_unchanged"}),
    # a model nested in another runs the calling routine when the outer is loaded or cloned
    ("keras", "2.2.4", "shared model", True, set(CHECKS)),
    ("tensorflow", "1.13.2", "masked call", False, {"nested", "called_twice", "multi_gpu",
                                                    "original_unchanged"}),
    # more masks than outputs raise from 2.1.6 (zip kept the first before); tf.keras 1.10 -
    # 1.13 give a lone output the whole list in every layer call, 1.14 the first
    ("keras", "2.1.5", "surplus masks", False, set()),
    ("keras", "2.1.6", "surplus masks", False, {"nested", "called_twice", "multi_gpu",
                                                "original_unchanged"}),
    ("tensorflow", "1.12.3", "surplus masks", False, {"load", "clone", "clone_of_clone",
                                                      "nested", "called_twice", "multi_gpu"}),
    ("tensorflow", "1.14.0", "surplus masks", False, set()),
    ("keras", "2.4.0", "masked call", True, set()),
    ("tensorflow", "1.15.0", "shared model", True, set()),
    # 1.15: the clone routine's calls (_make_new_nodes), not a nested model's
    ("tensorflow", "1.15.0", "tensor arguments", True, {"clone", "clone_of_clone", "multi_gpu",
                                                        "original_unchanged"}),
    ("tensorflow", "1.15.0", "calls out of order", False, {"load", "from_config"}),
    # TensorFlow 2.0 - 2.1: every clone is made from the model's config
    ("tensorflow", "2.1.4", "calls out of order", False, {"load", "from_config", "clone",
                                                          "clone_of_clone", "multi_gpu"}),
    ("tensorflow", "2.1.4", "shared model", True, set()),
    # from_config loads a model, makes it again from its own config, and makes each
    # model nested in another that is cloned
    ("keras", "2.2.4", "calls out of order", False, {"load", "from_config"}),
    ("tensorflow", "1.14.0", "calls out of order", True, {"load", "from_config", "clone",
                                                          "clone_of_clone", "multi_gpu"}),
    ("keras", "2.2.5", "calls out of order", True, set()),
    # from tf.keras 2.2 the clone routine makes the clone with the routine from_config runs
    # From tf.keras 2.0 every clone (multi_gpu_model's cpu_relocation too) runs it.
    ("tensorflow", "2.3.4", "calls out of order", False,
     {"load", "from_config", "clone", "clone_of_clone", "multi_gpu"}),
    ("keras", "2.6.0", "calls out of order", False,
     {"load", "from_config", "clone", "clone_of_clone", "multi_gpu"}),
    # a frozen model's config (get_config: a Sequential's own too) and from_config
    ("keras", "2.2.4", "frozen nested model", True, {"load", "from_config", "clone",
                                                     "clone_of_clone", "multi_gpu",
                                                     "original_unchanged"}),
    ("tensorflow", "1.14.0", "frozen nested model", True, set()),
    ("keras", "2.7.0", "calls out of order", False, set()),
    # a Sequential's own loop: nested, and the model itself where it has no input shape
    ("tensorflow", "1.13.2", "mask flag denied", False, {"load", "nested", "called_twice",
                                                         "multi_gpu"}),
    ("tensorflow", "1.14.0", "mask flag denied", True, set()),
    # Layer.__call__ builds the model; the calling routine, right, disagrees with it
    ("tensorflow", "1.10.1", "input returned", False, {"load", "nested", "called_twice",
                                                       "multi_gpu"}),
    ("tensorflow", "1.14.0", "untaken input", False, {"clone", "clone_of_clone", "nested",
                                                      "called_twice", "multi_gpu"}),
    # a nested model whose config leaves a tensor argument out: what the clone routines make
    ("keras", "2.2.4", "nested argument not in config", True,
     {"clone", "clone_of_clone", "multi_gpu", "original_unchanged"}),
    ("tensorflow", "1.14.0", "nested argument not in config", True,
     {"clone", "clone_of_clone", "multi_gpu"}),
    ("tensorflow", "1.15.0", "nested argument not in config", True, set()),
])
def test_endangered_checks(family, version, risk, nested, checks):
    assert endangered_checks(family, version, risk, nested) == checks


@pytest.mark.parametrize("version, risk, nested", [
    ("2.1.4", "masked call", False), ("2.3.4", "frozen nested model", True)])
def test_the_saved_model_loader_endangers_only_a_saved_model_folder_load(version, risk, nested):
    """What only the SavedModel loader gets wrong (its rows' risks) is no
    risk of an .h5 file, a config or a clone: `check` names it for a folder."""
    assert endangered_checks("tensorflow", version, risk, nested) == set()
    assert endangered_checks("tensorflow", version, risk, nested, saved_model=True) == {"load"}


def test_every_rule_fixes_a_bug_of_the_table_and_every_bug_has_rules():
    fixed = set(rule for bug in BUGS for rule in bug.rules)
    assert set(RULE_RISKS) <= fixed, sorted(set(RULE_RISKS) - fixed)
    assert fixed <= set(RULE_RISKS), sorted(fixed - set(RULE_RISKS))
    assert all(bug.rules and bug.tests and bug.words and bug.routes
               and set(bug.routes) <= set(ROUTES) for bug in BUGS)
    names = [bug.name for bug in BUGS]
    assert len(set(names)) == len(names)
    words = [bug.words for bug in BUGS]
    assert len(set(words)) == len(words)


@pytest.mark.parametrize("family", FAMILIES)
def test_each_bug_is_measured_on_affected_releases_patched_with_its_rules(family):
    """A bug's measured ranges lie in affected ranges of RELEASES, and over
    each, a target of the family applies one of the rules that fix it."""
    affected = []  # the affected ranges, those that meet merged
    for first, past, is_affected_, _ in RELEASES[family]:
        if is_affected_ and affected and affected[-1][1] == first:
            affected[-1] = (affected[-1][0], past)
        elif is_affected_:
            affected.append((first, past))
    wrong = []
    for bug in BUGS:
        for first, past in bug.measured(family):
            if not (first < past and any(start <= first and past <= end
                                         for start, end in affected)):
                wrong.append((bug, first, past, "not all affected"))
            if not any(target.family == family and target.first < past and first < target.past
                       and set(target.rules) & set(bug.rules) for target in TARGETS):
                wrong.append((bug, first, past, "no target applies its rules"))
    assert not wrong, wrong


def releases_walked(family):
    """A release of each range of RELEASES and of each measured range of
    BUGS: the first, and each bound of a bug inside an affected range."""
    for first, past, affected, _ in RELEASES[family]:
        bounds = set(bound for bug in BUGS for range_ in bug.measured(family)
                     for bound in range_ if first <= bound and (past is None or bound < past))
        for release in sorted(set([first]) | (bounds if affected else set())):
            yield release, affected


@pytest.mark.parametrize("family", FAMILIES)
def test_every_affected_release_has_a_bug_measured(family):
    """Every release of an affected range is named for a bug, and its reason
    counts them."""
    for release, affected in releases_walked(family):
        if affected:
            bugs = bugs_at(family, release)
            version = ".".join(map(str, release))
            assert bugs and bugs_of(family, version) == bugs, (family, release)
            assert ": {} bug".format(len(bugs)) in is_affected(family, version)[1]


@pytest.mark.parametrize("family", FAMILIES)
def test_the_lines_that_name_a_release_are_short_on_every_release(family):
    """status().reason (a family's decision, then where the bugs are listed)
    at most 160 characters, the pytest header's line at most 200, and
    `check`'s line of the release (its backend, where the list is) too, on
    every release, a front named with each release of the family it runs."""
    fronted = dict((front, other) for front, _, _, other in FRONTS)
    for release, _ in releases_walked(family):
        version = ".".join(map(str, release))
        # The longest ending _activation gives a decision ("; patched" is shorter).
        status = "{}; waiting for `import keras`; {}".format(is_affected(family, version)[1],
                                                          LISTED_BY)
        assert len(status) <= 160, status
        assert len("keras-clone-fix 0.2.0: not patched ({})".format(status)) <= 200
        others = [".".join(map(str, other)) for other, _ in releases_walked(fronted[family])] \
            if family in fronted else [None]
        for other in others:
            line = "{} (backend tensorflow); {}".format(
                is_affected_running(family, version, lambda _: other)[1], LISTED_BY)
            assert len(line) <= 200, line


@pytest.mark.parametrize("family, version, routes, has, has_not", [
    # keras 2.2.5 stopped recording an RNN's states (tests/models.py STATE_ARGUMENTS_RECORDED)
    ("keras", "2.2.4", "clone, call, load", ["states passed twice in clones",
                                             "layer calls reordered"],
     ["original's states in calls"]),
    ("keras", "2.2.5", "clone, call, load", ["nested masks lost in clones"],
     ["states passed twice in clones", "layer calls reordered"]),
    ("keras", "2.0.8", "clone, call, load", [], ["states passed twice in clones"]),
    ("keras", "2.0.6", "call, load", [], []),
    # 1.4's RNN takes initial_state from its arguments only (releases.md)
    ("tensorflow", "1.4.1", "clone, call, load", ["masks written into the original"],
     ["states passed twice in clones"]),
    ("tensorflow", "1.15.5", "clone, load", [], []),
])
def test_a_reason_counts_the_bugs_measured_on_the_release(family, version, routes, has, has_not):
    bugs = [bug.name for bug in bugs_of(family, version)]
    assert set(has) <= set(bugs) and not set(has_not) & set(bugs), bugs
    assert is_affected(family, version)[1] == "{} {}: {} bugs ({})".format(
        family, version, len(bugs), routes)
