"""Blind held-out round lab12_triton_r12 (half "held2") for labs/12_triton_lab.ipynb.

Written 2026-11-29 (about 09:34-09:45 UTC by the machine's clock) by a helper session that never
saw the checker. Read: tests/heldout/__init__.py, the solution notebook's cells
(solutions/12_triton_lab.ipynb), the docstring and first two entries of lab12_triton_r10.py (format
only), the cause= lines (only) of lab12_triton_r11.py and the earlier rounds' causes list
(/tmp/blind/causes_lab12_triton.txt); every wrong answer here has a mistake not on those lists.
Each answer's header imports torch, triton and triton.language as tl (the string H).
6 right answers, 11 wrong ones, over all nine exercises.

Verification (scratch under /tmp/lab12_triton_r12/, GPU_COURSE_MODE=simulator, TRITON_INTERPRET=1
via `import gpu_utils`, CPU tensors, outputs filled with NaN first): each answer was loaded with
heldout.submitted() and launched directly, compared with torch (the solution's formulas); an
access outside the tensors (gu.runtime.LaunchOutOfBounds) counts as wrong.
- triton_vector_add: (n, BLOCK) = (1,32), (3,32), (100,32), (1000,128), (1025,256), (64,64) vs
  x + y. Block-pointer answer (tl.make_block_ptr, boundary_check): exact everywhere.
  num_programs as pid: out stays all NaN on every case.
- triton_outer_add: (M, N, BLOCK_M, BLOCK_N) = (1,1,16,16), (3,5,16,16), (37,70,16,16),
  (20,70,16,32) with out a view whose rows are 80 apart, (70,37,32,16), (16,16,16,16). Mask without
  parentheses: LaunchOutOfBounds (store outside out) on every case but (16,16,16,16) in the
  interpreter; triton.compile refuses it ("simultaneous multiple comparison is not supported").
- triton_row_sum: (R, C, BLOCK) = (3,1,128), (4,37,16) rows padded by 7, (2,3000,128), (3,3000,128)
  float16 padded by 5, (5,2,16), (8,3,16). Scalar total answer: agrees everywhere. Scalar acc that
  turns into a block: agrees everywhere in the interpreter (it is an interpreter-only answer), but
  triton.compile fails: "Loop-carried variable acc has initial type fp32 but is re-assigned to
  <['128'], fp32> in loop".
- triton_softmax: (R, C, BLOCK) = (3,5,4), (4,37,16), (1,1,4), (5,100,32), (1,37,64) with randn*3,
  and (3,50,16) rows around +200 and -200; x and out padded views; vs torch.softmax, tol 1e-5.
  exp(x - lse) answer: ok everywhere. row = pid * BLOCK_SIZE: right for one row (1,1) and (1,37),
  LaunchOutOfBounds (program 1 reads row BLOCK_SIZE) on every case with several rows.
- triton_layernorm: (R, C, scale of x) = (3,5,1), (4,37,1), (2,64,1), (6,100,1), (1,1,1),
  (4,37,1e-3), (3,64,3e-3), BLOCK = next_pow2(C), eps 1e-5, padded x, random w and b; vs
  F.layer_norm, tol 1e-4. eps as a floor: ok on the unit-scale rows (and the constant row C = 1),
  errors 0.04 and 0.9 on the small-variance rows (var 1e-6 and 9e-6, comparable to eps).
- triton_matmul: float16 a (M x K) and b a transposed view of an N x K tensor, (M, N, K) =
  (16,16,16), (20,24,40), (33,17,50), (1,2,3), (32,32,64), (17,40,20), blocks 16, "none"/"relu";
  vs a.float() @ b.float(), tol 1e-3 relative. Transposed-b-tile answer with acc = tl.dot(a, bT,
  acc) and tl.where relu: ok everywhere. tl.dot(a, b, acc) not assigned: c all zeros, errors
  0.4-26 on every case.
- triton_flash_attention: float16 q, k, v, (L, D, BLOCK_M, BLOCK_N, causal) = (1,16,16,16,F),
  (3,16,16,16,T), (37,32,16,16,F/T), (64,16,32,16,T), (50,16,16,32,F/T), sm_scale 1/sqrt(D); vs
  F.scaled_dot_product_attention in float32, tol 1e-2. exp2 answer (scores times sm_scale *
  log2(e), exp2 for p and alpha): ok everywhere. k loaded at offs_m: right for L = 1 and 3 (one
  block), errors 1.2-1.4 for L = 37, shape error in the launch when BLOCK_M != BLOCK_N.
- triton_cross_entropy: float16 h (rows padded to HIDDEN + 8) and w, (n, vocab, HIDDEN, BLOCK_M,
  BLOCK_V) = (5,37,16,16,16), (20,100,32,16,32), (3,10,16,16,16), (1,1,16,16,16), (40,70,32,16,16),
  (40,64,16,16,16), (7,32,16,16,32); vs F.cross_entropy(h.float() @ w.float().T,
  reduction="none"), tol 2e-3. Target logit by a running tl.maximum from -inf: ok everywhere.
  One-hot product and w loaded with other=-inf: both all-NaN losses whenever vocab is not a
  multiple of BLOCK_V, right on (40,64,...) and (7,32,...,32).
- triton_cross_entropy_backward: float32 logits*3 (rows padded by 3), dlogits a view with rows 5
  longer, (n, vocab, BLOCK_V) = (3,10,16), (4,100,32), (2,64,16), (1,1,16), (3,37,16), dloss in
  [0.5, 1.5); vs (softmax - onehot) * dloss, tol 1e-5. Accumulating into dlogits: all NaN with
  NaN-filled dlogits, right (err 2e-7) with zero-filled dlogits. Logits read from dlogits: all NaN
  with NaN-filled dlogits, err 1.2 with zero-filled dlogits.
All answers were also compiled with triton.compile for GPUTarget("cuda", 90, 32) in a separate
process with TRITON_INTERPRET=0 (float16 a, b, q, k, v, h, w; int64 targets): the six right
answers compile (add_block_pointers warns that tl.make_block_ptr is deprecated, but compiles);
only the two wrong answers named above fail to compile, the others compile.
A right outer-add answer (tl.expand_dims / tl.broadcast_to) was written and verified, then dropped
to keep the round near five right answers.
"""

