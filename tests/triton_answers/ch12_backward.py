"""Lab 12's backward exercise (``triton_cross_entropy_backward``): the reference kernel (as in
solutions/12_triton_lab.ipynb), alternative correct kernels, and known mistakes of several kinds,
as notebook cells (the format of ``ch12.py``)."""

from . import edit, right, wrong

BACKWARD = """
@triton.jit
def cross_entropy_backward_kernel(logits_ptr, target_ptr, lse_ptr, dloss_ptr, dlogits_ptr, vocab,
                                  stride_logits, stride_dlogits, BLOCK_V: tl.constexpr):
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
        tl.store(dlogits_ptr + row * stride_dlogits + cols, grad, mask=mask)
"""

REFERENCE = {"triton_cross_entropy_backward": BACKWARD}

OOB = "outside"  # words of the out-of-bounds report
NO_MASK = "this access has no mask"
ONEHOT_MISSING = "the onehot term is missing"
LOCAL_COLUMN = "the position inside the block"
NO_DLOSS = "never multiplied by dloss"

ANSWERS = {
    "triton_cross_entropy_backward": [
        right("reference", BACKWARD),
        right(
            "exp2_and_pointers_moved",  # exp as exp2 with log2(e); row pointers advanced first
            """
            @triton.jit
            def cross_entropy_backward_kernel(logits_ptr, target_ptr, lse_ptr, dloss_ptr, dlogits_ptr, vocab,
                                              stride_logits, stride_dlogits, BLOCK_V: tl.constexpr):
                row = tl.program_id(axis=0)
                logits_ptr += row * stride_logits
                dlogits_ptr += row * stride_dlogits
                log2e: tl.constexpr = 1.4426950408889634
                shift = tl.load(lse_ptr + row) * log2e
                scale = tl.load(dloss_ptr + row)
                t = tl.load(target_ptr + row)
                for start in tl.range(0, vocab, BLOCK_V):
                    cols = start + tl.arange(0, BLOCK_V)
                    x = tl.load(logits_ptr + cols, mask=cols < vocab, other=0.0)
                    g = tl.exp2(x * log2e - shift) * scale
                    g = tl.where(cols == t, g - scale, g)
                    tl.store(dlogits_ptr + cols, g, mask=cols < vocab)
            """,
        ),
        right(
            "target_fixed_after_the_loop",  # softmax written everywhere, then the target's -dloss
            """
            @triton.jit
            def cross_entropy_backward_kernel(logits_ptr, target_ptr, lse_ptr, dloss_ptr, dlogits_ptr, vocab,
                                              stride_logits, stride_dlogits, BLOCK_V: tl.constexpr):
                row = tl.program_id(0)
                lse = tl.load(lse_ptr + row)
                dloss = tl.load(dloss_ptr + row)
                n_blocks = tl.cdiv(vocab, BLOCK_V)
                for b in range(n_blocks):
                    cols = b * BLOCK_V + tl.arange(0, BLOCK_V)
                    inside = cols < vocab
                    x = tl.load(logits_ptr + row * stride_logits + cols, mask=inside, other=-float("inf"))
                    tl.store(dlogits_ptr + row * stride_dlogits + cols, dloss * tl.exp(x - lse), mask=inside)
                target = tl.load(target_ptr + row)
                x_t = tl.load(logits_ptr + row * stride_logits + target)
                tl.store(dlogits_ptr + row * stride_dlogits + target, dloss * (tl.exp(x_t - lse) - 1.0))
            """,
        ),
        wrong(
            "onehot_missing",
            "formula",
            (ONEHOT_MISSING, "only the target column of each row is wrong, by +dloss[row]"),
            edit(BACKWARD, ("(p - tl.where(cols == target, 1.0, 0.0)) * dloss", "p * dloss")),
        ),
        wrong(
            "onehot_added",
            "formula",
            ("by +2 * dloss[row]", "added there instead of subtracted"),
            edit(BACKWARD, ("(p - tl.where(", "(p + tl.where(")),
            absent=(ONEHOT_MISSING,),
        ),
        wrong(
            "onehot_on_local_column",
            "pointer",
            (LOCAL_COLUMN, "`cols = start + tl.arange(0, BLOCK_V)`"),
            edit(BACKWARD, ("tl.where(cols == target", "tl.where(tl.arange(0, BLOCK_V) == target")),
            absent=(ONEHOT_MISSING,),
        ),
        wrong(
            "dloss_left_out",
            "formula",
            (NO_DLOSS, "divided by dloss[row]"),
            edit(
                BACKWARD,
                (
                    "tl.where(cols == target, 1.0, 0.0)) * dloss",
                    "tl.where(cols == target, 1.0, 0.0))",
                ),
            ),
        ),
        wrong(
            "dloss_of_row_0",
            "pointer",
            ("dloss[0]", "`dloss_ptr + row`"),
            edit(BACKWARD, ("dloss = tl.load(dloss_ptr + row)", "dloss = tl.load(dloss_ptr)")),
            absent=(NO_DLOSS,),
        ),
        wrong(
            "lse_of_row_0",
            "pointer",
            ("row 0's log-sum-exp", "`lse_ptr + row`"),
            edit(BACKWARD, ("lse = tl.load(lse_ptr + row)", "lse = tl.load(lse_ptr)")),
        ),
        wrong(
            "exp_without_lse",
            "numerics",
            ("exp(logits) itself, not divided by the sum", "`tl.exp(x - lse)`"),
            edit(BACKWARD, ("p = tl.exp(x - lse)", "p = tl.exp(x)")),
        ),
        wrong(
            "softmax_from_the_row_max",
            "numerics",
            ("exp(x - max of the row)", "log-sum-exp"),
            edit(
                BACKWARD,
                (
                    "    for start in range(0, vocab, BLOCK_V):\n",
                    """    m = -float("inf")
    for start in range(0, vocab, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        m = tl.maximum(m, tl.max(tl.load(logits_ptr + row * stride_logits + cols, mask=cols < vocab, other=-float("inf")), axis=0))
    for start in range(0, vocab, BLOCK_V):
""",
                ),
                ("p = tl.exp(x - lse)", "p = tl.exp(x - m)"),
            ),
        ),
        wrong(
            "first_block_only",
            "writes-nothing",
            ("never written", "`for start in range(0, vocab, BLOCK_V)`"),
            edit(
                BACKWARD,
                (
                    "for start in range(0, vocab, BLOCK_V):",
                    "for start in range(0, BLOCK_V, BLOCK_V):",
                ),
            ),
        ),
        wrong(
            "row_stride_is_vocab",
            "pointer",
            ("lie between the rows of `logits_ptr`", "row stride"),
            edit(
                BACKWARD,
                ("logits_ptr + row * stride_logits + cols", "logits_ptr + row * vocab + cols"),
                ("dlogits_ptr + row * stride_dlogits + cols", "dlogits_ptr + row * vocab + cols"),
            ),
        ),
        wrong(
            "no_store_mask",
            "mask",
            (OOB, "`dlogits_ptr`"),
            edit(
                BACKWARD,
                (
                    "tl.store(dlogits_ptr + row * stride_dlogits + cols, grad, mask=mask)",
                    "tl.store(dlogits_ptr + row * stride_dlogits + cols, grad)",
                ),
            ),
        ),
        wrong(
            "dloss_twice",
            "formula",
            ("times dloss[row] once more", "multiply by it once"),
            edit(BACKWARD, ("* dloss\n", "* dloss * dloss\n")),
            absent=(NO_DLOSS,),
        ),
        wrong(
            "sign_flipped",
            "formula",
            ("the wrong sign", "dloss * (softmax - onehot)"),
            edit(
                BACKWARD,
                (
                    "grad = (p - tl.where(cols == target, 1.0, 0.0)) * dloss",
                    "grad = (tl.where(cols == target, 1.0, 0.0) - p) * dloss",
                ),
            ),
        ),
        wrong(
            "each_block_normalised",
            "numerics",
            ("the factor changes from block to block", "needs no sum"),
            edit(
                BACKWARD,
                (
                    "p = tl.exp(x - lse)",
                    "p = tl.exp(x - lse)\n        p = tl.where(mask, p, 0.0) / tl.sum(tl.where(mask, p, 0.0), axis=0)",
                ),
            ),
        ),
        wrong(
            "every_program_row_0",
            "pointer",
            ("rows 1-3 of dlogits were never written", "`row = tl.program_id(0)`"),
            edit(BACKWARD, ("row = tl.program_id(0)", "row = tl.program_id(0) * 0")),
        ),
        wrong(
            "mask_one_short",
            "mask",
            ("column 99 of every row was never written", "`cols < vocab` (not"),
            edit(BACKWARD, ("mask = cols < vocab", "mask = cols < vocab - 1")),
            absent=("the loop must cover every block",),
        ),
    ],
}
