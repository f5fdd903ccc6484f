"""Authoring (for the course's maintainers and instructors, not for learners): the labs generated
from the solutions (:mod:`.labgen`), the workshop kit (:mod:`.workshop`), the package's table of
contents (:mod:`.contents`) and the Google Drive bundle (:mod:`.colab_bundle`).
"""