from heldout import Blind

H = "import torch\nimport triton\nimport triton.language as tl\n\n"

ANSWERS = [
    # ---------------------------------------------------------------- vector add
    Blind(
        name="add_block_pointers",
        exercise_id="triton_vector_add",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    start = tl.program_id(0) * BLOCK_SIZE
    xb = tl.make_block_ptr(x_ptr, shape=(n_elements,), strides=(1,), offsets=(start,),
                           block_shape=(BLOCK_SIZE,), order=(0,))
    yb = tl.make_block_ptr(y_ptr, shape=(n_elements,), strides=(1,), offsets=(start,),
                           block_shape=(BLOCK_SIZE,), order=(0,))
    ob = tl.make_block_ptr(out_ptr, shape=(n_elements,), strides=(1,), offsets=(start,),
                           block_shape=(BLOCK_SIZE,), order=(0,))
    a = tl.load(xb, boundary_check=(0,), padding_option="zero")
    b = tl.load(yb, boundary_check=(0,), padding_option="zero")
    tl.store(ob, a + b, boundary_check=(0,))
""",
    ),
    Blind(
        name="add_num_programs_as_pid",
        exercise_id="triton_vector_add",
        half="held2",
        correct=False,
        cause="The block index is tl.num_programs(0), the number of programs in the grid, instead of tl.program_id(0), this program's index, so every program handles the same block starting at num_programs * BLOCK_SIZE, which lies past the end: the mask turns every lane off and out is never written.",
        source=H
        + """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.num_programs(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
""",
        hints=("tl.num_programs(0)",),
    ),
    # ---------------------------------------------------------------- outer add
    Blind(
        name="outer_add_mask_without_parentheses",
        exercise_id="triton_outer_add",
        half="held2",
        correct=False,
        cause="The store's mask is written without parentheses, offs_m[:, None] < M & offs_n[None, :] < N; & binds tighter than <, so Python reads the chained comparison offs_m < (M & offs_n) < N, not the two bounds joined: the interpreter ends up with a mask that lets the edge lanes write outside out, and Triton's compiler refuses the chained comparison; it needs (offs_m[:, None] < M) & (offs_n[None, :] < N).",
        source=H
        + """@triton.jit
def outer_add_kernel(
    x_ptr,
    y_ptr,
    out_ptr,
    M,
    N,
    out_row_stride,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + offs_m, mask=offs_m < M)
    y = tl.load(y_ptr + offs_n, mask=offs_n < N)
    out_ptrs = out_ptr + offs_m[:, None] * out_row_stride + offs_n[None, :]
    mask = offs_m[:, None] < M & offs_n[None, :] < N
    tl.store(out_ptrs, x[:, None] + y[None, :], mask=mask)
""",
        hints=("binds tighter than",),
    ),
    # ---------------------------------------------------------------- row sum
    Blind(
        name="row_sum_scalar_total",
        exercise_id="triton_row_sum",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    r = tl.program_id(0)
    base = x_ptr + r.to(tl.int64) * x_row_stride
    total = 0.0
    for c0 in range(0, n_cols, BLOCK_SIZE):
        idx = c0 + tl.arange(0, BLOCK_SIZE)
        chunk = tl.load(base + idx, mask=idx < n_cols, other=0.0).to(tl.float32)
        total += tl.sum(chunk, axis=0)
    tl.store(out_ptr + r, total)
""",
    ),
    Blind(
        name="row_sum_scalar_start_block_acc",
        exercise_id="triton_row_sum",
        half="held2",
        correct=False,
        cause="The accumulator starts as the scalar acc = 0.0 and becomes a block of BLOCK_SIZE lanes at acc += x inside the loop; the interpreter lets a variable change type, but Triton's compiler refuses a loop-carried variable whose type changes (scalar fp32 to a block), so the kernel does not compile for a GPU; it must start as tl.zeros((BLOCK_SIZE,), dtype=tl.float32) (or add tl.sum(x) to the scalar).",
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    acc = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))
""",
        hints=("keeps each variable's type",),
    ),
    # ---------------------------------------------------------------- softmax
    Blind(
        name="softmax_row_times_block",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause="The row index is tl.program_id(0) * BLOCK_SIZE, the vector add's block start, instead of tl.program_id(0): the grid has one program per row, so program r works on row r * BLOCK_SIZE, reading and writing outside x and out for every r >= 1 (only row 0 is right).",
        source=H
        + """@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0) * BLOCK_SIZE
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    m = -float("inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf"))
        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)
