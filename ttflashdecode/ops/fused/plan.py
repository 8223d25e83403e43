"""Where each half of a fused update + attention program runs: the attention's plan, the update's cores and the
semaphore between them (:class:`FusedPlan`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ttflashdecode.config import ProgramConfig
from ttflashdecode.ops.decode.pipeline import for_device, positions_bound
from ttflashdecode.ops.descriptors import ComputeSettings
from ttflashdecode.ops.work_split import split_units
from ttflashdecode.plan import DecodePlan


@dataclass(frozen=True)
class FusedPlan:
    """Where each part of a fused program runs."""

    decode: DecodePlan  # the attention's plan (on the config's grid, or that grid without its last row)
    update_cores: tuple[tuple[int, int], ...]  # logical cores of the cache update's kernels
    reserved_row: bool  # True: the attention was planned without the grid's last row, which runs the update
    sem_cache_updated: int  # the semaphore id the update counts its rows on

    @property
    def attention_cores(self) -> tuple[tuple[int, int], ...]:
        return tuple(c.core for c in self.decode.cores if c.role != "idle")


def plan_fused(backend, call, config: ProgramConfig, compute: ComputeSettings, num_units: int, new_output: bool = True):
    """(the attention's :class:`~ttflashdecode.ops.decode.pipeline.DecodePipeline`, :class:`FusedPlan`). The
    attention is planned on the config's grid; if that leaves fewer free cores of the device grid than
    ``min(num_units, grid width)``, it is planned again without the config grid's last row, and the update runs there
    (and on any other free core)."""
    gx, gy = config.compute_with_storage_grid_size
    want = min(num_units, gx)
    pipeline, decode = _plan_attention(backend, call, config, compute, new_output)
    free = _free_cores(backend.grid(), decode)
    reserved = False
    if len(free) < want and gy > 1:
        pipeline, decode = _plan_attention(
            backend, call, replace(config, compute_with_storage_grid_size=(gx, gy - 1)), compute, new_output
        )
        free, reserved = _free_cores(backend.grid(), decode), True
    if not free:
        raise ValueError(
            f"program_config: compute_with_storage_grid_size={(gx, gy)} leaves no core for the cache update"
        )
    sem_ids = [s.id for s in decode.semaphores]
    sem = max(sem_ids) + 1 if sem_ids else 0
    used = split_units(num_units, backend.grid(), free).cores  # the cores the update's kernels take
    return pipeline, FusedPlan(decode, used, reserved, sem)


def _plan_attention(backend, call, config: ProgramConfig, compute: ComputeSettings, new_output: bool):
    pipeline = for_device(backend.device, config, compute)
    decode = pipeline.plan_call(call, new_output=new_output, max_cur_pos=positions_bound(call, config))
    return pipeline, decode


def _free_cores(grid: tuple[int, int], decode: DecodePlan) -> list[tuple[int, int]]:
    """Cores of the device grid the attention does not use, row-major (the last rows first are not preferred: the
    update's split takes them in this order)."""
    busy = {c.core for c in decode.cores if c.role != "idle"}
    return [(x, y) for y in range(grid[1]) for x in range(grid[0]) if (x, y) not in busy]
