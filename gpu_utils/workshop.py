"""The command ``python -m gpu_utils.workshop`` (authoring: the instructors' kit), kept at the name
the README and the Makefile give it; the module is :mod:`gpu_utils.authoring.workshop`
(``gu.workshop``). Imported, this name is that module itself.
"""

import sys

from gpu_utils.authoring import workshop as _module

if __name__ == "__main__":
    raise SystemExit(_module.main())
else:
    sys.modules[__name__] = _module
