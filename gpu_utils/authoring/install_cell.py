"""The install cell (authoring; chapter 00, "Running the course elsewhere"): the lines every
notebook's first code cell starts with, which do something on Colab only. Before the course is
published they find the course in the learner's Google Drive and run ``colab.py drive``; once it
is published they clone the release tag and run ``colab.py install`` (:mod:`gpu_utils.colab`, the
file they run). :mod:`gpu_utils.authoring.publish` writes them into the notebooks (``sync``).
"""

from __future__ import annotations

import os

from ..colab import (
    BOOT_NAME,
    CLONE_DIR,
    CLONE_DONE,
    COURSE_MARKER,
    DRIVE_FAILED,
    FOUND_NAME,
    MARKER,
    NO_COURSE,
    PROGRESS_POINTER,
    STOP_NAME,
)

BLOCK_HEADER = "# Colab only: install the course once per runtime (nothing happens anywhere else)."


_DETECT = (
    "import os\n"
    "import sys\n"
    "\n"
    'ON_COLAB = "google.colab" in sys.modules and "COLAB_RELEASE_TAG" in os.environ\n'
    'ON_COLAB = ON_COLAB and not any(k.startswith("KAGGLE_") for k in os.environ)\n'
)

SETUP_FAILED = (
    "The course's set-up did not finish (see the messages above). Run this cell again; if it "
    "fails again: Runtime > Disconnect and delete runtime, then run the notebook from the top."
)

#: The exception the install block stops with: a RuntimeError that IPython shows as its message
#: alone (IPython calls ``_render_traceback_`` instead of printing a traceback), so a learner on
#: Colab sees what to do, and "Run all" still stops there.
_STOP_CLASS = (
    "\n"
    "    class SetUpStop(RuntimeError):  # IPython shows its message alone, without a traceback\n"
    "        def _render_traceback_(self):\n"
    "            return [str(self)]\n"
    "\n"
)


def _drive_block(
    version: str | None, content: str = "/content", depth: int = 4, entries: int = 5000
) -> str:
    """The install block before publication: the course from the learner's Google Drive. The
    search is breadth first and bounded (``depth`` folders below My Drive, ``entries`` names in
    all, folders of 1,000 names or more not entered), so it takes seconds even on a full Drive."""
    marker, stop = f"{content}/{os.path.basename(MARKER)}", f"{content}/{STOP_NAME}"
    pointer, boot = f"{content}/{PROGRESS_POINTER}", f"{content}/{BOOT_NAME}"
    return (
        f"{BLOCK_HEADER}\n{_DETECT}"
        f'if ON_COLAB and not os.path.exists("{marker}"):\n'
        f"{_STOP_CLASS}"
        '    # Not published yet: the course comes from your Google Drive (README, "Colab").\n'
        "    import json\n"
        "    import zipfile\n"
        "\n"
        "    from google.colab import drive\n"
        "\n"
        "    try:\n"
        f'        drive.mount("{content}/drive")\n'
        "    except Exception as error:  # no consent given, or the mount timed out\n"
        "        raise SetUpStop(\n"
        f'            f"{DRIVE_FAILED} ({{error}})"\n'
        "        ) from None\n"
        f'    found, queue, budget = [], [("{content}/drive/MyDrive", 0)], {entries}\n'
        f"    while queue and budget > 0:  # breadth first, bounded: seconds, not minutes\n"
        "        folder, depth = queue.pop(0)\n"
        "        try:\n"
        '            entries = [e for e in os.scandir(folder) if not e.name.startswith(".")]\n'
        "        except OSError:\n"
        "            continue\n"
        "        budget -= len(entries)\n"
        f'        if any(entry.name == "{COURSE_MARKER}" for entry in entries):\n'
        "            found.append(folder)\n"
        "            continue\n"
        "        for entry in sorted(entries, key=lambda entry: entry.name):\n"
        '            if entry.name.startswith("gpu-course") and entry.name.endswith(".zip"):\n'
        "                found.append(entry.path)\n"
        f"            elif depth < {depth} and len(entries) < 1000 and entry.is_dir():\n"
        "                queue.append((entry.path, depth + 1))\n"
        "    code = None\n"
        "    for path in found:  # this file's runner, from the first copy that has one\n"
        "        try:\n"
        "            if os.path.isdir(path):\n"
        '                with open(os.path.join(path, "gpu_utils", "colab.py"), "rb") as file:\n'
        "                    code = file.read()\n"
        "            else:\n"
        "                with zipfile.ZipFile(path) as archive:\n"
        "                    names = [n for n in archive.namelist()"
        ' if n.endswith("gpu_utils/colab.py")]\n'
        "                    code = archive.read(names[0])\n"
        "            break\n"
        "        except (OSError, IndexError, zipfile.BadZipFile):\n"
        "            continue\n"
        "    if code is None:\n"
        "        raise SetUpStop(\n"
        f'            "{NO_COURSE}"\n'
        "        )\n"
        f'    with open("{content}/{FOUND_NAME}", "w") as file:\n'
        "        json.dump(found, file)\n"
        f'    with open("{boot}", "wb") as file:\n'
        "        file.write(code)\n"
        f"    %run {boot} drive --version {version} --content {content}\n"
        "    # %run does not stop on errors: stop here, before `import gpu_utils` fails obscurely.\n"
        f'    if not os.path.exists("{marker}"):\n'
        f'        why = "{SETUP_FAILED}"\n'
        f'        if os.path.exists("{stop}"):\n'
        f'            with open("{stop}") as file:\n'
        "                why = file.read()\n"
        "        raise SetUpStop(why)\n"
        "# Your progress is kept in Google Drive, beside the course.\n"
        f'if ON_COLAB and os.path.exists("{pointer}"):\n'
        f'    with open("{pointer}") as file:\n'
        '        os.environ["GPU_COURSE_PROGRESS"] = file.read()\n'
    )


def install_block(repository: str | None, ref: str | None, version: str | None) -> str:
    """The lines the first code cell starts with (they do something only on Colab), for the course
    published at ``repository`` (OWNER/NAME) and tag ``ref``, or, while either is None, for the
    course of ``version`` in Google Drive. Formatted as ``ruff format`` would, so that notebooks stay
    lint-clean. :func:`gpu_utils.authoring.publish.cell_block` checks the publication first."""
    if repository is None or ref is None:
        return _drive_block(version)
    done = f"{CLONE_DIR}/{CLONE_DONE.format(ref=ref)}"
    clone = (
        f"rm -rf {CLONE_DIR} && git clone -q --depth 1 -b {ref} "
        f"https://github.com/{repository} {CLONE_DIR} && touch {done}"
    )
    return (
        f"{BLOCK_HEADER}\n{_DETECT}"
        f'if ON_COLAB and not os.path.exists("{MARKER}"):\n'
        f"{_STOP_CLASS}"
        f"    # No finished clone of {ref} yet (none, or an interrupted one): clone it afresh.\n"
        f'    if not os.path.exists("{done}"):\n'
        f"        !{clone}\n"
        f"    %run {CLONE_DIR}/gpu_utils/colab.py install --ref {ref}\n"
        "    # %run does not stop on errors: stop here, before `import gpu_utils` fails obscurely.\n"
        f'    if not os.path.exists("{MARKER}"):\n'
        "        raise SetUpStop(\n"
        f'            "{SETUP_FAILED}"\n'
        "        )\n"
    )
