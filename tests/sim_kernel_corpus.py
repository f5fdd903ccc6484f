"""A blind corpus of Numba CUDA kernels for the simulator engines' differential test (issue 29):
each case is a kernel, a launch and seeded inputs. Written without reading gpu_utils/sim."""

from __future__ import annotations

import math

import gpu_utils  # noqa: F401  (before numba: sets simulator mode)
import numpy as np
from numba import cuda, float32, float64, int32, int64, uint32

# ruff: noqa: I001  (the import order above is on purpose: gpu_utils must come before numba)

# Each case: (name, kernel, griddim, blockdim, make_args). make_args() returns fresh arguments;
# the array arguments are compared after the launch. Float atomics only ever add values that
# are exact in binary (multiples of 1/8 and small), so their sums do not depend on the order.
# The cases whose names start with "bug_" are deliberately wrong kernels (see BUGGY).
CASES: list[tuple[str, object, object, object, callable]] = []


def _add(name, kernel, griddim, blockdim, make_args):
    CASES.append((name, kernel, griddim, blockdim, make_args))


def _rng(seed):
    return np.random.default_rng(seed)


def _cdiv(a, b):
    return (a + b - 1) // b


# ------------------------------------------------------------------------ elementwise maps


@cuda.jit
def saxpy_f32(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


def _saxpy_args():
    r = _rng(101)
    n = 1000
    x = r.random(n, dtype=np.float32)
    y = r.random(n, dtype=np.float32)
    return np.float32(2.5), x, y, np.zeros(n, np.float32)


_add("saxpy_f32", saxpy_f32, _cdiv(1000, 128), 128, _saxpy_args)


@cuda.jit
def affine_index_f64(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * 2 + i


_add(
    "affine_index_f64",
    affine_index_f64,
    _cdiv(777, 96),
    96,
    lambda: (_rng(102).standard_normal(777), np.zeros(777)),
)


@cuda.jit
def int_div_mod_i32(x, frac, q, rem):
    i = cuda.grid(1)
    if i < x.size:
        frac[i] = x[i] / 3
        q[i] = i // 7 + x[i] // 4
        rem[i] = i % 5 - x[i] % 3


def _int_div_mod_args():
    n = 500
    x = _rng(103).integers(-50, 50, n, dtype=np.int32)
    return x, np.zeros(n), np.zeros(n, np.int32), np.zeros(n, np.int32)


_add("int_div_mod_i32", int_div_mod_i32, _cdiv(500, 64), 64, _int_div_mod_args)


@cuda.jit
def neg_pow_abs_f32(x, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        out[i] = -v + v**2 + abs(v - 0.5)


_add(
    "neg_pow_abs_f32",
    neg_pow_abs_f32,
    _cdiv(300, 32),
    32,
    lambda: (_rng(104).standard_normal(300, dtype=np.float32), np.zeros(300, np.float32)),
)


@cuda.jit
def min_max_mix(x, clipped, idx):
    i = cuda.grid(1)
    if i < x.size:
        clipped[i] = min(x[i], 1.0)
        idx[i] = max(i, 3) + min(i, 10)


_add(
    "min_max_mix",
    min_max_mix,
    _cdiv(200, 7),
    7,
    lambda: (_rng(105).standard_normal(200) * 2, np.zeros(200), np.zeros(200, np.int64)),
)


@cuda.jit
def explicit_casts(x, out32, outi, out64):
    i = cuda.grid(1)
    if i < x.size:
        out32[i] = float32(x[i]) * float32(0.1)
        outi[i] = int32(x[i] * 10.0)
        out64[i] = float64(i) / 3


_add(
    "explicit_casts",
    explicit_casts,
    1,
    256,
    lambda: (
        _rng(106).uniform(-5, 5, 256),
        np.zeros(256, np.float32),
        np.zeros(256, np.int32),
        np.zeros(256),
    ),
)


@cuda.jit
def math_f32(x, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        out[0, i] = math.sqrt(abs(v))
        out[1, i] = math.exp(-v * v)
        out[2, i] = math.log(abs(v) + float32(1.0))
        out[3, i] = math.sin(v * float32(3.0))


_add(
    "math_f32",
    math_f32,
    _cdiv(400, 128),
    128,
    lambda: (_rng(107).standard_normal(400, dtype=np.float32), np.zeros((4, 400), np.float32)),
)


@cuda.jit
def math_f64(x, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        out[i, 0] = math.floor(v)
        out[i, 1] = math.ceil(v)
        out[i, 2] = math.fabs(v)
        out[i, 3] = math.tanh(v)
        out[i, 4] = math.erf(v)


_add(
    "math_f64",
    math_f64,
    _cdiv(333, 33),
    33,
    lambda: (_rng(108).standard_normal(333) * 3, np.zeros((333, 5))),
)


@cuda.jit
def bool_logic(x, y, flag):
    i = cuda.grid(1)
    if i < x.size:
        a = x[i] > 0.5 and y[i] < 0.5
        b = not (i % 3 == 0 or y[i] > 0.9)
        if a or b:
            flag[i] = 1
        else:
            flag[i] = 0
        flag[i] = flag[i] * 2 + (x[i] >= y[i])


def _bool_logic_args():
    r = _rng(109)
    return r.random(1024), r.random(1024), np.zeros(1024, np.int32)


_add("bool_logic", bool_logic, 4, 256, _bool_logic_args)


@cuda.jit
def cond_expr_threshold(x, out, parity):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = 0.0 if x[i] < 0.25 else x[i]
        parity[i] = x[i] if i % 2 == 0 else -1


_add(
    "cond_expr_threshold",
    cond_expr_threshold,
    _cdiv(500, 64),
    64,
    lambda: (
        _rng(110).random(500, dtype=np.float32),
        np.zeros(500, np.float32),
        np.zeros(500, np.float32),
    ),
)


@cuda.jit
def bitops_u32(x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        a = x[i]
        b = y[i]
        out[0, i] = (a & 0xFF) | (b << 3)
        out[1, i] = a ^ (b >> 5)
        out[2, i] = ~a
        out[3, i] = (a << (i % 7)) & 0xFFFF


def _bitops_u32_args():
    r = _rng(111)
    x = r.integers(0, 2**32, 250, dtype=np.uint32)
    y = r.integers(0, 2**20, 250, dtype=np.uint32)
    return x, y, np.zeros((4, 250), np.uint32)


_add("bitops_u32", bitops_u32, 2, 128, _bitops_u32_args)


@cuda.jit
def bitops_i64(x, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        out[i, 0] = v >> 3
        out[i, 1] = ~v
        out[i, 2] = (v & 0xF0F0) ^ (i << 4)
        out[i, 3] = v | -v


_add(
    "bitops_i64",
    bitops_i64,
    3,
    64,
    lambda: (
        _rng(112).integers(-(10**6), 10**6, 129, dtype=np.int64),
        np.zeros((129, 4), np.int64),
    ),
)


@cuda.jit
def int64_poly(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] * x[i] - 3 * i + 7


_add(
    "int64_poly",
    int64_poly,
    _cdiv(1500, 128),
    128,
    lambda: (
        _rng(113).integers(-(10**5), 10**5, 1500, dtype=np.int64),
        np.zeros(1500, np.int64),
    ),
)


@cuda.jit
def u32_hash(x, out):
    i = cuda.grid(1)
    if i < x.size:
        h = (x[i] ^ uint32(i)) & 0xFFFFFFFF
        h = (h * 2654435761) & 0xFFFFFFFF
        h = h ^ (h >> 16)
        out[i] = h


_add(
    "u32_hash",
    u32_hash,
    _cdiv(600, 64),
    64,
    lambda: (
        _rng(114).integers(0, 2**32, 600, dtype=np.uint32),
        np.zeros(600, np.uint32),
    ),
)


@cuda.jit
def f32_mixed_consts(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] * 0.1 + 1e-3 - i * 0.5


_add(
    "f32_mixed_consts",
    f32_mixed_consts,
    20,
    32,
    lambda: (_rng(115).random(640, dtype=np.float32), np.zeros(640, np.float32)),
)


@cuda.jit
def int_true_div(out_f, out_i):
    i = cuda.grid(1)
    if i < out_f.size:
        out_f[i] = i / 7
        out_i[i] = (i + 1) // 2 - (i * 3) % 4


_add("int_true_div", int_true_div, 90, 1, lambda: (np.zeros(90), np.zeros(90, np.int64)))


@cuda.jit
def scalar_args(x, out, n, scale, offset, bias):
    i = cuda.grid(1)
    if i < n:
        out[i] = x[i] * scale + offset + bias


_add(
    "scalar_args",
    scalar_args,
    _cdiv(800, 128),
    128,
    lambda: (
        _rng(116).random(800, dtype=np.float32),
        np.zeros(800, np.float32),
        700,
        0.75,
        np.int32(3),
        np.float32(0.5),
    ),
)


@cuda.jit
def float_into_int_store(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] * 0.5 + 0.25


_add(
    "float_into_int_store",
    float_into_int_store,
    _cdiv(300, 96),
    96,
    lambda: (_rng(117).integers(-100, 100, 300, dtype=np.int32), np.zeros(300, np.int32)),
)


@cuda.jit
def int32_wrap(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = int32(x[i] * 65536)


_add(
    "int32_wrap",
    int32_wrap,
    2,
    64,
    lambda: (_rng(118).integers(-(10**5), 10**5, 128, dtype=np.int32), np.zeros(128, np.int32)),
)


@cuda.jit
def gather_scatter(x, perm, gathered, scattered):
    i = cuda.grid(1)
    if i < x.size:
        gathered[i] = x[perm[i]]
        scattered[perm[i]] = x[i] * 2


def _gather_scatter_args():
    r = _rng(119)
    n = 513
    return (
        r.standard_normal(n, dtype=np.float32),
        r.permutation(n).astype(np.int64),
        np.zeros(n, np.float32),
        np.zeros(n, np.float32),
    )


_add("gather_scatter", gather_scatter, 3, 256, _gather_scatter_args)


@cuda.jit
def relu_leaky(x, relu, leaky, alpha):
    i = cuda.grid(1)
    if i < x.size:
        relu[i] = max(x[i], 0.0)
        leaky[i] = x[i] if x[i] > 0 else alpha * x[i]


_add(
    "relu_leaky",
    relu_leaky,
    10,
    256,
    lambda: (
        _rng(120).standard_normal(2500, dtype=np.float32),
        np.zeros(2500, np.float32),
        np.zeros(2500, np.float32),
        np.float32(0.01),
    ),
)


@cuda.jit
def clamp_chain(x, out, lo, hi):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = min(max(x[i], lo), hi)


_add(
    "clamp_chain",
    clamp_chain,
    _cdiv(450, 128),
    128,
    lambda: (_rng(121).standard_normal(450) * 2, np.zeros(450), -1, 1.5),
)


@cuda.jit
def gelu_erf(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = 0.5 * x[i] * (1.0 + math.erf(x[i] / math.sqrt(2.0)))


_add(
    "gelu_erf",
    gelu_erf,
    _cdiv(1000, 256),
    256,
    lambda: (_rng(122).standard_normal(1000) * 3, np.zeros(1000)),
)


@cuda.jit
def sigmoid_f32_large(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = float32(1.0) / (float32(1.0) + math.exp(-x[i]))


_add(
    "sigmoid_f32_large",
    sigmoid_f32_large,
    _cdiv(20000, 256),
    256,
    lambda: (_rng(123).standard_normal(20000, dtype=np.float32) * 4, np.zeros(20000, np.float32)),
)


@cuda.jit
def u32_sub_wrap(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] - 5


_add(
    "u32_sub_wrap",
    u32_sub_wrap,
    1,
    33,
    lambda: (_rng(124).integers(0, 10, 33, dtype=np.uint32), np.zeros(33, np.uint32)),
)


@cuda.jit
def xorshift_rng(seeds, out, rounds):
    i = cuda.grid(1)
    if i < seeds.size:
        s = seeds[i]
        for _ in range(rounds):
            s = (s ^ (s << 13)) & 0xFFFFFFFF
            s = s ^ (s >> 17)
            s = (s ^ (s << 5)) & 0xFFFFFFFF
        out[i] = s


_add(
    "xorshift_rng",
    xorshift_rng,
    4,
    64,
    lambda: (
        _rng(125).integers(1, 2**32, 256, dtype=np.uint32),
        np.zeros(256, np.uint32),
        10,
    ),
)


# -------------------------------------------------------------------------- control flow


@cuda.jit
def early_return(x, out, n):
    i = cuda.grid(1)
    if i >= n:
        return
    if x[i] < 0:
        out[i] = 0.0
        return
    out[i] = math.sqrt(x[i])


_add(
    "early_return",
    early_return,
    8,
    128,
    lambda: (_rng(201).standard_normal(1000), np.full(1000, -7.0), 1000),
)


@cuda.jit
def bucketize(x, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        if v < -1.0:
            out[i] = 0
        elif v < 0.0:
            out[i] = 1
        elif v < 1.0:
            out[i] = 2
        else:
            out[i] = 3


_add(
    "bucketize",
    bucketize,
    _cdiv(2000, 256),
    256,
    lambda: (_rng(202).standard_normal(2000, dtype=np.float32), np.zeros(2000, np.int32)),
)


@cuda.jit
def nested_divergent(x, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        if i % 2 == 0:
            if v > 0:
                out[i] = v * 2
            else:
                out[i] = -v
        else:
            if v > 0.5:
                out[i] = v - i
            elif i % 3 == 0:
                out[i] = 0.0
            else:
                out[i] = v + 1


_add(
    "nested_divergent",
    nested_divergent,
    _cdiv(611, 64),
    64,
    lambda: (_rng(203).standard_normal(611), np.zeros(611)),
)


@cuda.jit
def per_thread_loop(x, out):
    i = cuda.grid(1)
    if i < x.size:
        acc = 0.0
        for k in range(i % 5):
            acc += x[i] * k
        out[i] = acc


_add(
    "per_thread_loop",
    per_thread_loop,
    _cdiv(700, 96),
    96,
    lambda: (_rng(204).random(700, dtype=np.float32), np.zeros(700, np.float32)),
)


@cuda.jit
def grid_stride_scale(x, out, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        out[i] = x[i] * 3 - 1


_add(
    "grid_stride_scale",
    grid_stride_scale,
    4,
    64,
    lambda: (_rng(205).integers(-1000, 1000, 3000, dtype=np.int32), np.zeros(3000, np.int32), 3000),
)


@cuda.jit
def collatz_steps(out, limit):
    i = cuda.grid(1)
    if i < out.size:
        v = i + 1
        steps = 0
        while v != 1 and steps < limit:
            if v % 2 == 0:
                v //= 2
            else:
                v = 3 * v + 1
            steps += 1
        out[i] = steps


_add("collatz_steps", collatz_steps, 5, 64, lambda: (np.zeros(300, np.int32), 200))


@cuda.jit
def break_continue(x, out, threshold):
    i = cuda.grid(1)
    if i < out.size:
        acc = 0.0
        for k in range(16):
            if (k + i) % 3 == 0:
                continue
            acc += x[(i + k) % x.size]
            if acc > threshold:
                break
        out[i] = acc


_add(
    "break_continue",
    break_continue,
    _cdiv(500, 64),
    64,
    lambda: (_rng(206).random(500), np.zeros(500), 3.0),
)


@cuda.jit
def first_above(x, out, threshold):
    row = cuda.grid(1)
    if row < x.shape[0]:
        found = -1
        for k in range(x.shape[1]):
            if x[row, k] > threshold:
                found = k
                break
        out[row, 0] = found
        out[row, 1] = k  # the loop variable, after the loop


_add(
    "first_above",
    first_above,
    4,
    32,
    lambda: (_rng(207).random((100, 24)), np.zeros((100, 2), np.int32), 0.9),
)


@cuda.jit
def horner(coeffs, x, out):
    i = cuda.grid(1)
    if i < x.size:
        acc = 0.0
        for k in range(coeffs.size):
            acc = acc * x[i] + coeffs[k]
        out[i] = acc


def _horner_args():
    r = _rng(208)
    return r.standard_normal(6), r.uniform(-2, 2, 1000), np.zeros(1000)


_add("horner", horner, _cdiv(1000, 256), 256, _horner_args)


@cuda.jit
def binary_search(sorted_vals, queries, out):
    i = cuda.grid(1)
    if i < queries.size:
        lo = 0
        hi = sorted_vals.size
        q = queries[i]
        while lo < hi:
            mid = (lo + hi) // 2
            if sorted_vals[mid] < q:
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo


def _binary_search_args():
    r = _rng(209)
    vals = np.sort(r.random(257, dtype=np.float32))
    return vals, r.uniform(-0.1, 1.1, 600).astype(np.float32), np.zeros(600, np.int64)


_add("binary_search", binary_search, _cdiv(600, 128), 128, _binary_search_args)


@cuda.jit
def newton_sqrt(x, out, iters):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        g = v if v > 1.0 else 1.0
        n = 0
        while n < 50:
            ng = 0.5 * (g + v / g)
            if abs(ng - g) < 1e-12:
                break
            g = ng
            n += 1
        out[i] = g
        iters[i] = n


_add(
    "newton_sqrt",
    newton_sqrt,
    _cdiv(300, 64),
    64,
    lambda: (_rng(210).uniform(0, 1000, 300), np.zeros(300), np.zeros(300, np.int32)),
)


@cuda.jit
def return_inside_loop(x, out):
    i = cuda.grid(1)
    if i >= x.shape[0]:
        return
    for k in range(x.shape[1]):
        if x[i, k] < 0:
            out[i] = k
            return
    out[i] = -1


_add(
    "return_inside_loop",
    return_inside_loop,
    4,
    64,
    lambda: (_rng(211).standard_normal((200, 10)) + 1.5, np.zeros(200, np.int32)),
)


@cuda.jit
def kahan_sum_rows(x, out):
    r = cuda.grid(1)
    if r < x.shape[0]:
        s = 0.0
        comp = 0.0
        for k in range(x.shape[1]):
            y = x[r, k] - comp
            t = s + y
            comp = (t - s) - y
            s = t
        out[r] = s


_add(
    "kahan_sum_rows",
    kahan_sum_rows,
    2,
    64,
    lambda: (_rng(212).random((128, 50), dtype=np.float32), np.zeros(128, np.float32)),
)


@cuda.jit
def single_thread_serial(x, out):
    if cuda.grid(1) == 0:
        acc = 0
        for k in range(x.size):
            acc += x[k]
            out[k] = acc


_add(
    "single_thread_serial",
    single_thread_serial,
    1,
    1,
    lambda: (_rng(213).integers(-1000, 1000, 500, dtype=np.int64), np.zeros(500, np.int64)),
)


@cuda.jit
def grid_stride_2d(x, out):
    sx, sy = cuda.gridsize(2)
    x0, y0 = cuda.grid(2)
    for r in range(x0, x.shape[0], sx):
        for c in range(y0, x.shape[1], sy):
            out[r, c] = x[r, c] * x[r, c]


_add(
    "grid_stride_2d",
    grid_stride_2d,
    (2, 3),
    (8, 4),
    lambda: (_rng(214).standard_normal((70, 90), dtype=np.float32), np.zeros((70, 90), np.float32)),
)


# ------------------------------------------------------------------ 2-D and 3-D indexing


@cuda.jit
def add2d(a, b, out):
    r, c = cuda.grid(2)
    if r < out.shape[0] and c < out.shape[1]:
        out[r, c] = a[r, c] + 2 * b[r, c]


def _add2d_args():
    r = _rng(301)
    return r.random((37, 53)), r.random((37, 53)), np.zeros((37, 53))


_add("add2d", add2d, (3, 4), (16, 16), _add2d_args)


@cuda.jit
def transpose_naive(x, out):
    r, c = cuda.grid(2)
    if r < x.shape[0] and c < x.shape[1]:
        out[c, r] = x[r, c]


_add(
    "transpose_naive",
    transpose_naive,
    (3, 8),
    (8, 4),
    lambda: (_rng(302).integers(0, 10**6, (21, 30), dtype=np.int32), np.zeros((30, 21), np.int32)),
)


@cuda.jit
def fill3d(out):
    x, y, z = cuda.grid(3)
    if x < out.shape[0] and y < out.shape[1] and z < out.shape[2]:
        out[x, y, z] = x * 100 + y * 10 + z


_add("fill3d", fill3d, (3, 2, 3), (4, 4, 2), lambda: (np.zeros((9, 7, 5), np.int32),))


@cuda.jit
def thread_ids(out):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < out.shape[0]:
        out[i, 0] = cuda.threadIdx.x
        out[i, 1] = cuda.blockIdx.x
        out[i, 2] = cuda.blockDim.x
        out[i, 3] = cuda.gridDim.x


_add("thread_ids", thread_ids, 5, 33, lambda: (np.full((150, 4), -1, np.int64),))


@cuda.jit
def ids_2d(out):
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bx = cuda.blockIdx.x
    by = cuda.blockIdx.y
    col = bx * cuda.blockDim.x + tx
    row = by * cuda.blockDim.y + ty
    if row < out.shape[0] and col < out.shape[1]:
        out[row, col] = (by * cuda.gridDim.x + bx) * 1000 + ty * cuda.blockDim.x + tx


_add("ids_2d", ids_2d, (3, 2), (32, 8), lambda: (np.zeros((14, 90), np.int32),))


@cuda.jit
def ids_3d(out):
    x, y, z = cuda.grid(3)
    if z < out.shape[0] and y < out.shape[1] and x < out.shape[2]:
        out[z, y, x] = (
            cuda.blockIdx.z * 1000
            + cuda.threadIdx.z * 100
            + cuda.blockIdx.y * 10
            + cuda.gridDim.z * cuda.blockDim.z
        )


_add("ids_3d", ids_3d, (2, 3, 2), (4, 4, 2), lambda: (np.zeros((4, 10, 7), np.int64),))


@cuda.jit
def grid3d_flat(out):
    bid = cuda.blockIdx.x + cuda.gridDim.x * (cuda.blockIdx.y + cuda.gridDim.y * cuda.blockIdx.z)
    i = bid * cuda.blockDim.x + cuda.threadIdx.x
    if i < out.size:
        out[i] = bid * 7 + cuda.threadIdx.x


_add("grid3d_flat", grid3d_flat, (2, 3, 2), 7, lambda: (np.zeros(80, np.int32),))


@cuda.jit
def band_rows_2d_grid(x, out):
    c = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    r = cuda.blockIdx.y
    if c < x.shape[1]:
        out[r, c] = x[r, c] * (r + 1)


_add(
    "band_rows_2d_grid",
    band_rows_2d_grid,
    (4, 3),
    32,
    lambda: (_rng(303).integers(-50, 50, (3, 100), dtype=np.int32), np.zeros((3, 100), np.int32)),
)


@cuda.jit
def stencil3(x, out):
    i = cuda.grid(1)
    n = x.size
    if i < n:
        left = x[i - 1] if i > 0 else x[0]
        right = x[i + 1] if i < n - 1 else x[n - 1]
        out[i] = 0.25 * left + 0.5 * x[i] + 0.25 * right


_add(
    "stencil3",
    stencil3,
    _cdiv(1000, 128),
    128,
    lambda: (_rng(304).random(1000, dtype=np.float32), np.zeros(1000, np.float32)),
)


@cuda.jit
def laplacian2d(u, out):
    r, c = cuda.grid(2)
    if 0 < r < u.shape[0] - 1 and 0 < c < u.shape[1] - 1:
        out[r, c] = u[r - 1, c] + u[r + 1, c] + u[r, c - 1] + u[r, c + 1] - 4 * u[r, c]


_add(
    "laplacian2d",
    laplacian2d,
    (4, 3),
    (16, 16),
    lambda: (_rng(305).random((50, 40)), np.zeros((50, 40))),
)


@cuda.jit
def negative_index(x, out, rev):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] - x[-1]
        rev[i] = x[-1 - i]


_add(
    "negative_index",
    negative_index,
    _cdiv(100, 32),
    32,
    lambda: (_rng(306).random(100), np.zeros(100), np.zeros(100)),
)


@cuda.jit
def row_sums(x, out):
    r = cuda.grid(1)
    if r < x.shape[0]:
        s = 0.0
        for c in range(x.shape[1]):
            s += x[r, c]
        out[r] = s


_add(
    "row_sums",
    row_sums,
    _cdiv(300, 64),
    64,
    lambda: (_rng(307).random((300, 40), dtype=np.float32), np.zeros(300, np.float32)),
)


@cuda.jit
def matvec(a, v, out):
    row = cuda.grid(1)
    if row < a.shape[0]:
        acc = float32(0.0)
        for k in range(a.shape[1]):
            acc += a[row, k] * v[k]
        out[row] = acc


def _matvec_args():
    r = _rng(308)
    return (
        r.standard_normal((200, 64), dtype=np.float32),
        r.standard_normal(64, dtype=np.float32),
        np.zeros(200, np.float32),
    )


_add("matvec", matvec, _cdiv(200, 32), 32, _matvec_args)


@cuda.jit
def softmax_rows(x, out):
    r = cuda.grid(1)
    if r < x.shape[0]:
        m = x[r, 0]
        for k in range(1, x.shape[1]):
            m = max(m, x[r, k])
        s = 0.0
        for k in range(x.shape[1]):
            e = math.exp(x[r, k] - m)
            out[r, k] = e
            s += e
        for k in range(x.shape[1]):
            out[r, k] /= s


_add(
    "softmax_rows",
    softmax_rows,
    2,
    32,
    lambda: (_rng(309).standard_normal((64, 16), dtype=np.float32), np.zeros((64, 16), np.float32)),
)


# ------------------------------------------------------------------------- shared memory


@cuda.jit
def tiled_transpose(x, out):
    tile = cuda.shared.array((16, 17), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bx = cuda.blockIdx.x * 16
    by = cuda.blockIdx.y * 16
    row = by + ty
    col = bx + tx
    if row < x.shape[0] and col < x.shape[1]:
        tile[ty, tx] = x[row, col]
    cuda.syncthreads()
    out_row = bx + ty
    out_col = by + tx
    if out_row < out.shape[0] and out_col < out.shape[1]:
        out[out_row, out_col] = tile[tx, ty]


_add(
    "tiled_transpose",
    tiled_transpose,
    (4, 3),
    (16, 16),
    lambda: (_rng(401).random((40, 50), dtype=np.float32), np.zeros((50, 40), np.float32)),
)


@cuda.jit
def matmul_tiled_bounds(a, b, c):
    sa = cuda.shared.array((16, 16), float32)
    sb = cuda.shared.array((16, 16), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * 16 + ty
    col = cuda.blockIdx.x * 16 + tx
    acc = float32(0.0)
    for t in range((a.shape[1] + 15) // 16):
        k = t * 16 + tx
        if row < a.shape[0] and k < a.shape[1]:
            sa[ty, tx] = a[row, k]
        else:
            sa[ty, tx] = 0.0
        k = t * 16 + ty
        if k < b.shape[0] and col < b.shape[1]:
            sb[ty, tx] = b[k, col]
        else:
            sb[ty, tx] = 0.0
        cuda.syncthreads()
        for j in range(16):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    if row < c.shape[0] and col < c.shape[1]:
        c[row, col] = acc


def _matmul_bounds_args():
    r = _rng(402)
    return (
        r.standard_normal((37, 29), dtype=np.float32),
        r.standard_normal((29, 41), dtype=np.float32),
        np.zeros((37, 41), np.float32),
    )


_add("matmul_tiled_bounds", matmul_tiled_bounds, (3, 3), (16, 16), _matmul_bounds_args)


@cuda.jit
def matmul_tiled_exact(a, b, c):
    sa = cuda.shared.array((8, 8), float64)
    sb = cuda.shared.array((8, 8), float64)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * 8 + ty
    col = cuda.blockIdx.x * 8 + tx
    acc = 0.0
    for t in range(a.shape[1] // 8):
        sa[ty, tx] = a[row, t * 8 + tx]
        sb[ty, tx] = b[t * 8 + ty, col]
        cuda.syncthreads()
        for j in range(8):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    c[row, col] = acc


def _matmul_exact_args():
    r = _rng(403)
    return r.standard_normal((32, 24)), r.standard_normal((24, 16)), np.zeros((32, 16))


_add("matmul_tiled_exact", matmul_tiled_exact, (2, 4), (8, 8), _matmul_exact_args)


@cuda.jit
def reduce_interleaved(x, partial):
    buf = cuda.shared.array(128, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[tid] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    s = 1
    while s < cuda.blockDim.x:
        if tid % (2 * s) == 0:
            buf[tid] += buf[tid + s]
        cuda.syncthreads()
        s *= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = buf[0]


_add(
    "reduce_interleaved",
    reduce_interleaved,
    8,
    128,
    lambda: (_rng(404).random(1000, dtype=np.float32), np.zeros(8, np.float32)),
)


@cuda.jit
def reduce_sequential(x, partial):
    buf = cuda.shared.array(256, float64)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    v = 0.0
    if i < x.size:
        v = x[i]
    buf[tid] = v
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if tid < s:
            buf[tid] += buf[tid + s]
        cuda.syncthreads()
        s >>= 1
    if tid == 0:
        partial[cuda.blockIdx.x] = buf[0]


_add(
    "reduce_sequential",
    reduce_sequential,
    20,
    256,
    lambda: (_rng(405).standard_normal(5000), np.zeros(20)),
)


@cuda.jit
def reduce_two_per_thread(x, partial):
    buf = cuda.shared.array(64, int32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * (cuda.blockDim.x * 2) + tid
    v = 0
    if i < x.size:
        v += x[i]
    if i + cuda.blockDim.x < x.size:
        v += x[i + cuda.blockDim.x]
    buf[tid] = v
    cuda.syncthreads()
    s = 32
    while s >= 1:
        if tid < s:
            buf[tid] += buf[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = buf[0]


_add(
    "reduce_two_per_thread",
    reduce_two_per_thread,
    _cdiv(1000, 128),
    64,
    lambda: (_rng(406).integers(0, 1000, 1000, dtype=np.int32), np.zeros(8, np.int32)),
)


@cuda.jit
def block_max_serial(x, out):
    buf = cuda.shared.array(96, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[tid] = x[i] if i < x.size else -math.inf
    cuda.syncthreads()
    if tid == 0:
        m = buf[0]
        for k in range(1, cuda.blockDim.x):
            m = max(m, buf[k])
        out[cuda.blockIdx.x] = m


_add(
    "block_max_serial",
    block_max_serial,
    _cdiv(500, 96),
    96,
    lambda: (_rng(407).standard_normal(500, dtype=np.float32), np.zeros(6, np.float32)),
)


@cuda.jit
def block_reduce_atomic(x, total):
    buf = cuda.shared.array(128, float64)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[tid] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    s = 64
    while s > 0:
        if tid < s:
            buf[tid] += buf[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        cuda.atomic.add(total, 0, buf[0])


_add(
    "block_reduce_atomic",
    block_reduce_atomic,
    _cdiv(3000, 128),
    128,
    lambda: (_rng(408).integers(0, 100, 3000).astype(np.float64) * 0.25, np.zeros(1)),
)


@cuda.jit
def dot_grid_stride_shared(a, b, total):
    sh = cuda.shared.array(64, float64)
    tid = cuda.threadIdx.x
    acc = 0.0
    for i in range(cuda.grid(1), a.size, cuda.gridsize(1)):
        acc += a[i] * b[i]
    sh[tid] = acc
    cuda.syncthreads()
    if tid == 0:
        s = 0.0
        for k in range(cuda.blockDim.x):
            s += sh[k]
        cuda.atomic.add(total, 0, s)


def _dot_args():
    r = _rng(409)
    n = 10000
    a = r.integers(-4, 5, n).astype(np.float64)
    b = r.integers(-4, 5, n).astype(np.float64)
    return a, b, np.zeros(1)


_add("dot_grid_stride_shared", dot_grid_stride_shared, 8, 64, _dot_args)


@cuda.jit
def scan_hillis_steele_double_buffer(x, out):
    buf = cuda.shared.array((2, 64), float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[0, tid] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    src = 0
    offset = 1
    while offset < 64:
        dst = 1 - src
        if tid >= offset:
            buf[dst, tid] = buf[src, tid] + buf[src, tid - offset]
        else:
            buf[dst, tid] = buf[src, tid]
        cuda.syncthreads()
        src = dst
        offset *= 2
    if i < x.size:
        out[i] = buf[src, tid]


_add(
    "scan_hillis_steele_double_buffer",
    scan_hillis_steele_double_buffer,
    _cdiv(300, 64),
    64,
    lambda: (_rng(410).random(300, dtype=np.float32), np.zeros(300, np.float32)),
)


@cuda.jit
def scan_hillis_steele_two_syncs(x, out):
    buf = cuda.shared.array(128, int32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[tid] = x[i] if i < x.size else 0
    cuda.syncthreads()
    offset = 1
    while offset < cuda.blockDim.x:
        v = buf[tid]
        if tid >= offset:
            v += buf[tid - offset]
        cuda.syncthreads()
        buf[tid] = v
        cuda.syncthreads()
        offset *= 2
    if i < x.size:
        out[i] = buf[tid]


_add(
    "scan_hillis_steele_two_syncs",
    scan_hillis_steele_two_syncs,
    _cdiv(1000, 128),
    128,
    lambda: (_rng(411).integers(-20, 20, 1000, dtype=np.int32), np.zeros(1000, np.int32)),
)


@cuda.jit
def scan_blelloch(x, out):
    temp = cuda.shared.array(64, int32)
    tid = cuda.threadIdx.x
    base = cuda.blockIdx.x * 64
    a = base + 2 * tid
    temp[2 * tid] = x[a] if a < x.size else 0
    temp[2 * tid + 1] = x[a + 1] if a + 1 < x.size else 0
    offset = 1
    d = 32
    while d > 0:
        cuda.syncthreads()
        if tid < d:
            ai = offset * (2 * tid + 1) - 1
            bi = offset * (2 * tid + 2) - 1
            temp[bi] += temp[ai]
        offset *= 2
        d >>= 1
    if tid == 0:
        temp[63] = 0
    d = 1
    while d < 64:
        offset >>= 1
        cuda.syncthreads()
        if tid < d:
            ai = offset * (2 * tid + 1) - 1
            bi = offset * (2 * tid + 2) - 1
            t = temp[ai]
            temp[ai] = temp[bi]
            temp[bi] += t
        d *= 2
    cuda.syncthreads()
    if a < x.size:
        out[a] = temp[2 * tid]
    if a + 1 < x.size:
        out[a + 1] = temp[2 * tid + 1]


_add(
    "scan_blelloch",
    scan_blelloch,
    _cdiv(200, 64),
    32,
    lambda: (_rng(412).integers(0, 50, 200, dtype=np.int32), np.zeros(200, np.int32)),
)


@cuda.jit
def shared_hist_i32(x, hist):
    local = cuda.shared.array(16, int32)
    tid = cuda.threadIdx.x
    if tid < 16:
        local[tid] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(local, x[i] & 15, 1)
    cuda.syncthreads()
    if tid < 16:
        cuda.atomic.add(hist, tid, local[tid])


_add(
    "shared_hist_i32",
    shared_hist_i32,
    _cdiv(5000, 128),
    128,
    lambda: (_rng(413).integers(0, 1000, 5000, dtype=np.int32), np.zeros(16, np.int32)),
)


@cuda.jit
def shared_hist_f32(vals, weights, hist):
    sh = cuda.shared.array(8, float32)
    tid = cuda.threadIdx.x
    if tid < 8:
        sh[tid] = 0.0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < vals.size:
        b = min(int32(vals[i] * 8), 7)
        cuda.atomic.add(sh, b, weights[i])
    cuda.syncthreads()
    if tid < 8:
        cuda.atomic.add(hist, tid, sh[tid])


def _shared_hist_f32_args():
    r = _rng(414)
    n = 2000
    vals = r.random(n, dtype=np.float32)
    weights = (r.integers(0, 8, n) * 0.5).astype(np.float32)
    return vals, weights, np.zeros(8, np.float32)


_add("shared_hist_f32", shared_hist_f32, 8, 256, _shared_hist_f32_args)


@cuda.jit
def tile_blur(img, out):
    tile = cuda.shared.array((16, 16), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    r = cuda.blockIdx.y * 16 + ty
    c = cuda.blockIdx.x * 16 + tx
    inside = r < img.shape[0] and c < img.shape[1]
    tile[ty, tx] = img[r, c] if inside else 0.0
    cuda.syncthreads()
    if inside:
        acc = tile[ty, tx]
        cnt = 1
        if tx > 0:
            acc += tile[ty, tx - 1]
            cnt += 1
        if tx < 15:
            acc += tile[ty, tx + 1]
            cnt += 1
        if ty > 0:
            acc += tile[ty - 1, tx]
            cnt += 1
        if ty < 15:
            acc += tile[ty + 1, tx]
            cnt += 1
        out[r, c] = acc / cnt


_add(
    "tile_blur",
    tile_blur,
    (3, 2),
    (16, 16),
    lambda: (_rng(415).random((30, 45), dtype=np.float32), np.zeros((30, 45), np.float32)),
)


@cuda.jit
def stencil_shared_halo(x, out):
    sh = cuda.shared.array(70, float32)  # 64 + 2 * radius 3
    tid = cuda.threadIdx.x
    g = cuda.grid(1)
    n = x.size
    sh[tid + 3] = x[g] if g < n else 0.0
    if tid < 3:
        left = g - 3
        sh[tid] = x[left] if left >= 0 else 0.0
        right = g + 64
        sh[tid + 67] = x[right] if right < n else 0.0
    cuda.syncthreads()
    if g < n:
        s = 0.0
        for k in range(-3, 4):
            s += sh[tid + 3 + k]
        out[g] = s


_add(
    "stencil_shared_halo",
    stencil_shared_halo,
    _cdiv(1000, 64),
    64,
    lambda: (_rng(416).random(1000, dtype=np.float32), np.zeros(1000, np.float32)),
)


@cuda.jit
def reverse_in_block(x, out):
    sh = cuda.shared.array(128, int64)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    sh[tid] = x[i]
    cuda.syncthreads()
    out[i] = sh[cuda.blockDim.x - 1 - tid]


_add(
    "reverse_in_block",
    reverse_in_block,
    6,
    128,
    lambda: (_rng(417).integers(-(10**9), 10**9, 768, dtype=np.int64), np.zeros(768, np.int64)),
)


@cuda.jit
def block_row_sums_2d(x, out):
    tile = cuda.shared.array((8, 32), float64)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    r = cuda.blockIdx.y * 8 + ty
    c = cuda.blockIdx.x * 32 + tx
    tile[ty, tx] = x[r, c] if r < x.shape[0] and c < x.shape[1] else 0.0
    cuda.syncthreads()
    if tx == 0 and r < x.shape[0]:
        s = 0.0
        for k in range(32):
            s += tile[ty, k]
        out[r, cuda.blockIdx.x] = s


_add(
    "block_row_sums_2d",
    block_row_sums_2d,
    (3, 3),
    (32, 8),
    lambda: (_rng(418).random((20, 70)), np.zeros((20, 3))),
)


@cuda.jit
def rms_norm_rows(x, out, eps):
    sh = cuda.shared.array(32, float32)
    row = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    acc = float32(0.0)
    for c in range(tid, x.shape[1], cuda.blockDim.x):
        v = x[row, c]
        acc += v * v
    sh[tid] = acc
    cuda.syncthreads()
    s = 16
    while s > 0:
        if tid < s:
            sh[tid] += sh[tid + s]
        cuda.syncthreads()
        s //= 2
    scale = float32(1.0) / math.sqrt(sh[0] / x.shape[1] + eps)
    for c in range(tid, x.shape[1], cuda.blockDim.x):
        out[row, c] = x[row, c] * scale


_add(
    "rms_norm_rows",
    rms_norm_rows,
    20,
    32,
    lambda: (
        _rng(419).standard_normal((20, 100), dtype=np.float32),
        np.zeros((20, 100), np.float32),
        1e-5,
    ),
)


# ---------------------------------------------------------------------------- local arrays


@cuda.jit
def local_sort8(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        buf = cuda.local.array(8, float32)
        for k in range(8):
            buf[k] = x[i, k]
        for k in range(1, 8):
            key = buf[k]
            j = k - 1
            while j >= 0 and buf[j] > key:
                buf[j + 1] = buf[j]
                j -= 1
            buf[j + 1] = key
        for k in range(8):
            out[i, k] = buf[k]


_add(
    "local_sort8",
    local_sort8,
    _cdiv(300, 64),
    64,
    lambda: (_rng(501).standard_normal((300, 8), dtype=np.float32), np.zeros((300, 8), np.float32)),
)


@cuda.jit
def local_digit_counts(x, out):
    i = cuda.grid(1)
    if i < x.size:
        counts = cuda.local.array(10, int32)
        for d in range(10):
            counts[d] = 0
        v = x[i]
        while v > 0:
            counts[v % 10] += 1
            v //= 10
        for d in range(10):
            out[i, d] = counts[d]


_add(
    "local_digit_counts",
    local_digit_counts,
    _cdiv(200, 32),
    32,
    lambda: (_rng(502).integers(0, 10**9, 200, dtype=np.int64), np.zeros((200, 10), np.int32)),
)


@cuda.jit
def local_powers(x, out):
    i = cuda.grid(1)
    if i < x.size:
        p = cuda.local.array(6, float64)
        p[0] = 1.0
        for k in range(1, 6):
            p[k] = p[k - 1] * x[i]
        s = 0.0
        for k in range(6):
            s += p[k] / (k + 1)
        out[i] = s


_add(
    "local_powers",
    local_powers,
    _cdiv(400, 128),
    128,
    lambda: (_rng(503).uniform(-1.5, 1.5, 400), np.zeros(400)),
)


@cuda.jit
def local_conv3x3(img, out):
    w = cuda.local.array((3, 3), float32)
    for a in range(3):
        for b in range(3):
            w[a, b] = float32(1 + a * 3 + b) / float32(45.0)
    r, c = cuda.grid(2)
    if 1 <= r < img.shape[0] - 1 and 1 <= c < img.shape[1] - 1:
        acc = float32(0.0)
        for a in range(3):
            for b in range(3):
                acc += w[a, b] * img[r + a - 1, c + b - 1]
        out[r, c] = acc


_add(
    "local_conv3x3",
    local_conv3x3,
    (3, 9),
    (8, 4),
    lambda: (_rng(504).random((24, 36), dtype=np.float32), np.zeros((24, 36), np.float32)),
)


@cuda.jit
def local_window_max(x, out):
    i = cuda.grid(1)
    if i < out.size:
        win = cuda.local.array(5, int64)
        for k in range(5):
            win[k] = x[i + k]
        best = win[0]
        pos = 0
        for k in range(1, 5):
            if win[k] > best:
                best = win[k]
                pos = k
        out[i] = best * 10 + pos


_add(
    "local_window_max",
    local_window_max,
    _cdiv(396, 96),
    96,
    lambda: (_rng(505).integers(0, 1000, 400, dtype=np.int64), np.zeros(396, np.int64)),
)


# ------------------------------------------------------------------------ global atomics


@cuda.jit
def global_hist_i32(x, hist):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(hist, x[i] % hist.size, 1)


_add(
    "global_hist_i32",
    global_hist_i32,
    _cdiv(4000, 256),
    256,
    lambda: (_rng(601).integers(0, 10000, 4000, dtype=np.int32), np.zeros(10, np.int32)),
)


@cuda.jit
def atomic_sum_f32(x, total):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(total, 0, x[i])


_add(
    "atomic_sum_f32",
    atomic_sum_f32,
    _cdiv(1000, 128),
    128,
    lambda: ((_rng(602).integers(-8, 8, 1000) * 0.5).astype(np.float32), np.zeros(1, np.float32)),
)


@cuda.jit
def atomic_sum_f64_by_row(x, sums):
    r, c = cuda.grid(2)
    if r < x.shape[0] and c < x.shape[1]:
        cuda.atomic.add(sums, r, x[r, c])


_add(
    "atomic_sum_f64_by_row",
    atomic_sum_f64_by_row,
    (5, 13),
    (8, 4),
    lambda: (_rng(603).integers(0, 64, (33, 50)) * 0.125, np.zeros(33)),
)


@cuda.jit
def compact_positive(x, out, count):
    i = cuda.grid(1)
    if i < x.size and x[i] > 0:
        slot = cuda.atomic.add(count, 0, 1)
        out[slot] = x[i]


_add(
    "compact_positive",
    compact_positive,
    _cdiv(500, 64),
    64,
    lambda: (
        _rng(604).standard_normal(500, dtype=np.float32),
        np.zeros(500, np.float32),
        np.zeros(1, np.int32),
    ),
)


@cuda.jit
def bucket_fill(keys, buckets, fill):
    i = cuda.grid(1)
    if i < keys.size:
        b = keys[i]
        old = cuda.atomic.add(fill, b, 1)
        if old < buckets.shape[1]:
            buckets[b, old] = i


_add(
    "bucket_fill",
    bucket_fill,
    _cdiv(200, 33),
    33,
    lambda: (
        _rng(605).integers(0, 6, 200, dtype=np.int32),
        np.full((6, 40), -1, np.int32),
        np.zeros(6, np.int32),
    ),
)


@cuda.jit
def atomic_max_min_i32(x, mx, mn):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.max(mx, 0, x[i])
        cuda.atomic.min(mn, 0, x[i])
        cuda.atomic.max(mx, 1 + i % 4, x[i])


_add(
    "atomic_max_min_i32",
    atomic_max_min_i32,
    _cdiv(3000, 256),
    256,
    lambda: (
        _rng(606).integers(-(10**6), 10**6, 3000, dtype=np.int32),
        np.full(5, -(2**31), np.int32),
        np.full(1, 2**31 - 1, np.int32),
    ),
)


@cuda.jit
def atomic_max_min_f32(x, mx, mn):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.max(mx, cuda.blockIdx.x, x[i])
        cuda.atomic.min(mn, cuda.blockIdx.x, x[i])


_add(
    "atomic_max_min_f32",
    atomic_max_min_f32,
    _cdiv(700, 96),
    96,
    lambda: (
        _rng(607).standard_normal(700, dtype=np.float32),
        np.full(8, -np.inf, np.float32),
        np.full(8, np.inf, np.float32),
    ),
)


@cuda.jit
def atomic_2d_counts(r_idx, c_idx, counts):
    i = cuda.grid(1)
    if i < r_idx.size:
        cuda.atomic.add(counts, (r_idx[i], c_idx[i]), 1)


def _atomic_2d_args():
    r = _rng(608)
    n = 1000
    return (
        r.integers(0, 4, n, dtype=np.int64),
        r.integers(0, 6, n, dtype=np.int64),
        np.zeros((4, 6), np.int32),
    )


_add("atomic_2d_counts", atomic_2d_counts, _cdiv(1000, 128), 128, _atomic_2d_args)


@cuda.jit
def atomic_old_value_f64(x, acc, seen):
    i = cuda.grid(1)
    if i < x.size:
        old = cuda.atomic.add(acc, 0, x[i])
        seen[i] = old >= 0.0


_add(
    "atomic_old_value_f64",
    atomic_old_value_f64,
    2,
    64,
    lambda: (_rng(609).integers(1, 9, 100) * 0.125, np.zeros(1), np.zeros(100, np.int32)),
)


@cuda.jit
def atomic_3d_grid_counts(counts):
    x, y, z = cuda.grid(3)
    cuda.atomic.add(counts, (x + y + z) % counts.size, 1)


_add(
    "atomic_3d_grid_counts",
    atomic_3d_grid_counts,
    (2, 2, 2),
    (4, 4, 2),
    lambda: (np.zeros(7, np.int64),),
)


# --------------------------------------------------------- deliberately buggy kernels

BUGGY = {
    "bug_oob_no_guard": "no bounds guard: 128 threads index an array of 100",
    "bug_off_by_one_guard": "guard `i <= n` lets thread n read and write one past the end",
    "bug_race_no_sync_reduce": "tree reduction without syncthreads between steps (a race)",
    "bug_sync_in_divergent_if": "cuda.syncthreads() inside an if only half the block takes",
    "bug_uninit_shared_read": "odd threads read shared slots that only even threads should write; nobody writes them",
    "bug_missing_sync_after_load": "reads a neighbour's shared slot right after the load, no syncthreads",
    "bug_conflicting_writes": "two threads write different values to out[i // 2]",
    "bug_float_index": "loop indexes an array with k / 2, a float",
    "bug_int_floordiv_zero": "i // (i - i): integer division by zero",
    "bug_float_div_zero": "1 / (i - i) with Python ints: division by zero",
    "bug_endless_looking_loop": "`while x > 0: x /= 2` looks endless but ends on underflow",
    "bug_write_past_2d": "guards only the column; rows past the end of a 2-D array are written",
    "bug_shared_index_overflow": "writes sh[tid + 1]: the last thread writes past the shared array",
    "bug_shared_negative_index": "reads sh[tid - 1]: thread 0 reads sh[-1] (wraps in Python)",
}


@cuda.jit
def bug_oob_no_guard(x, out):
    i = cuda.grid(1)
    out[i] = x[i] * 2


_add(
    "bug_oob_no_guard",
    bug_oob_no_guard,
    1,
    128,
    lambda: (_rng(701).random(100, dtype=np.float32), np.zeros(100, np.float32)),
)


@cuda.jit
def bug_off_by_one_guard(x, out, n):
    i = cuda.grid(1)
    if i <= n:
        out[i] = x[i] + 1


_add(
    "bug_off_by_one_guard",
    bug_off_by_one_guard,
    2,
    64,
    lambda: (_rng(702).integers(0, 100, 100, dtype=np.int32), np.zeros(100, np.int32), 100),
)


@cuda.jit
def bug_race_no_sync_reduce(x, partial):
    buf = cuda.shared.array(64, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[tid] = x[i]
    cuda.syncthreads()
    s = 32
    while s > 0:
        if tid < s:
            buf[tid] += buf[tid + s]
        s //= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = buf[0]


_add(
    "bug_race_no_sync_reduce",
    bug_race_no_sync_reduce,
    4,
    64,
    lambda: (_rng(703).random(256, dtype=np.float32), np.zeros(4, np.float32)),
)


@cuda.jit
def bug_sync_in_divergent_if(x, out):
    sh = cuda.shared.array(64, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    sh[tid] = x[i]
    if tid < 32:
        cuda.syncthreads()
    out[i] = sh[63 - tid]


_add(
    "bug_sync_in_divergent_if",
    bug_sync_in_divergent_if,
    2,
    64,
    lambda: (_rng(704).random(128, dtype=np.float32), np.zeros(128, np.float32)),
)


@cuda.jit
def bug_uninit_shared_read(x, out):
    sh = cuda.shared.array(64, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    if tid % 2 == 0:
        sh[tid] = x[i]
    cuda.syncthreads()
    out[i] = sh[tid ^ 1]


_add(
    "bug_uninit_shared_read",
    bug_uninit_shared_read,
    2,
    64,
    lambda: (_rng(705).random(128, dtype=np.float32), np.zeros(128, np.float32)),
)


@cuda.jit
def bug_missing_sync_after_load(x, out):
    sh = cuda.shared.array(96, float64)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    sh[tid] = x[i]
    out[i] = sh[(tid + 1) % 96] - sh[tid]


_add(
    "bug_missing_sync_after_load",
    bug_missing_sync_after_load,
    2,
    96,
    lambda: (_rng(706).random(192), np.zeros(192)),
)


@cuda.jit
def bug_conflicting_writes(out):
    i = cuda.grid(1)
    if i < 2 * out.size:
        out[i // 2] = i


_add("bug_conflicting_writes", bug_conflicting_writes, 4, 64, lambda: (np.zeros(100, np.int32),))


@cuda.jit
def bug_float_index(x, out):
    i = cuda.grid(1)
    if i < out.size:
        acc = 0.0
        for k in range(4):
            j = k / 2
            acc += x[j]
        out[i] = acc


_add(
    "bug_float_index",
    bug_float_index,
    1,
    32,
    lambda: (_rng(707).random(16), np.zeros(32)),
)


@cuda.jit
def bug_int_floordiv_zero(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = i // (i - i)


_add("bug_int_floordiv_zero", bug_int_floordiv_zero, 1, 32, lambda: (np.zeros(32, np.int32),))


@cuda.jit
def bug_float_div_zero(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = 1 / (i - i)


_add("bug_float_div_zero", bug_float_div_zero, 1, 7, lambda: (np.zeros(7),))


@cuda.jit
def bug_endless_looking_loop(start, steps):
    i = cuda.grid(1)
    if i < start.size:
        x = start[i]
        n = 0
        while x > 0:
            x = x / 2
            n += 1
        steps[i] = n


_add(
    "bug_endless_looking_loop",
    bug_endless_looking_loop,
    1,
    32,
    lambda: (_rng(708).uniform(1e-3, 1e6, 32), np.zeros(32, np.int32)),
)


@cuda.jit
def bug_write_past_2d(out):
    r, c = cuda.grid(2)
    if c < out.shape[1]:
        out[r, c] = r * 100 + c


_add(
    "bug_write_past_2d",
    bug_write_past_2d,
    (3, 2),
    (16, 16),
    lambda: (np.zeros((40, 30), np.int32),),
)


@cuda.jit
def bug_shared_index_overflow(x, out):
    sh = cuda.shared.array(64, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    sh[tid + 1] = x[i]
    cuda.syncthreads()
    out[i] = sh[tid]


_add(
    "bug_shared_index_overflow",
    bug_shared_index_overflow,
    1,
    64,
    lambda: (_rng(709).random(64, dtype=np.float32), np.zeros(64, np.float32)),
)


@cuda.jit
def bug_shared_negative_index(x, out):
    sh = cuda.shared.array(128, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    sh[tid] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    if i < x.size:
        out[i] = sh[tid] - sh[tid - 1]


_add(
    "bug_shared_negative_index",
    bug_shared_negative_index,
    _cdiv(300, 128),
    128,
    lambda: (_rng(710).random(300, dtype=np.float32), np.zeros(300, np.float32)),
)
