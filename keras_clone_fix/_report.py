"""The report of a checked model, shared by `check` and the self-check: one
dict (the JSON) made from the sides' results, and its text for people."""

import collections
import json
import re

from keras_clone_fix._bugs import LISTED_BY
from keras_clone_fix._check import CHECKS, FAILED, OK, UNAVAILABLE

# The sides, in report order: without the fix, with it.
UNPATCHED, PATCHED = "unpatched", "patched"
HEADINGS = {UNPATCHED: "without the fix", PATCHED: "with keras-clone-fix"}
FAMILY_FACTS = ("family", "keras", "tf_keras", "backend", "tensorflow", "theano", "cntk",
                "affected", "reason", "bugs")
# What `check` measures of each side's interpreter.
COSTS = ("seconds", "peak_memory_mb")
CELL = 46
MADE_INPUTS = "made from the model's inputs"
# A failure alike on both sides whose error says the check could not run as
# it was given (not what the release can do): (the error's words, what that
# is, what helps).
NOT_RUN = (
    (r"\bUnknown [\w ]+:|\bis not known to ", "a name unknown to the rebuild",
     "give it with --custom-objects"),
    (r"You must feed a value for placeholder|Error when checking (model )?input",
     "an input the check did not feed", "give the model's inputs with --inputs FILE.npz"),
    (r"^(MemoryError|ResourceExhaustedError)\b|\bOOM when allocating", "out of memory",
     "try --jobs 1 (one side at a time), or a smaller --batch or --timesteps"),
)
REPORT_A_BUG = ("that is a bug of keras-clone-fix: please report it on its issue tracker, "
                "with the output of --json attached")


def release(facts):
    if facts["family"] == "keras":
        return "keras " + facts["keras"]
    if "tf_keras" in facts:  # TensorFlow 2.16+, checked with the tf_keras package
        return "tf_keras {} of tensorflow {}".format(facts["tf_keras"], facts["tensorflow"])
    if "keras" in facts:  # TensorFlow 2.16+, whose tf.keras is Keras 3
        return "tf.keras of tensorflow {} (keras {})".format(facts["tensorflow"], facts["keras"])
    return "tf.keras of tensorflow " + facts["tensorflow"]


def stack(facts):
    """The release and the backend it runs on: what a failure of both sides
    belongs to (keras 2.2.4's multi_gpu_model fails on TensorFlow 1.15, not
    on 1.14)."""
    backend = facts.get("backend")
    if facts["family"] == "keras" and backend in facts:
        return "{} with {} {}".format(release(facts), backend, facts[backend])
    return release(facts)


def same_failure(sides):
    """A check that fails alike without and with the fix: something the
    release cannot do on this model (keras 2.2.4's multi_gpu_model cannot
    relocate BatchNormalization on TensorFlow 1.15), not what the fix changes."""
    return (UNPATCHED in sides and PATCHED in sides and sides[PATCHED]["result"] in FAILED
            and sides[UNPATCHED] == sides[PATCHED])


def why_not_run(sides):
    """(what, what helps) where a check failed with the fix, and alike
    without it where that side ran, for a cause in how it ran (NOT_RUN):
    then it says nothing of the release; else None."""
    outcome = sides.get(PATCHED)
    if outcome is None or outcome["result"] not in FAILED or sides.get(UNPATCHED, outcome) \
            != outcome:
        return None
    for words, what, helps in NOT_RUN:
        if re.search(words, outcome["detail"]):
            return what, helps
    return None


def failing(section, side):
    """The checks that fail on a side, less those that fail alike on both
    and those that could not run."""
    return [name for name, sides in section["checks"].items()
            if side in sides and sides[side]["result"] in FAILED and not same_failure(sides)
            and name not in section["not_run"]]


def not_run(section):
    """{check: {"cause", "error", "helps"}} of the checks that could not run."""
    found = collections.OrderedDict()
    for name, sides in section["checks"].items():
        why = why_not_run(sides)
        if why:
            found[name] = collections.OrderedDict([
                ("cause", why[0]), ("error", sides[PATCHED]["detail"]), ("helps", why[1])])
    return found


def _alike(section):
    """The sentences on what failed alike: the release's own limits, and
    what could not run (by cause)."""
    alike = _limits(section)
    said = ""
    if alike:
        said = " {} {} alike without and with the fix: {} cannot do {} on this model.".format(
            _names(alike), _fail(alike), stack(section), "it" if len(alike) == 1 else "them")
    causes = collections.OrderedDict()
    for name, why in section["not_run"].items():
        causes.setdefault(why["cause"], (why, []))[1].append(name)
    for cause, (why, names) in causes.items():
        said += " {} could not run{}: {} ({}); {}.".format(
            _names(names), ", without or with the fix" if any(
                UNPATCHED in section["checks"][name] for name in names) else "",
            cause, why["error"], why["helps"])
    return said


def _limits(section):
    """The checks that fail alike on both sides for what the release cannot do."""
    return [name for name, sides in section["checks"].items()
            if same_failure(sides) and name not in section["not_run"]]


def _fail(names):
    return "fails" if len(names) == 1 else "fail"


def _names(names):
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _checks_named(names):
    """Checks (of CHECKS) in few words: every check, every check but the
    others where they are under half as many, else these."""
    others = [name for name in CHECKS if name not in names]
    if not others:
        return "every check"
    return "every check but " + _names(others) if 2 * len(others) < len(names) else _names(names)


