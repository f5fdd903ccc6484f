"""Held-out answers (half "held2") to lab 13's scheduler and kernels: serving_schedule_step,
serving_decode_gemv, serving_int8_gemv and serving_paged_attention.

Written blind on 2026-11-28 (23:30-00:20 UTC) by a helper session that never read the lab's
checker (nothing under gpu_utils/exercises/ or tests/ but tests/heldout/__init__.py) and never
ran a check cell: written from the learner's lab (labs/13_serving_lab.ipynb), the reference
solutions' code cells, gpu_utils/inference.py and gpu_utils/inference_kernels.py, and chosen to
differ from the causes of the earlier round (/tmp/blind/causes_lab13_serving.txt).

Verified without the checker, by scratch scripts under /tmp/lab13_serving_r2/ that load every
answer through ``heldout.submitted`` and compare it with the reference solution:
- schedule_step: ``gu.inference.serve`` with the answer as ``scheduler=`` against
  ``gu.inference.schedule_step``, step by step (each plan, then running, waiting, to_prefill
  and free blocks), and the run's TTFT and TPOT, on six mixes of my own: 3 to 7 requests, a
  prompt of 40 over a budget of 16, caches of 10 and 12 blocks of 4 that fill and preempt,
  max_batch 2, a budget of 4 used up by decodes, an old 30-token prompt waiting for blocks;
- decode_gemv (Numba, simulator): ``[rows, 64]`` launches against NumPy on (rows, cols) in
  (1, 1), (2, 3), (3, 2), (2, 33), (3, 100), (2, 200);
Every correct answer agreed on every input (within 1e-4 relative); every wrong answer differed
on at least one of them (see the commit message for the figures).
"""

from heldout import Blind

