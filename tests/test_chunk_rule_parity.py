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
    from ttemu.tests.cxx import build_shared

    lib = ctypes.CDLL(str(build_shared("chunk_rule", [HOST_SHIMS / "chunk_rule_shim.cpp"], [f"-I{DEVICE_KERNELS}"])))
    u32, p32 = ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32)
    lib.fd_chunk_range.argtypes = [u32, u32, u32, u32, u32, u32, p32, p32]
    for name, nargs in (
        ("fd_active_cores", 5),
        ("fd_send_round", 2),
        ("fd_send_slot", 2),
        ("fd_children_in_round", 4),
        ("fd_receives_in_round", 4),
        ("fd_tree_rounds", 2),
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


@pytest.mark.parametrize("radix", [2, 3, 4, 8, 64])
def test_reduction_tree_matches_planner(rules, radix):
    for n in range(1, 65):
        rounds = planner.tree_rounds(n, radix)
        assert rules.fd_tree_rounds(n, radix) == rounds
        for i in range(1, n):
            assert rules.fd_send_round(i, radix) == planner.send_round(i, radix)
            assert rules.fd_send_slot(i, radix) == planner.send_slot(i, radix)
        for active in range(1, n + 1):
            for i in range(active):
                for r in range(rounds):
                    children = planner.children_in_round(i, r, active, radix)
                    assert rules.fd_children_in_round(i, r, active, radix) == children, (n, active, i, r)
                    assert bool(rules.fd_receives_in_round(i, r, active, radix)) == planner.receives_in_round(
                        i, r, active, radix
                    )
                # the kernels' loop: rounds until the first without children
                kernel_rounds = []
                for r in range(rounds):
                    if not rules.fd_children_in_round(i, r, active, radix):
                        break
                    kernel_rounds.append(r)
                assert kernel_rounds == planner.receive_rounds(i, active, radix), (n, active, i)
