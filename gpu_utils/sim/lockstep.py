"""Lockstep: the course's simulator running every thread of a chunk of blocks at once, each
variable a NumPy array with one element per thread (issue 29's speed), for launches where that
gives exactly what the thread-by-thread engine (:mod:`gpu_utils.sim.engine`) gives.

The engine runs the blocks one after another, and a block's threads one after another between
barriers. Running them in lockstep, statement by statement, computes the same values whenever no
thread reads or writes an element that another thread wrote, or writes one another thread read,
between two barriers (a race-free kernel), and no element of an argument is written by one block
and touched by another; atomics are exact when each element receives them in the engine's order
(or when they are integer updates whose order cannot matter). So a lockstep launch records the
accesses that could conflict, checks them at each barrier and at the end of each chunk of
blocks, and gives up at the first doubt: a possible race, an unsupported construct, an index out of bounds, a
divide by zero, an exception of any kind, a block that runs too long, a barrier not every thread
reaches. Giving up (:class:`Fallback`) restores every array argument to its state before the
launch and the engine runs the launch thread by thread as before, with its own messages: an
error, a race's outcome and a hang are always the thread-by-thread engine's. The lockstep run is
never observed (``gu.trace`` and the race detector use the thread-by-thread engine).

Values keep the exact scalar types of the thread-by-thread engine: a thread's ``i`` is a Python
``int``, ``x[i]`` a NumPy scalar, ``0.5`` a Python ``float``, and NumPy's promotion rules differ
between them (NEP 50: ``np.float32 + int`` is float32, an int64 array + a float32 array is
float64). Each varying value carries, per group of threads, the scalar type each thread would
hold, and each operation is computed in the dtype that reproduces the scalar result, found once
per (operation, types) by running the scalar operation on probe values (:func:`_plan`).

Chunks of :data:`CHUNK_LANES` threads (whole blocks) run one after another. Used for launches of
at least :data:`MIN_THREADS` threads (``GPU_COURSE_SIM_LOCKSTEP``: ``auto``, the
default; ``always``, every launch, for the differential test; ``never``).
"""

from __future__ import annotations

import ast
import builtins
import math
import operator
import os
import time
import types
import warnings

import numpy as np

from . import rewrite

ENV = "GPU_COURSE_SIM_LOCKSTEP"
#: A launch with fewer threads runs thread by thread (NumPy's per-call cost would dominate).
MIN_THREADS = 2048
#: A chunk running longer than this (or a quarter of the launch's loop limit) in lockstep goes
#: back to the thread-by-thread engine, whose own watchdog, given what is left of the limit, then
#: stops an endless loop: within the limit in all.
CHUNK_BUDGET_S = 5.0

#: What each launch did, for tests and benchmarks: "lockstep" or the reason it fell back.
LAST: dict = {"outcome": None}


class Fallback(Exception):
    """The lockstep run cannot vouch for its result: the engine runs the launch thread by thread."""


class Unsupported(Fallback):
    """A construct the lockstep interpreter does not run (remembered per kernel)."""


def mode(environ=None) -> str:
    value = (os.environ if environ is None else environ).get(ENV, "").strip().lower()
    return value if value in ("always", "never") else "auto"


# --- scalar types -------------------------------------------------------------------------------

INT, FLOAT, BOOL = "int", "float", "bool"  # Python scalars; NumPy's are their np.dtype
_STORAGE = {INT: np.dtype(np.int64), FLOAT: np.dtype(np.float64), BOOL: np.dtype(np.bool_)}
_INT_LIMIT = 2**53  # Python ints beyond this would not fit the int64 storage exactly


def storage(tag) -> np.dtype:
    return _STORAGE[tag] if isinstance(tag, str) else tag


def tag_of(value):
    kind = type(value)
    if kind is bool:
        return BOOL
    if kind is int:
        if -_INT_LIMIT < value < _INT_LIMIT:
            return INT
        raise Fallback("a Python int too large for int64 storage")
    if kind is float:
        return FLOAT
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return value.dtype
    raise Unsupported(f"a value of type {kind.__name__}")


def scalar(tag, value):
    """The scalar a thread holds, from a stored element."""
    if tag is INT:
        return int(value)
    if tag is FLOAT:
        return float(value)
    if tag is BOOL:
        return bool(value)
    return tag.type(value)


_PROBES = {
    # 2**24 + 1 and 16777216.0 tell a float32 comparison from a float64 one; 0.1 and 1 / 3 a
    # float32 rounding from a float64 one; 2**31 - 1 and -(2**31) the int32 range
    INT: [0, 1, 2, 3, -1, -7, 13, 255, 1000003, 2**24 + 1, -(2**31), 2**31 - 1, 2**33 + 5],
    FLOAT: [
        *(0.0, -0.0, 0.5, 1.0, -2.25, 0.1, 1 / 3, 3.0, 1e-3, 1e10, -7.5, 16777216.0, 16777217.0),
        *(1e300, math.nan, math.inf),
    ],
    BOOL: [False, True],
}


def _probes(tag) -> list:
    if isinstance(tag, str):
        return _PROBES[tag]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if tag.kind == "f":
            values = np.array(_PROBES[FLOAT] + [3.4e38, 1e-40]).astype(tag)
        elif tag.kind == "b":
            values = np.array(_PROBES[BOOL], dtype=tag)
        else:
            values = np.array([v % 2**64 for v in _PROBES[INT]], dtype=np.uint64).astype(tag)
    return [tag.type(v) for v in values]


def _same(expected: np.ndarray, got: np.ndarray) -> bool:
    if expected.dtype.kind == "f":
        both_nan = np.isnan(expected) & np.isnan(got)
        equal = (expected == got) & (np.signbit(expected) == np.signbit(got))
        return bool(np.all(both_nan | equal))
    return bool(np.array_equal(expected, got))


_PLANS: dict = {}


def _plan(op, tags: tuple):
    """(dtype to compute in, result tag) for ``op`` on scalars of ``tags``, or None."""
    key = (op, tags)
    if key in _PLANS:
        return _PLANS[key]
    plan = None
    columns, results = [[] for _ in tags], []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        grids = [[]]
        for tag in tags:
            grids = [[*g, v] for g in grids for v in _probes(tag)]
        for values in grids:
            try:
                result = op(*values)
                result_tag = tag_of(result)
            except Exception:
                continue  # a domain the runtime guards (zero divisors, overflow) keeps out
            for column, value in zip(columns, values, strict=True):
                column.append(value)
            results.append((result, result_tag))
        result_tags = {t for _, t in results}
        if len(result_tags) == 1:
            (result_tag,) = result_tags
            expected = np.array([r for r, _ in results], dtype=storage(result_tag))
            candidates = [storage(result_tag), *(storage(t) for t in tags)]
            candidates += [np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int64)]
            for dtype in dict.fromkeys(candidates):
                try:
                    arrays = [
                        np.array(c, dtype=storage(t)).astype(dtype)
                        for c, t in zip(columns, tags, strict=True)
                    ]
                    got = np.asarray(op(*arrays))
                    if got.shape != expected.shape:
                        continue
                    if _same(expected, got.astype(storage(result_tag))):
                        plan = (dtype, result_tag)
                        break
                except Exception:
                    continue
    _PLANS[key] = plan
    return plan


