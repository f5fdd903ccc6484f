"""Facts: published hardware figures, each with its source, and measurements recorded on a named
GPU (chapters 01-07 and 10-13 read them; nothing here computes a model).

- :mod:`.specs`: GPUs and interconnects, as their makers publish them (``gu.specs``);
- :mod:`.processors`: a server CPU and Google's TPUs (``gu.processors``, chapter 07);
- :mod:`.recorded`: what the course measured on a real GPU, shown by notebooks that run on the
  simulator (``gu.reference``; its data is ``gpu_utils/reference_data/``).
"""
