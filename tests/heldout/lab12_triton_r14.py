"""Blind held-out round lab12_triton_r14 (half "held2") for labs/12_triton_lab.ipynb.

Written 2026-11-29 (about 12:08-12:16 UTC by the machine's clock) by a helper session that never
saw the checker. Read: the brief, tests/heldout/__init__.py, the learner notebook's markdown
(labs/12_triton_lab.ipynb, every exercise's text; no FAQ cell), the solution notebook's kernels
(solutions/12_triton_lab.ipynb), the docstring and first two entries of lab12_triton_r13.py (format
only), the earlier rounds' causes (/tmp/blind/causes_lab12_triton.txt: every wrong answer here has a
mistake not on that list) and r13's scratch harness (/tmp/lab12_triton_r13/verify.py, compile.py),
copied and extended. Each answer's header imports torch, triton and triton.language as tl (H).
6 right answers, 12 wrong ones, over all nine exercises (a wrong one on each).

Verification (scratch under /tmp/lab12_triton_r14/: verify.py, compile.py, adv.py; run from tests/
with GPU_COURSE_MODE=simulator, TRITON_INTERPRET=1 via `import gpu_utils`, CPU tensors, outputs
filled with NaN first): each answer loaded with heldout.submitted() and launched case by case,
compared with torch (the solution's formulas); an access outside the tensors
(gu.runtime.LaunchOutOfBounds) or an interpreter error counts as wrong. Then every answer was
compiled with triton.compile (ASTSource, GPUTarget("cuda", 90, 32), TRITON_INTERPRET unset; float16
a, b, q, k, v, h, w; int64 targets; BLOCK_M 16 / BLOCK_N 32 for outer add, BLOCK_N = BLOCK_K = 32
for matmul, HEAD_DIM 32 / BLOCK_M 32 / BLOCK_N 16 causal for attention, BLOCK_M 16 / BLOCK_V 32 /
HIDDEN 32 for the cross-entropy). All six right answers agree everywhere and compile.
- triton_vector_add: (n, BLOCK) = (1,32), (3,32), (100,32), (1000,128), (1025,256), (64,64),
  (256,128) vs x + y. add_grid_stride_loop: exact. add_python_if_guard: exact on (64,64),
  (256,128); LaunchOutOfBounds reading x on the five others (the interpreter's truth value of a
  block is True, so the unmasked branch always runs); the compiler refuses it ("Boolean value of
  Tensor with more than one value is ambiguous").
- triton_outer_add: (M, N, BLOCK_M, BLOCK_N) = (1,1,16,16), (3,5,16,16), (37,70,16,16),
  (20,70,16,32) and (37,70,16,16) with out a view of rows 80 apart, (70,37,32,16), (16,16,16,16),
  (40,40,16,16), (32,48,16,16). outer_1d_masks_anded: exact for (16,16) and (32,48) (full tiles);
  LaunchOutOfBounds writing out on the five BLOCK_M == BLOCK_N edge cases; "Cannot
  make_shape_compatible" on the two BLOCK_M != BLOCK_N cases, and the compiler refuses it there.
  (A first outer-add answer with Python `and` between the masks was dropped: Triton 3.7's compiler
  accepts `and` on blocks with a deprecation warning, so it is only wrong in the interpreter.)
- triton_row_sum: (R, C, BLOCK) = (3,1,128), (4,37,16) rows padded by 7, (2,3000,128),
  (3,3000,128) float16 padded by 5, (5,2,16), (8,3,16), (4,64,16), (3,256,128) padded by 4; vs
  x.float().sum(1), relative tol 1e-4. rowsum_scalar_total: <= 3.7e-7. rowsum_max_of_lanes:
  errors 0.58-1.97 on all eight.
- triton_softmax: (R, C, BLOCK) = (3,5,4), (4,37,16), (1,1,4), (5,100,32), (1,37,64), (2,64,16),
  (2,16,16) randn*3, and (3,50,16) rows around +200 and -200; x and out padded views; vs
  torch.softmax, tol 1e-5. softmax_log_normaliser: <= 7e-7. softmax_stride_in_bytes: right on the
  two one-row cases, LaunchOutOfBounds reading x (program 1 or 2) on the seven others.
- triton_layernorm: (R, C, scale) = (3,5,1), (4,37,1), (2,64,1), (6,100,1), (1,1,1), (4,37,1e-3),
  (3,64,3e-3), (2,128,1), BLOCK = next_pow2(C), eps 1e-5, padded x and out; vs F.layer_norm.
  layernorm_floor_div_mean: InterpreterError TypeError('unexpected type fp32') on all eight; the
  compiler fails with the same TypeError at the `//`.
- triton_matmul: float16 a (M x K), b a transposed view of an N x K tensor, (M, N, K, BM, BN, BK)
  = (16,16,16,16,16,16), (20,24,40,16,16,16), (33,17,50,16,16,16), (1,2,3,16,16,16),
  (32,32,64,16,16,16), (17,40,20,16,32,16), (32,32,32,16,16,16), (20,24,40,16,32,32), "none" and
  "relu"; vs a.float() @ b.float(), relative tol 1e-3. matmul_block_count_loop: <= 2e-7.
  matmul_k_loop_to_n: right when N >= K or K fits the blocks reached ((16,16,16), (1,2,3),
  (17,40,20), (32,32,32)), errors 0.46-0.67 on the four with N < K needing more blocks.
  matmul_dot_acc_plus_equals: right with one K step ((16,16,16), (1,2,3)), errors 0.77-5.4 on
  the six others. Both compile.
- triton_flash_attention: float16 q, k, v rows padded by 8, (L, D, BLOCK_M, BLOCK_N, causal) =
  (1,16,16,16,F), (3,16,16,16,T), (37,32,16,16,F/T), (64,16,32,16,T), (50,16,16,32,F/T),
  (40,16,16,16,T), (45,16,32,16,F), plus an adversarial (37,16,16,16,T/F) with q = 2 everywhere
  and key j = 0.5 * j (score 4j, later keys far above earlier ones); sm_scale 1/sqrt(D); vs
  F.scaled_dot_product_attention in float32, tol 1e-2. flash_exp2_log2e: <= 2.6e-4.
  flash_causal_mask_on_p: <= 5.5e-4 on the ordinary cases and on adversarial non-causal, error
  2.8-3.4 on adversarial causal (adv.py: queries 0-10 of each block output exactly 0, 25 of 37
  rows wrong; the solution's kernel is within 1.7e-5 there). flash_scalar_running_state: right
  (<= 2.5e-4) everywhere in the interpreter, but the compiler refuses it: "Loop-carried variable
  m_i has initial type fp32 but is re-assigned to <['32'], fp32> in loop!" (the lab says code only
  the interpreter accepts does not pass).
- triton_cross_entropy: float16 h (rows padded by 8) and w, int64 targets, (n, vocab, HIDDEN,
  BLOCK_M, BLOCK_V) = (5,37,16,16,16), (20,100,32,16,32), (3,10,16,16,16), (1,1,16,16,16),
  (40,70,32,16,16), (40,64,16,16,16), (7,32,16,16,32), (9,50,16,16,16) with h, w times 4; vs
  F.cross_entropy(h.float() @ w.float().T, reduction="none"), relative tol 2e-3.
  ce_pick_by_running_max: <= 1.1e-7. ce_target_2d_mask: LaunchOutOfBounds reading target on the
  five cases with a partial row block, shape errors on the three others; the compiler refuses it.
  ce_adds_target_logit: errors 0.23-1.37 (relative) on all eight.
- triton_cross_entropy_backward: float32 logits*3 (rows padded by 3), dlogits a view with rows 5
  longer, (n, vocab, BLOCK_V) = (3,10,16), (4,100,32), (2,64,16), (1,1,16), (3,37,16), (40,16,16),
  (3,37,16) with logits*40; dloss in [0.5, 1.5); vs (softmax - onehot) * dloss, tol 1e-5.
  ceb_target_column_overwritten: errors 2.7e-5 to 1.32 on all seven (smallest where p_target is
  close to 0; the vocab = 1 case gives -dloss instead of 0).
"""

