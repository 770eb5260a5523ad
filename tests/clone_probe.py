"""A user's program, run in a fresh interpreter by the tests.

It clones a model with a two-output masking layer (the case every affected
release breaks) and prints a JSON report. It imports keras_clone_fix only
when told to, so by default any fix comes from interpreter start.

    python clone_probe.py [no-keras | fix-only | fix-before-keras | fix-after-keras]
"""

import json
import sys

HEAVY = ("keras", "tensorflow", "theano", "wrapt", "numpy")
LAZY_PARTS = ("keras_clone_fix._activation", "keras_clone_fix._fix", "keras_clone_fix._build",
              "keras_clone_fix._cache", "keras_clone_fix._affected", "keras_clone_fix._cli")


def loaded(names):
    return sorted(name for name in sys.modules if name.split(".")[0] in names or name in names)


def fix_status():
    fix = sys.modules.get("keras_clone_fix")
    return fix.status().as_dict() if fix else None


def clone_two_output_model(clone_model):
    import models
    x = models.tokens()
    model = models.keras.models.Model(
        x, [models.lstm(y) for y in models.SplitOutputs(2)(models.embedded(x))])
    try:
        clone = clone_model(model)
    except AssertionError as error:
        return "AssertionError: {}".format(error)
    models.assert_same_predictions(model, clone, models.data_for(model))
    return "ok"


def main(how=""):
    report = {"at_start": loaded(HEAVY + LAZY_PARTS), "status_at_start": fix_status()}
    if how in ("fix-only", "fix-before-keras"):
        import keras_clone_fix  # noqa: F401
        report["after_fix_import"] = loaded(HEAVY + LAZY_PARTS)
    if how in ("fix-only", "no-keras"):
        report["status"] = fix_status()
        return report
    from keras.models import clone_model
    if how == "fix-after-keras":
        import keras_clone_fix  # noqa: F401
    report["clone"] = clone_two_output_model(clone_model)
    report["status"] = fix_status()
    return report


if __name__ == "__main__":
    print("PROBE " + json.dumps(main(*sys.argv[1:])))
