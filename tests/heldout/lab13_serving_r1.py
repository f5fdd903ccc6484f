"""Held-out answers to lab 13 (serving: decode step, KV budget, block table, speculative tokens),
round 1, half "held2".

Written blind on 2026-11-28 by a helper session that never read the lab's checker (nothing under
gpu_utils/exercises/, no other file under tests/, no check cell, no ``describe``, no report.py).
Written from: the learner's lab (labs/13_serving_lab.ipynb), the reference solutions' code cells
(solutions/13_serving_lab.ipynb), chapter 13 (notebooks/13_serving.ipynb) and the public helpers
gpu_utils/serving/inference.py, specs.py and memory.py. No earlier round's causes existed for this lab
(/tmp/blind/causes_lab13_serving.txt was empty).

Verified without the checker (scratch script /tmp/lab13_serving_r1/verify.py, outside the
repository): each answer was taken through ``heldout.submitted`` and compared with the reference
solution's code and with ``gu.inference``:

* decode_step_seconds: the six Llama shapes of ``gu.inference.DECODERS`` (``streamed_params``) on
  the H100, A100, L4 (bf16 peak) and T4 (fp16 peak), batches 1, 2, 3, 7, 100, 512, 2048,
  contexts 0, 1, 3, 1000, 4096, weights of 2, 1 and 0.5 bytes, caches of 2 and 1 byte
  (5,040 cases, relative tolerance 1e-4);
* max_batch: the same shapes (all ``params``) and GPUs, contexts 1, 2, 3, 5, 1000, 4096, 32768,
  usable 0.9 and 0.85, the same byte widths (2,016 cases, among them models that do not fit; a
  whole number is asked for, so a float counts as different);
* BlockAllocator: 300 seeded random replays of 48 operations (grow by 0 to 40 tokens, free,
  re-use of a freed sequence's name, caches run full) with blocks of 1, 2, 3, 5 and 16 tokens
  and 4 to 40 blocks, against ``gu.inference.PagedAllocator``: the count each grow returns,
  every ``free_blocks`` and block-table length, CacheFull raised or not, no block held twice;
* expected_tokens: acceptance 0, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 1 by draft 0 to 7 (64 cases,
  relative tolerance 1e-9).

Every correct answer agreed on all of them; every wrong answer differed on at least one (on 8 to
5,040 of them; where a mistake is right on some inputs, its ``cause`` says which).
"""

from heldout import Blind

_DECODE_SIG = """\
def decode_step_seconds(
    params, layers, hidden, kv_heads, head_dim, batch, context, bandwidth, peak,
    weight_bytes=2, kv_bytes=2,
):
"""

_BUDGET_SIG = """\
def max_batch(
    params, layers, kv_heads, head_dim, context, memory_gib, usable=0.9,
    weight_bytes=2, kv_bytes=2,
):
"""

# --- the block table: a correct allocator, then each wrong one changes one thing in it ---------

_ALLOC_OK = """\
import gpu_utils as gu


class BlockAllocator:
    def __init__(self, num_blocks, block_size):
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.free_list = list(range(num_blocks))
        self.tables = {}
        self.lengths = {}

    @property
    def free_blocks(self):
        return len(self.free_list)

    def blocks_for(self, tokens):
        return (tokens + self.block_size - 1) // self.block_size

    def grow(self, seq, tokens):
        old = self.lengths.get(seq, 0)
        need = self.blocks_for(old + tokens) - self.blocks_for(old)
        if need > len(self.free_list):
            raise gu.inference.CacheFull("no room")
        taken = self.free_list[:need]
        self.free_list = self.free_list[need:]
        self.tables.setdefault(seq, []).extend(taken)
        self.lengths[seq] = old + tokens
        return taken

    def free(self, seq):
        self.free_list.extend(self.tables.pop(seq))
        del self.lengths[seq]

    def block_table(self, seq):
        return list(self.tables[seq])
"""


