"""The reduction tree at other radices than 2: a group's partials merged by a radix-F tree (plan.merge_radix; F >= the
group's cores is a one-round gather at the root), checked against the golden with poisoned outputs (decode_harness).

The planner picks the radix (plan.rules.default_merge_radix: the model's fastest); these tests force it through that
rule's override, ``rules.MERGE_RADIX``, so each case's plan is asserted to carry the radix it forces (a plan cached
under another radix would fail that, not pass silently)."""

from __future__ import annotations

import pytest

from decode_harness import DecodeCase, assert_matches_golden, run_case
from ttemu.ttnn_env import import_ttnn
from ttflashdecode.plan import rules
from ttflashdecode.plan.rules import tree_rounds

ttnn = import_ttnn()

GATHER = 64  # above every group size: the one-round gather


@pytest.mark.parametrize(
    "cores, radix, kv_len, cur_pos",
    [
        (3, GATHER, 1088, 1000),  # gather, 3 cores
        (5, GATHER, 1152, 1100),  # gather, 5 cores (odd)
        (16, GATHER, 1216, 1200),  # gather, 16 cores
        (16, GATHER, 1280, 700),  # gather, 11 of 16 cores active (fewer chunks than cores)
        (16, 4, 1344, 1300),  # radix 4: two rounds of 3 children
        (13, 4, 1408, 800),  # radix 4, 13 cores of which 12 active: a short last round
        (7, 3, 1472, 1471),  # radix 3, odd group, chunk-aligned cur_pos
        (32, 6, 2112, 2100),  # radix 6 over 32 cores (the planner's choice there): two rounds of 5
        (32, 6, 2112, 1500),  # radix 6, 24 of 32 cores active: a short second round
        (32, GATHER, 2176, 2170),  # 31 partials in one merge: past one face's 16 columns, one exp a partial
    ],
)
def test_radix_tree_matches_golden(emu_device, monkeypatch, cores, radix, kv_len, cur_pos):
    monkeypatch.setattr(rules, "MERGE_RADIX", radix)
    case = DecodeCase(1, 8, 1, 64, kv_len, (cur_pos,), "bfloat16", k_chunk_size=64, max_cores_per_head_batch=cores)
    outcome = run_case(emu_device, case, to_device=_to_device(emu_device), to_torch=emu_device.to_torch)
    p = outcome.plan
    assert p.num_cores_per_head == cores and p.merge_radix == min(radix, cores)
    assert p.rounds == tree_rounds(cores, p.merge_radix)
    assert_matches_golden(outcome, case)


def _to_device(device):
    return lambda x, dtype, **kw: device.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT, **kw)


@pytest.mark.parametrize(
    "extra",
    [
        dict(cur_pos=(1400, -1, 333), attention_sink=True, sliding_window_size=900),  # sinks, skip, window
        dict(cur_pos=None, mask_heads=1),  # a user mask (the root's score-floor merge)
    ],
    ids=["sink-skip-window", "mask"],
)
def test_gather_with_root_merges_and_skipped_users(emu_device, monkeypatch, extra):
    """The gather's one-pass merge next to the root's sink / score-floor merge, a skipped user and a window."""
    monkeypatch.setattr(rules, "MERGE_RADIX", GATHER)
    case = DecodeCase(3, 8, 1, 64, 1536, kv_dtype="bfloat8_b", k_chunk_size=64, max_cores_per_head_batch=5, **extra)
    outcome = run_case(emu_device, case, to_device=_to_device(emu_device), to_torch=emu_device.to_torch)
    assert outcome.plan.num_cores_per_head == 5 and outcome.plan.merge_radix == 5 and outcome.plan.rounds == 1
    assert_matches_golden(outcome, case)


@pytest.mark.parametrize("fidelity, fp32", [("HiFi4", False), ("HiFi3", False), ("HiFi2", False), ("HiFi4", True)])
def test_merge_statistics_side_by_side_or_one_exp_a_partial(emu_device, monkeypatch, fidelity, fp32):
    """A merge takes its row statistics side by side (one-hot matmuls, one exp) with 16-bit intermediates at HiFi3 and
    HiFi4, and one max and one exp a partial otherwise (LoFi and HiFi2 drop SrcB's low mantissa bits; float32
    maxima would be rounded to the FPU's operand width). Both against the golden, 7 cores gathered, with sinks."""
    monkeypatch.setattr(rules, "MERGE_RADIX", GATHER)
    case = DecodeCase(
        2,
        8,
        1,
        64,
        1024,
        (1000, 700),
        "bfloat16",
        k_chunk_size=64,
        max_cores_per_head_batch=7,
        attention_sink=True,
        fp32_dest_acc_en=fp32,
    )
    config = ttnn.WormholeComputeKernelConfig(
        math_fidelity=getattr(ttnn.MathFidelity, fidelity), math_approx_mode=False, fp32_dest_acc_en=fp32
    )
    outcome = run_case(
        emu_device,
        case,
        to_device=_to_device(emu_device),
        to_torch=emu_device.to_torch,
        compute_kernel_config=config,
    )
    select = next((cb.num_pages for cb in outcome.plan.cbs if cb.name == "merge_select"), 0)
    assert outcome.plan.merge_radix == 7 and (select == 13) == (not fp32)
    assert_matches_golden(outcome, case)
