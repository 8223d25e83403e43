"""The kernels' shared header and the planner implement the same chunk rule and reduction tree."""

from __future__ import annotations

import ctypes
import random

import pytest

from tests_support_paths import DEVICE_KERNELS, HOST_SHIMS
from ttflashdecode import plan as planner

SKIPPED = 0xFFFFFFFF


@pytest.fixture(scope="module")
def rules():
    from emulator.cxx import build_shared

    lib = ctypes.CDLL(str(build_shared("chunk_rule", [HOST_SHIMS / "chunk_rule_shim.cpp"], [f"-I{DEVICE_KERNELS}"])))
    u32, p32 = ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32)
    lib.fd_chunk_range.argtypes = [u32, u32, u32, u32, u32, u32, p32, p32]
    for name, nargs in (
        ("fd_active_cores", 5),
        ("fd_send_round", 1),
        ("fd_receives_in_round", 3),
        ("fd_tree_rounds", 1),
    ):
        getattr(lib, name).argtypes = [u32] * nargs
        getattr(lib, name).restype = u32
    return lib


def _kernel_range(lib, cur_pos, sk, i, n, q_len, window):
    start, count = ctypes.c_uint32(), ctypes.c_uint32()
    lib.fd_chunk_range(SKIPPED if cur_pos == -1 else cur_pos, sk, i, n, q_len, window, start, count)
    return start.value, count.value


def test_chunk_rule_matches_planner(rules):
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    for _ in range(3000):
        sk = 32 * rng.choice([1, 2, 4, 8, 16])
        n = rng.randint(1, 64)
        q_len = rng.randint(1, 8)
        window = rng.choice([0, 0, rng.randint(1, 3000)])
        cur_pos = rng.choice([-1, rng.randint(q_len - 1, 8191)])
        for i in range(n):
            expected = planner.chunk_range(cur_pos, sk, i, n, q_len, window)
            got = _kernel_range(rules, cur_pos, sk, i, n, q_len, window)
            # A core without work may report any start; only its count matters.
            assert got[1] == expected[1] and (got[1] == 0 or got == expected), (seed, cur_pos, sk, i, n, q_len, window)
        active = rules.fd_active_cores(SKIPPED if cur_pos == -1 else cur_pos, sk, n, q_len, window)
        assert active == planner.active_cores(cur_pos, sk, n, q_len, window), (seed, cur_pos, sk, n, q_len, window)


def test_reduction_tree_matches_planner(rules):
    for n in range(1, 65):
        assert rules.fd_tree_rounds(n) == planner.tree_rounds(n)
        for i in range(1, n):
            assert rules.fd_send_round(i) == planner.send_round(i)
        for active in range(1, n + 1):
            for i in range(active):
                for r in range(planner.tree_rounds(n)):
                    assert bool(rules.fd_receives_in_round(i, r, active)) == planner.receives_in_round(i, r, active)
                kernel_rounds = [r for r in range(planner.tree_rounds(n)) if rules.fd_receives_in_round(i, r, active)]
                if i:
                    kernel_rounds = [r for r in kernel_rounds if r < planner.send_round(i)]
                assert kernel_rounds == planner.receive_rounds(i, active), (n, active, i)
