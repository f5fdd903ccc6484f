"""One GPU, chapters 01-07: the calculators, models and tools of the chapters on a single device.

- chapter 01, why GPUs: :mod:`.backends`, :mod:`.cpu_vs_gpu`;
- chapter 02, architecture: :mod:`.occupancy`, :mod:`.ptx`;
- chapter 03, first kernels: :mod:`.transfers`, :mod:`.streams`, :mod:`.viz`;
- chapter 04, memory: :mod:`.trace`, :mod:`.latency`, :mod:`.roofline`;
- chapter 05, parallel patterns: :mod:`.attention` (the warp intrinsics are the simulator's,
  :mod:`gpu_utils.sim.warp`);
- chapter 06, matmul and number formats: :mod:`.matmul`, :mod:`.precision`;
- chapter 07, CPU, GPU and TPU: :mod:`.systolic` (published figures: :mod:`gpu_utils.facts`).

Notebooks reach each as ``gu.<module>`` (``gu.trace``, ``gu.occupancy``, ...).
"""