# --- varying values -----------------------------------------------------------------------------


class V:
    """A value that differs between the threads of a block: groups of (tag, values, mask), the
    mask None for every thread; the masks are disjoint."""

    __slots__ = ("groups",)

    def __init__(self, groups):
        self.groups = groups


def _and(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def _pick(values, live):
    """The elements of the threads in ``live`` (None: all)."""
    return values if live is None else values[live]


def _or(a, b):
    if a is None or b is None:
        return None
    return a | b


def _norm(mask):
    """None (every thread of the block) for a mask that holds every thread."""
    return None if mask is not None and mask.all() else mask


def _groups(value, lanes: int):
    if isinstance(value, V):
        return value.groups
    tag = tag_of(value)
    return [(tag, np.asarray(value, dtype=storage(tag)), None)]


def _merge(groups, lanes: int):
    """Groups of one tag joined (masks disjoint)."""
    by_tag: dict = {}
    for tag, values, mask in groups:
        if mask is not None and not mask.any():
            continue
        if tag in by_tag:
            old_values, old_mask = by_tag[tag]
            if old_mask is None or mask is None:
                raise Fallback("overlapping groups")
            values = np.where(
                mask, np.broadcast_to(values, (lanes,)), np.broadcast_to(old_values, (lanes,))
            )
            by_tag[tag] = (values, old_mask | mask)
        else:
            by_tag[tag] = (values, mask)
    if not by_tag:
        return None
    return V(
        [(tag, values, mask) for tag, values, mask in ((t, v, m) for t, (v, m) in by_tag.items())]
    )


def _restrict(groups, mask):
    out = []
    for tag, values, m in groups:
        m = _and(m, mask)
        if m is not None and not m.any():
            continue
        out.append((tag, values, m))
    return out


def _select(cond_mask, when_true, when_false, lanes):
    """Per thread: ``when_true`` where ``cond_mask``, else ``when_false`` (either may be absent
    for threads that never take it: pass None)."""
    groups = []
    if when_true is not None:
        groups += _restrict(_groups(when_true, lanes), cond_mask)
    if when_false is not None:
        groups += _restrict(_groups(when_false, lanes), ~cond_mask)
    merged = _merge(groups, lanes)
    if merged is None:
        raise Fallback("a value no thread holds")
    return merged


class _Marker:
    """cuda, cuda.threadIdx, cuda.shared, math... as the interpreter sees them."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class Shared:
    """A shared array: one per block of the chunk (the first axis), with which elements some
    thread has written (``complete`` once all have been)."""

    __slots__ = ("array", "complete", "shape", "written")

    def __init__(self, blocks, shape, dtype):
        self.shape = shape
        self.array = np.zeros((blocks, *shape), dtype)
        self.written = np.zeros(self.array.shape, bool)
        self.complete = False


class Local:
    """A local array: one row per thread."""

    __slots__ = ("array", "shape", "written")

    def __init__(self, lanes, shape, dtype):
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if lanes * int(np.prod(shape)) > 1 << 24:
            raise Fallback("local arrays too large to hold for every thread at once")
        self.shape = shape
        self.array = np.zeros((lanes, *shape), dtype)
        self.written = np.zeros(self.array.shape, bool)


_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}
_COMPARES = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}
_DIVISIONS = (operator.truediv, operator.floordiv, operator.mod)
_MATH_SCALARS = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan, "tau": math.tau}
_UFUNCS = {
    "add": np.add,
    "sub": np.subtract,
    "and_": np.bitwise_and,
    "or_": np.bitwise_or,
    "xor": np.bitwise_xor,
    "max": np.maximum,
    "min": np.minimum,
}
_ATOMICS = ("add", "sub", "max", "min", "and_", "or_", "xor", "exch", "inc", "dec")
_STRUCTURE = (
    ast.Module,
    ast.FunctionDef,
    ast.arguments,
    ast.arg,
    ast.Assign,
    ast.AugAssign,
    ast.If,
    ast.For,
    ast.While,
    ast.Break,
    ast.Continue,
    ast.Return,
    ast.Pass,
    ast.Expr,
    ast.Name,
    ast.Load,
    ast.Store,
    ast.Constant,
    ast.Attribute,
    ast.Subscript,
    ast.Tuple,
    ast.BinOp,
    ast.UnaryOp,
    ast.Not,
    ast.Compare,
    ast.BoolOp,
    ast.And,
    ast.Or,
    ast.IfExp,
    ast.Call,
    *_BINOPS,
    *_COMPARES,
    *_UNARY,
)


def _static_check(tree: ast.FunctionDef) -> None:
    """Refuse, before anything runs, what the interpreter never runs."""
    if tree.args.vararg or tree.args.kwarg or tree.args.kwonlyargs or tree.args.defaults:
        raise Unsupported("arguments other than plain positional ones")
    for node in ast.walk(tree):
        if not isinstance(node, _STRUCTURE):
            raise Unsupported(type(node).__name__)
        if isinstance(node, (ast.For, ast.While)) and node.orelse:
            raise Unsupported("a loop with else")
        if isinstance(node, ast.Return) and node.value is not None:
            raise Unsupported("a kernel returning a value")
        if isinstance(node, ast.Call) and node.keywords:
            raise Unsupported("a call with keywords")
        if isinstance(node, ast.FunctionDef) and node is not tree:
            raise Unsupported("a nested function")


class _Loop:
    """The threads that left a loop through ``break`` (a ``continue`` only ends an iteration)."""

    __slots__ = ("broke",)

    def __init__(self, lanes):
        self.broke = np.zeros(lanes, bool)


def _written_names(tree: ast.FunctionDef, cuda_names) -> set[str]:
    """The names stored into (``a[i] = ...``, ``a[i] += ...``) or updated atomically."""
    names = set()
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign):
            targets = [node.target]
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Subscript) and isinstance(part.ctx, ast.Store):
                    if not isinstance(part.value, ast.Name):
                        raise Unsupported("a store into an expression")
                    names.add(part.value.id)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "atomic"
            and node.args
        ):
            if not isinstance(node.args[0], ast.Name):
                raise Unsupported("an atomic on an expression")
            names.add(node.args[0].id)
    return names


#: The most threads of one lockstep chunk (blocks run in chunks of whole blocks, one chunk after
#: another).
CHUNK_LANES = 1 << 18


class Block:
    """One lockstep launch: the interpreter over the kernel's source, a chunk of whole blocks at
    a time, every thread of the chunk one element of each value."""

    def __init__(self, function, grid_dim, block_dim, args, cuda_names, namespace):
        self.function = function
        self.grid_dim, self.block_dim = grid_dim, block_dim
        bx, by, bz = block_dim
        self.threads = bx * by * bz
        self.blocks = grid_dim[0] * grid_dim[1] * grid_dim[2]
        self.chunk_blocks = max(1, CHUNK_LANES // self.threads)
        self.args = args
        self.cuda_names = cuda_names
        self.namespace = namespace
        self.tree, _ = rewrite._source_tree(function)
        _static_check(self.tree)
        self.params = [a.arg for a in (*self.tree.args.posonlyargs, *self.tree.args.args)]
        if len(self.params) != len(args):
            raise Unsupported("a different number of arguments")
        written = _written_names(self.tree, cuda_names)
        self.writable = {
            id(a)
            for name, a in zip(self.params, args, strict=True)
            if isinstance(a, np.ndarray) and name in written
        }
        self.dispatch = {
            ast.Assign: self._assign,
            ast.AugAssign: self._augassign,
            ast.If: self._if,
            ast.For: self._for,
            ast.While: self._while,
            ast.Break: self._break,
            ast.Continue: self._continue,
            ast.Return: self._return,
            ast.Pass: lambda node, mask: mask,
            ast.Expr: self._expr,
        }
        self.atomic_seq = 0
        self.budget = CHUNK_BUDGET_S
        self.limit = 4 * CHUNK_BUDGET_S

    # --- running ---------------------------------------------------------------------------------

    def run(self) -> None:
        """Chunk after chunk of whole blocks: the first of about MIN_THREADS threads, each next
        one twice the last while the last took under a quarter of the budget (half the last
        when it took over half), at most CHUNK_LANES threads. A chunk's time is mostly a fixed
        cost per statement, so doubling it costs far less than twice."""
        gx, gy, _ = self.grid_dim
        bx, by, _ = self.block_dim
        threads = self.threads
        first, count = 0, max(1, MIN_THREADS // threads)
        first_budget = self.budget
        while first < self.blocks:
            count = min(count, self.blocks - first)
            started = time.monotonic()
            self._run_chunk(first, count, gx, gy, bx, by)
            elapsed = time.monotonic() - started
            first += count
            # a later chunk may take longer than the first's budget (load, a bigger chunk), up
            # to half the launch's limit: an endless loop is still handed over within it
            self.budget = min(self.limit / 2, max(first_budget, 4 * elapsed))
            if elapsed < self.budget / 4:
                count = min(2 * count, self.chunk_blocks)
            elif elapsed > self.budget / 2:
                count = max(1, count // 2)

    def _run_chunk(self, first, count, gx, gy, bx, by) -> None:
        threads = self.threads
        self.lanes = lanes = count * threads
        ids = np.arange(lanes)
        self.lane_ids = ids
        t = ids % threads
        self.thread_linear = t
        self.block_of_lane = ids // threads  # within the chunk
        block = first + self.block_of_lane
        self.tid = (t % bx, (t // bx) % by, t // (bx * by))
        self.bid = (block % gx, (block // gx) % gy, block // (gx * gy))
        self.chunk_count = count
        self.started = time.monotonic()
        self.shared: dict = {}
        self.positions: dict = {}
        self.records: dict = {}  # id(array) -> (array, [(flat, lanes, kind, order)])
        self.chunk_records: dict = {}  # the same, kept over the chunk for written arguments
        self.env: dict = dict(zip(self.params, self.args, strict=True))
        self.defined: dict = {}  # name -> mask of threads that hold it (absent: all)
        self.returned = np.zeros(lanes, bool)
        self.loops: list[_Loop] = []
        self._block(self.tree.body, None)
        self._end_phase()
        self._end_chunk()

    def _block(self, body, mask):
        for node in body:
            if mask is not None and not mask.any():
                return mask
            handler = self.dispatch.get(type(node))
            if handler is None:
                raise Unsupported(type(node).__name__)
            mask = handler(node, mask)
        return mask

    def _time(self) -> None:
        if time.monotonic() - self.started > self.budget:
            raise Fallback("a block ran longer than the lockstep budget")

    # --- statements ------------------------------------------------------------------------------

    def _assign(self, node, mask):
        value = self._eval(node.value, mask)
        for target in node.targets:
            self._store(target, value, mask)
        return mask

    def _augassign(self, node, mask):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise Unsupported("an augmented operator")
        target = node.target
        if isinstance(target, ast.Name):
            new = self._binop(op, self._name(target.id, mask), self._eval(node.value, mask), mask)
            self._bind(target.id, new, mask)
        elif isinstance(target, ast.Subscript):
            array, index = self._subscript_place(target, mask)
            old = self._load(array, index, mask)
            new = self._binop(op, old, self._eval(node.value, mask), mask)
            self._write(array, index, new, mask)
        else:
            raise Unsupported("an augmented assignment to an attribute")
        return mask

    def _if(self, node, mask):
        cond = self._eval(node.test, mask)
        if not isinstance(cond, V):
            return self._block(node.body if cond else node.orelse, mask)
        taken = self._truth(cond, mask)
        if_mask = _and(mask, taken)
        else_mask = _and(mask, ~taken)
        out_if = self._block(node.body, if_mask) if if_mask.any() else if_mask
        out_else = self._block(node.orelse, else_mask) if else_mask.any() else else_mask
        return _norm(_or(out_if, out_else))

    def _loop_exit(self, entered):
        """The threads that go on after a loop: those that entered it and did not return."""
        return _norm(_and(entered, ~self.returned))

    def _for(self, node, mask):
        call = node.iter
        if isinstance(call, ast.Tuple) and isinstance(node.target, ast.Name):
            items = self._eval(call, mask)
            if any(isinstance(item, (V, tuple)) for item in items):
                raise Unsupported("a for loop over per-thread values")
            return self._for_values(node, items, mask)
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and self._lookup(call.func.id) is range
            and 1 <= len(call.args) <= 3
            and isinstance(node.target, ast.Name)
        ):
            raise Unsupported("a for loop over something other than range()")
        bounds = [self._eval(a, mask) for a in call.args]
        if len(bounds) == 1:
            bounds = [0, bounds[0], 1]
        elif len(bounds) == 2:
            bounds.append(1)
        start, stop, step = bounds
        if not any(isinstance(b, V) for b in bounds):  # the same trip count for every thread
            return self._for_values(node, range(start, stop, step), mask)
        name = node.target.id
        loop = _Loop(self.lanes)
        self.loops.append(loop)
        try:
            if isinstance(step, V) or not isinstance(step, int) or step == 0:
                raise Unsupported("a per-thread range step")
            counter = start
            for b in (start, stop):
                for tag, _, _ in _groups(b, self.lanes):
                    if tag is not INT:
                        raise Unsupported("a per-thread range bound that is not a Python int")
            cmp = operator.lt if step > 0 else operator.gt
            while True:
                self._time()
                going = self._truth(self._binop(cmp, counter, stop, mask), mask)
                active = self._iteration_mask(loop, _and(mask, going))
                if not active.any():
                    break
                self._bind(name, counter, active)
                self._block(node.body, active)
                # every thread's counter advances; those that left the loop stay out of it
                counter = self._binop(operator.add, counter, step, active)
        finally:
            self.loops.pop()
        return self._loop_exit(mask)

    def _for_values(self, node, values, mask):
        name = node.target.id
        loop = _Loop(self.lanes)
        self.loops.append(loop)
        try:
            for value in values:
                self._time()
                active = self._iteration_mask(loop, mask)
                if active is not None and not active.any():
                    break
                self._bind(name, value, active)
                self._block(node.body, active)
        finally:
            self.loops.pop()
        return self._loop_exit(mask)

    def _iteration_mask(self, loop: _Loop, mask):
        stopped = loop.broke | self.returned
        if mask is None:
            return None if not stopped.any() else ~stopped
        return mask & ~stopped

    def _while(self, node, mask):
        loop = _Loop(self.lanes)
        self.loops.append(loop)
        try:
            while True:
                self._time()
                active = self._iteration_mask(loop, mask)
                if active is not None and not active.any():
                    break
                cond = self._eval(node.test, active)
                if not isinstance(cond, V):
                    if not cond:
                        break
                else:
                    active = _and(active, self._truth(cond, active))
                    if not active.any():
                        break
                self._block(node.body, active)
        finally:
            self.loops.pop()
        return self._loop_exit(mask)

    def _break(self, node, mask):
        if not self.loops:
            raise Unsupported("break outside a loop")
        loop = self.loops[-1]
        if mask is None:
            loop.broke[:] = True
        else:
            loop.broke |= mask
        return np.zeros(self.lanes, bool)

    def _continue(self, node, mask):
        if not self.loops:
            raise Unsupported("continue outside a loop")
        return np.zeros(self.lanes, bool)

    def _return(self, node, mask):
        if mask is None:
            self.returned[:] = True
        else:
            self.returned |= mask
        return np.zeros(self.lanes, bool)

    def _expr(self, node, mask):
        value = node.value
        if isinstance(value, ast.Constant):
            return mask  # a docstring
        if not isinstance(value, ast.Call):
            self._eval(value, mask)
            return mask
        func = value.func
        if isinstance(func, ast.Attribute) and self._is_cuda(func.value):
            if func.attr == "syncthreads" and not value.args:
                self._barrier(mask)
                return mask
            if func.attr in ("threadfence", "threadfence_block", "threadfence_system"):
                return mask
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Attribute)
            and func.value.attr == "atomic"
            and self._is_cuda(func.value.value)
        ):
            self._atomic(func.attr, value.args, mask, used=False)
            return mask
        raise Unsupported("a call whose value is thrown away")

    def _barrier(self, mask):
        if mask is not None or self.returned.any():
            raise Fallback("a barrier not every thread of the block reaches")
        self._end_phase()

    # --- names -----------------------------------------------------------------------------------

    def _is_cuda(self, node) -> bool:
        return isinstance(node, ast.Name) and node.id in self.cuda_names and node.id not in self.env

    def _lookup(self, name):
        if name in self.env:
            return self.env[name]
        if name in self.namespace:
            return self.namespace[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise Fallback(f"the name {name} is not defined")

    def _name(self, name, mask):
        if name in self.env:
            defined = self.defined.get(name)
            if defined is not None:
                needed = ~self.returned if mask is None else mask
                if (needed & ~defined).any():
                    raise Fallback(f"{name} is read by a thread that never set it")
            return self.env[name]
        if name in self.cuda_names:
            return _Marker("cuda")
        value = self._lookup(name)
        if value is math:
            return _Marker("math")
        return _convert_global(value)

    def _bind(self, name, value, mask):
        if mask is None:
            self.env[name] = value
            self.defined.pop(name, None)
            return
        if isinstance(value, (Shared, Local)) and self.env.get(name, value) is value:
            fresh = name not in self.env  # else the same array: more threads hold it
            self.env[name] = value
            if fresh:
                self.defined[name] = mask.copy()
            elif name in self.defined:
                self._define(name, mask)
            return
        if name not in self.env:
            if isinstance(value, (tuple, list, np.ndarray, Shared, Local)):
                raise Unsupported("an array or tuple bound by some threads only")
            self.env[name] = value if not isinstance(value, V) else V(_restrict(value.groups, mask))
            self.defined[name] = mask.copy()
            return
        old = self.env[name]
        if (
            type(old) is type(value)
            and isinstance(old, (int, float, bool, np.generic))
            and old == value  # NaN never keeps; -0.0 and 0.0 differ in their sign
            and math.copysign(1, old) == math.copysign(1, value)
        ):
            self._define(name, mask)
            return
        if isinstance(old, (tuple, list, np.ndarray, Shared, Local, _Marker)) or isinstance(
            value, (tuple, list, np.ndarray, Shared, Local, _Marker)
        ):
            raise Unsupported("an array or tuple reassigned by some threads only")
        self.env[name] = _select(mask, value, old, self.lanes)
        self._define(name, mask)

    def _define(self, name, mask):
        defined = self.defined.get(name)
        if defined is not None:
            defined = defined | mask
            if defined.all():
                self.defined.pop(name)
            else:
                self.defined[name] = defined

    def _store(self, target, value, mask):
        if isinstance(target, ast.Name):
            self._bind(target.id, value, mask)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, (tuple, list)) or len(value) != len(target.elts):
                raise Unsupported("unpacking something other than a tuple of the same length")
            for element, item in zip(target.elts, value, strict=True):
                self._store(element, item, mask)
        elif isinstance(target, ast.Subscript):
            array, index = self._subscript_place(target, mask)
            self._write(array, index, value, mask)
        else:
            raise Unsupported("an assignment to an attribute")

    # --- expressions -----------------------------------------------------------------------------

    def _eval(self, node, mask):
        kind = type(node)
        if kind is ast.Name:
            return self._name(node.id, mask)
        if kind is ast.Constant:
            value = node.value
            if type(value) in (int, float, bool):
                return value
            raise Unsupported("a constant that is not a number")
        if kind is ast.BinOp:
            op = _BINOPS[type(node.op)]
            return self._binop(op, self._eval(node.left, mask), self._eval(node.right, mask), mask)
        if kind is ast.Subscript:
            base = self._eval(node.value, mask)
            if isinstance(base, tuple):
                index = self._eval(node.slice, mask)
                if isinstance(index, V):
                    raise Unsupported("a tuple indexed per thread")
                return base[index]
            index = self._index(node.slice, mask)
            return self._load(base, index, mask)
        if kind is ast.Attribute:
            return self._attribute(node, mask)
        if kind is ast.Compare:
            return self._compare(node, mask)
        if kind is ast.Call:
            return self._call(node, mask)
        if kind is ast.UnaryOp:
            operand = self._eval(node.operand, mask)
            if isinstance(node.op, ast.Not):
                if not isinstance(operand, V):
                    return not operand
                return V([(BOOL, ~self._truth(operand, None, check=False), None)])
            return self._unary(_UNARY[type(node.op)], operand, mask)
        if kind is ast.IfExp:
            cond = self._eval(node.test, mask)
            if not isinstance(cond, V):
                return self._eval(node.body if cond else node.orelse, mask)
            taken = self._truth(cond, mask)
            yes, no = _and(mask, taken), _and(mask, ~taken)
            body = self._eval(node.body, yes) if yes.any() else None
            orelse = self._eval(node.orelse, no) if no.any() else None
            return _select(taken, body, orelse, self.lanes)
        if kind is ast.BoolOp:
            return self._boolop(node, mask)
        if kind is ast.Tuple:
            return tuple(self._eval(e, mask) for e in node.elts)
        raise Unsupported(kind.__name__)

    def _compare(self, node, mask):
        """``a < b < c``: ``a < b and b < c`` with ``b`` evaluated once, by the threads that
        reach it."""
        left = self._eval(node.left, mask)
        value = None
        for position, (op_node, right_node) in enumerate(
            zip(node.ops, node.comparators, strict=True)
        ):
            op = _COMPARES.get(type(op_node))
            if op is None:
                raise Unsupported("a comparison other than < <= > >= == !=")
            right = self._eval(right_node, mask)
            result = self._binop(op, left, right, mask)
            if position == 0:
                value = result
            elif not isinstance(value, V):
                if not value:
                    return value
                value = result
            else:
                truth = self._truth(value, mask)
                value = _select(truth, result, value, self.lanes)
            if not isinstance(value, V) and not value:
                return value
            if isinstance(value, V):
                mask = _and(mask, self._truth(value, mask))
                if not mask.any():
                    return value
            left = right
        return value

    def _boolop(self, node, mask):
        is_and = isinstance(node.op, ast.And)
        value = self._eval(node.values[0], mask)
        for operand in node.values[1:]:
            if not isinstance(value, V):
                if bool(value) != is_and:
                    return value  # decided for every thread
                value = self._eval(operand, mask)
                continue
            truth = self._truth(value, mask)
            go_on = truth if is_and else ~truth
            going = _and(mask, go_on)
            nxt = self._eval(operand, going) if going.any() else None
            value = _select(go_on, nxt, value, self.lanes)
        return value

    def _truth(self, value, mask, check=True):
        """A bool per thread: ``bool(value)`` (garbage where a thread holds no value)."""
        if not isinstance(value, V):
            return np.full(self.lanes, bool(value))
        out = np.zeros(self.lanes, bool)
        for _, values, m in value.groups:
            truth = np.broadcast_to(values != 0, (self.lanes,))
            out = np.where(m, truth, out) if m is not None else truth.copy()
        return out

    def _active(self, mask):
        return ~self.returned if mask is None else mask

    def _binop(self, op, left, right, mask):
        if not isinstance(left, V) and not isinstance(right, V):
            if isinstance(left, (tuple, list, _Marker)) or isinstance(
                right, (tuple, list, _Marker)
            ):
                raise Unsupported("an operation on a tuple or a module")
            return op(left, right)  # every thread computes the same: exactly as one would
        lanes = self.lanes
        groups = []
        for ltag, lvals, lmask in _groups(left, lanes):
            for rtag, rvals, rmask in _groups(right, lanes):
                m = _and(lmask, rmask)
                live = _and(mask, m)  # None: every thread (mask None: none has left)
                if live is not None and not live.any():
                    continue
                plan = _plan(op, (ltag, rtag))
                if plan is None:
                    raise Unsupported(f"{op.__name__} on {ltag} and {rtag}")
                dtype, result_tag = plan
                self._guard(op, ltag, lvals, rtag, rvals, dtype, live)
                with np.errstate(all="ignore"):
                    result = op(
                        np.asarray(lvals).astype(dtype, copy=False),
                        np.asarray(rvals).astype(dtype, copy=False),
                    )
                result = np.broadcast_to(
                    np.asarray(result).astype(storage(result_tag), copy=False), (lanes,)
                )
                if result_tag is INT:
                    held = _pick(result, live)
                    if held.max() >= _INT_LIMIT or held.min() <= -_INT_LIMIT:
                        raise Fallback("a Python int past int64 storage")
                groups.append((result_tag, result, m))
        merged = _merge(groups, lanes)
        if merged is None:
            raise Fallback("an operation no thread performs")
        return merged

    def _guard(self, op, ltag, lvals, rtag, rvals, dtype, live):
        """What would raise in a thread (or differ from its scalar result) sends the launch back."""
        lanes = self.lanes

        def held(values):
            return _pick(np.broadcast_to(values, (lanes,)), live)

        if op in _DIVISIONS and isinstance(rtag, str) and np.any(held(rvals) == 0):
            raise Fallback("a division by zero")
        if op is operator.pow and (ltag is INT or rtag is INT):
            raise Unsupported("** on Python ints")
        if op is operator.lshift and ltag is INT:  # a Python int grows; NumPy's wrap alike
            left, right = held(lvals), held(rvals)
            if np.any(right < 0) or np.any(right > 30) or np.any(np.abs(left) >= 2**31):
                raise Fallback("a shift of a Python int past the checked range")
        if (
            op is operator.mul
            and ltag is INT
            and rtag is INT
            and max(np.abs(held(lvals)).max(), np.abs(held(rvals)).max()) >= 2**26
        ):
            raise Fallback("a product of large Python ints")
        for tag, vals in ((ltag, lvals), (rtag, rvals)):
            if tag is INT and dtype.kind in "iu" and dtype != np.int64:
                info = np.iinfo(dtype)
                values = held(vals)
                if values.min() < info.min or values.max() > info.max:
                    raise Fallback("a Python int outside a NumPy integer type")

    def _unary(self, op, operand, mask):
        if not isinstance(operand, V):
            return op(operand)
        groups = []
        for tag, values, m in operand.groups:
            plan = _plan(op, (tag,))
            if plan is None:
                raise Unsupported(f"{op.__name__} on {tag}")
            dtype, result_tag = plan
            with np.errstate(all="ignore"):
                result = np.asarray(op(np.asarray(values).astype(dtype))).astype(
                    storage(result_tag)
                )
            groups.append((result_tag, np.broadcast_to(result, (self.lanes,)), m))
        return _merge(groups, self.lanes)

    def _attribute(self, node, mask):
        base = self._eval(node.value, mask)
        attr = node.attr
        if isinstance(base, _Marker):
            name = base.name
            if name == "cuda":
                if attr in (
                    "threadIdx",
                    "blockIdx",
                    "blockDim",
                    "gridDim",
                    "shared",
                    "local",
                    "atomic",
                ):
                    return _Marker(attr)
                if attr == "warpsize":
                    return 32
                if attr == "laneid":
                    return V([(INT, self.thread_linear % 32, None)])
                raise Unsupported(f"cuda.{attr}")
            if name in ("threadIdx", "blockIdx", "blockDim", "gridDim") and attr in "xyz":
                axis = "xyz".index(attr)
                if name == "threadIdx":
                    return V([(INT, self.tid[axis], None)])
                if name == "blockIdx":
                    return V([(INT, self.bid[axis], None)])
                if name == "blockDim":
                    return self.block_dim[axis]
                return self.grid_dim[axis]
            if name == "math":
                if attr in _MATH_SCALARS:
                    return _MATH_SCALARS[attr]
                return _Marker("math." + attr)
            raise Unsupported(f"{name}.{attr}")
        if isinstance(base, (np.ndarray, Shared, Local)):
            shape = base.shape
            if attr == "shape":
                return tuple(int(s) for s in shape)
            if attr == "size":
                return int(np.prod(shape))
            if attr == "ndim":
                return len(shape)
        raise Unsupported(f"the attribute {attr}")

    def _call(self, node, mask):
        func = node.func
        if isinstance(func, ast.Attribute):
            owner = self._eval(func.value, mask)
            if isinstance(owner, _Marker):
                args = node.args
                if owner.name == "cuda" and func.attr in ("grid", "gridsize"):
                    (n,) = (self._eval(a, mask) for a in args)
                    if n not in (1, 2, 3):
                        raise Fallback("cuda.grid of an odd dimension")
                    if func.attr == "gridsize":
                        sizes = tuple(
                            g * b for g, b in zip(self.grid_dim, self.block_dim, strict=True)
                        )
                        return sizes[0] if n == 1 else sizes[:n]
                    coords = tuple(
                        V([(INT, self.bid[k] * self.block_dim[k] + self.tid[k], None)])
                        for k in range(n)
                    )
                    return coords[0] if n == 1 else coords
                if owner.name == "shared" and func.attr == "array":
                    key = id(node)
                    if key not in self.shared:
                        shape, dtype = (self._eval(a, mask) for a in args)
                        self.shared[key] = Shared(self.chunk_count, _shape(shape), _dtype(dtype))
                    return self.shared[key]
                if owner.name == "local" and func.attr == "array":
                    shape, dtype = (self._eval(a, mask) for a in args)
                    return Local(self.lanes, _shape(shape), _dtype(dtype))
                if owner.name == "atomic":
                    return self._atomic(func.attr, args, mask, used=True)
                if owner.name.startswith("math") and owner.name == "math":
                    return self._math(getattr(math, func.attr, None), node.args, mask)
                raise Unsupported(f"{owner.name}.{func.attr}()")
            raise Unsupported("a method call")
        if not isinstance(func, ast.Name):
            raise Unsupported("a computed call")
        target = self._name(func.id, mask)
        args = [self._eval(a, mask) for a in node.args]
        if target is abs and len(args) == 1:
            return self._map(abs, args[0], mask)
        if target in (min, max) and len(args) == 2:
            a, b = args
            if not isinstance(a, V) and not isinstance(b, V):
                return target(a, b)
            # min(a, b) is a unless b < a; max(a, b) is a unless b > a
            cond = self._binop(operator.lt if target is min else operator.gt, b, a, mask)
            taken = self._truth(cond, mask)
            return _select(taken, b, a, self.lanes)
        if target in (int, float, bool) and len(args) == 1:
            return self._map(target, args[0], mask)
        if target is len and len(args) == 1 and isinstance(args[0], (np.ndarray, Shared, Local)):
            base = args[0]
            return int(base.shape[0])
        if isinstance(target, type) and issubclass(target, np.generic) and len(args) == 1:
            return self._map(target, args[0], mask)
        raise Unsupported(f"a call of {func.id}")

    def _math(self, function, args, mask):
        if function is None or not callable(function):
            raise Unsupported("a math function")
        values = [self._eval(a, mask) for a in args]
        if not any(isinstance(v, V) for v in values):
            return function(*values)
        if len(values) == 1:
            return self._map(function, values[0], mask)
        raise Unsupported("a math function of several per-thread arguments")

    def _map(self, function, value, mask):
        """``function`` applied thread by thread in Python, on the active threads only."""
        if not isinstance(value, V):
            return function(value)
        active = self._active(mask)
        out_tag, out = None, None
        for tag, values, m in value.groups:
            live = np.flatnonzero(_and(active, m))
            if live.size == 0:
                continue
            picked = np.broadcast_to(values, (self.lanes,))[live]
            results = [function(scalar(tag, v)) for v in picked.tolist()]
            tags = {tag_of(r) for r in results}
            if len(tags) != 1:
                raise Fallback("results of different types")
            (rtag,) = tags
            if out_tag is not None and rtag != out_tag:
                raise Fallback("results of different types")
            if out is None:
                out = np.zeros(self.lanes, storage(rtag))
            out_tag = rtag
            out[live] = np.array(results, dtype=storage(rtag))
        if out is None:
            raise Fallback("a function no thread calls")
        defined = active
        return V([(out_tag, out, None if defined.all() else defined.copy())])

    # --- memory ----------------------------------------------------------------------------------

    def _subscript_place(self, node, mask):
        base = self._eval(node.value, mask)
        if not isinstance(base, (np.ndarray, Shared, Local)):
            raise Unsupported("an assignment into something other than an array")
        return base, self._index(node.slice, mask)

    def _index(self, node, mask):
        if isinstance(node, ast.Tuple):
            parts = [self._eval(e, mask) for e in node.elts]
        else:
            value = self._eval(node, mask)
            parts = list(value) if isinstance(value, tuple) else [value]
        for part in parts:
            for tag, _, _ in _groups(part, self.lanes):
                if (
                    tag is BOOL
                    or (not isinstance(tag, str) and tag.kind not in "iu")
                    or tag is FLOAT
                ):
                    raise Fallback("an index that is not an integer")
        return parts

    def _positions(self, base, parts, mask):
        """(flat view of the storage, flat positions in it, flat positions in the array the
        kernel sees (for the records), active threads) of one access; positions None when no
        thread is active."""
        if isinstance(base, (Local, Shared)):
            storage_array, shape = base.array, base.shape
        else:
            storage_array, shape = base, base.shape
            if not base.flags.c_contiguous:
                raise Fallback("an array that is not C-contiguous")
        if len(parts) != len(shape) or storage_array.size == 0:
            raise Fallback("an index that does not name one element")
        lanes = self.lanes
        if mask is None:
            live, everyone = self.lane_ids, True
        else:
            live = np.flatnonzero(mask)
            everyone = live.size == lanes
            if live.size == 0:
                return storage_array.reshape(-1), None, None, live
        kind = 1 if isinstance(base, Shared) else 2 if isinstance(base, Local) else 0
        key = None
        if everyone:  # the varying part of an index is often the same objects: kept per chunk
            key = (kind, shape, *(id(p) if isinstance(p, V) else None for p in parts))
            hit = self.positions.get(key)
            if hit is not None and all(
                h is p for h, p in zip(hit[1], parts, strict=True) if isinstance(p, V)
            ):
                varying = hit[0]
                key = None
            else:
                varying = None
        offset, stride, computed = 0, 1, 0
        for part, size in zip(reversed(parts), reversed(shape), strict=True):
            if isinstance(part, V):
                if key is not None or not everyone:
                    column = self._column(part, size, live, everyone)
                    computed = computed + column * stride if stride != 1 else column + computed
            else:
                column = int(part)
                if column < 0:
                    column += size  # numba wraps once
                if not 0 <= column < size:
                    raise Fallback("an index out of bounds")
                offset += column * stride
            stride *= size
        if key is not None or not everyone:
            if kind == 1:
                blocks = self.block_of_lane if everyone else self.block_of_lane[live]
                computed = blocks * stride + computed
            elif kind == 2:
                computed = live * stride + computed
            if not isinstance(computed, np.ndarray):
                computed = np.full(live.size, computed, np.int64)
            varying = computed.astype(np.int64, copy=False)
            if key is not None:
                if len(self.positions) >= 32:
                    self.positions.pop(next(iter(self.positions)))
                self.positions[key] = (varying, tuple(parts))
        place = varying + offset if offset else varying
        flat = place if kind != 2 else None
        return storage_array.reshape(-1), place, flat, live

    def _column(self, part, size, live, everyone):
        """One component of an index, per active thread, wrapped once and checked."""
        lanes = self.lanes
        groups = part.groups
        if len(groups) != 1:
            column = np.zeros(lanes, np.int64)
            for _, values, m in groups:
                column = np.where(
                    m if m is not None else True, np.broadcast_to(values, (lanes,)), column
                )
        else:
            column = np.broadcast_to(groups[0][1], (lanes,))
        if not everyone:
            column = column[live]
        low, high = column.min(), column.max()
        if low < 0:
            column = np.where(column < 0, column + size, column)  # numba wraps once
            low = column.min()
        if low < 0 or high >= size:
            raise Fallback("an index out of bounds")
        return column

    def _record(self, base, flat, live, kind, order=None):
        key = id(base)
        entry = self.records.get(key)
        if entry is None:
            entry = self.records[key] = (base, [])
        entry[1].append((flat, live, kind, order))

    def _load(self, base, parts, mask):
        if isinstance(base, V) or not isinstance(base, (np.ndarray, Shared, Local)):
            raise Unsupported("indexing something other than an array")
        storage_flat, place, flat, live = self._positions(base, parts, mask)
        if place is None:
            raise Fallback("a load no thread performs")
        checked = isinstance(base, Local) or (isinstance(base, Shared) and not base.complete)
        if checked and not base.written.reshape(-1)[place].all():
            raise Fallback("a read of shared or local memory no thread wrote")
        gathered = storage_flat[place]
        if live.size == self.lanes:
            values = gathered
        else:
            values = np.zeros(self.lanes, storage_flat.dtype)
            values[live] = gathered
        if isinstance(base, Shared) or id(base) in self.writable:
            self._record(base, flat, live, "r")  # an array no thread writes needs no record
        defined = None if live.size == self.lanes else self._active(mask).copy()
        return V([(storage_flat.dtype, values, defined)])

    def _write(self, base, parts, value, mask):
        if isinstance(base, np.ndarray) and id(base) not in self.writable:
            raise Unsupported("a store into an array that is not an argument")
        storage_flat, place, flat, live = self._positions(base, parts, mask)
        if place is None:
            return
        storage_flat[place] = self._as_dtype(value, storage_flat.dtype, live)
        if isinstance(base, Local):
            base.written.reshape(-1)[place] = True
        elif isinstance(base, Shared) and not base.complete:
            base.written.reshape(-1)[place] = True
            base.complete = bool(base.written.all())
        if not isinstance(base, Local):
            self._record(base, flat, live, "w")

    def _as_dtype(self, value, dtype, live):
        """The values the active threads store into an array of ``dtype`` (as ``a[i] = v``)."""
        out = np.zeros(live.size, dtype)
        filled = np.zeros(live.size, bool)
        for tag, values, m in _groups(value, self.lanes):
            picked = np.broadcast_to(values, (self.lanes,))[live]
            sel = np.ones(live.size, bool) if m is None else m[live]
            if not sel.any():
                continue
            part = picked[sel]
            source = storage(tag)
            if dtype.kind == "b" and source.kind == "f":
                raise Unsupported("a float stored into a bool array")
            if dtype.kind in "iu" and source.kind == "f":  # truncated, if finite and in range
                info = np.iinfo(dtype)
                if not (
                    np.all(np.isfinite(part))
                    and np.all(part > info.min - 1.0)
                    and np.all(part < info.max + 1.0)
                ):
                    raise Fallback("a float outside the integer array's range")
            if dtype.kind in "iu" and source.kind in "iu":
                info = np.iinfo(dtype)
                if tag is INT and (np.any(part < info.min) or np.any(part > info.max)):
                    raise Fallback("a Python int outside the array's type")
            if dtype.kind == "b" and source.kind != "b":
                raise Unsupported("a number stored into a bool array")
            with np.errstate(all="ignore"):
                out[sel] = part.astype(dtype)
            filled |= sel
        if not filled.all():
            raise Fallback("a store of a value some thread does not hold")
        return out

    def _atomic(self, name, args, mask, used):
        if name not in _ATOMICS or len(args) != 3:
            raise Unsupported(f"cuda.atomic.{name}")
        base = self._eval(args[0], mask)
        if not isinstance(base, (np.ndarray, Shared)):
            raise Unsupported("an atomic on something other than an array")
        if isinstance(base, np.ndarray) and id(base) not in self.writable:
            raise Unsupported("an atomic on an array that is not an argument")
        index_node = args[1]
        parts = self._index(index_node, mask)
        value = self._eval(args[2], mask)
        array, place, flat, live = self._positions(base, parts, mask)
        if place is None:
            return 0
        checked = isinstance(base, Shared) and not base.complete
        if checked and not base.written.reshape(-1)[place].all():
            raise Fallback("an atomic on shared memory no thread wrote")
        commutes = name in _UFUNCS and array.dtype.kind in "iu"
        integral = all(
            tag in (INT, BOOL) or (not isinstance(tag, str) and tag.kind in "iub")
            for tag, _, _ in _groups(value, self.lanes)
        )
        if commutes and integral and not used:
            # integer updates commute: one unbuffered ufunc.at, in thread order, is the same
            _UFUNCS[name].at(array, place, self._as_dtype(value, array.dtype, live))
        else:
            olds = self._atomics_one_by_one(name, array, place, live, value)
        self.atomic_seq += 1
        order = self.atomic_seq * CHUNK_LANES + live
        self._record(base, flat, live, "a" if commutes and not used else "A", order)
        if not used:
            return None
        tags = {tag_of(o) for o in olds}
        if len(tags) != 1:
            raise Fallback("atomics returning different types")
        (tag,) = tags
        out = np.zeros(self.lanes, storage(tag))
        out[live] = np.array(olds, dtype=storage(tag))
        defined = None if live.size == self.lanes else self._active(mask).copy()
        return V([(tag, out, defined)])

    def _atomics_one_by_one(self, name, array, place, live, value) -> list:
        """The engine's own atomic, thread by thread in thread order: each old value exact."""
        from .device import Atomic

        method = getattr(Atomic(), name)
        olds = []
        value_groups = _groups(value, self.lanes)
        for position, lane in enumerate(live.tolist()):
            index = int(place[position])
            thread_value = None
            for tag, values, m in value_groups:
                if m is None or m[lane]:
                    thread_value = scalar(tag, np.broadcast_to(values, (self.lanes,))[lane])
                    break
            if thread_value is None:
                raise Fallback("an atomic of a value some thread does not hold")
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # an overflow warning: let the engine show it
                olds.append(method(array, index, thread_value))
        return olds

    def _end_phase(self) -> None:
        """Between two barriers: no element that one thread wrote was read or written by another
        thread, atomics apart, and atomics whose order matters (floats, a returned old value)
        arrived in thread order."""
        for key, (base, entries) in self.records.items():
            if isinstance(base, np.ndarray):  # kept for the check between blocks
                self.chunk_records.setdefault(key, (base, []))[1].extend(entries)
            if all(e[2] == "r" for e in entries):
                continue
            size = base.array.size if isinstance(base, Shared) else base.size
            _check(*_columns(entries), size, "threads")
        self.records = {}

    def _end_chunk(self) -> None:
        """Blocks run one after another in the thread-by-thread engine: an element of an
        argument that two blocks of the chunk touched, one of them writing it, would differ."""
        for base, entries in self.chunk_records.values():
            if all(e[2] == "r" for e in entries):
                continue
            flat, lanes, kind, order = _columns(entries)
            _check(flat, lanes // self.threads, kind, order, base.size, "blocks")
        self.chunk_records = {}


def _owners_differ(flat, owners, size) -> bool:
    """Whether some element was touched by two owners (threads or blocks)."""
    if size <= 8 * flat.size:
        seen = np.full(size, -1, np.int64)
        seen[flat] = owners
        return not np.array_equal(seen[flat], owners)
    key = np.sort(flat * (int(owners.max()) + 1) + owners)
    f = key // (int(owners.max()) + 1)
    return bool(np.any((f[1:] == f[:-1]) & (key[1:] != key[:-1])))


def _check(flat, owners, kind, order, size, who) -> None:
    """Raise Fallback when the accesses of one phase (owners: threads) or one chunk (owners:
    blocks) could give another result run one owner after another."""
    if not _owners_differ(flat, owners, size):
        return
    sort = np.lexsort((owners, flat))
    f, o = flat[sort], owners[sort]
    multi = np.unique(f[1:][(f[1:] == f[:-1]) & (o[1:] != o[:-1])])
    written = np.intersect1d(multi, flat[kind >= 1])
    if written.size == 0:
        return  # elements several owners only read
    if np.isin(flat[kind < 2], written).any():
        raise Fallback(f"{who} share an element one of them writes")
    ordered = np.intersect1d(written, flat[kind == 3])
    if ordered.size:  # atomics whose order matters: in the order the engine would run them
        pick = np.isin(flat, ordered)
        sort = np.lexsort((order[pick], flat[pick]))
        fa, oa = flat[pick][sort], owners[pick][sort]
        if np.any((fa[1:] == fa[:-1]) & (oa[1:] < oa[:-1])):
            raise Fallback(f"atomics of {who} out of the engine's order")


_KINDS = {"r": 0, "w": 1, "a": 2, "A": 3}


def _columns(entries):
    flat = np.concatenate([e[0] for e in entries])
    lanes = np.concatenate([e[1] for e in entries])
    kind = np.concatenate([np.full(e[0].size, _KINDS[e[2]], np.int8) for e in entries])
    order = np.concatenate([e[3] if e[3] is not None else np.full(e[0].size, -1) for e in entries])
    return flat, lanes, kind, order


def _shape(shape):
    if isinstance(shape, int):
        shape = (shape,)
    if not isinstance(shape, tuple) or not all(isinstance(s, int) and s > 0 for s in shape):
        raise Unsupported("a shared or local array of a shape other than positive ints")
    return shape


def _dtype(dtype):
    from .device import _dtype as device_dtype

    try:
        return device_dtype(dtype)
    except Exception as error:
        raise Unsupported("an array type") from error


def _convert_global(value):
    from .engine import _device_function, _numpy_scalar

    value = _numpy_scalar(value)
    if isinstance(value, (int, float, bool, np.generic, np.ndarray, tuple, type)):
        return value
    if value in (range, min, max, abs, int, float, bool, len):
        return value
    if isinstance(value, types.ModuleType) or _device_function(value) is not None:
        raise Unsupported("a module or a device function")
    raise Unsupported(f"a global of type {type(value).__name__}")


_REFUSED: set = set()


def try_run(launch) -> bool:
    """Run ``launch`` (an :class:`gpu_utils.sim.engine.Launch`) in lockstep; True when done.
    False when it should run thread by thread, with every array argument as it was."""
    setting = mode()
    if setting == "never" or launch.observer is not None or launch.module.shared.dynshared_size:
        return False
    gx, gy, gz = launch.grid_dim
    bx, by, bz = launch.block_dim
    threads = gx * gy * gz * bx * by * bz
    if setting == "auto" and (threads < MIN_THREADS or bx * by * bz < 32):
        return False
    function = launch.function
    if function.__code__ in _REFUSED:
        return False
    arrays = [a for a in launch.args if isinstance(a, np.ndarray)]
    for i, a in enumerate(arrays):
        for b in arrays[i + 1 :]:
            if np.may_share_memory(a, b):
                LAST["outcome"] = "arguments that share memory"
                return False
    linker = launch.linker
    namespace = linker._namespace(function)
    cuda_names = linker._cuda_names(function)
    try:
        block = Block(
            function, launch.grid_dim, launch.block_dim, launch.args, cuda_names, namespace
        )
    except Unsupported as why:
        _REFUSED.add(function.__code__)
        LAST["outcome"] = f"unsupported: {why}"
        return False
    except Exception as why:  # a source Python cannot find: the engine says so
        LAST["outcome"] = f"not started: {why}"
        return False
    saved = [(a, a.copy()) for a in {id(a): a for a in arrays}.values()]
    # an endless loop: a quarter of the launch's limit here (half in a later chunk), what is
    # left for the engine after
    block.budget = min(CHUNK_BUDGET_S, launch.limit / 4)
    block.limit = launch.limit
    started = time.monotonic()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            block.run()
    except Exception as why:
        for array, copy in saved:
            array[...] = copy
        launch.limit = max(launch.limit - (time.monotonic() - started), launch.limit / 2)
        if isinstance(why, Unsupported):
            _REFUSED.add(function.__code__)
        LAST["outcome"] = f"fell back: {type(why).__name__}: {why}"
        return False
    LAST["outcome"] = "lockstep"
    return True
