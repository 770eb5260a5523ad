"""The fix on real Keras: every clone predicts what its original predicts.

Each case runs patched and unpatched. Unpatched, a case the installed release
is known to break is a strict xfail: it must fail, so each test proves the
bug is there without the patch and gone with it.
"""

import pytest

import keras_clone_fix
from conftest import expect_upstream_failure, skip_module_unless_affected

skip_module_unless_affected()

import keras  # noqa: E402
from keras import backend as K  # noqa: E402
from keras.layers import Lambda  # noqa: E402
from models import (  # noqa: E402
    AFFECTED, LAMBDA_BROKEN, MASKING_BROKEN, NESTED_MASK_BROKEN, NESTS_ON_MASKED_TENSORS, STEPS,
    SplitOutputs, assert_predicts_like, assert_same_predictions, call_on_new_inputs, copy_weights,
    data_for, embedded, embedding_lstm, embedding_lstm_called_with_keywords, features, lstm,
    missing_input_error, node_arguments, predict, tokens, two_inputs_concatenated)

Model = keras.models.Model
pytestmark = pytest.mark.usefixtures("fresh_graph")


def lambda_then_swap():
    x = features()
    pair = Lambda(lambda x: [x + 1, x], output_shape=lambda s: [s, s])(x)
    swapped = Lambda(lambda xs: [xs[1], xs[0]], output_shape=lambda s: [s[1], s[0]])(pair)
    return Model(x, swapped)


def masking_layer_without_mask():
    x = features()
    return Model(x, [lstm(y) for y in SplitOutputs(2)(x)])


def masking_layer_with_mask():
    x = tokens()
    return Model(x, [lstm(y) for y in SplitOutputs(2)(embedded(x))])


def three_outputs():
    x = tokens()
    return Model(x, [lstm(y) for y in SplitOutputs(3)(embedded(x))])


def explicit_mask_list_then_single_mask():
    x = tokens()
    first, second, third = SplitOutputs(3, mask_rule="list")(embedded(x))
    return Model(x, [lstm(y) for y in SplitOutputs(2)(first)] + [lstm(second), lstm(third)])


def multi_input_multi_output():
    a, b = tokens("a"), tokens("b")
    outputs = SplitOutputs(3)([embedded(a), embedded(b)])
    return Model([a, b], [lstm(y) for y in outputs])


def nested_model():
    # The inner model's layer gives a list of masks: Keras before 2.1.6 cannot
    # even call a model holding a single-mask multi-output layer on new inputs.
    inner_input = features("inner")
    inner_outputs = SplitOutputs(2, mask_rule="list")(inner_input)
    inner = Model(inner_input, keras.layers.add(inner_outputs), name="inner")
    x = features()
    first, second = SplitOutputs(2)(x)
    return Model(x, [lstm(inner(first)), lstm(second)])


def shared_across_two_inputs():
    a, b = tokens("a"), tokens("b")
    shared = SplitOutputs(2)
    outputs = shared(embedded(a)) + shared(embedded(b))
    return Model([a, b], [lstm(y) for y in outputs])


def shared_lstm_and_nested_model():
    inner_input = tokens("inner")
    inner = Model(inner_input, embedded(inner_input), name="inner")
    a, b = tokens("a"), tokens("b")
    shared = keras.layers.LSTM(2)
    return Model([a, b], [shared(inner(a)), shared(inner(b))])


def nested_model_on_a_masked_tensor():
    # A Network has supports_masking = False but computes masks: 2.2.5 -
    # 2.3.1 clone it with no mask, and the clone predicts differently.
    inner_input = features("inner")
    inner = Model(inner_input, keras.layers.LSTM(3, return_sequences=True)(inner_input),
                  name="inner")
    x = tokens()
    return Model(x, lstm(inner(embedded(x))))


CASES = [
    (lambda_then_swap, LAMBDA_BROKEN),
    (masking_layer_without_mask, MASKING_BROKEN),
    (masking_layer_with_mask, MASKING_BROKEN),
    (three_outputs, MASKING_BROKEN),
    (explicit_mask_list_then_single_mask, MASKING_BROKEN),
    (multi_input_multi_output, MASKING_BROKEN),
    (nested_model, MASKING_BROKEN),
    (shared_across_two_inputs, MASKING_BROKEN),
    (shared_lstm_and_nested_model, NESTED_MASK_BROKEN),
] + [(nested_model_on_a_masked_tensor, NESTED_MASK_BROKEN)] * NESTS_ON_MASKED_TENSORS


