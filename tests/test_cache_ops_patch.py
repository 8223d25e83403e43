"""patch_ttnn() and the cache ops and tensor calls outside attention: ttnn.update_cache / ttnn.fill_cache /
ttnn.experimental.paged_fill_cache routed to this package with upstream's forms, and ttnn's own tensor functions
meeting emulator tensors (routed to the emulator, or a clear EmulatorTensorError)."""

from __future__ import annotations

import pytest
import torch

import ttflashdecode
from decode_harness import generator, seed_for, tag
from packer_model import packed_by_the_packer
from ttemu.ttnn_env import import_ttnn
from ttflashdecode import ttnn_patch
from ttflashdecode.emulator_calls import EmulatorTensorError

ttnn = import_ttnn()
RM = dict(dtype=ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT)


@pytest.fixture(autouse=True)
def no_leaked_patch():
    assert not ttnn_patch.is_patched(), "a previous test left ttnn patched"
    yield
    assert not ttnn_patch.is_patched(), "the test left ttnn patched"


def _tile(dev, x, dtype="bfloat16", memory_config=None):
    return dev.from_torch(x, dtype=getattr(ttnn, dtype), layout=ttnn.TILE_LAYOUT, memory_config=memory_config)


def test_ttnn_update_cache_takes_upstreams_heads_major_input(emu_device):
    """ttnn.update_cache(cache, input, update_idx, batch_offset=): input [1, n_kv_heads, 32 (users padded), d]; every
    cache user u gets input row batch_offset + u of each head at update_idx (old tt models' form)."""
    seed = seed_for("test_ttnn_update_cache_takes_upstreams_heads_major_input")
    gen = generator(seed)
    b, n_kv, S, d, offset, pos = 3, 2, 64, 64, 5, 41
    cache = _tile(emu_device, torch.randn(b, n_kv, S, d, generator=gen), "bfloat8_b")
    new = torch.randn(1, n_kv, 32, d, generator=gen)
    expected = emu_device.to_torch(cache).float()
    for u in range(b):
        expected[u, :, pos] = packed_by_the_packer(new[0, :, offset + u], "bfloat8_b")
    with ttflashdecode.patch_ttnn():
        out = ttnn.update_cache(cache, _tile(emu_device, new), pos, batch_offset=offset)
    assert out is cache
    bad = (emu_device.to_torch(cache).float() != expected).nonzero().tolist()
    assert not bad, f"{tag(seed)}: {len(bad)} values differ, first at {bad[:3]}"


def test_ttnn_fill_ops_route_to_the_packages_programs(emu_device):
    """ttnn.fill_cache(cache, input, batch_idx) and ttnn.experimental.paged_fill_cache(cache, input, page_table,
    batch_idx=) (tt_transformers' prefill call) write the prefill as the package's ops do."""
    seed = seed_for("test_ttnn_fill_ops_route_to_the_packages_programs")
    gen = generator(seed)
    prefill = torch.randn(1, 1, 64, 32, generator=gen)
    cache = _tile(emu_device, torch.randn(2, 1, 128, 32, generator=gen))
    paged = _tile(emu_device, torch.randn(4, 1, 32, 32, generator=gen))
    table = torch.tensor([[3, 1], [0, 2]], dtype=torch.int32)
    expected, expected_paged = emu_device.to_torch(cache).float(), emu_device.to_torch(paged).float()
    stored = prefill.to(torch.bfloat16).float()
    expected[1, :, :64] = stored[0]
    expected_paged[0, :, :] = stored[0, :, :32]  # user 1's row [0, 2]: block 0, then block 2
    expected_paged[2, :, :] = stored[0, :, 32:]
    with ttflashdecode.patch_ttnn():
        ttnn.fill_cache(cache, _tile(emu_device, prefill), 1)
        ttnn.experimental.paged_fill_cache(
            paged, _tile(emu_device, prefill), emu_device.from_torch(table, **RM), batch_idx=1
        )
    assert torch.equal(emu_device.to_torch(cache).float(), expected), tag(seed)
    assert torch.equal(emu_device.to_torch(paged).float(), expected_paged), tag(seed)


def test_unsupported_cache_op_arguments_raise_naming_them(emu_device):
    cache = _tile(emu_device, torch.zeros(2, 1, 64, 32))
    rows = _tile(emu_device, torch.zeros(1, 2, 1, 32))
    with ttflashdecode.patch_ttnn():
        with pytest.raises(ValueError, match="num_kv_heads=2"):
            ttnn.experimental.paged_update_cache(cache, rows, update_idxs=[0, 1], num_kv_heads=2)
        with pytest.raises(ValueError, match="block_size=64: not supported by ttflashdecode.paged_fill_cache"):
            ttnn.experimental.paged_fill_cache(cache, rows, torch.zeros(1, 2, dtype=torch.int32), block_size=64)