""",
        hints=("the row is `tl.program_id(0)` itself",),
    ),
    Blind(
        name="softmax_logsumexp_output",
        exercise_id="triton_softmax",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    src = x_ptr + pid * x_row_stride
    dst = out_ptr + pid * out_row_stride
    NEG_INF: tl.constexpr = float("-inf")
    run_max = NEG_INF
    run_sum = 0.0
    for off in range(0, n_cols, BLOCK_SIZE):
        j = off + tl.arange(0, BLOCK_SIZE)
        v = tl.load(src + j, mask=j < n_cols, other=NEG_INF)
        new_max = tl.maximum(run_max, tl.max(v, axis=0))
        run_sum = run_sum * tl.exp(run_max - new_max) + tl.sum(tl.exp(v - new_max), axis=0)
        run_max = new_max
    lse = run_max + tl.log(run_sum)
    for off in range(0, n_cols, BLOCK_SIZE):
        j = off + tl.arange(0, BLOCK_SIZE)
        inside = j < n_cols
        v = tl.load(src + j, mask=inside, other=0.0)
        tl.store(dst + j, tl.exp(v - lse), mask=inside)
""",
    ),
    # ---------------------------------------------------------------- layer norm
    Blind(
        name="layernorm_eps_as_floor",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause="eps is used as a floor on the variance, 1 / sqrt(max(var, eps)), instead of being added to it, 1 / sqrt(var + eps): the same for rows whose variance is far above eps (or 0), but rows of small variance (var comparable to eps) are divided by sqrt(var) instead of sqrt(var + eps), so their outputs are too large.",
        source=H
        + """@triton.jit
def layernorm_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    x_row_stride,
    out_row_stride,
    n_cols,
    eps,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(tl.maximum(var, eps))
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd * w + b, mask=mask)
""",
        hints=("max(var, eps)",),
    ),
    # ---------------------------------------------------------------- matmul
    Blind(
        name="matmul_b_tile_transposed_dot_acc",
        exercise_id="triton_matmul",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    ACTIVATION: tl.constexpr,
):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a_tile = tl.load(
            a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak,
            mask=(rm[:, None] < M) & (rk[None, :] < K),
            other=0.0,
        )
        # b's tile read as N x K, then turned around for the product
        bt_tile = tl.load(
            b_ptr + rn[:, None] * stride_bn + rk[None, :] * stride_bk,
            mask=(rn[:, None] < N) & (rk[None, :] < K),
            other=0.0,
        )
        acc = tl.dot(a_tile, tl.trans(bt_tile), acc)
    if ACTIVATION == "relu":
        acc = tl.where(acc > 0, acc, 0.0)
    tl.store(
        c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn,
        acc,
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )
""",
    ),
    Blind(
        name="matmul_dot_acc_result_dropped",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="tl.dot(a, b, acc) is called as if it accumulated into acc in place, but it returns acc + a @ b and leaves acc unchanged; the result is never assigned (acc = tl.dot(a, b, acc)), so acc stays 0 and c is all zeros.",
        source=H
        + """@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    ACTIVATION: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)
        tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
        hints=("acc = tl.dot(a, b, acc)",),
    ),
    # ---------------------------------------------------------------- flash attention
    Blind(
        name="attention_exp2_with_log2e",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def attention_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    seq_len,
    stride_q,
    stride_k,
    stride_v,
    stride_o,
    sm_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
):
    LOG2E: tl.constexpr = 1.4426950408889634
    qi = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, HEAD_DIM)
    q_ok = qi < seq_len
    q = tl.load(q_ptr + qi[:, None] * stride_q + d[None, :], mask=q_ok[:, None], other=0.0)
    scale2 = sm_scale * LOG2E
    row_max = tl.zeros((BLOCK_M,), dtype=tl.float32) - float("inf")
    row_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    out = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    for n0 in range(0, seq_len, BLOCK_N):
        kj = n0 + tl.arange(0, BLOCK_N)
        k_ok = kj < seq_len
        kt = tl.load(k_ptr + kj[:, None] * stride_k + d[None, :], mask=k_ok[:, None], other=0.0)
        vt = tl.load(v_ptr + kj[:, None] * stride_v + d[None, :], mask=k_ok[:, None], other=0.0)
        scores = tl.dot(q, tl.trans(kt)) * scale2
        allowed = k_ok[None, :]
        if CAUSAL:
            allowed = allowed & (kj[None, :] <= qi[:, None])
        scores = tl.where(allowed, scores, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(scores, axis=1))
        probs = tl.exp2(scores - new_max[:, None])
        shrink = tl.exp2(row_max - new_max)
        row_sum = row_sum * shrink + tl.sum(probs, axis=1)
        out = out * shrink[:, None] + tl.dot(probs.to(tl.float16), vt)
        row_max = new_max
    out = out / row_sum[:, None]
    tl.store(o_ptr + qi[:, None] * stride_o + d[None, :], out, mask=q_ok[:, None])
