"""Held-out answers (round 5, "held2") to the planner part of lab 10 (10.1 to 10.4).

Written blind on 2026-11-28 (about 23:30-00:15 UTC) by a helper session that never read the
checker (gpu_utils/exercises/, tests/test_exercises*, earlier rounds' files): only the learner's
lab, the reference solutions' code cells, gpu_utils/parallelism.py, memory.py, specs.py and the
signatures of the gu.memory / gu.flops / gu.collectives / gu.pipeline helpers, and the list of
earlier rounds' causes (the mistakes here are different ones).

Verified without the checker (scratch scripts in /tmp/lab10_planner_r5/): every answer was run
through ``heldout.submitted`` and compared with the reference solution's cells.
* planner_layout_fits: the returned layout against the lab's rules (written out from its text)
  and ``P.evaluate`` (fits in 72 GiB, step within 1.2x of ``ranked[0]``); the figures quoted in
  the causes are ``P.evaluate``'s.
* planner_memory_prediction / planner_step_time: against the reference functions on a set of
  layouts (ZeRO 0-3, recompute none/selective/full, pp 1/2/4/8/16, m < p with b > 1, v 1/2/4/5);
  each correct answer agrees within 1e-6 on all of them, each wrong one differs by more than 5%
  on at least one (the layout and the gap are named in the scratch output, not here).
* planner_defend: the returned dict against the reference's logic applied to the same layout.
"""

from heldout import Blind

PRELUDE = """
import gpu_utils as gu

P = gu.parallelism
LLAMA = P.MODELS["Llama 3 70B"]
CLUSTER = P.Cluster("H100-SXM", gpus_per_node=8, nodes=32)
BATCH_TOKENS = 2**21
H100 = gu.specs.get("H100-SXM")
"""


def _cell(body: str) -> str:
    return PRELUDE + body


ANSWERS = [
    # ---------------------------------------------------------------- 10.1 planner_layout_fits
    Blind(
        name="fits_interleave5_computed",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=_cell("""
def my_layout():
    tp, pp = 4, 4  # TP 4 stays in a node; 80 layers / 4 stages = 20, and 20 / 5 = 4 per chunk
    dp = CLUSTER.n_gpus // (tp * pp)
    v = 5
    m = BATCH_TOKENS // LLAMA.seq_len // dp
    assert LLAMA.layers % pp == 0 and (LLAMA.layers // pp) % v == 0 and m % pp == 0
    return {"dp": dp, "tp": tp, "pp": pp, "zero_stage": 1, "micro_batch_size": 1,
            "recompute": "none", "interleave": v}
"""),
    ),
    Blind(
        name="fits_tp8_pp4_plain",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=_cell("""
def my_layout():
    layout = dict(tp=8, pp=4, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)
    layout["dp"] = 256 // (layout["tp"] * layout["pp"])
    return layout
"""),
    ),
    Blind(
        name="fits_zero3_with_tp8",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "ZeRO-3 is not needed once TP 8 fits with ZeRO-1; with tensor parallelism it gathers "
            "and reduce-scatters every block's weights and gradients over the network on every "
            "micro-batch (about 16 s of exposed traffic), so the step is about 2.6x the best."
        ),
        source=_cell("""
def my_layout():
    # shard everything to be safe on memory
    return dict(dp=32, tp=8, pp=1, zero_stage=3, micro_batch_size=1, recompute="none", interleave=1)
"""),
    ),
    Blind(
        name="fits_tp4_pp2_too_big",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "TP 4 x PP 2 still leaves 8.8e9 parameters per GPU (35 GB of bf16 weights and "
            "gradients), and the first stage keeps 2 micro-batches of 40 layers' activations "
            "split only 4 ways: 76 GiB, over the 72 GiB usable."
        ),
        source=_cell("""
def my_layout():
    return dict(dp=32, tp=4, pp=2, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)
"""),
    ),
    Blind(
        name="fits_interleave2_more_chunks",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "With v = 2 the first stage holds v p + p - 1 = 11 chunks of 10 layers (110 layers' "
            "activations) against 19 chunks of 5 (95) with v = 4: the layout needs 74.6 GiB, "
            "over the 72 GiB usable, where the best's v = 4 fits."
        ),
        source=_cell("""
def my_layout():
    return dict(dp=16, tp=4, pp=4, zero_stage=1, micro_batch_size=1, recompute="none", interleave=2)
"""),
    ),
    Blind(
        name="fits_micro_batch_in_tokens",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "micro_batch_size counts sequences per micro-batch (b = 1 here), not tokens: 8192 "
            "tokens per micro-batch gives m = 256 / (32 x 8192), not a whole number."
        ),
        source=_cell("""
def my_layout():
    return dict(dp=32, tp=8, pp=1, zero_stage=1, micro_batch_size=LLAMA.seq_len,
                recompute="none", interleave=1)
"""),
    ),
    Blind(
        name="fits_tp2_no_pipeline",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "TP 2 without a pipeline leaves 35e9 parameters on each GPU, 141 GB of bf16 weights "
            "and gradients alone before the activations (215 GiB in all): ZeRO-1 shards only "
            "the optimizer states, so t x p must be much larger."
        ),
        source=_cell("""
def my_layout():
    # TP 2 costs little communication; ZeRO-1 over dp = 128 shards the optimizer states
    return dict(dp=128, tp=2, pp=1, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)
"""),
    ),
]
