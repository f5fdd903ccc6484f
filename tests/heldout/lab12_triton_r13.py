"""Blind held-out round lab12_triton_r13 (half "held2") for labs/12_triton_lab.ipynb.

Written 2026-11-29 (about 11:52-12:00 UTC by the machine's clock) by a helper session that never
saw the checker. Read: the brief, tests/heldout/__init__.py, the solution notebook's cells
(solutions/12_triton_lab.ipynb, markdown and solutions; no FAQ cell), the docstring and first two
entries of lab12_triton_r12.py (format only) and the earlier rounds' causes list
(/tmp/blind/causes_lab12_triton.txt); every wrong answer here has a mistake not on that list (kinds
close to a listed one in another exercise, e.g. an old-maximum exp in flash attention or a naive
log-sum-exp in the cross-entropy, were considered and dropped). Each answer's header imports
torch, triton and triton.language as tl (the string H).
5 right answers, 12 wrong ones, over all nine exercises (wrong ones on each of them).

Verification (scratch under /tmp/lab12_triton_r13/: verify.py, compile.py; run from tests/ with
GPU_COURSE_MODE=simulator, TRITON_INTERPRET=1 via `import gpu_utils`, CPU tensors, outputs filled
with NaN first): each answer was loaded with heldout.submitted() and launched directly, case by
case, and compared with torch (the solution's formulas); an access outside the tensors
(gu.runtime.LaunchOutOfBounds) or an interpreter error counts as wrong.
- triton_vector_add: (n, BLOCK) = (1,32), (3,32), (100,32), (1000,128), (1025,256), (64,64),
  (256,128) vs x + y. add_mask_on_lane_index: exact for n <= BLOCK and for multiples (64,64),
  (256,128); LaunchOutOfBounds (last program reads x past its end) for (100,32), (1000,128),
  (1025,256).
- triton_outer_add: (M, N, BLOCK_M, BLOCK_N) = (1,1,16,16), (3,5,16,16), (37,70,16,16),
  (20,70,16,32) with out a view whose rows are 80 apart, (70,37,32,16), (16,16,16,16),
  (40,40,16,16). outer_2d_loads (x and y loaded straight into the tile shape): exact everywhere.
  outer_both_pids_axis0: exact on the one-tile cases, NaN left (off-diagonal tiles never written)
  on the four multi-tile cases.
- triton_row_sum: (R, C, BLOCK) = (3,1,128), (4,37,16) rows padded by 7, (2,3000,128),
  (3,3000,128) float16 padded by 5, (5,2,16), (8,3,16), (4,64,16), (3,256,128) padded by 4; vs
  x.float().sum(1), relative tol 1e-4. rowsum_cdiv_block_loop: errors <= 1.5e-7 everywhere.
  rowsum_where_after_unmasked_load: LaunchOutOfBounds on the six cases whose C is not a multiple
  of BLOCK, right (1e-7) on (4,64,16) and (3,256,128).
- triton_softmax: (R, C, BLOCK) = (3,5,4), (4,37,16), (1,1,4), (5,100,32), (1,37,64), (2,64,16),
  (2,16,16) with randn*3, and (3,50,16) rows around +200 and -200; x and out padded views; vs
  torch.softmax, tol 1e-5. softmax_per_lane_online: errors <= 1.2e-7 everywhere (the interpreter
  warns about -inf - -inf inside tl.where, whose result is discarded). softmax_store_in_first_pass:
  right when the row fits one block ((1,1,4), (1,37,64), (2,16,16)), errors 0.015-0.65 on the six
  others.
- triton_layernorm: (R, C, scale of x) = (3,5,1), (4,37,1), (2,64,1), (6,100,1), (1,1,1),
  (4,37,1e-3), (3,64,3e-3), (2,128,1), BLOCK = next_pow2(C), eps 1e-5, padded x and out, random w
  and b; vs F.layer_norm, tol 1e-4. layernorm_unmasked_w_b: right for C = 1, 64, 128 (powers of
  two), LaunchOutOfBounds reading w for C = 5, 37, 100.
- triton_matmul: float16 a (M x K) and b a transposed view of an N x K tensor, (M, N, K, BM, BN,
  BK) = (16,16,16,16,16,16), (20,24,40,16,16,16), (33,17,50,16,16,16), (1,2,3,16,16,16),
  (32,32,64,16,16,16), (17,40,20,16,32,16), (32,32,32,16,16,16), (20,24,40,16,32,32), "none" and
  "relu"; vs a.float() @ b.float(), relative tol 1e-3. matmul_global_k_index: <= 2.5e-7
  everywhere. matmul_b_kmask_as_row: right when K is a multiple of BK (three cases),
  LaunchOutOfBounds reading b on (20,24,40,...16), (33,17,50,...), (1,2,3,...), a shape error on
  (17,40,20,16,32,16) (BK != BN), and error 0.46 on (20,24,40,16,32,32). matmul_k_offset_twice:
  right for K <= BK ((16,16,16), (1,2,3)), LaunchOutOfBounds reading b on the six others.
- triton_flash_attention: float16 q, k, v with rows padded by 8, (L, D, BLOCK_M, BLOCK_N, causal) =
  (1,16,16,16,F), (3,16,16,16,T), (37,32,16,16,F/T), (64,16,32,16,T), (50,16,16,32,F/T),
  (40,16,16,16,T), (45,16,32,16,F), sm_scale 1/sqrt(D); vs F.scaled_dot_product_attention in
  float32, tol 1e-2. flash_kT_loaded_all_blocks: <= 2.7e-4 everywhere. flash_acc_shape_block_n:
  right when D == BLOCK_N, "Cannot make_shape_compatible" on the four D != BLOCK_N cases.
  flash_causal_end_block_n: right everywhere except (64,16,32,16,T), the causal case with
  BLOCK_M > BLOCK_N (error 0.91).
- triton_cross_entropy: float16 h (rows padded by 8) and w, int64 targets, (n, vocab, HIDDEN,
  BLOCK_M, BLOCK_V) = (5,37,16,16,16), (20,100,32,16,32), (3,10,16,16,16), (1,1,16,16,16),
  (40,70,32,16,16), (40,64,16,16,16), (7,32,16,16,32), and (9,50,16,16,16) with h and w times 4
  (large logits); vs F.cross_entropy(h.float() @ w.float().T, reduction="none"), relative tol
  2e-3. ce_dot_w_times_hT: right only for (1,1,...) (a 1 x 1 problem), errors 0.6-0.77 when
  BLOCK_M == BLOCK_V, a shape error when they differ.
- triton_cross_entropy_backward: float32 logits*3 (rows padded by 3), dlogits a view with rows 5
  longer, (n, vocab, BLOCK_V) = (3,10,16), (4,100,32), (2,64,16), (1,1,16), (3,37,16), (40,16,16),
  and (3,37,16) with logits*40; dloss in [0.5, 1.5); vs (softmax - onehot) * dloss, tol 1e-5.
  ceb_exp_lse_minus_x: right for vocab = 1 only, errors 3e5 to inf elsewhere.
  ceb_dloss_per_column: right for (1,1,16), LaunchOutOfBounds reading dloss when vocab > n, error
  0.93 on (40,16,16).
All 17 answers were also compiled with triton.compile (ASTSource, GPUTarget("cuda", 90, 32),
TRITON_INTERPRET unset; float16 a, b, q, k, v, h, w; int64 targets; e.g. BLOCK_N = BLOCK_K = 32,
HEAD_DIM 32 with BLOCK_N 16, BLOCK_M 16 with BLOCK_V 32): the five right answers compile; of the
wrong ones only flash_acc_shape_block_n and ce_dot_w_times_hT fail (their shape mismatch at those
block sizes), the others compile.
"""

