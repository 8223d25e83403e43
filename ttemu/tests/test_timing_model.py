"""The emulator's timing model on its own (include/emu/timing.h through ttemu.timing): calibration
against published Wormhole measurements (the figures and tolerances live in timing_calibration.FIGURES), and the
model's mechanics: routing, compute costs by op and fidelity, CB back-pressure, semaphore hand-off, determinism,
replay deadlocks, and the constant table in docs/TIMING.md matching the code's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ttemu import timing_calibration as cal
from ttemu.timing import (
    Barrier,
    Cb,
    Fidelity,
    Noc,
    Op,
    Proc,
    Regs,
    TimingModel,
    TimingReplayError,
    constants,
    dram,
    hops,
    worker_xy,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("fig", cal.FIGURES, ids=[f.key for f in cal.FIGURES])
def test_calibration_figure(fig):
    modelled = fig.modelled()
    err = fig.error(modelled)
    report = (
        f"{fig.key}: published {fig.published:g} {fig.unit} ({fig.source}), modelled {modelled:.4g}, "
        f"error {100 * err:+.1f}% (tolerance {100 * fig.tolerance:.0f}%)"
    )
    print(report)
    assert abs(err) <= fig.tolerance, report


@pytest.mark.parametrize("fig", [f for f in cal.FIGURES if f.draws], ids=lambda f: f.key)
def test_published_random_placement_is_a_plausible_draw_of_the_model(fig):
    # The published random-placement figure is ONE draw; it must lie inside the spread of the model's draws
    # (seeds 0 .. RANDOM_PLACEMENT_SEEDS - 1 of timing_calibration.random_placement).
    draws = fig.draws()
    assert min(draws) <= fig.published <= max(draws), (fig.key, fig.published, sorted(draws))


def test_placement_and_noc_order_like_silicon():
    # [isa-dram]: careful placement beats random on both NoCs, and random reads are far worse on NoC 1 (responses
    # from the DRAM columns travel along those columns first) than on NoC 0.
    best0 = cal.chip_dram_read_bandwidth(cal.best_placement(1, Noc.NOC0), Noc.NOC0)
    rand0, rand1 = cal.chip_dram_random(1, Noc.NOC0), cal.chip_dram_random(1, Noc.NOC1)
    assert best0 > 1.2 * rand0 > 1.2 * 1.5 * rand1, (best0, rand0, rand1)


def test_random_noc1_reads_congest_the_dram_columns():
    # [isa-dram]'s explanation of the NoC 1 collapse: responses to random reads on NoC 1 leave a DRAM tile going
    # -y first, so they pile up on the vertical links of the two DRAM columns (x = 0 and x = 5).
    m = cal._model()
    for core, bank in cal.random_placement(1, seed=3):
        r = m.add_risc(core, Proc.NCRISC)
        for _ in range(32):
            m.read(r, dram(bank), 8192, Noc.NOC1)
        m.barrier(r, Barrier.READ, noc=Noc.NOC1)
    m.run()
    top = m.busiest_links()[:4]
    assert all(lk.noc == Noc.NOC1 and lk.axis == 1 and lk.origin[0] in (0, 5) for lk in top), top


def test_small_dram_reads_from_many_cores_hit_the_endpoint_request_rate():
    # tt-metal #55898: a Wormhole DRAM endpoint accepts one read request per ~6.8 cycles per NoC. 24 cores each
    # reading 64 B pages from one bank: 24 x 128 requests cannot go faster than that, whatever the byte rate.
    m = cal._model()
    for core in range(24):
        r = m.add_risc(core, Proc.NCRISC)
        for _ in range(128):
            m.read(r, dram(0), 64)
        m.barrier(r, Barrier.READ)
    m.run()
    k = {c.name: c.value for c in constants()}
    assert m.duration_cycles >= 24 * 128 * k["kDramRequestCycles"]
    assert m.duration_cycles < 1.2 * 24 * 128 * k["kDramRequestCycles"] + 1000


def test_dram_bandwidth_grows_with_packet_size_like_the_published_table():
    # [dm-dram] Receiver, 64 transactions: 512 B -> 17.4, 2 KB -> 21.0, 8 KB -> 22.0 B/cycle.
    published = {512: 17.38, 2048: 21.04, 8192: 22.03}
    for size, bpc in published.items():
        modelled = 64 * size / cal.single_core_transfers("dram_read", 64, size)
        assert abs(modelled - bpc) / bpc < 0.10, (size, modelled, bpc)


def test_routing_follows_the_torus_directions():
    # NoC 0 goes +x then +y, NoC 1 goes -y then -x, on the 10 x 12 torus.
    assert hops((1, 1), (2, 1), Noc.NOC0) == 1 and hops((1, 1), (2, 1), Noc.NOC1) == 9
    assert hops((1, 1), (1, 2), Noc.NOC0) == 1 and hops((1, 1), (1, 2), Noc.NOC1) == 11
    assert hops((1, 1), (0, 0), Noc.NOC0) == 9 + 11 and hops((1, 1), (0, 0), Noc.NOC1) == 2
    # A request and its response on one NoC go round the whole ring(s).
    assert hops((1, 1), (5, 7), Noc.NOC0) + hops((5, 7), (1, 1), Noc.NOC0) == 10 + 12
    # Logical cores map onto the soc descriptor's worker columns/rows (column 5 and row 6 are DRAM / Ethernet).
    assert [worker_xy((8, 8), c)[0] for c in range(8)] == [1, 2, 3, 4, 6, 7, 8, 9]
    assert [worker_xy((8, 8), 8 * r)[1] for r in range(8)] == [1, 2, 3, 4, 5, 7, 8, 9]


def test_farther_reads_take_longer():
    m = TimingModel()
    near = m.add_risc(0, Proc.NCRISC)  # core (0,0) at (1,1) reads (1,0) at (2,1): same row
    far = m.add_risc(9, Proc.NCRISC)  # core (1,1) at (2,2) reads (0,0) at (1,1): other row and column
    m.read(near, 1, 32)
    m.barrier(near, Barrier.READ)
    m.read(far, 0, 32)
    m.barrier(far, Barrier.READ)
    m.run()
    # round trips: 10 hops (one ring) vs 22 (both rings), 9 cycles a hop
    assert m.risc_result(far).cycles - m.risc_result(near).cycles == pytest.approx(12 * 9, abs=1)


def test_transaction_id_barrier_waits_only_for_its_own_reads():
    def waited(trid_waited: int) -> float:
        m = TimingModel()
        r = m.add_risc(0, Proc.NCRISC)
        m.read(r, dram(0), 8192, trid=1)
        m.read(r, dram(1), 32, trid=2)
        m.barrier(r, Barrier.READ, trid=trid_waited)
        m.run()
        return m.risc_result(r).wait

    assert waited(2) + 8192 / 22.3 * 0.8 < waited(1)


def test_multicast_books_shared_links_once_and_reaches_far_cores_later():
    def write_time(multicast: bool) -> float:
        m = TimingModel()
        r = m.add_risc(0, Proc.BRISC)
        if multicast:
            m.write_multicast(r, 1, 7, 8192)
        else:
            for c in range(1, 8):
                m.write(r, c, 8192)
        m.barrier(r, Barrier.WRITE)
        m.run()
        return m.risc_result(r).cycles

    # One injection and one pass over the row's links instead of seven.
    assert write_time(True) < 0.4 * write_time(False)

    m = TimingModel()
    sem = 0x9020
    sender = m.add_risc(0, Proc.BRISC)
    waiters = []
    for c in range(1, 8):
        m.init_semaphore(c, sem, 0)
        waiters.append(m.add_risc(c, Proc.BRISC))
        m.sem_wait(waiters[-1], sem, 1)
    m.sem_inc_multicast(sender, 1, 7, sem, 1, Noc.NOC0)
    m.run()
    released = [m.risc_result(w).end for w in waiters]
    # NoC 0 runs +x along the row: each core is released one router hop after its west neighbour.
    steps = [b - a for a, b in zip(released, released[1:])]
    k = {c.name: c.value for c in constants()}
    assert all(s >= k["kHopCycles"] for s in steps), released


def _matmul_cycles(fidelity: Fidelity, tiles: int = 64) -> float:
    m = TimingModel()
    r = m.add_risc(0, Proc.COMPUTE)
    m.tile_regs(r, Regs.ACQUIRE)
    m.compute(r, Op.MATMUL, tiles, 0, 0, fidelity)
    m.tile_regs(r, Regs.COMMIT)
    m.run()
    return m.risc_result(r).lane_busy[1]


def test_matmul_cycles_by_fidelity():
    # 16 / 32 / 48 / 64 cycles a tile at LoFi / HiFi2 / HiFi3 / HiFi4 ([gemm]), plus one call's setup.
    per_tile = {f: (_matmul_cycles(f, 65) - _matmul_cycles(f, 1)) / 64 for f in Fidelity}
    assert per_tile == {Fidelity.LOFI: 16, Fidelity.HIFI2: 32, Fidelity.HIFI3: 48, Fidelity.HIFI4: 64}


def test_half_tiles_cost_half_the_math():
    # Upstream sdpa_decode multiplies 16-row (half) Q tiles: the matrix engine takes 8 rows a cycle, so a 16-row
    # in0 tile costs half a full tile's matmul; likewise an SFPU op on two of the four faces.
    def math(op: Op, fraction: float) -> float:
        m = TimingModel()
        r = m.add_risc(0, Proc.COMPUTE)
        m.compute(r, op, 64, 0, 0, Fidelity.HIFI2, tile_fraction=fraction)
        m.run()
        return m.risc_result(r).lane_busy[1]

    k = {c.name: c.value for c in constants()}
    for op in (Op.MATMUL, Op.SFPU_EXP):
        overhead = k["kTileOpOverhead"]
        assert math(op, 0.5) - overhead == pytest.approx((math(op, 1.0) - overhead) / 2)


def _exp_pipeline(approx: bool, tiles: int = 32) -> tuple[TimingModel, dict[str, int]]:
    """Reader: DRAM bf16 tiles -> CB 0 (2 pages); compute: exp -> CB 16 (2 pages); writer: CB 16 -> DRAM."""
    m = TimingModel()
    for cb in (0, 16):
        m.configure_cb(0, cb, 2)
    rd, cmp, wr = m.add_risc(0, Proc.NCRISC), m.add_risc(0, Proc.COMPUTE), m.add_risc(0, Proc.BRISC)
    for t in range(tiles):
        m.cb(rd, Cb.RESERVE_BACK, 0, 1)
        m.read(rd, dram(t % 12), 2048)
        m.barrier(rd, Barrier.READ)
        m.cb(rd, Cb.PUSH_BACK, 0, 1)

        m.cb(cmp, Cb.WAIT_FRONT, 0, 1)
        m.tile_regs(cmp, Regs.ACQUIRE)
        m.compute(cmp, Op.COPY, 1, 1, 2048)
        m.compute(cmp, Op.SFPU_EXP, 1, approx=approx)
        m.tile_regs(cmp, Regs.COMMIT)
        m.cb(cmp, Cb.POP_FRONT, 0, 1)
        m.cb(cmp, Cb.RESERVE_BACK, 16, 1)
        m.tile_regs(cmp, Regs.WAIT)
        m.pack(cmp, 1, 2048)
        m.tile_regs(cmp, Regs.RELEASE)
        m.cb(cmp, Cb.PUSH_BACK, 16, 1)

        m.cb(wr, Cb.WAIT_FRONT, 16, 1)
        m.write(wr, dram(t % 12), 2048, Noc.NOC1)
        m.barrier(wr, Barrier.WRITES_FLUSHED, noc=Noc.NOC1)
        m.cb(wr, Cb.POP_FRONT, 16, 1)
    m.barrier(wr, Barrier.WRITE, noc=Noc.NOC1)
    m.run()
    return m, {"reader": rd, "compute": cmp, "writer": wr}


def test_exact_exp_is_compute_bound_and_back_pressures_the_reader():
    exact, r = _exp_pipeline(approx=False)
    approx, _ = _exp_pipeline(approx=True)
    k = {c.name: c.value for c in constants()}
    # Exact exp (748 cycles a tile) dominates: ~32 x 748 cycles, and the reader spends most of its time waiting on
    # the full CB (cb_reserve_back) rather than on DRAM.
    assert exact.duration_cycles == pytest.approx(32 * (k["kExpAccurateTile"] + k["kTileOpOverhead"]), rel=0.1)
    reader = exact.risc_result(r["reader"])
    assert reader.wait > 0.7 * reader.cycles
    # With the approximation (189 cycles) the math lane does ~3.7x less work, and the pipeline becomes bound by the
    # reader's one-tile-per-barrier DRAM latency instead (~470 cycles a tile).
    math_exact = exact.risc_result(r["compute"]).lane_busy[1]
    math_approx = approx.risc_result(r["compute"]).lane_busy[1]
    assert 3.3 < math_exact / math_approx < 4.0
    assert 1.3 < exact.duration_cycles / approx.duration_cycles < 2.0


def test_consumer_never_starts_before_the_producers_push():
    m = TimingModel()
    m.configure_cb(0, 0, 4)
    prod, cons = m.add_risc(0, Proc.NCRISC), m.add_risc(0, Proc.BRISC)
    m.cb(prod, Cb.RESERVE_BACK, 0, 1)
    m.read(prod, dram(3), 8192)
    m.barrier(prod, Barrier.READ)
    m.cb(prod, Cb.PUSH_BACK, 0, 1)
    m.cb(cons, Cb.WAIT_FRONT, 0, 1)
    m.cb(cons, Cb.POP_FRONT, 0, 1)
    m.run()
    p, c = m.risc_result(prod), m.risc_result(cons)
    assert c.end > p.end  # the pop follows the push
    assert c.wait == pytest.approx(p.end - c.start, abs=30)  # it waited the read out


def test_semaphore_handoff_carries_the_senders_time():
    # Core 1 writes 8 KB into core 0 then increments core 0's semaphore; core 0 waits for it.
    m = TimingModel()
    sem = 0x9000
    m.init_semaphore(0, sem, 0)
    recv, send = m.add_risc(0, Proc.BRISC), m.add_risc(1, Proc.BRISC)
    m.sem_wait(recv, sem, 1)
    m.sem_set(recv, sem, 0)
    m.write(send, 0, 8192)
    m.barrier(send, Barrier.WRITE)
    m.sem_inc(send, 0, sem, 1)
    m.barrier(send, Barrier.ATOMIC)
    m.run()
    # the receiver is released after the write completed (~8 KB at 31 B/cycle + latency) plus the atomic's trip
    assert m.risc_result(recv).end > 8192 / 31.1 + 200
    assert m.risc_result(recv).end < m.risc_result(send).end  # before the sender's atomic ack returns


def test_a_wait_nothing_satisfies_is_a_replay_deadlock():
    m = TimingModel()
    m.init_semaphore(0, 0x9010, 0)
    r = m.add_risc(0, Proc.BRISC)
    m.sem_wait(r, 0x9010, 1)
    with pytest.raises(TimingReplayError, match="semaphore wait"):
        m.run()
    m2 = TimingModel()
    m2.init_semaphore(0, 0x9010, 0)
    m2.sem_wait(m2.add_risc(0, Proc.BRISC), 0x9010, 1)
    m2.run(check=False)
    st = m2.stats()
    assert not st.ok and "core 0 BRISC" in st.error and "semaphore wait" in st.error


def test_stats_json_gives_duration_and_a_per_core_per_risc_breakdown():
    exact, r = _exp_pipeline(approx=False)
    st = exact.stats()
    assert st.ok and st.error == ""
    assert st.duration_ns == pytest.approx(exact.duration_cycles)  # 1 GHz: a cycle is a ns
    assert st.duration_ns == pytest.approx(st.last_end_ns - st.first_start_ns)
    assert list(st.cores) == ["0,0"] and set(st.cores["0,0"]) == {"BRISC", "NCRISC", "TRISC"}
    for name, key in (("NCRISC", "reader"), ("TRISC", "compute"), ("BRISC", "writer")):
        t, raw = st.cores["0,0"][name], exact.risc_result(r[key])
        assert (t.start, t.end, t.busy, t.wait) == pytest.approx((raw.start, raw.end, raw.busy, raw.wait))
    reader = st.cores["0,0"]["NCRISC"]
    # a data-movement RISC's clock only moves by what it is charged or waits: the rest is transfers draining
    assert reader.busy + reader.wait <= reader.end - reader.start + 1e-6
    trisc = st.cores["0,0"]["TRISC"]
    assert trisc.lanes["math"] > trisc.lanes["unpack"] and trisc.lanes["math"] > trisc.lanes["pack"]
    assert sum(st.dram_bank_busy_ns) == pytest.approx(32 * 2048 / 22.3 + 32 * 2048 / 22.0, rel=0.01)
    assert st.busiest_links and st.trace_digest == f"{exact.trace_digest():016x}"


def _chip_trace(order: str) -> float:
    """48 readers and a multicast; events recorded RISC by RISC or interleaved round-robin (as host threads would
    interleave): the replay must not care."""
    m = TimingModel()
    pairs = cal.random_placement(4, seed=7)
    rs = [m.add_risc(core, Proc.NCRISC) for core, _ in pairs]
    steps = [
        [(lambda r=r, b=b: m.read(r, dram(b), 4096, Noc.NOC0)) for _ in range(16)]
        + [lambda r=r: m.barrier(r, Barrier.READ)]
        for r, (_, b) in zip(rs, pairs)
    ]
    mc = m.add_risc(63, Proc.BRISC)
    steps.append([lambda: m.write_multicast(mc, 0, 62, 2048, Noc.NOC0), lambda: m.barrier(mc, Barrier.WRITE)])
    if order == "sequential":
        for s in steps:
            for f in s:
                f()
    else:
        for k in range(max(map(len, steps))):
            for s in reversed(steps):
                if k < len(s):
                    s[k]()
    digest = m.trace_digest()
    m.run()
    return m.duration_cycles, digest


def test_replay_is_deterministic_whatever_the_recording_interleaving():
    a, b, c = _chip_trace("sequential"), _chip_trace("interleaved"), _chip_trace("sequential")
    assert a == b == c
    assert a[0] > 16 * 4096 / 22.3  # four readers share each bank


def test_recording_from_concurrent_threads_gives_the_same_replay():
    # The emulator records from one host thread per RISC; ctypes drops the GIL during each call, so these threads
    # really do append concurrently. Each thread owns its RISC's trace, so the replay cannot tell.
    import threading

    def run(concurrent: bool) -> tuple[float, int]:
        m = TimingModel()
        pairs = cal.random_placement(2, seed=11)
        rs = [m.add_risc(core, Proc.NCRISC) for core, _ in pairs]

        def record(r: int, bank: int) -> None:
            for k in range(200):
                m.read(r, dram(bank), 1088 + 32 * (k % 3))
                if k % 8 == 7:
                    m.barrier(r, Barrier.READ)
            m.barrier(r, Barrier.READ)

        if concurrent:
            threads = [threading.Thread(target=record, args=(r, b)) for r, (_, b) in zip(rs, pairs)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        else:
            for r, (_, b) in zip(rs, pairs):
                record(r, b)
        digest = m.trace_digest()
        m.run()
        return m.duration_cycles, digest

    assert run(True) == run(False) == run(True)


def test_docs_table_lists_the_codes_constants():
    doc = (REPO / "docs" / "TIMING.md").read_text()
    rows = {
        m.group(1): (float(m.group(2)), m.group(3))
        for m in re.finditer(r"^\| `(k\w+)` \| ([0-9.]+) \| [^|]+ \| ([MNCDA]) \|", doc, re.M)
    }
    code = {c.name: (c.value, c.kind) for c in constants()}
    assert rows == code