from heldout import Blind

H = "import torch\nimport triton\nimport triton.language as tl\n\n"

ANSWERS = [
    # ---------------------------------------------------------------- triton_vector_add
    Blind(
        name="add_grid_stride_loop",
        exercise_id="triton_vector_add",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # grid-stride loop, as in CUDA: program p handles blocks p, p + P, p + 2P, ...
    n_blocks = tl.cdiv(n_elements, BLOCK_SIZE)
    lanes = tl.arange(0, BLOCK_SIZE)
    for blk in range(tl.program_id(0), n_blocks, tl.num_programs(0)):
        idx = blk * BLOCK_SIZE + lanes
        inside = idx < n_elements
        a = tl.load(x_ptr + idx, mask=inside, other=0.0)
        b = tl.load(y_ptr + idx, mask=inside, other=0.0)
        tl.store(out_ptr + idx, a + b, mask=inside)
""",
    ),
    Blind(
        name="add_python_if_guard",
        exercise_id="triton_vector_add",
        half="held2",
        correct=False,
        cause="The bounds check is a Python `if offsets < n_elements:` around unmasked loads and store (CUDA's `if (i < n)`) instead of a mask passed to tl.load and tl.store, but offsets is a block of BLOCK_SIZE lanes: Triton's compiler refuses an if on a block (its truth value is ambiguous), and the interpreter takes the branch for the whole block, so the last program's lanes past the end read and write outside x, y and out whenever n_elements is not a multiple of BLOCK_SIZE.",
        source=H
        + """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if offsets < n_elements:
        x = tl.load(x_ptr + offsets)
        y = tl.load(y_ptr + offsets)
        tl.store(out_ptr + offsets, x + y)
""",
    ),
    # ---------------------------------------------------------------- triton_outer_add
    Blind(
        name="outer_1d_masks_anded",
        exercise_id="triton_outer_add",
        half="held2",
        correct=False,
        cause="The store reuses the two 1-D load masks, mask_m & mask_n, without turning them into a column and a row ((offs_m[:, None] < M) & (offs_n[None, :] < N)), so they are and-ed lane by lane into one vector that broadcasts along the tile's columns: the shapes do not fit unless BLOCK_M == BLOCK_N, and when they do, lane (i, j) is stored whenever offs_m[j] < M and offs_n[j] < N, whatever its row i, so the edge tiles write rows past M (past the end of out); right only when every tile is full.",
        source=H
        + """@triton.jit
def outer_add_kernel(
    x_ptr, y_ptr, out_ptr, M, N, out_row_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_m = offs_m < M
    mask_n = offs_n < N
    x = tl.load(x_ptr + offs_m, mask=mask_m, other=0.0)
    y = tl.load(y_ptr + offs_n, mask=mask_n, other=0.0)
    tile = x[:, None] + y[None, :]
    out_ptrs = out_ptr + offs_m[:, None] * out_row_stride + offs_n[None, :]
    tl.store(out_ptrs, tile, mask=mask_m & mask_n)
""",
    ),
    # ---------------------------------------------------------------- triton_row_sum
    Blind(
        name="rowsum_scalar_total",
        exercise_id="triton_row_sum",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    r = tl.program_id(0)
    base = x_ptr + r * x_row_stride
    total = 0.0  # one float32 number, each block reduced as it comes
    for c0 in tl.range(0, n_cols, BLOCK_SIZE):
        c = c0 + tl.arange(0, BLOCK_SIZE)
        vals = tl.load(base + c, mask=c < n_cols, other=0.0).to(tl.float32)
        total += tl.sum(vals, axis=0)
    tl.store(out_ptr + r, total)
""",
    ),
    Blind(
        name="rowsum_max_of_lanes",
        exercise_id="triton_row_sum",
        half="held2",
        correct=False,
        cause="The per-lane partial sums are reduced with tl.max(acc, axis=0) (the softmax's reduction) instead of tl.sum(acc, axis=0), so the kernel stores the largest lane's partial sum, not the row's total.",
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + row, tl.max(acc, axis=0))
""",
        hints=("`tl.max`",),
    ),
    # ---------------------------------------------------------------- triton_softmax
    Blind(
        name="softmax_log_normaliser",
        exercise_id="triton_softmax",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    r = tl.program_id(0)
    src = x_ptr + r * x_row_stride
    dst = out_ptr + r * out_row_stride
    run_max = -float("inf")
    run_sum = 0.0
    for c0 in range(0, n_cols, BLOCK_SIZE):
        c = c0 + tl.arange(0, BLOCK_SIZE)
        v = tl.load(src + c, mask=c < n_cols, other=-float("inf"))
        new_max = tl.maximum(run_max, tl.max(v, axis=0))
        run_sum = run_sum * tl.exp(run_max - new_max) + tl.sum(tl.exp(v - new_max), axis=0)
        run_max = new_max
    lse = run_max + tl.log(run_sum)  # log of the row's normaliser
    for c0 in range(0, n_cols, BLOCK_SIZE):
        c = c0 + tl.arange(0, BLOCK_SIZE)
        ok = c < n_cols
        v = tl.load(src + c, mask=ok, other=0.0)
        tl.store(dst + c, tl.exp(v - lse), mask=ok)
""",
    ),
    Blind(
        name="softmax_stride_in_bytes",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause="The rows are addressed as row * x_row_stride * 4 and row * out_row_stride * 4, converting the strides to bytes (4 per float32), but Triton pointer arithmetic counts elements and tensor strides are already in elements, so row r is read from and written to row 4r (outside x and out for every r >= 1 once 4r is past the last row; only row 0 is right).",
        source=H
        + """@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    # float32 = 4 bytes per element
    x_row = x_ptr + row * x_row_stride * 4
    out_row = out_ptr + row * out_row_stride * 4
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
        hints=("not bytes",),
    ),
    # ---------------------------------------------------------------- triton_layernorm
    Blind(
        name="layernorm_floor_div_mean",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause="The mean is taken with floor division, tl.sum(x, axis=0) // n_cols, which Triton only defines for integers, so with a float32 sum the kernel fails (TypeError: unexpected type fp32, in the interpreter and in the compiler); the mean is the true division tl.sum(x, axis=0) / n_cols.",
        source=H
        + """@triton.jit
def layernorm_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) // n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    y = xc / tl.sqrt(var + eps) * w + b
    tl.store(out_ptr + row * out_row_stride + cols, y, mask=mask)
""",
        hints=("floor division",),
    ),
    # ---------------------------------------------------------------- triton_matmul
    Blind(
        name="matmul_block_count_loop",
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
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # count K blocks; the addresses are rebuilt from the block index every step
    for kb in range(0, tl.cdiv(K, BLOCK_K)):
        kk = kb * BLOCK_K + rk
        a_t = tl.load(
            a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
            mask=(rm[:, None] < M) & (kk[None, :] < K),
            other=0.0,
        )
        b_t = tl.load(
            b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
            mask=(kk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc = tl.dot(a_t, b_t, acc)
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
        name="matmul_k_loop_to_n",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="The K loop runs over range(0, N, BLOCK_K), to N (the columns of c) instead of K, so when N < K the K blocks from N on are never added to the accumulator (when N >= K the extra steps are masked off and it is right).",
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
    for k in range(0, N, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
    ),
    Blind(
        name="matmul_dot_acc_plus_equals",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="The loop writes acc += tl.dot(a, b, acc), but tl.dot(a, b, acc) already returns acc + a @ b, so each step adds the accumulator to itself a second time (acc becomes 2 * acc + a @ b): right for one K step, wrong whenever K > BLOCK_K (use acc = tl.dot(a, b, acc) or acc += tl.dot(a, b)).",
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
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
        hints=("doubles",),
    ),
    # ---------------------------------------------------------------- triton_flash_attention
    Blind(
        name="flash_exp2_log2e",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def attention_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_q, stride_k, stride_v, stride_o, sm_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):
    # base-2 exponentials throughout (as Triton's tutorial does): exp(x) = 2^(x * log2(e))
    LOG2E: tl.constexpr = 1.4426950408889634
    qk_scale = sm_scale * LOG2E
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + rows[:, None] * stride_q + d[None, :], mask=rows[:, None] < seq_len, other=0.0)
    mx = tl.zeros((BLOCK_M,), dtype=tl.float32) - float("inf")
    den = tl.zeros((BLOCK_M,), dtype=tl.float32)
    o = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    for j0 in range(0, seq_len, BLOCK_N):
        keys = j0 + tl.arange(0, BLOCK_N)
        kv_ok = keys[:, None] < seq_len
        kb = tl.load(k_ptr + keys[:, None] * stride_k + d[None, :], mask=kv_ok, other=0.0)
        vb = tl.load(v_ptr + keys[:, None] * stride_v + d[None, :], mask=kv_ok, other=0.0)
        sc = tl.dot(q, tl.trans(kb)) * qk_scale
        ok = keys[None, :] < seq_len
        if CAUSAL:
            ok = ok & (keys[None, :] <= rows[:, None])
        sc = tl.where(ok, sc, -float("inf"))
        mx_new = tl.maximum(mx, tl.max(sc, axis=1))
        p = tl.exp2(sc - mx_new[:, None])
        corr = tl.exp2(mx - mx_new)
        den = den * corr + tl.sum(p, axis=1)
        o = o * corr[:, None] + tl.dot(p.to(tl.float16), vb)
        mx = mx_new
    tl.store(o_ptr + rows[:, None] * stride_o + d[None, :], o / den[:, None], mask=rows[:, None] < seq_len)
""",
    ),
    Blind(
        name="flash_causal_mask_on_p",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="With CAUSAL the future keys are zeroed in p after the exponential, p = tl.where(causal, p, 0.0), instead of their scores being set to -inf before the row maximum, so the running maximum m_i includes scores of keys the query must not see: when a future key's score lies far above a query's visible ones, every visible weight exp(s - m_new) is tiny (0 once p is cast to float16 for p @ v, about 17 below the maximum; 0 in float32 about 100 below) and that query's output is 0, badly rounded, or NaN instead of the average of its visible values (right on ordinary inputs, and without CAUSAL).",
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
    end = tl.minimum(start_m + BLOCK_M, seq_len) if CAUSAL else seq_len
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :], mask=offs_n[:, None] < seq_len, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :], mask=offs_n[:, None] < seq_len, other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        s = tl.where(offs_n[None, :] < seq_len, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        if CAUSAL:
            # future keys get no weight
            p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len)