from heldout import Blind

H = "import torch\nimport triton\nimport triton.language as tl\n\n"

ANSWERS = [
    # ---------------------------------------------------------------- triton_vector_add
    Blind(
        name="add_mask_on_lane_index",
        exercise_id="triton_vector_add",
        half="held2",
        correct=False,
        cause="The mask compares the lane index inside the block, tl.arange(0, BLOCK_SIZE), with n_elements instead of the global offsets pid * BLOCK_SIZE + arange, so it is all true whenever n_elements >= BLOCK_SIZE and the last program's lanes past the end load and store outside x, y and out when n_elements is not a multiple of BLOCK_SIZE.",
        source=H
        + """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    lanes = tl.arange(0, BLOCK_SIZE)
    offsets = pid * BLOCK_SIZE + lanes
    mask = lanes < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
""",
        hints=("lane's index inside the block",),
    ),
    # ---------------------------------------------------------------- triton_outer_add
    Blind(
        name="outer_2d_loads",
        exercise_id="triton_outer_add",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def outer_add_kernel(
    x_ptr, y_ptr, out_ptr, M, N, out_row_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    # load x and y straight into the tile's shape: every column of the tile reads x[i],
    # every row reads y[j]
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    inside = (rows < M) & (cols < N)
    xs = tl.load(x_ptr + rows + 0 * cols, mask=inside, other=0.0)
    ys = tl.load(y_ptr + cols + 0 * rows, mask=inside, other=0.0)
    tl.store(out_ptr + rows * out_row_stride + cols, xs + ys, mask=inside)
""",
    ),
    Blind(
        name="outer_both_pids_axis0",
        exercise_id="triton_outer_add",
        half="held2",
        correct=False,
        cause="The column tile index is read from tl.program_id(0), the same axis as the row tile index, instead of tl.program_id(1), so program (i, j) computes tile (i, i): only the diagonal tiles of out are written and every tile off the diagonal keeps its old values whenever out has more than one tile.",
        source=H
        + """@triton.jit
def outer_add_kernel(
    x_ptr, y_ptr, out_ptr, M, N, out_row_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(0)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + offs_m, mask=offs_m < M)
    y = tl.load(y_ptr + offs_n, mask=offs_n < N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(out_ptr + offs_m[:, None] * out_row_stride + offs_n[None, :], x[:, None] + y[None, :], mask=mask)
""",
        hints=("tl.program_id(1)",),
    ),
    # ---------------------------------------------------------------- triton_row_sum
    Blind(
        name="rowsum_cdiv_block_loop",
        exercise_id="triton_row_sum",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row.to(tl.int64) * x_row_stride
    total = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    n_blocks = tl.cdiv(n_cols, BLOCK_SIZE)
    for blk in range(n_blocks):
        idx = blk * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        vals = tl.load(base + idx, mask=idx < n_cols, other=0.0)
        total = total + vals.to(tl.float32)
    result = tl.sum(total, axis=0)
    tl.store(out_ptr + row, result)
""",
    ),
    Blind(
        name="rowsum_where_after_unmasked_load",
        exercise_id="triton_row_sum",
        half="held2",
        correct=False,
        cause="The load itself has no mask and the padded lanes are only zeroed afterwards with tl.where(cols < n_cols, x, 0.0), so when n_cols is not a multiple of BLOCK_SIZE the last block still reads past the end of each row (past the end of x on the last row); the mask must go on the tl.load.",
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + row * x_row_stride + cols).to(tl.float32)
        acc += tl.where(cols < n_cols, x, 0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))
""",
    ),
    # ---------------------------------------------------------------- triton_softmax
    Blind(
        name="softmax_per_lane_online",
        exercise_id="triton_softmax",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    NEG = -float("inf")
    # one running max and sum per lane, merged once at the end
    m_lane = tl.full((BLOCK_SIZE,), NEG, dtype=tl.float32)
    s_lane = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=NEG)
        m_next = tl.maximum(m_lane, x)
        dead = m_next == NEG
        s_lane = tl.where(dead, 0.0, s_lane * tl.exp(m_lane - m_next) + tl.exp(x - m_next))
        m_lane = m_next
    m = tl.max(m_lane, axis=0)
    s = tl.sum(tl.where(m_lane == NEG, 0.0, s_lane * tl.exp(m_lane - m)), axis=0)
    inv = 1.0 / s
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        ok = cols < n_cols
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=ok, other=NEG)
        tl.store(out_ptr + row * out_row_stride + cols, tl.exp(x - m) * inv, mask=ok)
""",
    ),
    Blind(
        name="softmax_store_in_first_pass",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause="The kernel has one pass only: each block is stored inside the loop as exp(x - m) / s with the maximum and sum of the columns read so far, so every block but the last is normalised by partial statistics (the outputs of a row sum to more than 1); it is right only when the row fits in one block, and a second pass after the loop is needed.",
        source=H
        + """@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    m = -float("inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)
""",
    ),
    # ---------------------------------------------------------------- triton_layernorm
    Blind(
        name="layernorm_unmasked_w_b",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause="w and b are loaded without the mask cols < n_cols, so when n_cols is not a power of two the padded lanes read past the end of w and b (vectors of n_cols elements); only the store is masked.",
        source=H
        + """@triton.jit
def layernorm_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols)
    b = tl.load(b_ptr + cols)
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    y = xc / tl.sqrt(var + eps) * w + b
    tl.store(out_ptr + row * out_row_stride + cols, y, mask=mask)
""",
    ),
    # ---------------------------------------------------------------- triton_matmul
    Blind(
        name="matmul_global_k_index",
        exercise_id="triton_matmul",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    ACTIVATION: tl.constexpr,
):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)  # global k indices, pointers rebuilt every step
        a = tl.load(a_ptr + rm[:, None] * stride_am + ks[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    if ACTIVATION == "relu":
        acc = tl.where(acc > 0, acc, 0.0)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))
