"""Many GPUs, chapters 08-11: collectives, processes, parallelism and training in practice.

- chapter 08, collectives: :mod:`.collectives`, :mod:`.collective_pictures`, :mod:`.dist` (ranks
  of ``torch.distributed`` from a notebook; its launcher is :mod:`._dist_launcher`);
- chapters 08b-11, the model: :mod:`.gpt`;
- chapter 09, data parallelism and ZeRO: :mod:`.data_parallel`, :mod:`.memory`, :mod:`.flops`;
- chapter 10, model parallelism: :mod:`.tensor_parallel`, :mod:`.pipeline`, :mod:`.parallelism`;
- chapter 11, training in practice: :mod:`.training`, :mod:`.train_script`, :mod:`.capstone`,
  :mod:`.capstone_profile`.

Notebooks reach each as ``gu.<module>`` (``gu.dist``, ``gu.memory``, ...).
"""
