"""Activation at interpreter start, called by keras_clone_fix.pth.

The .pth file is one line that imports this module and calls init(); it
swallows ImportError itself, so a .pth left behind after the package is
removed does nothing. Importing this module imports the package, whose
__init__ activates too: init() then only records that the .pth did it.
"""


def init():
    """Activate for this interpreter (unless KERAS_CLONE_FIX=0); never raises."""
    from keras_clone_fix._activation import activate
    activate(".pth at interpreter start")
