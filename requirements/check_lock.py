"""CI: does a lock still resolve against the package index? (`make lock-check`)

Runs ``pip install --dry-run --ignore-installed -r LOCK``: pip resolves every pin with its
dependencies and downloads metadata only. When the index cannot be reached at all, it says so and
exits 0 ("skipped"); any other failure (a pin withdrawn, a conflict) fails the run.
"""

import os
import subprocess
import sys
import time
import urllib.request


def index_url() -> str:
    found = subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", "global.index-url"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return os.environ.get("PIP_INDEX_URL") or found or "https://pypi.org/simple/"


def reachable(url: str) -> str | None:
    """None when the index answers, else why not."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/pip/", timeout=15):
            return None
    except Exception as error:  # DNS, refused, timeout, TLS: all mean "offline" here
        return f"{type(error).__name__}: {error}"


def main(lock: str) -> int:
    url = index_url()
    problem = reachable(url)
    if problem:
        print(f"SKIPPED: {lock} not checked, the package index {url} is unreachable ({problem})")
        return 0
    start = time.monotonic()
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed"]
    done = subprocess.run([*command, "--quiet", "-r", lock], capture_output=True, text=True)
    seconds = time.monotonic() - start
    if done.returncode != 0:
        print(done.stdout[-4000:] + done.stderr[-4000:])
        print(f"FAILED: {lock} does not resolve against {url} ({seconds:.0f} s); run `make lock`")
        return 1
    print(f"ok: {lock} resolves against {url} ({seconds:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