def summary(section):
    """The closing sentence: what the release breaks, and what the fix does."""
    name = release(section)
    broken, still_broken = failing(section, UNPATCHED), failing(section, PATCHED)
    every = "every other check" if any(
        same_failure(sides) for sides in section["checks"].values()) else "every check"
    if section["not_run"] and not still_broken:
        return _no_verdict(section, name, broken)
    if not any(PATCHED in sides for sides in section["checks"].values()):
        return "{} breaks {} of this model; keras-clone-fix is not active here.".format(
            name, _checks_named(broken) if broken else "none of these checks")
    if not section["affected"]:
        if still_broken:
            return "{} is not affected by the bugs keras-clone-fix fixes, but {} {} on this " \
                   "model.".format(name, _names(still_broken), _fail(still_broken))
        return "{} is not affected by these bugs; {} matches the model's predictions.".format(
            name, every)
    if still_broken:
        return "With keras-clone-fix, {} still {} on {}: {}.".format(
            _names(still_broken), _fail(still_broken), name, REPORT_A_BUG)
    if not any(UNPATCHED in sides for sides in section["checks"].values()):
        return "{} is affected; with keras-clone-fix {} matches the model's predictions.".format(
            name, every)
    if broken:
        return "{} breaks {} of this model; with keras-clone-fix {} matches the model's " \
               "predictions.".format(name, _checks_named(broken), every)
    return "{} breaks none of these checks on this model; with keras-clone-fix {} matches " \
           "the model's predictions too.".format(name, every)


def _no_verdict(section, name, broken):
    """The closing sentence where checks could not run (_alike says why)."""
    alike = _limits(section)
    said = "No verdict on {}; ".format(_names(list(section["not_run"])))
    every = "every check that ran" + (" but " + _names(alike) if alike else "")
    if broken:
        return said + "{} breaks {} of this model, and with keras-clone-fix {} matches the " \
                      "model's predictions.".format(name, _checks_named(broken), every)
    both_sides = any(UNPATCHED in sides for sides in section["checks"].values())
    return said + "{} matches the model's predictions{}.".format(
        every, " without and with the fix" if both_sides else "")


def shape_text(shape):
    return "({})".format(", ".join(str(size) for size in shape) + ("," if len(shape) == 1 else ""))


def section(model, weights, sides, inputs=MADE_INPUTS):
    """The report of one model: `sides` maps UNPATCHED / PATCHED to a
    side's result (_side.run_checks); the facts and risks are the patched
    side's: loaded without the fix, a model may be changed already.
    `inputs`: where the inputs came from (the user's file, or MADE_INPUTS)."""
    first = sides.get(PATCHED) or list(sides.values())[0]
    made = collections.OrderedDict([("model", model), ("weights", weights)])
    if "inputs" in first:
        made["inputs"] = collections.OrderedDict([("source", inputs),
                                                  ("shapes", first["inputs"])])
    made.update((key, first[key]) for key in FAMILY_FACTS if key in first)
    made["risks"] = first["risks"]
    costs = collections.OrderedDict(
        (side, collections.OrderedDict((cost, sides[side][cost]) for cost in COSTS))
        for side in (UNPATCHED, PATCHED) if side in sides and COSTS[0] in sides[side])
    if costs:  # `check`'s sides, each in its own interpreter
        made["sides"] = costs
    made["checks"] = collections.OrderedDict(
        (name, collections.OrderedDict((side, sides[side]["checks"][name])
                                       for side in (UNPATCHED, PATCHED) if side in sides))
        for name in CHECKS)
    made["not_run"] = not_run(made)
    made["summary"] = summary(made) + _alike(made)
    made["ok"] = any(PATCHED in checks for checks in made["checks"].values()) and not failing(
        made, PATCHED) and not made["not_run"]
    return made


def _cell(outcome):
    if outcome is None:
        return "-"
    text = outcome["result"] if outcome["result"] == OK or not outcome["detail"] else \
        "{}: {}".format("n/a" if outcome["result"] == UNAVAILABLE else outcome["result"],
                        outcome["detail"])
    return text if len(text) <= CELL else text[:CELL - 3] + "..."


def text(made):
    """The section as lines for people."""
    backend = " (backend {})".format(made["backend"]) if made.get("backend") else ""
    listed = "; " + LISTED_BY if made.get("bugs") else ""
    lines = ["model: {} ({})".format(made["model"], made["weights"]),
             made["reason"] + backend + listed]
    if "inputs" in made:
        lines.append("inputs: {}, shapes {}".format(
            made["inputs"]["source"] if made["inputs"]["source"] == MADE_INPUTS else
            "from " + made["inputs"]["source"],
            ", ".join(shape_text(shape) for shape in made["inputs"]["shapes"])))
    lines.append("at risk:" if made["risks"] else
                 "at risk: nothing in this model is at risk of these bugs (checked anyway)")
    lines += ["  {}: {}; endangers {}".format(risk["layer"], risk["risk"],
                                              _checks_named(risk["checks"]))
              for risk in made["risks"]]
    sides = [side for side in (UNPATCHED, PATCHED)
             if any(side in checks for checks in made["checks"].values())]
    row = "{:<20}" + "{:<%d}" % (CELL + 2) * (len(sides) - 1) + "{}"
    lines.append(row.format("check", *[HEADINGS[side] for side in sides]))
    lines += [row.format(name, *[_cell(checks.get(side)) for side in sides])
              for name, checks in made["checks"].items()]
    if "sides" in made:
        lines.append(row.format("time, peak memory", *[_costs(made["sides"].get(side))
                                                       for side in sides]))
    return lines + [made["summary"]]


def _costs(costs):
    if costs is None:
        return "-"
    memory = costs["peak_memory_mb"]
    return "{:.1f} s, {}".format(costs["seconds"], "?" if memory is None else
                                 "{} MB".format(memory))


def as_json(report):
    # Python 2 would end lines with ", "
    return json.dumps(report, indent=2, separators=(",", ": "))
