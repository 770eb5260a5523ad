"""Which `keras` releases have the clone bug: the version guard.

Reads nothing but a version string, so it costs nothing to import.
"""

import re

# (first release, first release past the range, affected?, why).
# Ranges are half-open and together cover every version.
RELEASES = (
    ((0, 0, 0), (2, 0, 7), False,
     "keras.models.clone_model does not exist before 2.0.7"),
    ((2, 0, 7), (2, 2, 5), True,
     "_clone_functional_model keeps one output mask when compute_mask "
     "returns one value, and drops the other outputs of every "
     "multi-output layer"),
    ((2, 2, 5), (2, 4, 0), True,
     "2.2.5 fixed layers without masking only: a multi-output layer with "
     "supports_masking=True still loses all outputs but the first"),
    ((2, 4, 0), (3, 0, 0), False,
     "Keras >= 2.4 is a front for tf.keras, whose clone_model is correct"),
    ((3, 0, 0), None, False,
     "Keras 3 clones models with new code that is not affected"),
)

_RELEASE_VERSION = re.compile(r"\A(\d+)\.(\d+)\.(\d+)\Z")


def parse_version(version):
    """'2.2.4' -> (2, 2, 4); None for anything that is not a plain release."""
    match = _RELEASE_VERSION.match(version) if isinstance(version, str) else None
    return tuple(int(part) for part in match.groups()) if match else None


def is_affected(version):
    """(affected: bool or None, reason: str) for a keras version string.

    None means the version is not recognised: the caller must not guess.
    """
    parsed = parse_version(version)
    if parsed is None:
        return None, ("keras version {!r} is not a release this package "
                      "recognises".format(version))
    for first, past, affected, why in RELEASES:
        if first <= parsed and (past is None or parsed < past):
            return affected, "keras {}: {}".format(version, why)
    raise AssertionError("RELEASES does not cover " + version)