""",
        hints=("before the maximum",),
    ),
    Blind(
        name="flash_scalar_running_state",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="The running maximum and sum start as Python scalars, m_i = -float('inf') and l_i = 0.0, instead of vectors of BLOCK_M (tl.full / tl.zeros((BLOCK_M,))), so the loop turns them from scalars into blocks: the interpreter accepts this and gives the right numbers, but Triton's compiler refuses a loop-carried variable whose type changes, so the kernel does not compile for a GPU.",
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
    m_i = -float("inf")
    l_i = 0.0
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
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
    ),
    # ---------------------------------------------------------------- triton_cross_entropy
    Blind(
        name="ce_pick_by_running_max",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def cross_entropy_kernel(
    h_ptr, w_ptr, target_ptr, loss_ptr, n_rows, vocab, stride_h, stride_w,
    HIDDEN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr,
):
    r = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    f = tl.arange(0, HIDDEN)
    r_ok = r < n_rows
    hb = tl.load(h_ptr + r[:, None] * stride_h + f[None, :], mask=r_ok[:, None], other=0.0)
    tgt = tl.load(target_ptr + r, mask=r_ok, other=0)
    run_m = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    run_s = tl.zeros((BLOCK_M,), tl.float32)
    # the target's logit: the maximum over the one column that matches (-inf elsewhere)
    tgt_logit = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    for v0 in range(0, vocab, BLOCK_V):
        c = v0 + tl.arange(0, BLOCK_V)
        wb = tl.load(w_ptr + c[:, None] * stride_w + f[None, :], mask=c[:, None] < vocab, other=0.0)
        z = tl.dot(hb, tl.trans(wb))
        z = tl.where(c[None, :] < vocab, z, -float("inf"))
        hit = c[None, :] == tgt[:, None]
        tgt_logit = tl.maximum(tgt_logit, tl.max(tl.where(hit, z, -float("inf")), axis=1))
        m2 = tl.maximum(run_m, tl.max(z, axis=1))
        run_s = run_s * tl.exp(run_m - m2) + tl.sum(tl.exp(z - m2[:, None]), axis=1)
        run_m = m2
    tl.store(loss_ptr + r, run_m + tl.log(run_s) - tgt_logit, mask=r_ok)
""",
    ),
    Blind(
        name="ce_target_2d_mask",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="The targets are loaded with h's two-dimensional mask row_ok[:, None] (a copied line) although their pointers target_ptr + rows are a vector: the load broadcasts to a BLOCK_M x BLOCK_M block (lane (i, j) reads target[rows[j]] whenever row i is real, past target's end when n_rows is not a multiple of BLOCK_M), and that 2-D target no longer compares with the columns as one target per row (the shapes do not fit; the compiler refuses it); a vector of pointers takes the vector mask row_ok.",
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
    target = tl.load(target_ptr + rows, mask=row_ok[:, None], other=0)
    m = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    s = tl.zeros((BLOCK_M,), dtype=tl.float32)
    picked = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for v0 in range(0, vocab, BLOCK_V):
        cols = v0 + tl.arange(0, BLOCK_V)
        w = tl.load(w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0)
        logits = tl.dot(h, tl.trans(w))
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
""",
        hints=("2-D mask",),
    ),
    Blind(
        name="ce_adds_target_logit",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="The loss adds the target's logit instead of subtracting it, m + log(s) + target_logit; cross-entropy is the log-sum-exp minus the target's logit, m + log(s) - target_logit.",
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
    target_logit = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for v0 in range(0, vocab, BLOCK_V):
        cols = v0 + tl.arange(0, BLOCK_V)
        w = tl.load(w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0)
        logits = tl.dot(h, tl.trans(w))
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        target_logit += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)
    lse = m + tl.log(s)
    tl.store(loss_ptr + rows, lse + target_logit, mask=row_ok)
""",
        hints=("added, not subtracted",),
    ),
    # ---------------------------------------------------------------- triton_cross_entropy_backward
    Blind(
        name="ceb_target_column_overwritten",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause="The target's column is set to -dloss with tl.where(cols == target, -dloss, p * dloss), replacing its gradient instead of subtracting 1 from it, so the target's own probability is dropped there: that entry must be (p_target - 1) * dloss (the other columns, p * dloss, are right).",
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
        p = tl.exp(x - lse)
        # the -1 goes to the target's column only
        grad = tl.where(cols == target, -dloss, p * dloss)
        tl.store(dlogits_ptr + row * stride_dlogits + cols, grad, mask=mask)
""",
        hints=("target's own probability was dropped",),
    ),
]