""",
    ),
    Blind(
        name="matmul_b_kmask_as_row",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="b's K mask is written offs_k[None, :] < K - k, a row like a's, instead of offs_k[:, None], a column: b's tile has K down its rows, so the mask turns off columns j >= K - k instead of the rows past K (which are read past the end of b at the last, partial step); the shapes only fit when BLOCK_K == BLOCK_N, and it is right only when K is a multiple of BLOCK_K.",
        source=H
        + """@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
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
        b = tl.load(b_ptrs, mask=(offs_k[None, :] < K - k) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
        hints=("offs_k[:, None]` in the mask",),
    ),
    Blind(
        name="matmul_k_offset_twice",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="The loads add k * stride_ak and k * stride_bk (the step's start) to pointers that the loop also advances by BLOCK_K every step, so the offset along K is counted twice: step j reads K block 2j instead of j, skipping every other block and reading past the ends of a and b (while the mask K - k believes it is at block j); right only when K <= BLOCK_K.",
        source=H
        + """@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
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
        a_mask = (offs_m[:, None] < M) & (offs_k[None, :] < K - k)
        b_mask = (offs_k[:, None] < K - k) & (offs_n[None, :] < N)
        a = tl.load(a_ptrs + k * stride_ak, mask=a_mask, other=0.0)
        b = tl.load(b_ptrs + k * stride_bk, mask=b_mask, other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
        hints=("counted twice",),
    ),
    # ---------------------------------------------------------------- triton_flash_attention
    Blind(
        name="flash_kT_loaded_all_blocks",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def attention_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_q, stride_k, stride_v, stride_o, sm_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):
    qi = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + qi[:, None] * stride_q + d[None, :], mask=qi[:, None] < seq_len, other=0.0)
    row_max = tl.zeros((BLOCK_M,), dtype=tl.float32) - float("inf")
    row_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    out = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    # every key block; the causal mask alone hides the future
    for kb in range(0, seq_len, BLOCK_N):
        kj = kb + tl.arange(0, BLOCK_N)
        kT = tl.load(k_ptr + d[:, None] + kj[None, :] * stride_k, mask=kj[None, :] < seq_len, other=0.0)
        vb = tl.load(v_ptr + kj[:, None] * stride_v + d[None, :], mask=kj[:, None] < seq_len, other=0.0)
        scores = tl.dot(q, kT) * sm_scale
        ok = kj[None, :] < seq_len
        if CAUSAL:
            ok = ok & (kj[None, :] <= qi[:, None])
        scores = tl.where(ok, scores, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(scores, axis=1))
        corr = tl.exp(row_max - new_max)
        pr = tl.exp(scores - new_max[:, None])
        row_sum = row_sum * corr + tl.sum(pr, axis=1)
        out = out * corr[:, None] + tl.dot(pr.to(tl.float16), vb)
        row_max = new_max
    out = out / row_sum[:, None]
    tl.store(o_ptr + qi[:, None] * stride_o + d[None, :], out, mask=qi[:, None] < seq_len)
""",
    ),
    Blind(
        name="flash_acc_shape_block_n",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="The accumulator is created as tl.zeros((BLOCK_M, BLOCK_N)), the shape of the score tile, instead of (BLOCK_M, HEAD_DIM), the shape of p @ v and of the output, so acc * alpha + p @ v does not broadcast (and the compiler refuses the loop-carried type change) whenever HEAD_DIM != BLOCK_N.",
        source=H
        + """@triton.jit
def attention_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_q, stride_k, stride_v, stride_o, sm_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):
    start_m = tl.program_id(0) * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + offs_m[:, None] * stride_q + offs_d[None, :], mask=offs_m[:, None] < seq_len, other=0.0)
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    end = tl.minimum(start_m + BLOCK_M, seq_len) if CAUSAL else seq_len
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :], mask=offs_n[:, None] < seq_len, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :], mask=offs_n[:, None] < seq_len, other=0.0)
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
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len)
""",
        hints=("tl.zeros((BLOCK_M, HEAD_DIM)",),
    ),
    Blind(
        name="flash_causal_end_block_n",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="With CAUSAL the key loop ends at start_m + BLOCK_N instead of start_m + BLOCK_M (the last query of the block), so when BLOCK_M > BLOCK_N the later queries of each block never see their keys from start_m + BLOCK_N up to themselves (their own key included); right when BLOCK_M <= BLOCK_N or without CAUSAL.",
        source=H
        + """@triton.jit
def attention_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_q, stride_k, stride_v, stride_o, sm_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):
    start_m = tl.program_id(0) * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + offs_m[:, None] * stride_q + offs_d[None, :], mask=offs_m[:, None] < seq_len, other=0.0)
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    end = tl.minimum(start_m + BLOCK_N, seq_len) if CAUSAL else seq_len
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :], mask=offs_n[:, None] < seq_len, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :], mask=offs_n[:, None] < seq_len, other=0.0)
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
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len)
""",
    ),
    # ---------------------------------------------------------------- triton_cross_entropy
    Blind(
        name="ce_dot_w_times_hT",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="The logits are computed as tl.dot(w, tl.trans(h)), a BLOCK_V x BLOCK_M tile with the vocabulary down the rows, instead of tl.dot(h, tl.trans(w)), BLOCK_M x BLOCK_V, so the kernel uses the transpose as rows x vocabulary: the shapes only fit when BLOCK_M == BLOCK_V, and then row i of the tile holds vocabulary entry v0 + i's logits for the block's rows of h instead of row i's logits over the vocabulary block.",
        source=H
        + """@triton.jit
def cross_entropy_kernel(
    h_ptr, w_ptr, target_ptr, loss_ptr, n_rows, vocab, stride_h, stride_w,
    HIDDEN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr,
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
        w = tl.load(w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0)
        logits = tl.dot(w, tl.trans(h))
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
""",
        hints=("other way round",),
    ),
    # ---------------------------------------------------------------- triton_cross_entropy_backward
    Blind(
        name="ceb_exp_lse_minus_x",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause="The softmax is computed as exp(lse - x), with the subtraction reversed, which is 1 / softmax (values of 1 and more, overflowing for very negative logits), instead of exp(x - lse).",
        source=H
        + """@triton.jit
def cross_entropy_backward_kernel(
    logits_ptr, target_ptr, lse_ptr, dloss_ptr, dlogits_ptr, vocab, stride_logits, stride_dlogits,
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
        p = tl.exp(lse - x)
        grad = (p - tl.where(cols == target, 1.0, 0.0)) * dloss
        tl.store(dlogits_ptr + row * stride_dlogits + cols, grad, mask=mask)
""",
        hints=("1 / softmax",),
    ),
    Blind(
        name="ceb_dloss_per_column",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause="dloss is loaded per column, dloss_ptr + cols, as if it held one upstream gradient per logit, instead of the row's single value dloss_ptr + row: each column j is scaled by dloss[j] (another row's gradient), and the load runs past the end of dloss when vocab > n_rows.",
        source=H
        + """@triton.jit
def cross_entropy_backward_kernel(
    logits_ptr, target_ptr, lse_ptr, dloss_ptr, dlogits_ptr, vocab, stride_logits, stride_dlogits,
    BLOCK_V: tl.constexpr,
):
    row = tl.program_id(0)
    target = tl.load(target_ptr + row)
    lse = tl.load(lse_ptr + row)
    for start in range(0, vocab, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        mask = cols < vocab
        x = tl.load(logits_ptr + row * stride_logits + cols, mask=mask, other=0.0)
        dloss = tl.load(dloss_ptr + cols, mask=mask, other=0.0)
        p = tl.exp(x - lse)
        grad = tl.where(cols == target, p - 1.0, p) * dloss
        tl.store(dlogits_ptr + row * stride_dlogits + cols, grad, mask=mask)
""",
        hints=("dloss_ptr + row",),
    ),
]
