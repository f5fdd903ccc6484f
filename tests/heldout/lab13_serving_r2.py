"""Held-out answers (half "held2") to lab 13's scheduler and kernels: serving_schedule_step,
serving_decode_gemv, serving_int8_gemv and serving_paged_attention.

Written blind on 2026-11-28 (23:30-00:20 UTC) by a helper session that never read the lab's
checker (nothing under gpu_utils/exercises/ or tests/ but tests/heldout/__init__.py) and never
ran a check cell: written from the learner's lab (labs/13_serving_lab.ipynb), the reference
solutions' code cells, gpu_utils/serving/inference.py and gpu_utils/serving/inference_kernels.py, and chosen to
differ from the causes of the earlier round (/tmp/blind/causes_lab13_serving.txt).

Verified without the checker, by scratch scripts under /tmp/lab13_serving_r2/ that load every
answer through ``heldout.submitted`` and compare it with the right result:
- schedule_step: ``gu.inference.serve`` with the answer as ``scheduler=`` against
  ``gu.inference.schedule_step``, step by step (each plan, then running, waiting, to_prefill
  and free blocks), and the run's TTFT and TPOT, on six mixes of my own: 3 to 7 requests, a
  prompt of 40 over a budget of 16, caches of 10 and 12 blocks of 4 that fill and preempt,
  max_batch 2, a budget of 4 used up by decodes, an old 30-token prompt waiting for blocks;
- decode_gemv (Numba, simulator): ``[rows, 64]`` launches against NumPy on (rows, cols) in
  (1, 1), (2, 3), (3, 2), (2, 33), (3, 100), (2, 200);
- int8_gemv (Triton interpreter): ``[(rows,)]`` launches against the float64 product of
  ``gu.inference.dequantize(gu.inference.quantize(w, 8, GROUP))`` and x, on (rows, cols, GROUP,
  BLOCK) in (1, 4, 4, 4), (2, 12, 3, 8), (3, 64, 32, 16), (2, 40, 4, 16), (5, 128, 128, 32),
  (2, 96, 2, 128), and (2, 512, 128, 64) with row sums of about 101,000 (past 65,504);
- paged_attention (Triton interpreter): against dense softmax(K q / sqrt(D)) V in float64 on the
  keys and values gathered through the block tables of a PagedAllocator of 40 blocks grown 1 to
  3 tokens at a time, round robin (scattered tables, -1 past each row's blocks, random keys and
  values in every slot), on (lengths, BLOCK_SIZE, D) in ([1], 1, 3), ([5, 3], 2, 5),
  ([7, 12, 4], 4, 8), ([19, 9], 4, 24), ([8, 6, 11, 2, 16], 2, 3), ([13, 1], 1, 16).
Every correct answer agreed on every input (kernels within rtol 1e-4); every wrong answer differed
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
        hints=("w.shape[0], the number of rows",),
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
    # ---- serving_int8_gemv ---------------------------------------------------------------------
    Blind(
        name="int8_flat_scale_index_correct",
        exercise_id="serving_int8_gemv",
        half="held2",
        correct=True,
        source="""
            import gpu_utils as gu
            import triton
            import triton.language as tl


            @triton.jit
            def int8_gemv_kernel(q_ptr, scale_ptr, x_ptr, y_ptr, n_cols, GROUP: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
                row = tl.program_id(0)
                offs = tl.arange(0, BLOCK)
                total = 0.0
                for b in range(0, tl.cdiv(n_cols, BLOCK)):
                    cols = b * BLOCK + offs
                    ok = cols < n_cols
                    flat = row * n_cols + cols  # n_cols is a multiple of GROUP: flat // GROUP is the scale
                    q = tl.load(q_ptr + flat, mask=ok, other=0).to(tl.float32)
                    s = tl.load(scale_ptr + flat // GROUP, mask=ok, other=0.0)
                    x = tl.load(x_ptr + cols, mask=ok, other=0.0)
                    total += tl.sum(q * s * x, axis=0)  # one scalar per block
                tl.store(y_ptr + row, total)
        """,
    ),
    Blind(
        name="int8_one_scale_per_block",
        exercise_id="serving_int8_gemv",
        half="held2",
        correct=False,
        cause=(
            "It loads one scale per block of BLOCK columns, the group of the block's first "
            "column, instead of one per column (cols // GROUP), so columns of later groups in"
            " the same block get the wrong scale (right only when GROUP is a multiple of "
            "BLOCK)."
        ),
        source="""
            import gpu_utils as gu
            import triton
            import triton.language as tl


            @triton.jit
            def int8_gemv_kernel(q_ptr, scale_ptr, x_ptr, y_ptr, n_cols, GROUP: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
                row = tl.program_id(0)
                acc = tl.zeros((BLOCK,), dtype=tl.float32)
                for start in range(0, n_cols, BLOCK):
                    cols = start + tl.arange(0, BLOCK)
                    mask = cols < n_cols
                    q = tl.load(q_ptr + row * n_cols + cols, mask=mask, other=0)
                    s = tl.load(scale_ptr + row * (n_cols // GROUP) + start // GROUP)  # the block's group
                    x = tl.load(x_ptr + cols, mask=mask, other=0.0)
                    acc += q.to(tl.float32) * s * x
                tl.store(y_ptr + row, tl.sum(acc, axis=0))
        """,
    ),
    Blind(
        name="int8_floor_block_count",
        hints=("tl.cdiv(n_cols, BLOCK)",),
        exercise_id="serving_int8_gemv",
        half="held2",
        correct=False,
        cause=(
            "It counts the blocks with floor division, so the partial last block is never "
            "visited and its columns are dropped (right only when n_cols is a multiple of "
            "BLOCK)."
        ),
        source="""
            import gpu_utils as gu
            import triton
            import triton.language as tl


            @triton.jit
            def int8_gemv_kernel(q_ptr, scale_ptr, x_ptr, y_ptr, n_cols, GROUP: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
                row = tl.program_id(0)
                acc = tl.zeros((BLOCK,), dtype=tl.float32)
                for start in range(0, (n_cols // BLOCK) * BLOCK, BLOCK):
                    cols = start + tl.arange(0, BLOCK)
                    mask = cols < n_cols
                    q = tl.load(q_ptr + row * n_cols + cols, mask=mask, other=0)
                    s = tl.load(scale_ptr + row * (n_cols // GROUP) + cols // GROUP, mask=mask, other=0.0)
                    x = tl.load(x_ptr + cols, mask=mask, other=0.0)
                    acc += q.to(tl.float32) * s * x
                tl.store(y_ptr + row, tl.sum(acc, axis=0))
        """,
    ),
    Blind(
        name="int8_fp16_accumulator",
        exercise_id="serving_int8_gemv",
        half="held2",
        correct=False,
        cause=(
            "It accumulates the products in float16 instead of float32, so the sums lose "
            "precision and a row sum past 65,504 overflows to inf."
        ),
        source="""
            import gpu_utils as gu
            import triton
            import triton.language as tl


            @triton.jit
            def int8_gemv_kernel(q_ptr, scale_ptr, x_ptr, y_ptr, n_cols, GROUP: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
                row = tl.program_id(0)
                acc = tl.zeros((BLOCK,), dtype=tl.float16)
                for start in range(0, n_cols, BLOCK):
                    cols = start + tl.arange(0, BLOCK)
                    mask = cols < n_cols
                    q = tl.load(q_ptr + row * n_cols + cols, mask=mask, other=0)
                    s = tl.load(scale_ptr + row * (n_cols // GROUP) + cols // GROUP, mask=mask, other=0.0)
                    x = tl.load(x_ptr + cols, mask=mask, other=0.0)
                    acc += (q.to(tl.float32) * s * x).to(tl.float16)
                tl.store(y_ptr + row, tl.sum(acc, axis=0))
        """,
    ),
    Blind(
        name="int8_store_inside_loop",
        hints=("last block of columns alone",),
        exercise_id="serving_int8_gemv",
        half="held2",
        correct=False,
        cause=(
            "It writes y[row] inside the loop from the current block's products alone, so "
            "each pass overwrites the last and only the final block's columns are summed "
            "(right only when the row fits in one block)."
        ),
        source="""
            import gpu_utils as gu
            import triton
            import triton.language as tl


            @triton.jit
            def int8_gemv_kernel(q_ptr, scale_ptr, x_ptr, y_ptr, n_cols, GROUP: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
                row = tl.program_id(0)
                acc = tl.zeros((BLOCK,), dtype=tl.float32)
                for start in range(0, n_cols, BLOCK):
                    cols = start + tl.arange(0, BLOCK)
                    mask = cols < n_cols
                    q = tl.load(q_ptr + row * n_cols + cols, mask=mask, other=0)
                    s = tl.load(scale_ptr + row * (n_cols // GROUP) + cols // GROUP, mask=mask, other=0.0)
                    x = tl.load(x_ptr + cols, mask=mask, other=0.0)
                    acc = q.to(tl.float32) * s * x
                    tl.store(y_ptr + row, tl.sum(acc, axis=0))
        """,
    ),
    # ---- serving_paged_attention -------------------------------------------------------------
    Blind(
        name="paged_two_pass_correct",
        exercise_id="serving_paged_attention",
        half="held2",
        correct=True,
        source="""
            import gpu_utils as gu
            import triton
            import triton.language as tl


            @triton.jit
            def paged_attention_kernel(
                q_ptr, k_ptr, v_ptr, table_ptr, lens_ptr, out_ptr, max_blocks, scale, D,
                BLOCK_SIZE: tl.constexpr, BLOCK_D: tl.constexpr,
            ):  # fmt: skip
                # two passes over the blocks: the maximum first, then the sums (no rescaling needed)
                seq = tl.program_id(0)
                length = tl.load(lens_ptr + seq)
                n_blocks = (length + BLOCK_SIZE - 1) // BLOCK_SIZE
                d = tl.arange(0, BLOCK_D)
                t = tl.arange(0, BLOCK_SIZE)
                dmask = d < D
                q = tl.load(q_ptr + seq * D + d, mask=dmask, other=0.0) * scale
                row = table_ptr + seq * max_blocks
                m = tl.max(tl.full((BLOCK_SIZE,), -1.0e30, tl.float32), axis=0)
                for b in range(0, n_blocks):
                    phys = tl.load(row + b)
                    pos = b * BLOCK_SIZE + t
                    live = pos < length
                    ptrs = k_ptr + phys * BLOCK_SIZE * D + t[:, None] * D + d[None, :]
                    k = tl.load(ptrs, mask=live[:, None] & dmask[None, :], other=0.0)
                    s = tl.where(live, tl.sum(k * q[None, :], axis=1), -1.0e30)
                    m = tl.maximum(m, tl.max(s, axis=0))
                denom = tl.sum(tl.zeros((BLOCK_SIZE,), tl.float32), axis=0)
                out = tl.zeros((BLOCK_D,), tl.float32)
                for b in range(0, n_blocks):
                    phys = tl.load(row + b)
                    pos = b * BLOCK_SIZE + t
                    live = pos < length
                    base = phys * BLOCK_SIZE * D + t[:, None] * D + d[None, :]
                    both = live[:, None] & dmask[None, :]
                    k = tl.load(k_ptr + base, mask=both, other=0.0)
                    s = tl.sum(k * q[None, :], axis=1)
                    p = tl.where(live, tl.exp(s - m), 0.0)
                    v = tl.load(v_ptr + base, mask=both, other=0.0)
                    denom += tl.sum(p, axis=0)
                    out += tl.sum(p[:, None] * v, axis=0)
                tl.store(out_ptr + seq * D + d, out / denom, mask=dmask)
        """,
    ),
    Blind(
        name="paged_table_row_zero",
        exercise_id="serving_paged_attention",
        half="held2",
        correct=False,
        cause=(
            "It reads block b from row 0 of the block table for every sequence (table_ptr + "
            "b, without seq * max_blocks), so every sequence attends over sequence 0's blocks"
            " (and past them reads its -1 padding as a block number; right only for sequence 0)."
        ),
        source="""
            import gpu_utils as gu
            import triton
            import triton.language as tl


            @triton.jit
            def paged_attention_kernel(
                q_ptr, k_ptr, v_ptr, table_ptr, lens_ptr, out_ptr, max_blocks, scale, D,
                BLOCK_SIZE: tl.constexpr, BLOCK_D: tl.constexpr,
            ):  # fmt: skip
                seq = tl.program_id(0)
                length = tl.load(lens_ptr + seq)
                d = tl.arange(0, BLOCK_D)
                t = tl.arange(0, BLOCK_SIZE)
                q = tl.load(q_ptr + seq * D + d, mask=d < D, other=0.0)
                m = tl.max(tl.full((BLOCK_SIZE,), float("-inf"), tl.float32), axis=0)
                total = tl.sum(tl.zeros((BLOCK_SIZE,), tl.float32), axis=0)
                acc = tl.zeros((BLOCK_D,), tl.float32)
                for b in range(0, tl.cdiv(length, BLOCK_SIZE)):
                    block = tl.load(table_ptr + b)
                    valid = b * BLOCK_SIZE + t < length
                    offsets = block * BLOCK_SIZE * D + t[:, None] * D + d[None, :]
                    inside = valid[:, None] & (d[None, :] < D)
                    k = tl.load(k_ptr + offsets, mask=inside, other=0.0)
                    s = tl.where(valid, tl.sum(k * q[None, :], axis=1) * scale, float("-inf"))
                    m_new = tl.maximum(m, tl.max(s, axis=0))
                    alpha = tl.exp(m - m_new)
                    p = tl.exp(s - m_new)
                    total = total * alpha + tl.sum(p, axis=0)
                    v = tl.load(v_ptr + offsets, mask=inside, other=0.0)
                    acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
                    m = m_new
                tl.store(out_ptr + seq * D + d, acc / total, mask=d < D)
        """,
    ),
    Blind(
        name="paged_valid_off_by_one",
        hints=("one slot past",),
        exercise_id="serving_paged_attention",
        half="held2",
        correct=False,
        cause=(
            "The mask of the last block keeps positions up to and including length (<= "
            "instead of <), so one slot past the sequence's last token is loaded and scored "
            "(right when length is a multiple of BLOCK_SIZE)."
        ),
        source="""
            import gpu_utils as gu
            import triton
            import triton.language as tl


            @triton.jit
            def paged_attention_kernel(
                q_ptr, k_ptr, v_ptr, table_ptr, lens_ptr, out_ptr, max_blocks, scale, D,
                BLOCK_SIZE: tl.constexpr, BLOCK_D: tl.constexpr,
            ):  # fmt: skip
                seq = tl.program_id(0)
                length = tl.load(lens_ptr + seq)
                d = tl.arange(0, BLOCK_D)
                t = tl.arange(0, BLOCK_SIZE)
                q = tl.load(q_ptr + seq * D + d, mask=d < D, other=0.0)
                m = tl.max(tl.full((BLOCK_SIZE,), float("-inf"), tl.float32), axis=0)
                total = tl.sum(tl.zeros((BLOCK_SIZE,), tl.float32), axis=0)
                acc = tl.zeros((BLOCK_D,), tl.float32)
                for b in range(0, tl.cdiv(length, BLOCK_SIZE)):
                    block = tl.load(table_ptr + seq * max_blocks + b)
                    valid = b * BLOCK_SIZE + t <= length
                    offsets = block * BLOCK_SIZE * D + t[:, None] * D + d[None, :]
                    inside = valid[:, None] & (d[None, :] < D)
                    k = tl.load(k_ptr + offsets, mask=inside, other=0.0)
                    s = tl.where(valid, tl.sum(k * q[None, :], axis=1) * scale, float("-inf"))
                    m_new = tl.maximum(m, tl.max(s, axis=0))
                    alpha = tl.exp(m - m_new)
                    p = tl.exp(s - m_new)
                    total = total * alpha + tl.sum(p, axis=0)
                    v = tl.load(v_ptr + offsets, mask=inside, other=0.0)
                    acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
                    m = m_new
                tl.store(out_ptr + seq * D + d, acc / total, mask=d < D)
        """,
    ),
    Blind(
        name="paged_output_not_rescaled",
        exercise_id="serving_paged_attention",
        half="held2",
        correct=False,
        cause=(
            "The running output sum is not multiplied by exp(m_old - m_new) when the maximum "
            "grows (only the sum of exponentials is), so values weighted against an old "
            "maximum are over-weighted (right when the maximum is in the first block, e.g. "
            "one block)."
        ),
        source="""
            import gpu_utils as gu
            import triton
            import triton.language as tl


            @triton.jit
            def paged_attention_kernel(
                q_ptr, k_ptr, v_ptr, table_ptr, lens_ptr, out_ptr, max_blocks, scale, D,
                BLOCK_SIZE: tl.constexpr, BLOCK_D: tl.constexpr,
            ):  # fmt: skip
                seq = tl.program_id(0)
                length = tl.load(lens_ptr + seq)
                d = tl.arange(0, BLOCK_D)
                t = tl.arange(0, BLOCK_SIZE)
                q = tl.load(q_ptr + seq * D + d, mask=d < D, other=0.0)
                m = tl.max(tl.full((BLOCK_SIZE,), float("-inf"), tl.float32), axis=0)
                total = tl.sum(tl.zeros((BLOCK_SIZE,), tl.float32), axis=0)
                acc = tl.zeros((BLOCK_D,), tl.float32)
                for b in range(0, tl.cdiv(length, BLOCK_SIZE)):
                    block = tl.load(table_ptr + seq * max_blocks + b)
                    valid = b * BLOCK_SIZE + t < length
                    offsets = block * BLOCK_SIZE * D + t[:, None] * D + d[None, :]
                    inside = valid[:, None] & (d[None, :] < D)
                    k = tl.load(k_ptr + offsets, mask=inside, other=0.0)
                    s = tl.where(valid, tl.sum(k * q[None, :], axis=1) * scale, float("-inf"))
                    m_new = tl.maximum(m, tl.max(s, axis=0))
                    alpha = tl.exp(m - m_new)
                    p = tl.exp(s - m_new)
                    total = total * alpha + tl.sum(p, axis=0)
                    v = tl.load(v_ptr + offsets, mask=inside, other=0.0)
                    acc = acc + tl.sum(p[:, None] * v, axis=0)
                    m = m_new
                tl.store(out_ptr + seq * D + d, acc / total, mask=d < D)
        """,
    ),
    Blind(
        name="paged_row_stride_block_d",
        hints=("BLOCK_D (D rounded up",),
        exercise_id="serving_paged_attention",
        half="held2",
        correct=False,
        cause=(
            "It strides the cache's tokens and blocks by BLOCK_D, the padded power of two, "
            "instead of D, so keys and values are read from the wrong places (right only when"
            " D is a power of two)."
        ),
        source="""
            import gpu_utils as gu
            import triton
            import triton.language as tl


            @triton.jit
            def paged_attention_kernel(
                q_ptr, k_ptr, v_ptr, table_ptr, lens_ptr, out_ptr, max_blocks, scale, D,
                BLOCK_SIZE: tl.constexpr, BLOCK_D: tl.constexpr,
            ):  # fmt: skip
                seq = tl.program_id(0)
                length = tl.load(lens_ptr + seq)
                d = tl.arange(0, BLOCK_D)
                t = tl.arange(0, BLOCK_SIZE)
                q = tl.load(q_ptr + seq * D + d, mask=d < D, other=0.0)
                m = tl.max(tl.full((BLOCK_SIZE,), float("-inf"), tl.float32), axis=0)
                total = tl.sum(tl.zeros((BLOCK_SIZE,), tl.float32), axis=0)
                acc = tl.zeros((BLOCK_D,), tl.float32)
                for b in range(0, tl.cdiv(length, BLOCK_SIZE)):
                    block = tl.load(table_ptr + seq * max_blocks + b)
                    valid = b * BLOCK_SIZE + t < length
                    offsets = block * BLOCK_SIZE * BLOCK_D + t[:, None] * BLOCK_D + d[None, :]
                    inside = valid[:, None] & (d[None, :] < D)
                    k = tl.load(k_ptr + offsets, mask=inside, other=0.0)
                    s = tl.where(valid, tl.sum(k * q[None, :], axis=1) * scale, float("-inf"))
                    m_new = tl.maximum(m, tl.max(s, axis=0))
                    alpha = tl.exp(m - m_new)
                    p = tl.exp(s - m_new)
                    total = total * alpha + tl.sum(p, axis=0)
                    v = tl.load(v_ptr + offsets, mask=inside, other=0.0)
                    acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
                    m = m_new
                tl.store(out_ptr + seq * D + d, acc / total, mask=d < D)
        """,
    ),
]