def test_patch_routes_the_cache_ops_and_restores_them():
    originals = {n: getattr(ttnn.experimental, n) for n in ("paged_update_cache", "paged_fill_cache")}
    originals.update({n: getattr(ttnn, n) for n in ("update_cache", "fill_cache", "to_torch", "add")})
    with ttflashdecode.patch_ttnn():
        assert ttnn.experimental.paged_update_cache is ttnn_patch.paged_update_cache
        assert ttnn.experimental.paged_fill_cache is ttnn_patch.paged_fill_cache
        assert ttnn.update_cache is ttnn_patch.update_cache and ttnn.fill_cache is ttnn_patch.fill_cache
        assert ttnn.add is not originals["add"]
    for name, fn in originals.items():
        owner = ttnn.experimental if name.startswith("paged") else ttnn
        assert getattr(owner, name) is fn, name


def test_ttnn_tensor_calls_on_emulator_tensors(emu_device):
    """While patched: ttnn.from_torch(device=emu) uploads (ttnn's default ROW_MAJOR layout kept), ttnn.to_torch reads
    back (dtype= casts), ttnn.to_memory_config moves to L1 height-sharded and back to DRAM (same values; the same
    config returns the tensor itself), ttnn.copy_host_to_device_tensor rewrites in place, ttnn.deallocate frees."""
    seed = seed_for("test_ttnn_tensor_calls_on_emulator_tensors")
    x = torch.randn(1, 2, 8, 64, generator=generator(seed)).to(torch.bfloat16)
    with ttflashdecode.patch_ttnn():
        rm = ttnn.from_torch(x, dtype=ttnn.bfloat16, device=emu_device)
        assert rm.layout == ttnn.ROW_MAJOR_LAYOUT and rm.device() is emu_device
        t = ttnn.from_torch(
            x, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=emu_device, memory_config=ttnn.DRAM_MEMORY_CONFIG
        )
        assert torch.equal(ttnn.to_torch(t).float(), x.float())
        assert ttnn.to_torch(t, dtype=torch.float32).dtype == torch.float32
        assert ttnn.to_memory_config(t, ttnn.DRAM_MEMORY_CONFIG) is t
        cores = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(1, 0))])
        sharded_mc = ttnn.MemoryConfig(
            ttnn.TensorMemoryLayout.HEIGHT_SHARDED,
            ttnn.BufferType.L1,
            ttnn.ShardSpec(cores, [32, 64], ttnn.ShardOrientation.ROW_MAJOR),
        )
        sharded = ttnn.to_memory_config(t, sharded_mc)
        assert sharded.is_sharded() and torch.equal(ttnn.to_torch(sharded).float(), x.float())
        back = ttnn.to_memory_config(sharded, ttnn.DRAM_MEMORY_CONFIG)
        assert not back.is_sharded() and torch.equal(ttnn.to_torch(back).float(), x.float())
        pos = ttnn.from_torch(torch.tensor([3, 4], dtype=torch.int32), dtype=ttnn.int32, device=emu_device)
        ttnn.copy_host_to_device_tensor(ttnn.from_torch(torch.tensor([7, 9], dtype=torch.int32), dtype=ttnn.int32), pos)
        assert ttnn.to_torch(pos).tolist() == [7, 9]
        for tensor in (sharded, t):
            ttnn.deallocate(tensor)
            assert not tensor.is_allocated()


def test_other_ttnn_functions_name_the_emulator(emu_device):
    """A ttnn op given an emulator tensor says so and names the emulator's methods (not a binding TypeError); the
    same op on host tensors still runs ttnn's own code."""
    t = _tile(emu_device, torch.ones(1, 1, 32, 32))
    with ttflashdecode.patch_ttnn():
        with pytest.raises(EmulatorTensorError, match=r"ttnn\.add was given an emulator tensor.*device\.to_torch"):
            ttnn.add(t, t)
        with pytest.raises(EmulatorTensorError, match=r"ttnn\.experimental\.nlp_create_qkv_heads_decode"):
            ttnn.experimental.nlp_create_qkv_heads_decode(t, num_heads=1, num_kv_heads=1)
        host = ttnn.from_torch(torch.ones(2, 2), dtype=ttnn.bfloat16)  # no device: ttnn's own host tensor
        assert ttnn.to_torch(host).sum().item() == 4
