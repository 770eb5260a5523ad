"""keras-clone-fix: `keras.models.clone_model` for multi-output layers on Keras 2.0.7 - 2.3.1.

Importing this package applies the fix: at once if keras is imported
already, otherwise right after `import keras`. Set KERAS_CLONE_FIX=0 to
import it without activating; patch() still works then.

PYTEST_DONT_REWRITE: the .pth imports this package before pytest starts,
so pytest could not rewrite its asserts (it has none) and would warn so.
"""

from keras_clone_fix._activation import (
    KerasCloneFixWarning, PatchError, Status, patch, status, unpatch)
from keras_clone_fix._activation import activate as _activate

__version__ = "0.1.0"
__all__ = ["KerasCloneFixWarning", "PatchError", "Status", "patch", "status", "unpatch"]

_activate("import keras_clone_fix")
