"""Start (and stop) a helper Python process that talks to this one over two private pipes.

The checker's worker, the PTX compiler child and ``gu.dist``'s launcher all start this way: the
child gets the file descriptors of its request pipe (to read) and result pipe (to write) as its
last two arguments, and never sees NUMBA_ENABLE_CUDASIM, so it picks its own mode.
"""

from __future__ import annotations

import os
import subprocess
import sys
from multiprocessing.connection import Connection


def start_child(args: list[str], **env: str) -> tuple[subprocess.Popen, Connection, Connection]:
    """``python *args REQUEST_FD RESULT_FD``: the process, the request and the result ends.

    ``env`` adds variables to this process's environment for the child.
    """
    request_read, request_write = os.pipe()
    result_read, result_write = os.pipe()
    environment = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    environment.update(env)
    process = subprocess.Popen(
        [sys.executable, *args, str(request_read), str(result_write)],
        pass_fds=(request_read, result_write),
        stdin=subprocess.DEVNULL,
        env=environment,
    )
    os.close(request_read)
    os.close(result_write)
    return (
        process,
        Connection(request_write, readable=False),
        Connection(result_read, writable=False),
    )


def stop_child(child: tuple[subprocess.Popen, Connection, Connection]) -> None:
    """Close both pipes of a child :func:`start_child` made, kill it if it still runs, reap it."""
    process, to_child, from_child = child
    to_child.close()
    from_child.close()
    if process.poll() is None:
        process.kill()
    process.wait(5)
