"""gu.capstone_profile: the "profile first" capstone's scripts, planted by seed and not named."""

import pytest

from gpu_utils.many_gpus import capstone_profile as cp


def test_a_seed_plants_three_kinds_the_same_way_every_time():
    seen = set()
    for seed in range(40):
        kinds = cp.planted(seed)
        assert len(kinds) == cp.N_PLANTED and kinds <= set(cp.KINDS)
        assert cp.planted(seed) == kinds
        seen.add(kinds)
    assert len(seen) >= 10  # learners get different scripts
    assert set().union(*seen) == set(cp.KINDS)


def test_bad_seeds_and_kinds_are_refused_in_words():
    with pytest.raises(TypeError, match="seed must be an int"):
        cp.planted("7")
    with pytest.raises(ValueError, match="unknown kinds"):
        cp.script({"slow_loader"})


def test_the_source_does_not_name_what_is_planted():
    for seed in range(10):
        source = cp.baseline(seed).source
        for kind in cp.KINDS:
            if kind != "loader":  # a DataLoader is code, not a label
                assert kind not in source, (kind, source)
        assert "SMALL" not in source and "planted" not in source


@pytest.mark.parametrize("kind", cp.KINDS)
def test_each_kind_changes_the_script(kind):
    sound, planted = cp.script(set()).source, cp.script({kind}).source
    assert sound != planted
    words = {
        "loader": "TokenizingDataset",
        "host_sync": "loss.item()",
        "fp32": "torch.autocast",  # the sound script has it, the planted one not
        "small_batch": f"T.get_batch(data, {cp.SMALL_BATCH},",
        "optimizer_loop": "foreach=False",
        "recompute": "forward_checkpointed",
    }[kind]
    assert (words in planted) != (kind == "fp32") and (words in sound) == (kind == "fp32")


def test_a_script_trains_and_tokens_per_step_counts_its_batch():
    text = "The Zen of Python, by Tim Peters. Beautiful is better than ugly. " * 20
    both = cp.script({"small_batch", "host_sync"})
    losses = both.train(text, 2)
    assert len(losses) == 2 and all(isinstance(v, float) for v in losses)
    assert cp.tokens_per_step(both.train, text) == cp.SMALL_BATCH * cp.SEQ_LEN
    assert cp.tokens_per_step(cp.script({"recompute"}).train, text) == cp.BATCH * cp.SEQ_LEN


TEXT = "The Zen of Python, by Tim Peters. Beautiful is better than ugly. " * 20


def _matmul_dtypes(prof) -> set[str]:
    return {str(e.input_dtypes[:2]) for e in prof.events() if e.name in ("aten::addmm", "aten::mm")}


def test_profile_events_carry_the_input_dtypes_lab_11_teaches():
    """Lab 11 teaches ``event.input_dtypes``: torch 2.13 has it, 2.10-2.11 get it from
    cp.add_input_dtypes. This fails wherever the installed torch leaves it missing."""
    fp32 = cp.profile(cp.script({"fp32"}).train, 1, TEXT)
    assert all(hasattr(e, "input_dtypes") for e in fp32.events())
    assert _matmul_dtypes(fp32) == {"['float', 'float']"}
    sound = cp.profile(cp.script(set()).train, 1, TEXT)
    assert _matmul_dtypes(sound) == {"['c10::BFloat16', 'c10::BFloat16']"}


def test_add_input_dtypes_recovers_what_torch_records():
    """Taken off every event (as torch 2.10-2.11 build them), the dtypes matched from the raw
    events equal torch's own wherever torch has them; where it has not, they are all found."""
    prof = cp.profile(cp.script({"fp32"}).train, 1, TEXT)
    events = prof.events()
    before = [list(e.input_dtypes) for e in events]
    assert sum(1 for d in before if "float" in d) > 10
    for event in events:
        del event.input_dtypes
    cp.add_input_dtypes(prof)
    assert [list(e.input_dtypes) for e in events] == before


def test_a_sound_script_may_feed_its_batches_through_dataloader_workers():
    sound = cp.script({"small_batch"}, workers=2)
    assert "num_workers=2" in sound.source and "T.WindowDataset(T.encode(text)" in sound.source
    assert "TokenizingDataset" not in sound.source
    assert "num_workers" not in cp.script({"loader"}, workers=2).source  # the planted one
    prof = cp.profile(sound.train, 1, TEXT)
    names = {e.name for e in prof.events()}
    assert any("_MultiProcessingDataLoaderIter.__next__" in n for n in names), names
    assert cp.tokens_per_step(sound.train, TEXT) == cp.SMALL_BATCH * cp.SEQ_LEN
    with pytest.raises(ValueError, match="workers must be a whole number"):
        cp.script(set(), workers=-1)


def test_a_profile_exports_its_chrome_trace_as_often_as_asked(tmp_path):
    """torch saves a kineto trace once ("Trace is already saved"); a diagnose cell run twice on
    one profile, or a checker that hands one profile to every check, exports it again."""
    import gzip
    import json

    prof = cp.profile(cp.script(set()).train, 1, TEXT)
    for name in ("first.json", "again.json"):
        prof.export_chrome_trace(str(tmp_path / name))
    prof.export_chrome_trace(str(tmp_path / "packed.json.gz"))
    first = json.loads((tmp_path / "first.json").read_text())
    assert first["traceEvents"]
    assert json.loads((tmp_path / "again.json").read_text()) == first
    with gzip.open(tmp_path / "packed.json.gz") as packed:
        assert json.loads(packed.read()) == first