def _alloc(old: str, new: str) -> str:
    """The allocator above with one piece replaced (the replaced text must be there)."""
    if old not in _ALLOC_OK:
        raise ValueError(f"not in the allocator: {old!r}")
    return _ALLOC_OK.replace(old, new)


ANSWERS = [
    # ============================ serving_decode_step ============================
    Blind(
        name="decode_ok_roofline_ridge",
        exercise_id="serving_decode_step",
        half="held2",
        correct=True,
        source=_DECODE_SIG
        + """\
    # roofline: compare the step's intensity with the GPU's ridge point
    kv_token = 2 * layers * kv_heads * head_dim * kv_bytes
    weight_traffic = params * weight_bytes
    cache_traffic = batch * context * kv_token
    flops_per_seq = 2 * params + 4 * layers * hidden * context
    total_flops = flops_per_seq * batch
    total_bytes = weight_traffic + cache_traffic
    intensity = total_flops / total_bytes
    ridge = peak / bandwidth
    if intensity > ridge:
        return total_flops / peak  # compute-bound
    return total_bytes / bandwidth  # memory-bound
""",
    ),
    Blind(
        name="decode_ok_memory_helper",
        exercise_id="serving_decode_step",
        half="held2",
        correct=True,
        source="""\
import gpu_utils as gu


def decode_step_seconds(
    params, layers, hidden, kv_heads, head_dim, batch, context, bandwidth, peak,
    weight_bytes=2, kv_bytes=2,
):
    cache = gu.memory.kv_cache_bytes(layers, kv_heads, head_dim, context, batch, kv_bytes)
    t_mem = (params * weight_bytes + cache) / bandwidth
    t_weights = 2 * params * batch / peak
    t_attention = 4 * layers * hidden * context * batch / peak
    return max(t_mem, t_weights + t_attention)
""",
    ),
    Blind(
        name="decode_sum_of_times",
        exercise_id="serving_decode_step",
        half="held2",
        correct=False,
        cause=(
            "It adds the memory time and the compute time; the lower bound is the larger of "
            "the two, since reading and computing overlap."
        ),
        source=_DECODE_SIG
        + """\
    kv = 2 * layers * kv_heads * head_dim * kv_bytes
    read = params * weight_bytes + batch * context * kv
    flops = batch * (2 * params + 4 * layers * hidden * context)
    return read / bandwidth + flops / peak
""",
    ),
    Blind(
        name="decode_milliseconds",
        exercise_id="serving_decode_step",
        half="held2",
        correct=False,
        cause="It returns milliseconds (it multiplies by 1000) where seconds are asked for.",
        source=_DECODE_SIG
        + """\
    kv = 2 * layers * kv_heads * head_dim * kv_bytes
    read = params * weight_bytes + batch * context * kv
    flops = batch * (2 * params + 4 * layers * hidden * context)
    ms = max(read / bandwidth, flops / peak) * 1e3
    return ms
""",
    ),
    Blind(
        name="decode_cache_once_per_step",
        exercise_id="serving_decode_step",
        half="held2",
        correct=False,
        cause=(
            "It reads the KV cache once per step like the weights, instead of once per "
            "sequence: the cache bytes are not multiplied by the batch (right only at batch 1 "
            "or context 0)."
        ),
        source=_DECODE_SIG
        + """\
    weights = params * weight_bytes
    cache = context * 2 * layers * kv_heads * head_dim * kv_bytes
    flops = batch * (2 * params + 4 * layers * hidden * context)
    return max((weights + cache) / bandwidth, flops / peak)
""",
    ),
    Blind(
        name="decode_weight_flops_once",
        exercise_id="serving_decode_step",
        half="held2",
        correct=False,
        cause=(
            "It counts the weights' 2 x params FLOPs once per step instead of once per "
            "sequence (only attention is multiplied by the batch), so a compute-bound step "
            "comes out too short."
        ),
        source=_DECODE_SIG
        + """\
    kv = 2 * layers * kv_heads * head_dim * kv_bytes
    read = params * weight_bytes + batch * context * kv
    flops = 2 * params + batch * 4 * layers * hidden * context
    return max(read / bandwidth, flops / peak)
""",
    ),
    Blind(
        name="decode_cache_all_heads",
        exercise_id="serving_decode_step",
        half="held2",
        correct=False,
        cause=(
            "It sizes each cached key and value by hidden (every query head) instead of "
            "kv_heads x head_dim, so with grouped-query attention the cache is too large "
            "(right for Llama 2 7B and 13B)."
        ),
        source=_DECODE_SIG
        + """\
    per_token = 2 * layers * hidden * kv_bytes  # a key and a value of hidden numbers per layer
    read = params * weight_bytes + batch * context * per_token
    flops = batch * (2 * params + 4 * layers * hidden * context)
    return max(read / bandwidth, flops / peak)
""",
    ),
    Blind(
        name="decode_cache_weight_bytes",
        exercise_id="serving_decode_step",
        half="held2",
        correct=False,
        cause=(
            "It stores the cache with weight_bytes per value instead of kv_bytes, so quantised "
            "weights shrink the cache too (right whenever the two widths are equal)."
        ),
        source=_DECODE_SIG
        + """\
    bytes_per_token = 2 * layers * kv_heads * head_dim * weight_bytes
    read = params * weight_bytes + batch * context * bytes_per_token
    flops = batch * (2 * params + 4 * layers * hidden * context)
    return max(read / bandwidth, flops / peak)
""",
    ),
    # ============================ serving_kv_budget ============================
    Blind(
        name="budget_ok_tokens_then_sequences",
        exercise_id="serving_kv_budget",
        half="held2",
        correct=True,
        source=_BUDGET_SIG
        + """\
    budget = usable * memory_gib * 2**30
    weights = params * weight_bytes
    if weights >= budget:
        return 0
    per_token = 2 * layers * kv_heads * head_dim * kv_bytes
    tokens = (budget - weights) // per_token  # whole tokens of cache first
    return int(tokens // context)  # then whole sequences of context tokens
""",
    ),
    Blind(
        name="budget_ok_floor_clamped",
        exercise_id="serving_kv_budget",
        half="held2",
        correct=True,
        source="""\
import math


def max_batch(
    params, layers, kv_heads, head_dim, context, memory_gib, usable=0.9,
    weight_bytes=2, kv_bytes=2,
):
    GiB = 1024**3
    free_for_cache = usable * memory_gib * GiB - weights_bytes(params, weight_bytes)
    seq_bytes = 2 * layers * kv_heads * head_dim * kv_bytes * context
    return max(0, math.floor(free_for_cache / seq_bytes))


def weights_bytes(params, weight_bytes):
    return params * weight_bytes
""",
        submit="max_batch",
    ),
    Blind(
        name="budget_rounds",
        exercise_id="serving_kv_budget",
        half="held2",
        correct=False,
        cause=(
            "It rounds the number of sequences to the nearest whole number instead of rounding "
            "down, so when the fraction is one half or more it counts a sequence that does "
            "not fit."
        ),
        source=_BUDGET_SIG
        + """\
    room = usable * memory_gib * 2**30 - params * weight_bytes
    if room <= 0:
        return 0
    per_seq = 2 * layers * kv_heads * head_dim * kv_bytes * context
    return round(room / per_seq)
""",
    ),
    Blind(
        name="budget_decimal_gb",
        exercise_id="serving_kv_budget",
        half="held2",
        correct=False,
        cause=(
            "It counts a GiB as 1e9 bytes (a decimal GB) instead of 2**30, so it sees about 7% "
            "less memory than the GPU has."
        ),
        source=_BUDGET_SIG
        + """\
    room = usable * memory_gib * 1e9 - params * weight_bytes
    if room <= 0:
        return 0
    per_seq = 2 * layers * kv_heads * head_dim * kv_bytes * context
    return int(room // per_seq)
""",
    ),
    Blind(
        name="budget_share_of_leftover",
        exercise_id="serving_kv_budget",
        half="held2",
        correct=False,
        cause=(
            "It takes the usable share of what is left after the weights, (memory - weights) x "
            "usable, instead of subtracting the weights from usable x memory: the weights count "
            "against the 90% too."
        ),
        source=_BUDGET_SIG
        + """\
    memory = memory_gib * 2**30
    weights = params * weight_bytes
    if weights >= memory:
        return 0
    cache_room = (memory - weights) * usable
    per_seq = context * 2 * layers * kv_heads * head_dim * kv_bytes
    return int(cache_room // per_seq)
""",
    ),
    Blind(
        name="budget_negative_when_too_big",
        exercise_id="serving_kv_budget",
        half="held2",
        correct=False,
        cause=(
            "It never checks whether the weights fit: when they do not, the room is negative "
            "and it returns a negative batch instead of 0."
        ),
        source=_BUDGET_SIG
        + """\
    room = usable * memory_gib * 2**30 - params * weight_bytes
    per_seq = context * 2 * layers * kv_heads * head_dim * kv_bytes
    return int(room // per_seq)
""",
    ),
    Blind(
        name="budget_bf16_weights_always",
        exercise_id="serving_kv_budget",
        half="held2",
        correct=False,
        cause=(
            "It hard-codes 2 bytes per weight and ignores weight_bytes, so int8 and int4 "
            "weights take as much memory as bf16 ones (right only for bf16 weights)."
        ),
        source=_BUDGET_SIG
        + """\
    weights = 2 * params  # bf16
    room = usable * memory_gib * 2**30 - weights
    if room <= 0:
        return 0
    per_seq = context * 2 * layers * kv_heads * head_dim * kv_bytes
    return int(room // per_seq)
""",
    ),
    Blind(
        name="budget_fractional_batch",
        exercise_id="serving_kv_budget",
        half="held2",
        correct=False,
        cause=(
            "It returns the exact quotient, a fraction of a sequence included, instead of the "
            "whole number of sequences (rounded down) that fit."
        ),
        source=_BUDGET_SIG
        + """\
    room = usable * memory_gib * 2**30 - params * weight_bytes
    if room <= 0:
        return 0
    per_seq = context * 2 * layers * kv_heads * head_dim * kv_bytes
    return room / per_seq
""",
    ),
    # ============================ serving_paged_allocator ============================
    Blind(
        name="alloc_ok_lowest_first_list",
        exercise_id="serving_paged_allocator",
        half="held2",
        correct=True,
        submit="BlockAllocator",
        source=_ALLOC_OK,
    ),
    Blind(
        name="alloc_ok_owner_array",
        exercise_id="serving_paged_allocator",
        half="held2",
        correct=True,
        submit="BlockAllocator",
        source='''\
import math

import gpu_utils as gu


class BlockAllocator:
    """Every block has an owner (None when free); free_blocks is a plain attribute."""

    def __init__(self, num_blocks, block_size):
        self.block_size = block_size
        self.owner = [None] * num_blocks
        self.free_blocks = num_blocks
        self.table = {}
        self.count = {}

    def blocks_for(self, tokens):
        return math.ceil(tokens / self.block_size)

    def grow(self, seq, tokens):
        have = self.count.get(seq, 0)
        extra = self.blocks_for(have + tokens) - len(self.table.get(seq, []))
        if extra > self.free_blocks:
            raise gu.inference.CacheFull(f"{extra} blocks needed, {self.free_blocks} free")
        got = []
        for b in reversed(range(len(self.owner))):  # highest free block first
            if len(got) == extra:
                break
            if self.owner[b] is None:
                self.owner[b] = seq
                got.append(b)
        self.table.setdefault(seq, []).extend(got)
        self.count[seq] = have + tokens
        self.free_blocks -= len(got)
        return got

    def free(self, seq):
        for b in self.table.pop(seq):
            self.owner[b] = None
            self.free_blocks += 1
        self.count.pop(seq)

    def block_table(self, seq):
        return self.table[seq][:]
''',
    ),
    Blind(
        name="alloc_takes_then_fails",
        exercise_id="serving_paged_allocator",
        half="held2",
        correct=False,
        submit="BlockAllocator",
        cause=(
            "grow takes blocks one at a time and raises CacheFull only when the free list runs "
            "out, so a failed grow keeps the blocks it took before failing instead of taking "
            "nothing."
        ),
        source=_alloc(
            """\
        if need > len(self.free_list):
            raise gu.inference.CacheFull("no room")
        taken = self.free_list[:need]
        self.free_list = self.free_list[need:]
        self.tables.setdefault(seq, []).extend(taken)
""",
            """\
        taken = []
        table = self.tables.setdefault(seq, [])
        for _ in range(need):
            if not self.free_list:
                raise gu.inference.CacheFull("no room")
            block = self.free_list.pop(0)
            table.append(block)
            taken.append(block)
""",
        ),
    ),
    Blind(
        name="alloc_blocks_for_floor",
        exercise_id="serving_paged_allocator",
        half="held2",
        correct=False,
        submit="BlockAllocator",
        cause=(
            "blocks_for divides with floor (tokens // block_size), so a partly filled block is "
            "not counted and a sequence gets a block only once it has filled one."
        ),
        source=_alloc(
            "return (tokens + self.block_size - 1) // self.block_size",
            "return tokens // self.block_size",
        ),
    ),
    Blind(
        name="alloc_ignores_room_in_last_block",
        exercise_id="serving_paged_allocator",
        half="held2",
        correct=False,
        submit="BlockAllocator",
        cause=(
            "grow asks for blocks_for(tokens) new blocks for the added tokens alone, ignoring "
            "the free slots left in the sequence's last block, so it takes a block too many "
            "when the new tokens fit there (right with blocks of 1 token)."
        ),
        source=_alloc(
            "need = self.blocks_for(old + tokens) - self.blocks_for(old)",
            "need = self.blocks_for(tokens)",
        ),
    ),
    Blind(
        name="alloc_refuses_last_block",
        exercise_id="serving_paged_allocator",
        half="held2",
        correct=False,
        submit="BlockAllocator",
        cause=(
            "The full test is need >= free blocks instead of need > free blocks, so grow "
            "raises CacheFull when it needs exactly the blocks that are left."
        ),
        source=_alloc(
            "if need > len(self.free_list):",
            "if need >= len(self.free_list) and need > 0:",
        ),
    ),
    Blind(
        name="alloc_keeps_length_after_free",
        exercise_id="serving_paged_allocator",
        half="held2",
        correct=False,
        submit="BlockAllocator",
        cause=(
            "free gives the blocks back but keeps the sequence's token count, so a sequence "
            "that comes back under the same name after being freed (preempted) starts from its "
            "old length instead of 0 tokens."
        ),
        source=_alloc(
            """\
        self.free_list.extend(self.tables.pop(seq))
        del self.lengths[seq]
""",
            """\
        self.free_list.extend(self.tables.pop(seq))
""",
        ),
    ),
    Blind(
        name="alloc_own_exception",
        exercise_id="serving_paged_allocator",
        half="held2",
        correct=False,
        submit="BlockAllocator",
        cause=(
            "When the cache is full it raises an exception class of its own (a MemoryError) "
            "instead of gu.inference.CacheFull, which the scheduler catches to preempt."
        ),
        source=_alloc(
            'raise gu.inference.CacheFull("no room")',
            'raise CacheFull("no room")',
        ).replace(
            "class BlockAllocator:",
            "class CacheFull(MemoryError):\n    pass\n\n\nclass BlockAllocator:",
        ),
    ),
    # ============================ serving_speculative_tokens ============================
    Blind(
        name="spec_ok_power_sum",
        exercise_id="serving_speculative_tokens",
        half="held2",
        correct=True,
        source="""\
def expected_tokens(acceptance, draft):
    # the i-th token comes out when the first i drafts were all accepted: 1 + a + ... + a^k
    return sum(acceptance**i for i in range(draft + 1))
""",
    ),
    Blind(
        name="spec_ok_distribution",
        exercise_id="serving_speculative_tokens",
        half="held2",
        correct=True,
        source="""\
def expected_tokens(acceptance, draft):
    a, k = acceptance, draft
    # first rejection at position j (j accepted before it): j + 1 tokens with the correction
    mean = sum((j + 1) * a**j * (1 - a) for j in range(k))
    # all k accepted: k tokens plus the bonus token
    return mean + (k + 1) * a**k
""",
    ),
    Blind(
        name="spec_no_target_token",
        exercise_id="serving_speculative_tokens",
        half="held2",
        correct=False,
        cause=(
            "It counts only the accepted draft tokens (a + a^2 + ... + a^k) and leaves out the "
            "token the target adds after every verification."
        ),
        source="""\
def expected_tokens(acceptance, draft):
    a = acceptance
    if a == 1:
        return float(draft)
    return a * (1 - a**draft) / (1 - a)
""",
    ),
    Blind(
        name="spec_exponent_k",
        exercise_id="serving_speculative_tokens",
        half="held2",
        correct=False,
        cause=(
            "The exponent is k instead of k + 1: (1 - a^k) / (1 - a) sums k terms, one fewer "
            "than the k accepted positions plus the target's token."
        ),
        source="""\
def expected_tokens(acceptance, draft):
    if acceptance == 1:
        return draft + 1
    return (1 - acceptance**draft) / (1 - acceptance)
""",
    ),
    Blind(
        name="spec_divides_by_zero_at_one",
        exercise_id="serving_speculative_tokens",
        half="held2",
        correct=False,
        cause=(
            "The closed form divides by 1 - a with no case for a = 1, where every draft is "
            "accepted and the answer is k + 1: it divides by zero."
        ),
        source="""\
def expected_tokens(acceptance, draft):
    return (1 - acceptance ** (draft + 1)) / (1 - acceptance)
""",
    ),
    Blind(
        name="spec_no_draft_no_tokens",
        exercise_id="serving_speculative_tokens",
        half="held2",
        correct=False,
        cause=(
            "It returns 0 for a draft of 0 tokens, but the target still produces its own token "
            "in that step: k = 0 yields 1 token."
        ),
        source="""\
def expected_tokens(acceptance, draft):
    if draft == 0:
        return 0  # nothing proposed, nothing gained
    if acceptance == 1:
        return draft + 1
    return (1 - acceptance ** (draft + 1)) / (1 - acceptance)
""",
    ),
    Blind(
        name="spec_independent_acceptances",
        exercise_id="serving_speculative_tokens",
        half="held2",
        correct=False,
        cause=(
            "It counts every accepted draft, 1 + k x a, as if tokens after the first rejection "
            "were kept; only the prefix up to the first rejection counts (right only for k of 0 "
            "or 1, or a of 0 or 1)."
        ),
        source="""\
def expected_tokens(acceptance, draft):
    # each of the k drafts is kept with probability a, plus the target's own token
    return 1 + draft * acceptance
""",
    ),
    Blind(
        name="spec_rejection_rate",
        exercise_id="serving_speculative_tokens",
        half="held2",
        correct=False,
        cause=(
            "It puts the rejection probability 1 - a where the acceptance a belongs, "
            "(1 - (1 - a)^(k+1)) / a, so a high acceptance gives few tokens (right only at "
            "a = 0.5 or k = 0)."
        ),
        source="""\
def expected_tokens(acceptance, draft):
    r = 1 - acceptance  # chance a draft is rejected
    if r == 1:
        return draft + 1
    return (1 - r ** (draft + 1)) / (1 - r)
""",
    ),
]
