"""The user's own inputs (`check --inputs FILE.npz`), matched to a loaded
model's inputs in a side's interpreter: by input name, or as arr_0, arr_1
... (numpy.savez without names) in the model's input order. What does not
fit raises BadInput with one line naming the array and the input."""

from keras_clone_fix._check import dtype, int_shape
from keras_clone_fix._model_file import BadInput
from keras_clone_fix._report import shape_text


def _input_names(model):
    names = getattr(model, "input_names", None)
    if names:
        return list(names)
    return [tensor._keras_history[0].name for tensor in model.inputs]


def load(keras, model, path):
    """The arrays of `path` for the model's inputs, in their order, each of
    its input's dtype."""
    import numpy
    try:
        with numpy.load(path, allow_pickle=False) as saved:
            arrays = dict((name, saved[name]) for name in saved.files)
    except Exception as error:
        raise BadInput("--inputs {}: cannot be read as .npz ({}: {})".format(
            path, type(error).__name__, error))
    names = _input_names(model)
    positional = ["arr_{}".format(index) for index in range(len(names))]
    for keys in (names, positional):
        if set(keys) <= set(arrays):
            break
    else:
        raise BadInput("--inputs {}: it holds {}, but the model's inputs are {}: give one array "
                       "for each, by name or as arr_0, arr_1 ... in this order".format(
                           path, ", ".join(sorted(arrays)) or "no array", ", ".join(names)))
    given = []
    for key, name, tensor in zip(keys, names, model.inputs):
        array, shape = arrays[key], int_shape(keras, tensor)
        fits = array.ndim == len(shape) and all(
            size is None or size == have for size, have in zip(shape[1:], array.shape[1:]))
        if not fits or array.dtype.kind not in "biuf" or not len(array):
            raise BadInput("--inputs {}: {} is {} of shape {}, but the model's input {} takes "
                           "numbers of shape {}".format(path, key, array.dtype, shape_text(array.shape),
                                                        name, shape_text(shape)))
        given.append(array.astype(dtype(keras, tensor)))
    if len(set(len(array) for array in given)) > 1:
        raise BadInput("--inputs {}: the arrays have different numbers of rows ({})".format(
            path, ", ".join(str(len(array)) for array in given)))
    return given
