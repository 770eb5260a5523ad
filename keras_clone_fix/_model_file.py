"""A user's MODEL_FILE: what it is, which family saved it, and loading it.

`inspect_file` runs in the `check` command's own process and needs neither
keras nor TensorFlow (h5py, where installed, reads an HDF5 file's
attributes). `load` runs in a side's interpreter. Every input that cannot
be used raises BadInput with one line naming what is wrong.
"""

import importlib
import inspect
import io
import json
import os
import re

from keras_clone_fix._check import release_name

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
KERAS, TF_KERAS = "keras", "tf.keras"
UNKNOWN = re.compile(r"Unknown (\w+): ?'?([\w.]+)")


class BadInput(Exception):
    """The command was given something it cannot use: str(error) says what."""


def _readable(path, what):
    if not os.path.isfile(path):
        raise BadInput("{} {}: no such file".format(what, path))
    try:
        with open(path, "rb") as opened:
            return opened.read(len(HDF5_SIGNATURE))
    except (IOError, OSError) as error:
        raise BadInput("{} {}: cannot be read ({})".format(what, path, error.strerror or error))


def _hdf5_keras_version(path):
    """The HDF5 file's keras_version, '' if it has none; None if h5py is missing."""
    try:
        import h5py
    except ImportError:
        return None
    try:
        with h5py.File(path, "r") as opened:
            if "model_config" not in opened.attrs:
                raise BadInput("{} is an HDF5 file but not a Keras model saved with model.save() "
                               "(it has no model_config)".format(path))
            version = opened.attrs.get("keras_version", b"")
    except (IOError, OSError) as error:
        raise BadInput("{} cannot be read as HDF5: {}".format(path, error))
    return version.decode("utf-8") if isinstance(version, bytes) else str(version)


def _json_keras_version(path):
    try:
        with io.open(path, encoding="utf-8") as opened:
            config = json.load(opened)
    except (ValueError, UnicodeDecodeError):
        raise BadInput("{} is neither an HDF5 file nor JSON: not a Keras model file (give a file "
                       "saved with model.save() or written from model.to_json())".format(path))
    if not (isinstance(config, dict) and "class_name" in config and "config" in config):
        raise BadInput("{} is JSON but not a Keras model (no class_name and config: give what "
                       "model.to_json() returns)".format(path))
    return str(config.get("keras_version", ""))


def inspect_file(path, weights=None):
    """(format: "hdf5" | "json", the family that saved it or None)."""
    if weights is not None:
        _readable(weights, "--weights")
    if _readable(path, "model file") == HDF5_SIGNATURE:
        file_format, version = "hdf5", _hdf5_keras_version(path)
    else:
        file_format, version = "json", _json_keras_version(path)
    if not version:
        return file_format, None
    return file_format, TF_KERAS if version.endswith("-tf") else KERAS


def custom_objects(specs):
    """{name: object} from --custom-objects specs: MODULE:NAME (a dict, or a
    callable returning one) or MODULE (its public classes and functions)."""
    found = {}
    for spec in specs:
        module_name, _, name = spec.partition(":")
        try:
            module = importlib.import_module(module_name)
        except Exception as error:
            raise BadInput("--custom-objects {}: cannot import module {} ({}: {})".format(
                spec, module_name, type(error).__name__, error))
        if not name:
            names = getattr(module, "__all__", None) or [
                key for key in vars(module) if not key.startswith("_")]
            found.update((key, getattr(module, key)) for key in names
                         if inspect.isclass(getattr(module, key))
                         or inspect.isfunction(getattr(module, key)))
            continue
        if not hasattr(module, name):
            raise BadInput("--custom-objects {}: module {} has no {}".format(
                spec, module_name, name))
        value = getattr(module, name)
        if callable(value) and not isinstance(value, dict) and not inspect.isclass(value):
            value = value()
        if not isinstance(value, dict):
            raise BadInput("--custom-objects {}: {} is neither a dict nor a function returning "
                           "one (it gives a {})".format(spec, name, type(value).__name__))
        found.update(value)
    return found


def load(keras, path, file_format, objects, weights=None):
    """The model of the file, weights from `weights` where given."""
    try:
        if file_format == "hdf5":
            try:
                model = keras.models.load_model(path, custom_objects=objects, compile=False)
            except TypeError as error:  # before keras 2.0.?: no compile argument
                if "compile" not in str(error):
                    raise
                model = keras.models.load_model(path, custom_objects=objects)
        else:
            with io.open(path, encoding="utf-8") as opened:
                model = keras.models.model_from_json(opened.read(), custom_objects=objects)
    except Exception as error:
        raise BadInput(_load_failure(keras, path, error))
    if weights is not None:
        try:
            model.load_weights(weights)
        except Exception as error:
            raise BadInput("--weights {} does not fit the model of {}: {}".format(
                weights, path, _first_line(error)))
    return model


def _first_line(error):
    lines = str(error).strip().splitlines()
    return "{}: {}".format(type(error).__name__, lines[0] if lines else "")


def _load_failure(keras, path, error):
    unknown = UNKNOWN.search(str(error))
    release = release_name(keras)
    if unknown:
        kind, name = unknown.groups()
        return ("{}: {} {!r} is not known to {}: give it with --custom-objects MODULE:NAME "
                "(NAME a dict {{{!r}: {}}}, or a function returning one) or --custom-objects "
                "MODULE (every public class and function of MODULE)".format(
                    path, "layer class" if kind == "layer" else kind, name, release, name, name))
    return "{} cannot be loaded by {}: {}".format(path, release, _first_line(error))