@pytest.mark.parametrize("build, broken", CASES, ids=[case.__name__ for case, _ in CASES])
def test_clone_predicts_like_original(request, clone_mode, build, broken):
    expect_upstream_failure(request, clone_mode, broken, "keras " + keras.__version__)
    model = build()
    assert_same_predictions(model, keras.models.clone_model(model), data_for(model))


@pytest.mark.parametrize("backend_placeholder", [False, True])
def test_clone_on_given_input_tensors(request, clone_mode, backend_placeholder):
    expect_upstream_failure(request, clone_mode, MASKING_BROKEN, "keras " + keras.__version__)
    model = masking_layer_with_mask()
    if backend_placeholder:
        new_input = K.placeholder(shape=(None, STEPS), dtype="int32")
        feeds = [new_input]
    else:
        new_input, feeds = tokens("new_input"), None
    clone = keras.models.clone_model(model, input_tensors=[new_input])
    assert_same_predictions(model, clone, data_for(model), clone_feeds=feeds)


class UserError(Exception):
    pass


class FailsWhenCloned(SplitOutputs):
    """compute_mask raises once `failing` is set: in the clone, not in the
    original built before."""
    failing = False

    def compute_mask(self, inputs, mask=None):
        if self.failing:
            raise UserError("the user's own compute_mask failed")
        return super(FailsWhenCloned, self).compute_mask(inputs, mask)


def test_users_compute_mask_error_reaches_the_user_unchanged(clone_mode, monkeypatch):
    x = tokens()
    model = Model(x, [lstm(y) for y in FailsWhenCloned(2)(embedded(x))])
    monkeypatch.setattr(FailsWhenCloned, "failing", True)
    with pytest.raises(UserError, match="^the user's own compute_mask failed$") as raised:
        keras.models.clone_model(model)
    # (Python 2 chains no exceptions: it has neither attribute.)
    assert getattr(raised.value, "__cause__", None) is None
    assert getattr(raised.value, "__context__", None) is None
    assert raised.traceback[-1].name == "compute_mask"


def test_masks_change_the_predictions():
    """The padded data are such that a clone losing its masks predicts
    differently: the comparisons above would see masks set to None."""
    model = masking_layer_with_mask()
    x = tokens()
    unmasked = Model(x, [lstm(y) for y in SplitOutputs(2)(embedded(x, mask_zero=False))])
    unmasked.set_weights(model.get_weights())  # the same topology, built the same way
    data = data_for(model)
    for masked_output, unmasked_output in zip(predict(model, data), predict(unmasked, data)):
        assert abs(masked_output - unmasked_output).max() > 1e-3


def explicit_mask_list_alone():
    x = tokens()
    return Model(x, [lstm(y) for y in SplitOutputs(3, mask_rule="list")(embedded(x))])


def sequential():
    return keras.models.Sequential([
        keras.layers.Embedding(20, 3, mask_zero=True, input_shape=(STEPS,)),
        keras.layers.LSTM(2)])


UNCHANGED = [embedding_lstm, two_inputs_concatenated, explicit_mask_list_alone, sequential]


@pytest.mark.parametrize("build", UNCHANGED, ids=[case.__name__ for case in UNCHANGED])
def test_without_multi_output_layers_the_clone_predicts_as_before(restore_fix_state, build):
    """Models without multi-output layers: the patched clone predicts what
    the unpatched clone predicts (the fix changes no prediction that was right)."""
    model = build()
    keras_clone_fix.unpatch()
    plain = keras.models.clone_model(model)
    assert keras_clone_fix.patch().patched
    fixed = keras.models.clone_model(model)
    copy_weights(model, plain)
    assert_same_predictions(plain, fixed, data_for(model))


# Sequential models are cloned by _clone_sequential_model, not a target.
FUNCTIONAL_MODELS = [build for build, _ in CASES] + [
    build for build in UNCHANGED if build is not sequential]


def call_arguments(model):
    """Which keyword arguments each layer call of `model` was given."""
    return sorted((node.outbound_layer.name, sorted(arguments))
                  for node, arguments in node_arguments(model))


@pytest.mark.parametrize("build", FUNCTIONAL_MODELS,
                         ids=[case.__name__ for case in FUNCTIONAL_MODELS])
