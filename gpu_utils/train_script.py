"""The command ``python -m gpu_utils.train_script`` (chapter 11, under ``torchrun``), kept at the
name the chapter gives it; the module is :mod:`gpu_utils.many_gpus.train_script`
(``gu.train_script``). Imported, this name is that module itself.
"""

import sys

from gpu_utils.many_gpus import train_script as _module

if __name__ == "__main__":
    _module.script()
else:
    sys.modules[__name__] = _module
