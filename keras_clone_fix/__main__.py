import sys

from keras_clone_fix._cli import main

sys.exit(main())