""",
    ),
    Blind(
        name="attention_keys_loaded_at_query_rows",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="k is loaded at the query rows offs_m (a copy of q's load line) instead of the key block's rows offs_n, so every key block scores the queries against the keys of the query block itself while v comes from the key block: the scores pair the wrong keys with the values (right only when seq_len fits in one block with BLOCK_M == BLOCK_N; when BLOCK_M != BLOCK_N the scores are BLOCK_M x BLOCK_M and no longer fit the key mask and v, so the launch fails).",
        source=H
        + """@triton.jit
def attention_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    seq_len,
    stride_q,
    stride_k,
    stride_v,
    stride_o,
    sm_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
):
    start_m = tl.program_id(0) * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(
        q_ptr + offs_m[:, None] * stride_q + offs_d[None, :],
        mask=offs_m[:, None] < seq_len,
        other=0.0,
    )
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    end = tl.minimum(start_m + BLOCK_M, seq_len) if CAUSAL else seq_len
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(
            k_ptr + offs_m[:, None] * stride_k + offs_d[None, :],
            mask=offs_m[:, None] < seq_len,
            other=0.0,
        )
        v = tl.load(
            v_ptr + offs_n[:, None] * stride_v + offs_d[None, :],
            mask=offs_n[:, None] < seq_len,
            other=0.0,
        )
        s = tl.dot(q, tl.trans(k)) * sm_scale
        keep = offs_n[None, :] < seq_len
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(
        o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len
    )
