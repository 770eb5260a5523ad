"""A user's MODEL_FILE: what it is, which family saved it, and loading it.

`inspect_file` runs in the `check` command's own process and needs neither
keras nor TensorFlow (h5py reads an HDF5 file's attributes; a SavedModel
folder's protocol buffers are read here): what the file says about itself
(the Keras that saved it, the code its Lambda layers hold) is known before
anything from it runs. `load` runs in a side's
interpreter. Every input that cannot be used raises BadInput with one line
naming what is wrong.
"""

import binascii
import codecs
import importlib
import inspect
import io
import json
import os
import platform
import re
import sys
import zipfile

from keras_clone_fix._affected import api_version, package_of, parse_version
from keras_clone_fix._check import KERAS_3, release_name
from keras_clone_fix._runtime import KERAS_MODEL_IDENTIFIERS, SAVED_MODEL_FILE

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
SAVED_MODEL = "savedmodel"  # the format of a SavedModel folder (model.save(folder), TensorFlow 2)
ZIP_SIGNATURE = b"PK\x03\x04"
STRINGS = (str, type(u""))  # Python 2's json gives unicode
KERAS, TF_KERAS = "keras", "tf.keras"
UNKNOWN = re.compile(r"Unknown (\w+): ?'?([\w.]+)")
# The keras_version of a file that names none but whose config is Keras 3's.
KERAS_3_CONFIG = "3"
# Classes a file names that a release of the family from `first` on knows
# and an earlier one does not: (package, first, what, names), read from the
# releases' sources. TensorFlow 1.12 made the Glorot initializers classes;
# it writes '2.1.6-tf' as 1.10 and 1.11 do, so the version tells nothing.
LATER_BUILT_INS = (
    ("tensorflow", (1, 12, 0), "TensorFlow 1.12", ("GlorotUniform", "GlorotNormal")),
)


class BadInput(Exception):
    """The command was given something it cannot use: str(error) says what;
    `known`: what was learnt before (the report's facts), for --json."""

    def __init__(self, message, known=None):
        Exception.__init__(self, message)
        self.known = known or {}


def _readable(path, what, or_folder=""):
    if not os.path.isfile(path):
        raise BadInput("{} {}: no such file{}".format(what, path, or_folder))
    try:
        with open(path, "rb") as opened:
            return opened.read(len(HDF5_SIGNATURE))
    except (IOError, OSError) as error:
        raise BadInput("{} {}: cannot be read ({})".format(what, path, error.strerror or error))


def _text(value):
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _hdf5_facts(path):
    """(keras_version, backend, config) of a model saved with model.save()."""
    try:
        import h5py
    except ImportError:
        raise BadInput("{}: reading an HDF5 model file needs h5py, which is not installed (Keras "
                       "needs it too)".format(path))
    try:
        with h5py.File(path, "r") as opened:
            if "model_config" not in opened.attrs:
                raise BadInput("{} is an HDF5 file but not a Keras model saved with model.save() "
                               "(it has no model_config)".format(path))
            attributes = dict((key, _text(opened.attrs.get(key, "")))
                              for key in ("keras_version", "backend", "model_config"))
    except (IOError, OSError) as error:
        raise BadInput("{} cannot be read as HDF5: {}".format(path, error))
    try:
        config = json.loads(attributes["model_config"])
    except ValueError:
        config = None
    return attributes["keras_version"], attributes["backend"], config


def _keras_archive_facts(path):
    """(keras_version, backend, config) of a Keras 3 `.keras` file (a zip)."""
    try:
        with zipfile.ZipFile(path) as archive:
            metadata = json.loads(_text(archive.read("metadata.json")))
            config = json.loads(_text(archive.read("config.json")))
    except (KeyError, ValueError, zipfile.BadZipfile):
        raise BadInput("{} is a zip file but not a Keras model saved with model.save() (it has no "
                       "metadata.json and config.json)".format(path))
    return str(metadata.get("keras_version", "")), "", config


