"""A tiny kernel the doctor runs to prove kernels work in the current mode.

It lives at module level because the simulator swaps in its fake ``cuda`` module through the
kernel's globals; a kernel whose ``cuda`` is a local variable would see the real module.
"""

import numpy as np
from numba import cuda


@cuda.jit
def _double(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= 2


def run() -> None:
    """Double four numbers on the device; raise if the result is wrong."""
    data = np.arange(4, dtype=np.float32)
    _double[1, 4](data)
    if data.tolist() != [0.0, 2.0, 4.0, 6.0]:
        raise RuntimeError(f"wrong result {data.tolist()}")