""",
        hints=("the offsets of k and v",),
    ),
    # ---------------------------------------------------------------- cross-entropy
    Blind(
        name="cross_entropy_target_by_running_max",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def cross_entropy_kernel(
    h_ptr,
    w_ptr,
    target_ptr,
    loss_ptr,
    n_rows,
    vocab,
    stride_h,
    stride_w,
    HIDDEN: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_V: tl.constexpr,
):
    r = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    hid = tl.arange(0, HIDDEN)
    live = r < n_rows
    h_blk = tl.load(h_ptr + r[:, None] * stride_h + hid[None, :], mask=live[:, None], other=0.0)
    tgt = tl.load(target_ptr + r, mask=live, other=-1)
    mx = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    tot = tl.zeros((BLOCK_M,), tl.float32)
    tgt_logit = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    for c0 in range(0, vocab, BLOCK_V):
        c = c0 + tl.arange(0, BLOCK_V)
        c_ok = c < vocab
        w_blk = tl.load(w_ptr + c[:, None] * stride_w + hid[None, :], mask=c_ok[:, None], other=0.0)
        z = tl.dot(h_blk, tl.trans(w_blk))
        z = tl.where(c_ok[None, :], z, float("-inf"))
        mx_new = tl.maximum(mx, tl.max(z, axis=1))
        tot = tot * tl.exp(mx - mx_new) + tl.sum(tl.exp(z - mx_new[:, None]), axis=1)
        mx = mx_new
        hit = c[None, :] == tgt[:, None]
        tgt_logit = tl.maximum(tgt_logit, tl.max(tl.where(hit, z, float("-inf")), axis=1))
    tl.store(loss_ptr + r, mx + tl.log(tot) - tgt_logit, mask=live)
""",
    ),
    Blind(
        name="cross_entropy_onehot_times_neg_inf",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="The target's logit is picked by multiplying the logits by a one-hot, tl.sum(logits * onehot, axis=1), after the padded vocabulary columns were set to -inf, and -inf * 0 is NaN: when vocab is not a multiple of BLOCK_V every loss is NaN (right only when vocab is a multiple of BLOCK_V); the pick must select, tl.where(cols == target, logits, 0.0).",
        source=H
        + """@triton.jit
def cross_entropy_kernel(
    h_ptr,
    w_ptr,
    target_ptr,
    loss_ptr,
    n_rows,
    vocab,
    stride_h,
    stride_w,
    HIDDEN: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_V: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HIDDEN)
    row_ok = rows < n_rows
    h = tl.load(h_ptr + rows[:, None] * stride_h + dims[None, :], mask=row_ok[:, None], other=0.0)
    target = tl.load(target_ptr + rows, mask=row_ok, other=0)
    m = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    s = tl.zeros((BLOCK_M,), dtype=tl.float32)
    picked = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for v0 in range(0, vocab, BLOCK_V):
        cols = v0 + tl.arange(0, BLOCK_V)
        w = tl.load(
            w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0
        )
        logits = tl.dot(h, tl.trans(w))
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        onehot = (cols[None, :] == target[:, None]).to(tl.float32)
        picked += tl.sum(logits * onehot, axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
""",
        hints=("0 * inf",),
    ),
    Blind(
        name="cross_entropy_w_padded_with_neg_inf",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="The -inf padding is put on the load of w (other=-inf) instead of on the logits: the padded vocabulary rows of w are all -inf, and their dot product with h (values of both signs) gives -inf + inf = NaN (or +inf), which poisons the maximum and the sum, so every loss is NaN when vocab is not a multiple of BLOCK_V; load w with other=0.0 and set the padded logits to -inf with tl.where.",
        source=H
        + """@triton.jit
def cross_entropy_kernel(
    h_ptr,
    w_ptr,
    target_ptr,
    loss_ptr,
    n_rows,
    vocab,
    stride_h,
    stride_w,
    HIDDEN: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_V: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HIDDEN)
    row_ok = rows < n_rows
    h = tl.load(h_ptr + rows[:, None] * stride_h + dims[None, :], mask=row_ok[:, None], other=0.0)
    target = tl.load(target_ptr + rows, mask=row_ok, other=0)
    m = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    s = tl.zeros((BLOCK_M,), dtype=tl.float32)
    picked = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for v0 in range(0, vocab, BLOCK_V):
        cols = v0 + tl.arange(0, BLOCK_V)
        # padded vocabulary entries get -inf so that they drop out of the softmax
        w = tl.load(
            w_ptr + cols[:, None] * stride_w + dims[None, :],
            mask=cols[:, None] < vocab,
            other=-float("inf"),
        )
        logits = tl.dot(h, tl.trans(w))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
""",
        hints=("other=0.0",),
    ),
    # ---------------------------------------------------------------- cross-entropy backward
    Blind(
        name="ce_backward_accumulates_into_dlogits",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause="The kernel adds its gradient to what dlogits already holds (tl.load of dlogits + grad, then tl.store), as if accumulating into a .grad, but dlogits is an output to overwrite: it holds whatever was there at the launch (NaN in the check), so the result is that garbage plus the gradient (right only when dlogits starts at zero).",
        source=H
        + """@triton.jit
def cross_entropy_backward_kernel(
    logits_ptr,
    target_ptr,
    lse_ptr,
    dloss_ptr,
    dlogits_ptr,
    vocab,
    stride_logits,
    stride_dlogits,
    BLOCK_V: tl.constexpr,
):
    row = tl.program_id(0)
    target = tl.load(target_ptr + row)
    lse = tl.load(lse_ptr + row)
    dloss = tl.load(dloss_ptr + row)
    for start in range(0, vocab, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        mask = cols < vocab
        x = tl.load(logits_ptr + row * stride_logits + cols, mask=mask, other=0.0)
        p = tl.exp(x - lse)
        grad = (p - tl.where(cols == target, 1.0, 0.0)) * dloss
        g_ptrs = dlogits_ptr + row * stride_dlogits + cols
        tl.store(g_ptrs, tl.load(g_ptrs, mask=mask, other=0.0) + grad, mask=mask)
""",
        hints=("is written, not read",),
    ),
    Blind(
        name="ce_backward_logits_read_from_dlogits",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause="The logits are loaded from dlogits_ptr with stride_dlogits (a copy of the store's address) instead of logits_ptr with stride_logits, so the softmax is computed from the output buffer's old contents (NaN in the check), not from the logits, which are never read.",
        source=H
        + """@triton.jit
def cross_entropy_backward_kernel(
    logits_ptr,
    target_ptr,
    lse_ptr,
    dloss_ptr,
    dlogits_ptr,
    vocab,
    stride_logits,
    stride_dlogits,
    BLOCK_V: tl.constexpr,
):
    row = tl.program_id(0)
    target = tl.load(target_ptr + row)
    lse = tl.load(lse_ptr + row)
    dloss = tl.load(dloss_ptr + row)
    for start in range(0, vocab, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        mask = cols < vocab
        x = tl.load(dlogits_ptr + row * stride_dlogits + cols, mask=mask, other=0.0)
        p = tl.exp(x - lse)
        grad = (p - tl.where(cols == target, 1.0, 0.0)) * dloss
        tl.store(dlogits_ptr + row * stride_dlogits + cols, grad, mask=mask)
""",
        hints=("is written, not read",),
    ),
]