# --- SavedModel folders: protocol buffers read without TensorFlow -----------

def _varint(data, at):
    """(value, where the next field starts) of the varint at `at` of a bytearray."""
    value = shift = 0
    while True:
        byte = data[at]
        value |= (byte & 0x7f) << shift
        at += 1
        if byte < 0x80:
            return value, at
        shift += 7


def _fields(data):
    """(field number, value) of each field of a protocol buffer message (a
    bytearray), in order: an int, or the bytes of a string or message."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        kind = key & 7
        if kind == 0:
            value, at = _varint(data, at)
        elif kind in (1, 2, 5):
            size, at = (8, at) if kind == 1 else (4, at) if kind == 5 else _varint(data, at)
            if at + size > len(data):
                raise ValueError("a field runs past the end")
            value, at = data[at:at + size], at + size
        else:
            raise ValueError("wire type {}".format(kind))
        yield key >> 3, value


def _field(data, number):
    """The first field `number` of a message; empty where it has none."""
    return next((value for found, value in _fields(data) if found == number), bytearray())


def _string(data, number):
    return _text(bytes(_field(data, number)))


# The root object's metadata (a JSON) in each file, by field numbers: from
# TensorFlow 2.5, keras_metadata.pb's SavedMetadata.nodes (1), the one whose
# node_path (3) is "root", its identifier (4) and metadata (5); before,
# saved_model.pb's SavedModel.meta_graphs (2), its object_graph_def (7), the
# first of its nodes (1): user_object (4), with identifier (1) and metadata (3).
KERAS_METADATA = "keras_metadata.pb"


def _root_object(path):
    """(identifier, metadata) of the root object of a SavedModel folder,
    as text ("" where none)."""
    metadata_path = os.path.join(path, KERAS_METADATA)
    if os.path.isfile(metadata_path):
        with open(metadata_path, "rb") as opened:
            metadata = bytearray(opened.read())
        for number, node in _fields(metadata):
            if number == 1 and _field(node, 3) == b"root":
                return _string(node, 4), _string(node, 5)
        return "", ""
    with open(os.path.join(path, SAVED_MODEL_FILE), "rb") as opened:
        graph = _field(_field(bytearray(opened.read()), 2), 7)
    root = _field(_field(graph, 1), 4)
    return _string(root, 1), _string(root, 3)


def _saved_model_facts(path):
    """(keras_version, backend, config) of a SavedModel folder Keras wrote."""
    if not os.path.isfile(os.path.join(path, SAVED_MODEL_FILE)):
        raise BadInput("{} is a folder but not a SavedModel (it has no {}): give a model file, or "
                       "a folder that model.save() wrote".format(path, SAVED_MODEL_FILE))
    try:
        identifier, metadata = _root_object(path)
        metadata = json.loads(metadata) if metadata else {}
    except (IOError, OSError) as error:
        raise BadInput("{}: its SavedModel cannot be read ({})".format(
            path, error.strerror or error))
    except (ValueError, IndexError) as error:  # not protocol buffers, or not JSON
        raise BadInput("{}: its {} is not a SavedModel's protocol buffer ({})".format(
            path, KERAS_METADATA if os.path.isfile(os.path.join(path, KERAS_METADATA)) else
            SAVED_MODEL_FILE, error))
    if identifier not in KERAS_MODEL_IDENTIFIERS or not isinstance(metadata, dict):
        raise BadInput("{} is a SavedModel but not of a Keras model (written by "
                       "tf.saved_model.save, not model.save()?): load_model cannot make a "
                       "Keras model of it".format(path))
    config = metadata.get("model_config") or {"class_name": metadata.get("class_name"),
                                              "config": metadata.get("config")}
    return metadata.get("keras_version", ""), metadata.get("backend", ""), config


def _json_facts(path):
    try:
        with io.open(path, encoding="utf-8") as opened:
            config = json.load(opened)
    except (ValueError, UnicodeDecodeError):
        raise BadInput("{} is neither an HDF5 file nor JSON: not a Keras model file (give a file "
                       "saved with model.save() or written from model.to_json())".format(path))
    if not (isinstance(config, dict) and "class_name" in config and "config" in config):
        raise BadInput("{} is JSON but not a Keras model (no class_name and config: give what "
                       "model.to_json() returns)".format(path))
    version = str(config.get("keras_version", ""))
    if not version and _is_keras_3_config(config):
        version = KERAS_3_CONFIG
    return version, str(config.get("backend", "")), config


def _is_keras_3_config(config):
    """Whether a model config is Keras 3's, whose to_json names no
    keras_version: each object says its "module" (keras.src.models.functional)
    and "registered_name", which no Keras 2 config without keras_version has."""
    module = config.get("module")
    return "registered_name" in config and isinstance(module, STRINGS) and \
        module.split(".")[0] == "keras"


def inspect_file(path, weights=None):
    """What the file (or SavedModel folder) says about itself, read without
    keras: {"format": "hdf5" | "keras" | "json" | SAVED_MODEL, "keras_version"
    (KERAS_3_CONFIG for a Keras 3 config that names none), "backend", "saved_by": the
    family that saved it or None, "code_layers": [(Lambda layer name, the
    major Python that marshalled its code)]}."""
    if weights is not None:
        _readable(weights, "--weights")
    if os.path.isdir(path):
        file_format, facts = SAVED_MODEL, _saved_model_facts(path)
    else:
        signature = _readable(path, "model file", " or SavedModel folder")
        if signature == HDF5_SIGNATURE:
            file_format, facts = "hdf5", _hdf5_facts(path)
        elif signature.startswith(ZIP_SIGNATURE):
            file_format, facts = "keras", _keras_archive_facts(path)
        else:
            file_format, facts = "json", _json_facts(path)
    version, backend, config = str(facts[0]), str(facts[1]), facts[2]
    saved_by = None
    if version:
        saved_by = TF_KERAS if version.endswith("-tf") else KERAS
    return {"format": file_format, "keras_version": version, "backend": backend,
            "saved_by": saved_by, "code_layers": code_layers(config)}


# --- what would run code from the file ---------------------------------------

def _marshalled_by(code):
    """2 or 3: the major Python whose marshal wrote `code` (a Lambda's
    function as keras's func_dump stores it: base64, or before keras 2.1
    raw_unicode_escape), None if it is not marshalled code. Python 3.4+
    marks a code object's type byte ('c') with FLAG_REF (0x80); Python 2
    never does."""
    try:
        raw = codecs.decode(code.encode("ascii"), "base64")
    except (UnicodeError, binascii.Error, ValueError):
        raw = code.encode("raw_unicode_escape")
    first = bytearray(raw[:1])
    if not first or first[0] & 0x7f != ord("c"):
        return None
    return 3 if first[0] & 0x80 else 2


def _held_code(layer_config):
    """The marshalled code strings of a Lambda's config: its function,
    output_shape and mask where their type is "lambda" (keras 2, tf.keras),
    or a Keras 3 "__lambda__" object."""
    for key in ("function", "output_shape", "mask"):
        value = layer_config.get(key)
        if isinstance(value, dict) and value.get("class_name") == "__tuple__":
            value = value.get("items")  # a tuple, as a SavedModel's Keras metadata writes it
        if isinstance(value, dict) and value.get("class_name") == "__lambda__":
            yield value.get("config", {}).get("code", "")
        elif layer_config.get(key + "_type") == "lambda" and isinstance(value, (list, tuple)) \
                and value and isinstance(value[0], STRINGS):
            yield value[0]


def code_layers(config):
    """[(name, Python major or None)] of the Lambda layers of a model config
    (nested models and wrappers included) that hold Python code."""
    found = []
    if isinstance(config, dict):
        layer_config = config.get("config")
        if config.get("class_name") == "Lambda" and isinstance(layer_config, dict):
            codes = list(_held_code(layer_config))
            if codes:
                pythons = [_marshalled_by(code) for code in codes]
                found.append((str(layer_config.get("name", "?")),
                              max(python or 0 for python in pythons) or None))
        for value in config.values():
            found += code_layers(value)
    elif isinstance(config, list):
        for value in config:
            found += code_layers(value)
    return found


def refuse_code(path, layers, run_code):
    """BadInput where loading the file would run code it holds: unless the
    user allows it (--no-safe-mode), as Keras's own safe_mode refuses; or
    where another major Python marshalled it, which this one cannot load."""
    running = sys.version_info[0]
    foreign = [(name, python) for name, python in layers if python and python != running]
    if foreign:
        name, python = foreign[0]
        raise BadInput("{}: Lambda layer {} holds code marshalled by Python {}, which Python {} "
                       "cannot load: check it with Python {}{}".format(
                           path, name, python, platform.python_version(),
                           "2.7" if python == 2 else "3",
                           "" if run_code else " and --no-safe-mode"))
    if layers and not run_code:
        names = [name for name, _ in layers]
        raise BadInput("{}: not loaded, as its Lambda layer{} {} hold{} Python code that loading "
                       "would run; give --no-safe-mode if you trust the file".format(
                           path, "s" if len(names) > 1 else "", ", ".join(names),
                           "" if len(names) > 1 else "s"))


def refuse_later_release(keras, path, version):
    """BadInput where the file names a later Keras than `keras` that this
    one cannot read: Keras 2.4 and later, tf.keras of TensorFlow 2 (2.2's
    wrote '2.3.0-tf', 2.3 on '2.4.0' and up), Keras 3."""
    version = str(version)
    saved = KERAS_3 if version == KERAS_3_CONFIG else parse_version(version, leading=True)
    if saved is None or not (saved >= (2, 4) or version.endswith("-tf") and saved >= (2, 3)):
        return
    if saved <= api_version(keras):
        return
    raise BadInput("{} was saved by Keras {} ({}: Keras 2.4 or later, tf.keras of TensorFlow 2, or "
                   "Keras 3), which {} cannot read: check the model with the release that saved "
                   "it".format(
                       path, version, "its config's module and registered_name keys"
                       if version == KERAS_3_CONFIG else "its keras_version",
                       release_name(keras)))


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
        if file_format != "json":  # HDF5, a SavedModel, or Keras 3's .keras
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


def _later_built_in(keras, name):
    """"TensorFlow 1.12" where `name` is a built-in of that release of the
    family of `keras` and later, and not of the installed one; else None."""
    package = package_of(keras)
    installed = parse_version(getattr(sys.modules.get(package), "__version__", None),
                              leading=True)
    for family, first, release, names in LATER_BUILT_INS:
        if family == package and name in names and installed and installed < first:
            return release
    return None


def _load_failure(keras, path, error):
    unknown = UNKNOWN.search(str(error))
    release = release_name(keras)
    later = unknown and _later_built_in(keras, unknown.group(2))
    if later:
        kind, name = unknown.groups()
        return ("{}: {} {!r} is not known to {}: it is a built-in of {} and later, not a "
                "custom object; check the model with the release that saved it".format(
                    path, "layer class" if kind == "layer" else kind, name, release, later))
    if unknown:
        kind, name = unknown.groups()
        return ("{}: {} {!r} is not known to {}: give it with --custom-objects MODULE:NAME "
                "(NAME a dict {{{!r}: {}}}, or a function returning one) or --custom-objects "
                "MODULE (every public class and function of MODULE)".format(
                    path, "layer class" if kind == "layer" else kind, name, release, name, name))
    return "{} cannot be loaded by {}: {}".format(path, release, _first_line(error))
