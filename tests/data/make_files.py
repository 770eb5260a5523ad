"""Makes the model files of tests/data that an affected Keras cannot make:
files of later releases, and a Lambda marshalled by Python 2. Run once in
each environment below (from the worktree's root, after `bash .ci/run -s
SESSION -- --co -q` has made it); it writes what that environment can save:

    .nox/tests-tf-keras-tf-2-21/bin/python tests/data/make_files.py
        dense_tf_keras_2.21.h5: tf.keras of TensorFlow 2.21 (the tf_keras package)
    .nox/tests-keras-3-tf-2-21/bin/python tests/data/make_files.py
        dense_keras_3.h5, dense_keras_3.keras, dense_keras_3.json: Keras 3, HDF5, its own zip
        format, and to_json (which names no keras_version)
    .nox/tests-2-7-keras-2-2-4-tf-1-15-0/bin/python tests/data/make_files.py
        lambda_python_2.h5: keras 2.2.4 on Python 2.7, a Lambda layer (its code marshalled)
    .nox/tests-tf-1-12/bin/python tests/data/make_files.py
        dense_tf_keras_1.12.h5: tf.keras of TensorFlow 1.12, whose Dense layers' initializer
        GlorotUniform is a class TensorFlow 1.11 and earlier do not have

Each model is tiny (Dense layers on 4 numbers), weights as initialised.
tests/test_check_inputs.py checks them with the affected release of its session.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def dense(keras):
    x = keras.layers.Input(shape=(4,))
    return keras.models.Model(x, keras.layers.Dense(2)(keras.layers.Dense(3)(x)))


def main():
    if sys.version_info[0] == 2:
        import keras
        x = keras.layers.Input(shape=(4,))
        doubled = keras.layers.Lambda(lambda values: values * 2.0, name="doubled")(x)
        model = keras.models.Model(x, keras.layers.Dense(2)(doubled))
        model.save(os.path.join(HERE, "lambda_python_2.h5"))
        return
    try:
        import tf_keras
    except ImportError:
        try:
            import keras
        except ImportError:  # TensorFlow 1.12 alone
            import tensorflow
            dense(tensorflow.keras).save(os.path.join(HERE, "dense_tf_keras_1.12.h5"))
            return
        dense(keras).save(os.path.join(HERE, "dense_keras_3.h5"))
        dense(keras).save(os.path.join(HERE, "dense_keras_3.keras"))
        with open(os.path.join(HERE, "dense_keras_3.json"), "w") as written:
            written.write(dense(keras).to_json())
        return
    dense(tf_keras).save(os.path.join(HERE, "dense_tf_keras_2.21.h5"))


if __name__ == "__main__":
    main()