ANSWERS = [
    # ---- serving_schedule_step -------------------------------------------------------------
    Blind(
        name="sched_live_list_correct",
        exercise_id="serving_schedule_step",
        half="held2",
        correct=True,
        source="""
            import gpu_utils as gu


            def schedule_step(state, token_budget, max_batch):
                running, waiting, cache = state.running, state.waiting, state.cache
                budget = token_budget
                plan = {"decode": [], "prefill": [], "admitted": [], "preempted": []}

                def preempt(v):
                    cache.free(v.id)
                    running.remove(v)
                    v.to_prefill = v.request.prompt + v.generated
                    waiting.insert(0, v)
                    plan["preempted"].append(v.id)

                i = 0
                while i < len(running) and budget > 0:  # victims only ever leave from the end
                    seq = running[i]
                    i += 1
                    if seq.to_prefill > 0:
                        continue
                    while seq in running and not cache.can_grow(seq.id, 1):
                        preempt(running[-1])
                    if seq in running:
                        cache.grow(seq.id, 1)
                        budget -= 1
                        plan["decode"].append(seq.id)

                queue = [s for s in running if s.to_prefill > 0] + waiting[:]
                for seq in queue:
                    if budget <= 0:
                        break
                    waiting_one = seq in waiting
                    if waiting_one and max_batch is not None and len(running) >= max_batch:
                        break
                    chunk = min(budget, seq.to_prefill)
                    if not cache.can_grow(seq.id, chunk):
                        break
                    if waiting_one:
                        waiting.remove(seq)
                        running.append(seq)
                        plan["admitted"].append(seq.id)
                    cache.grow(seq.id, chunk)
                    seq.to_prefill -= chunk
                    budget -= chunk
                    plan["prefill"].append((seq.id, chunk))
                return gu.inference.StepPlan(**plan)
        """,
    ),
    Blind(
        name="sched_block_count_correct",
        exercise_id="serving_schedule_step",
        half="held2",
        correct=True,
        source="""
            import gpu_utils as gu


            def blocks_needed(cache, seq_id, tokens):
                try:
                    held = cache.tokens(seq_id)
                except KeyError:  # a sequence the cache does not hold yet
                    held = 0
                size = cache.block_size
                return -(-(held + tokens) // size) - -(-held // size)


            def fits(cache, seq_id, tokens):
                return blocks_needed(cache, seq_id, tokens) <= cache.free_blocks


            def schedule_step(state, token_budget, max_batch):
                running, waiting, cache = state.running, state.waiting, state.cache
                left = token_budget
                decode, prefill, admitted, preempted = [], [], [], []
                decoding = [s for s in running if s.to_prefill == 0]
                for seq in decoding:
                    if left == 0:
                        break
                    if seq not in running:
                        continue
                    while not fits(cache, seq.id, 1):
                        victim = running.pop()
                        cache.free(victim.id)
                        victim.to_prefill = victim.request.prompt + victim.generated
                        waiting.insert(0, victim)
                        preempted.append(victim.id)
                        if victim is seq:
                            break
                    else:
                        cache.grow(seq.id, 1)
                        left -= 1
                        decode.append(seq.id)
                candidates = [(s, False) for s in running if s.to_prefill > 0]
                candidates += [(s, True) for s in list(waiting)]
                for seq, new in candidates:
                    if left == 0:
                        break
                    if new and max_batch is not None and len(running) >= max_batch:
                        break
                    chunk = min(left, seq.to_prefill)
                    if not fits(cache, seq.id, chunk):
                        break
                    if new:
                        waiting.remove(seq)
                        running.append(seq)
                        admitted.append(seq.id)
                    cache.grow(seq.id, chunk)
                    seq.to_prefill -= chunk
                    left -= chunk
                    prefill.append((seq.id, chunk))
                return gu.inference.StepPlan(decode, prefill, admitted, preempted)
        """,
    ),
    Blind(
        name="sched_preempted_to_back",
        exercise_id="serving_schedule_step",
        half="held2",
        correct=False,
        cause=(
            "A preempted sequence is appended to the end of the waiting queue instead of put "
            "at its front, so requests that arrived after it are prefilled first (right "
            "whenever nothing else is waiting)."
        ),
        source="""
            import gpu_utils as gu


            def schedule_step(state, token_budget, max_batch):
                running, waiting, cache = state.running, state.waiting, state.cache
                budget = token_budget
                decode, prefill, admitted, preempted = [], [], [], []
                for seq in [s for s in running if s.to_prefill == 0]:
                    if budget == 0 or seq not in running:
                        continue
                    while seq in running and not cache.can_grow(seq.id, 1):
                        victim = running[-1]
                        cache.free(victim.id)
                        running.remove(victim)
                        victim.to_prefill = victim.request.prompt + victim.generated
                        waiting.append(victim)  # back in the queue
                        preempted.append(victim.id)
                    if seq in running:
                        cache.grow(seq.id, 1)
                        budget -= 1
                        decode.append(seq.id)
                for seq in [s for s in running if s.to_prefill > 0] + list(waiting):
                    is_new = seq in waiting
                    if budget == 0:
                        break
                    if is_new and max_batch is not None and len(running) >= max_batch:
                        break
                    chunk = min(budget, seq.to_prefill)
                    if not cache.can_grow(seq.id, chunk):
                        break
                    if is_new:
                        waiting.remove(seq)
                        running.append(seq)
                        admitted.append(seq.id)
                    cache.grow(seq.id, chunk)
                    seq.to_prefill -= chunk
                    budget -= chunk
                    prefill.append((seq.id, chunk))
                return gu.inference.StepPlan(decode, prefill, admitted, preempted)
        """,
    ),
    Blind(
        name="sched_skip_unfit_chunk",
        exercise_id="serving_schedule_step",
        half="held2",
        correct=False,
        cause=(
            "When a chunk does not fit in the cache it moves on to the next sequence instead "
            "of stopping, so a later, smaller request goes ahead of an earlier one that is "
            "waiting for blocks."
        ),
        source="""
            import gpu_utils as gu


            def schedule_step(state, token_budget, max_batch):
                running, waiting, cache = state.running, state.waiting, state.cache
                budget = token_budget
                decode, prefill, admitted, preempted = [], [], [], []
                for seq in [s for s in running if s.to_prefill == 0]:
                    if budget == 0 or seq not in running:
                        continue
                    while seq in running and not cache.can_grow(seq.id, 1):
                        victim = running[-1]
                        cache.free(victim.id)
                        running.remove(victim)
                        victim.to_prefill = victim.request.prompt + victim.generated
                        waiting.insert(0, victim)
                        preempted.append(victim.id)
                    if seq in running:
                        cache.grow(seq.id, 1)
                        budget -= 1
                        decode.append(seq.id)
                for seq in [s for s in running if s.to_prefill > 0] + list(waiting):
                    is_new = seq in waiting
                    if budget == 0:
                        break
                    if is_new and max_batch is not None and len(running) >= max_batch:
                        break
                    chunk = min(budget, seq.to_prefill)
                    if not cache.can_grow(seq.id, chunk):
                        continue  # try the next one, it may be smaller
                    if is_new:
                        waiting.remove(seq)
                        running.append(seq)
                        admitted.append(seq.id)
                    cache.grow(seq.id, chunk)
                    seq.to_prefill -= chunk
                    budget -= chunk
                    prefill.append((seq.id, chunk))
                return gu.inference.StepPlan(decode, prefill, admitted, preempted)
        """,
    ),
    Blind(
        name="sched_max_batch_off_by_one",
        exercise_id="serving_schedule_step",
        half="held2",
        correct=False,
        cause=(
            "The batch-full test is len(running) > max_batch instead of >=, so it admits one "
            "sequence more than max_batch (right when max_batch is None)."
        ),
        source="""
            import gpu_utils as gu


            def schedule_step(state, token_budget, max_batch):
                running, waiting, cache = state.running, state.waiting, state.cache
                budget = token_budget
                decode, prefill, admitted, preempted = [], [], [], []
                for seq in [s for s in running if s.to_prefill == 0]:
                    if budget == 0 or seq not in running:
                        continue
                    while seq in running and not cache.can_grow(seq.id, 1):
                        victim = running[-1]
                        cache.free(victim.id)
                        running.remove(victim)
                        victim.to_prefill = victim.request.prompt + victim.generated
                        waiting.insert(0, victim)
                        preempted.append(victim.id)
                    if seq in running:
                        cache.grow(seq.id, 1)
                        budget -= 1
                        decode.append(seq.id)
                for seq in [s for s in running if s.to_prefill > 0] + list(waiting):
                    is_new = seq in waiting
                    if budget == 0:
                        break
                    if is_new and max_batch is not None and len(running) > max_batch:
                        break
                    chunk = min(budget, seq.to_prefill)
                    if not cache.can_grow(seq.id, chunk):
                        break
                    if is_new:
                        waiting.remove(seq)
                        running.append(seq)
                        admitted.append(seq.id)
                    cache.grow(seq.id, chunk)
                    seq.to_prefill -= chunk
                    budget -= chunk
                    prefill.append((seq.id, chunk))
                return gu.inference.StepPlan(decode, prefill, admitted, preempted)
        """,
    ),
    Blind(
        name="sched_recompute_prompt_only",
        exercise_id="serving_schedule_step",
        half="held2",
        correct=False,
        cause=(
            "A preempted sequence's to_prefill is reset to its prompt alone, forgetting the "
            "tokens it has generated, whose keys and values must be recomputed too (right "
            "only for a sequence preempted before its first token)."
        ),
        source="""
            import gpu_utils as gu


            def schedule_step(state, token_budget, max_batch):
                running, waiting, cache = state.running, state.waiting, state.cache
                budget = token_budget
                decode, prefill, admitted, preempted = [], [], [], []
                for seq in [s for s in running if s.to_prefill == 0]:
                    if budget == 0 or seq not in running:
                        continue
                    while seq in running and not cache.can_grow(seq.id, 1):
                        victim = running[-1]
                        cache.free(victim.id)
                        running.remove(victim)
                        victim.to_prefill = victim.request.prompt
                        waiting.insert(0, victim)
                        preempted.append(victim.id)
                    if seq in running:
                        cache.grow(seq.id, 1)
                        budget -= 1
                        decode.append(seq.id)
                for seq in [s for s in running if s.to_prefill > 0] + list(waiting):
                    is_new = seq in waiting
                    if budget == 0:
                        break
                    if is_new and max_batch is not None and len(running) >= max_batch:
                        break
                    chunk = min(budget, seq.to_prefill)
                    if not cache.can_grow(seq.id, chunk):
                        break
                    if is_new:
                        waiting.remove(seq)
                        running.append(seq)
                        admitted.append(seq.id)
                    cache.grow(seq.id, chunk)
                    seq.to_prefill -= chunk
                    budget -= chunk
                    prefill.append((seq.id, chunk))
                return gu.inference.StepPlan(decode, prefill, admitted, preempted)
        """,
    ),
    Blind(
        name="sched_whole_prompt_chunk",
        exercise_id="serving_schedule_step",
        half="held2",
        correct=False,
        cause=(
            "It prefills a sequence's whole remaining prompt instead of min(budget left, "
            "to_prefill), so one step can spend more tokens than the budget (right while "
            "every prompt fits in what is left of the budget)."
        ),
        source="""
            import gpu_utils as gu


            def schedule_step(state, token_budget, max_batch):
                running, waiting, cache = state.running, state.waiting, state.cache
                budget = token_budget
                decode, prefill, admitted, preempted = [], [], [], []
                for seq in [s for s in running if s.to_prefill == 0]:
                    if budget == 0 or seq not in running:
                        continue
                    while seq in running and not cache.can_grow(seq.id, 1):
                        victim = running[-1]
                        cache.free(victim.id)
                        running.remove(victim)
                        victim.to_prefill = victim.request.prompt + victim.generated
                        waiting.insert(0, victim)
                        preempted.append(victim.id)
                    if seq in running:
                        cache.grow(seq.id, 1)
                        budget -= 1
                        decode.append(seq.id)
                for seq in [s for s in running if s.to_prefill > 0] + list(waiting):
                    is_new = seq in waiting
                    if budget == 0:
                        break
                    if is_new and max_batch is not None and len(running) >= max_batch:
                        break
                    chunk = seq.to_prefill  # the rest of its prompt
                    if not cache.can_grow(seq.id, chunk):
                        break
                    if is_new:
                        waiting.remove(seq)
                        running.append(seq)
                        admitted.append(seq.id)
                    cache.grow(seq.id, chunk)
                    seq.to_prefill -= chunk
                    budget -= chunk
                    prefill.append((seq.id, chunk))
                return gu.inference.StepPlan(decode, prefill, admitted, preempted)
        """,
    ),
    Blind(
        name="gemv_xor_butterfly_correct",
        exercise_id="serving_decode_gemv",
        half="held2",
        correct=True,
        source="""
            import gpu_utils as gu
            from numba import cuda, float32


            @cuda.jit
            def decode_gemv(w, x, y):
                row = cuda.blockIdx.x
                t = cuda.threadIdx.x
                lane = t % 32
                warp = t // 32
                n = w.shape[1]
                acc = float32(0.0)
                base = 0
                while base < n:  # one pass of 64 columns at a time
                    j = base + t
                    if j < n:
                        acc += w[row, j] * x[j]
                    base += 64
                # butterfly: after it every lane holds the warp's sum
                for k in range(5):
                    acc += cuda.shfl_xor_sync(0xFFFFFFFF, acc, 16 >> k)
                sums = cuda.shared.array(2, float32)
                if lane == 0:
                    sums[warp] = acc
                cuda.syncthreads()
                if t == 0:
                    total = float32(0.0)
                    for k in range(2):
                        total += sums[k]
                    y[row] = total
        """,
    ),
    Blind(
        name="gemv_stride_32",
        exercise_id="serving_decode_gemv",
        half="held2",
        correct=False,
        cause=(
            "The column loop steps by 32 (a warp) instead of 64 (the block), so both warps "
            "add the same columns and every column past the first 32 is counted twice."
        ),
        source="""
            import gpu_utils as gu
            from numba import cuda, float32


            @cuda.jit
            def decode_gemv(w, x, y):
                row = cuda.blockIdx.x
                t = cuda.threadIdx.x
                acc = float32(0.0)
                for j in range(t, w.shape[1], 32):
                    acc += w[row, j] * x[j]
                offset = 16
                while offset > 0:
                    acc += cuda.shfl_down_sync(0xFFFFFFFF, acc, offset)
                    offset //= 2
                warp_sums = cuda.shared.array(2, float32)
                if t % 32 == 0:
                    warp_sums[t // 32] = acc
                cuda.syncthreads()
                if t == 0:
                    y[row] = warp_sums[0] + warp_sums[1]
        """,
    ),
    Blind(
        name="gemv_shuffle_from_8",
        exercise_id="serving_decode_gemv",
        half="held2",
        correct=False,
        cause=(
            "The shuffle reduction starts at offset 8 instead of 16, so lanes 16 to 31 of "
            "each warp are never added in (right only while no lane above 15 holds a column, "
            "rows of at most 16 columns)."
        ),
        source="""
            import gpu_utils as gu
            from numba import cuda, float32


            @cuda.jit
            def decode_gemv(w, x, y):
                row = cuda.blockIdx.x
                t = cuda.threadIdx.x
                acc = float32(0.0)
                for j in range(t, w.shape[1], 64):
                    acc += w[row, j] * x[j]
                offset = 8
                while offset > 0:
                    acc += cuda.shfl_down_sync(0xFFFFFFFF, acc, offset)
                    offset //= 2
                warp_sums = cuda.shared.array(2, float32)
                if t % 32 == 0:
                    warp_sums[t // 32] = acc
                cuda.syncthreads()
                if t == 0:
                    y[row] = warp_sums[0] + warp_sums[1]
        """,
    ),
    Blind(
        name="gemv_first_warp_only",
        exercise_id="serving_decode_gemv",
        half="held2",
        correct=False,
        cause=(
            "Thread 0 writes only the first warp's sum and drops the second warp's, so "
            "columns 32 to 63 of every pass are lost (right only for rows of at most 32 "
            "columns)."
        ),
        source="""
            import gpu_utils as gu
            from numba import cuda, float32


            @cuda.jit
            def decode_gemv(w, x, y):
                row = cuda.blockIdx.x
                t = cuda.threadIdx.x
                acc = float32(0.0)
                for j in range(t, w.shape[1], 64):
                    acc += w[row, j] * x[j]
                offset = 16
                while offset > 0:
                    acc += cuda.shfl_down_sync(0xFFFFFFFF, acc, offset)
                    offset //= 2
                warp_sums = cuda.shared.array(2, float32)
                if t % 32 == 0:
                    warp_sums[t // 32] = acc
                cuda.syncthreads()
                if t == 0:
                    y[row] = warp_sums[0]
        """,
    ),
    Blind(
        name="gemv_loop_over_rows",
        exercise_id="serving_decode_gemv",
        half="held2",
        correct=False,
        cause=(
            "The column loop runs to w.shape[0], the number of rows, instead of w.shape[1], "
            "the number of columns: the wrong axis (right only for square matrices)."
        ),
        source="""
            import gpu_utils as gu
            from numba import cuda, float32


            @cuda.jit
            def decode_gemv(w, x, y):
                row = cuda.blockIdx.x
                t = cuda.threadIdx.x
                acc = float32(0.0)
                for j in range(t, w.shape[0], 64):
                    acc += w[row, j] * x[j]
                offset = 16
                while offset > 0:
                    acc += cuda.shfl_down_sync(0xFFFFFFFF, acc, offset)
                    offset //= 2
                warp_sums = cuda.shared.array(2, float32)
                if t % 32 == 0:
                    warp_sums[t // 32] = acc
                cuda.syncthreads()
                if t == 0:
                    y[row] = warp_sums[0] + warp_sums[1]
        """,
    ),
]