def test_clone_calls_its_layers_with_the_originals_arguments(request, clone_mode, build):
    """Unpatched, each mask a clone was given is recorded as a call argument
    (`mask`) that the original's layer calls do not have."""
    expect_upstream_failure(request, clone_mode, AFFECTED, "the clone records its masks")
    model = build()
    assert call_arguments(keras.models.clone_model(model)) == call_arguments(model)


def test_clone_leaves_the_original_untouched(request, clone_mode):
    expect_upstream_failure(request, clone_mode, AFFECTED, "clone writes mask into node.arguments")
    model = embedding_lstm_called_with_keywords()
    arguments = node_arguments(model)
    clone = keras.models.clone_model(model)
    assert node_arguments(model) == arguments
    assert_same_predictions(model, clone, data_for(model))
    assert_predicts_like(model, call_on_new_inputs(model), data_for(model))


def cloned_again(clone):
    again = keras.models.clone_model(clone)
    copy_weights(clone, again)
    return again


@pytest.mark.parametrize("use", [cloned_again, call_on_new_inputs])
@pytest.mark.parametrize("build", [embedding_lstm, embedding_lstm_called_with_keywords])
def test_clone_cloned_again_or_nested_predicts_like_the_original(request, clone_mode, build, use):
    expect_upstream_failure(request, clone_mode, AFFECTED, "the clone pins its masks",
                            raises=missing_input_error())
    model = build()
    clone = keras.models.clone_model(model)
    copy_weights(model, clone)
    assert_predicts_like(model, use(clone), data_for(model))


def test_explicit_mask_argument_is_kept(clone_mode):
    """mask=None given by the user switches the mask off: so in the clone.
    (Unchanged by the fix: a regression guard, it passes unpatched too.)"""
    x = tokens()
    model = Model(x, lstm(embedded(x), mask=None))
    clone = keras.models.clone_model(model)
    assert_same_predictions(model, clone, data_for(model))
    assert_same_predictions(model, keras.models.clone_model(clone), data_for(model))
    unmasked = Model(x, lstm(embedded(x, mask_zero=False)))
    unmasked.set_weights(model.get_weights())  # the same topology, built the same way
    assert_predicts_like(model, unmasked, data_for(model))


@pytest.mark.filterwarnings("ignore:Model inputs must come from:UserWarning")  # Keras says why
def test_input_tensors_with_a_mask_are_refused_as_before(clone_mode):
    """Keras refuses input_tensors that carry a mask, patched or not:
    before 2.2 the input layer does not support masking, from 2.2 on such a
    tensor is no model input."""
    x = features()
    model = Model(x, lstm(x))
    masked = embedded(tokens())
    with pytest.raises(ValueError if NESTS_ON_MASKED_TENSORS else TypeError,
                       match="does not support masking|Graph disconnected"):
        keras.models.clone_model(model, input_tensors=[masked])


def installed_targets():
    from keras_clone_fix._affected import targets_for
    return targets_for("keras", keras.__version__)


@pytest.mark.parametrize("target", installed_targets(), ids=lambda target: target.attribute)
def test_source_read_is_what_inspect_reads(target):
    """_build reads the installed def from its lines, not with
    inspect.getsource: both give the same def, at the same lines."""
    import ast
    import importlib
    import inspect
    import textwrap
    from keras_clone_fix import _build
    function = importlib.import_module(target.module)
    for name in target.attribute.split("."):
        function = vars(function)[name]
    while hasattr(function, "__wrapped__"):  # ours, or another tool's
        function = function.__wrapped__
    function = getattr(function, "__func__", function)  # a classmethod's
    read = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]
    ast.increment_lineno(read, function.__code__.co_firstlineno - 1)
    ours = _build._function_def(function, target.decorator)
    # inspect's text is dedented, docstrings and all; ours is as in the file.
    assert ast.get_docstring(ours) == ast.get_docstring(read)
    for definition in (ours, read):
        for function in ast.walk(definition):
            if isinstance(function, ast.FunctionDef) and ast.get_docstring(
                    function, clean=False) is not None:
                del function.body[0]
    assert ast.dump(ours) == ast.dump(read)
    # At the same lines (columns: ours are the file's, inspect's dedented).
    assert ([getattr(node, "lineno", None) for node in ast.walk(ours)]
            == [getattr(node, "lineno", None) for node in ast.walk(read)])
