"""Program configs: how a FlashDecode call is laid out on the core grid.

:class:`ProgramConfig` mirrors the fields of ``ttnn.SDPAProgramConfig`` that FlashDecode uses, so a
config written for upstream ``ttnn.transformer.scaled_dot_product_attention_decode`` works here and
back. Named configs live as YAML in the package's ``program_configs/`` directory, shipped in the wheel (the checkout's
top-level ``program_configs`` is a link to it) (``load_program_config("llama-3.1-8b/n150")``); each file says in a
comment what it was tuned for.

``"auto"`` (:data:`AUTO`, :class:`AutoProgramConfig`) is the default (what the op and
:class:`~ttflashdecode.ops.decode.wrapper.FlashDecodeWrapper` use when no program_config is given): the grid use,
k_chunk_size and max_cores_per_head_batch come from the tuned table shipped in the package when it holds the call's
shape, else from the fixed rule (:mod:`ttflashdecode.plan.auto`; a lookup, nothing compiled or run). ``"tune"``
(:data:`TUNE`) or a function (:class:`ChosenProgramConfig`) opt in to choosing per shape at the first call: ``"tune"``
runs the candidates through the emulator's timing model (:mod:`ttflashdecode.tuning`), a function decides itself.
Explicit configs (ProgramConfig, ``ttnn.SDPAProgramConfig``, named configs) are planned exactly as written.

ttnn is imported only inside the functions that convert to or from ttnn, so planning and config
loading stay usable (and fast) without it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

TILE = 32

# Wormhole N150 compute grid (WORMHOLE.md). Used when neither a config nor a device says otherwise.
DEFAULT_GRID: tuple[int, int] = (8, 8)

# The reduction tree merges a group's partials in ceil(log2 N) rounds; like upstream, cap a group at
# 64 cores (6 rounds) so the partial-in buffer and the kernels' round loop have a fixed bound.
MAX_CORES_PER_HEAD_BATCH = 64

# Where named configs are looked up: $TTFLASHDECODE_PROGRAM_CONFIGS first (a user's own configs), then the
# package's program_configs/ (package data: an installed wheel has them too).
PROGRAM_CONFIGS_ENV_VAR = "TTFLASHDECODE_PROGRAM_CONFIGS"
PROGRAM_CONFIGS_DIR = Path(__file__).resolve().parent / "program_configs"


def _is_int(value: Any) -> bool:
    # bool is an int subclass; `k_chunk_size: true` in a YAML file is a mistake, not a 1.
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class ProgramConfig:
    """The FlashDecode subset of ``ttnn.SDPAProgramConfig``.

    compute_with_storage_grid_size: (x, y) cores the op may use, counted from logical core (0, 0).
    q_chunk_size: unused by decode (one query token per user); kept for parity with ttnn. 0 or a
        positive multiple of 32.
    k_chunk_size: KV positions a core reads per step. 0 lets the planner choose (see
        ``plan.default_k_chunk_size``); otherwise a positive multiple of 32.
    exp_approx_mode: the softmax's exp. True (the default) or None (unset, as ``ttnn.SDPAProgramConfig`` leaves
        it): the approximate exp, as upstream's sdpa_decode factory reads unset; False: the exact exp (several times
        the SFPU time a tile, docs/TIMING.md). Both measured against upstream's: README "Precision"
        (``perf/precision_sweep.py --exp``).
    max_cores_per_head_batch: most cores that split one (batch, kv head) group, 1..64.
    """

    compute_with_storage_grid_size: tuple[int, int]
    q_chunk_size: int = 0
    k_chunk_size: int = 0
    exp_approx_mode: bool = True
    max_cores_per_head_batch: int = 16

    def __post_init__(self) -> None:
        grid = self.compute_with_storage_grid_size
        if not isinstance(grid, (tuple, list)) or len(grid) != 2 or not all(_is_int(v) and v > 0 for v in grid):
            raise ValueError(f"compute_with_storage_grid_size={grid!r}: expected (x, y), two positive integers")
        # Lists come from YAML; store a tuple so the config stays hashable.
        object.__setattr__(self, "compute_with_storage_grid_size", (grid[0], grid[1]))
        for name in ("q_chunk_size", "k_chunk_size"):
            value = getattr(self, name)
            if not _is_int(value) or value < 0 or value % TILE:
                raise ValueError(f"{name}={value!r}: expected 0 (planner chooses) or a positive multiple of {TILE}")
        if self.exp_approx_mode is None:
            # Unset, as ttnn's optional field: the approximate exp, upstream's reading of unset. Stored as True so a
            # config written either way plans (and keys) the same program.
            object.__setattr__(self, "exp_approx_mode", True)
        if not isinstance(self.exp_approx_mode, bool):
            raise ValueError(f"exp_approx_mode={self.exp_approx_mode!r}: expected true, false or None (unset: true)")
        m = self.max_cores_per_head_batch
        if not _is_int(m) or not 1 <= m <= MAX_CORES_PER_HEAD_BATCH:
            raise ValueError(
                f"max_cores_per_head_batch={m!r}: expected an integer in 1..{MAX_CORES_PER_HEAD_BATCH}"
                " (the reduction tree has at most 6 rounds)"
            )

    @property
    def num_cores(self) -> int:
        x, y = self.compute_with_storage_grid_size
        return x * y

    # ---- ttnn interop -------------------------------------------------------------------------

    def to_ttnn(self):
        """The equivalent ``ttnn.SDPAProgramConfig``."""
        from ttflashdecode.backend import import_ttnn

        ttnn = import_ttnn()
        return ttnn.SDPAProgramConfig(
            compute_with_storage_grid_size=self.compute_with_storage_grid_size,
            q_chunk_size=self.q_chunk_size,
            k_chunk_size=self.k_chunk_size,
            exp_approx_mode=self.exp_approx_mode,
            max_cores_per_head_batch=self.max_cores_per_head_batch,
        )

    @classmethod
    def from_ttnn(cls, cfg) -> ProgramConfig:
        """Convert a ``ttnn.SDPAProgramConfig``.

        Raises ValueError for ttnn options this package does not implement (sub_core_grids,
        max_k_splits != 1, matmul_math_fidelity, segmented_accumulation) rather than ignore them.
        """
        unsupported = {
            "sub_core_grids": (getattr(cfg, "sub_core_grids", None), None),
            "max_k_splits": (getattr(cfg, "max_k_splits", 1), 1),
            "matmul_math_fidelity": (getattr(cfg, "matmul_math_fidelity", None), None),
            "segmented_accumulation": (getattr(cfg, "segmented_accumulation", False), False),
        }
        for name, (value, supported) in unsupported.items():
            if value != supported:
                raise ValueError(
                    f"SDPAProgramConfig.{name}={value!r}: not supported by ttflashdecode (expected {supported!r})"
                )
        grid = cfg.compute_with_storage_grid_size
        return cls(
            compute_with_storage_grid_size=(int(grid.x), int(grid.y)),
            q_chunk_size=int(cfg.q_chunk_size),
            k_chunk_size=int(cfg.k_chunk_size),
            # ttnn's exp_approx_mode is optional; upstream's factory reads unset as the approximate exp, and so does
            # this package (README "Precision"): a config moves between the two ops with the same exp.
            exp_approx_mode=True if cfg.exp_approx_mode is None else bool(cfg.exp_approx_mode),
            max_cores_per_head_batch=int(cfg.max_cores_per_head_batch),
        )

    @classmethod
    def coerce(cls, value, default_grid: tuple[int, int] = DEFAULT_GRID) -> ProgramConfig:
        """Accept a ProgramConfig, a ``ttnn.SDPAProgramConfig``, a named config, ``"auto"``, ``"tune"``, a function
        or None.

        None gives the fixed default rule on ``default_grid`` (planner-chosen k_chunk_size): what the planner alone
        (:func:`ttflashdecode.plan.plan`) uses. ``"auto"`` gives :class:`AutoProgramConfig` on ``default_grid``;
        ``"tune"`` and a function give :class:`ChosenProgramConfig` on ``default_grid``.
        """
        if isinstance(value, ProgramConfig):
            return value
        if value is None:
            return cls(compute_with_storage_grid_size=tuple(default_grid))
        if isinstance(value, str) and value == AUTO:
            return AutoProgramConfig(compute_with_storage_grid_size=tuple(default_grid))
        if isinstance(value, str) and value == TUNE:
            return ChosenProgramConfig(compute_with_storage_grid_size=tuple(default_grid), chooser=TUNE)
        if isinstance(value, (str, Path)):
            return load_program_config(value)
        # Check the name first so an obviously wrong argument does not cost a ttnn import.
        if type(value).__name__ == "SDPAProgramConfig":
            from ttflashdecode.backend import import_ttnn

            if isinstance(value, import_ttnn().SDPAProgramConfig):
                return cls.from_ttnn(value)
        if callable(value) and not isinstance(value, type):
            return ChosenProgramConfig(compute_with_storage_grid_size=tuple(default_grid), chooser=value)
        raise TypeError(
            f"program_config={value!r} ({type(value).__name__}): expected ProgramConfig, "
            "ttnn.SDPAProgramConfig, a program config name, 'auto', 'tune', a function, or None"
        )


AUTO = "auto"


TUNE = "tune"


@dataclass(frozen=True)
class AutoProgramConfig(ProgramConfig):
    """``program_config="auto"`` or None at the op: grid use, k_chunk_size and max_cores_per_head_batch from the tuned
    table shipped in the package for the call's shape, else the fixed rule (:mod:`ttflashdecode.plan.auto`, which
    resolves it before planning; a lookup, never a model run).

    Its fields are the fixed default rule's on the device grid (k_chunk_size 0, max_cores_per_head_batch 16), which
    is what auto is for a shape the table does not hold; it never equals a ProgramConfig with the same fields, so
    plan keys of auto and explicit configs stay apart.
    """


@dataclass(frozen=True)
class ChosenProgramConfig(ProgramConfig):
    """``program_config="tune"`` or a function: the config is chosen per call shape at its first call.

    ``chooser`` is :data:`TUNE` (the timing model's choice, :func:`ttflashdecode.tuning.tune`, with its disk cache)
    or a function taking a :class:`ttflashdecode.plan.auto.PlanRequest` (the call's shapes, device grid, fp32
    accumulation and L1 budget) and returning the ProgramConfig to plan with, or None for auto's choice. The other
    fields are the rule's on the device grid, as :class:`AutoProgramConfig`'s. Two configs are equal when their
    choosers are the same object.
    """

    chooser: Callable | str = field(default=TUNE, compare=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (self.chooser == TUNE or callable(self.chooser)):
            raise ValueError(f"chooser={self.chooser!r}: expected {TUNE!r} or a function of a PlanRequest")


def is_auto(config) -> bool:
    """Whether ``config`` is the default's table-or-rule choice."""
    return isinstance(config, AutoProgramConfig)


def is_chosen(config) -> bool:
    """Whether ``config`` is chosen at the first call of a shape (``"tune"`` or a function)."""
    return isinstance(config, ChosenProgramConfig)


# ---- named configs on disk -------------------------------------------------------------------


def program_configs_dirs() -> list[Path]:
    """Directories searched for named configs, in order."""
    dirs = []
    if os.environ.get(PROGRAM_CONFIGS_ENV_VAR):
        dirs.append(Path(os.environ[PROGRAM_CONFIGS_ENV_VAR]))
    dirs.append(PROGRAM_CONFIGS_DIR)
    return dirs


def list_program_configs() -> list[str]:
    """Names (e.g. ``"llama-3.1-8b/n150"``) of every config found, sorted, first directory wins."""
    names: set[str] = set()
    for root in program_configs_dirs():
        if root.is_dir():
            names.update(p.relative_to(root).with_suffix("").as_posix() for p in root.rglob("*.yaml"))
    return sorted(names)


def _config_path(name: str) -> Path:
    if ".." in Path(name).parts or Path(name).is_absolute():
        raise ValueError(f"program config name={name!r}: expected a relative name like 'llama-3.1-8b/n150'")
    for root in program_configs_dirs():
        path = root / f"{name}.yaml"
        if path.is_file():
            return path
    looked = ", ".join(str(d) for d in program_configs_dirs())
    raise FileNotFoundError(
        f"program config {name!r} not found (looked for {name}.yaml under: {looked}; set "
        f"${PROGRAM_CONFIGS_ENV_VAR} to add a directory). Available: "
        f"{', '.join(list_program_configs()) or 'none'}"
    )


def load_program_config(name_or_path: str | Path) -> ProgramConfig:
    """Load a named config (``"llama-3.1-8b/n150"``) or a YAML file (a Path, or a str ending .yaml).

    The file must be a mapping of ProgramConfig fields. Unknown fields, wrong types and bad values
    raise ValueError naming the file and the field.
    """
    if isinstance(name_or_path, Path) or str(name_or_path).endswith((".yaml", ".yml")):
        path = Path(name_or_path)
        if not path.is_file():
            raise FileNotFoundError(f"program config file {path} does not exist")
    else:
        path = _config_path(str(name_or_path))

    return _load_config_file(path)


def _load_config_file(path: Path) -> ProgramConfig:
    """Parse and validate a config file. Not cached: the op reads a named config once per device and config
    (:mod:`ttflashdecode.device_cache`), a :class:`~ttflashdecode.ops.decode.wrapper.FlashDecodeWrapper` once."""
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ValueError(f"{path}: not valid YAML: {e}") from e
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of ProgramConfig fields, got {type(data).__name__}")

    known = {f.name: f for f in fields(ProgramConfig)}
    for key in data:
        if key not in known:
            raise ValueError(f"{path}: unknown field {key!r}; expected one of {', '.join(known)}")
    if "compute_with_storage_grid_size" not in data:
        raise ValueError(f"{path}: missing required field 'compute_with_storage_grid_size'")

    # Types first, so the message says "wrong type" rather than "bad value" for `k_chunk_size: "64"`.
    for key, value in data.items():
        if key == "compute_with_storage_grid_size":
            ok = isinstance(value, list) and len(value) == 2 and all(_is_int(v) for v in value)
            expected = "a list of two integers [x, y]"
        elif key == "exp_approx_mode":
            ok, expected = isinstance(value, bool), "true or false"
        else:
            ok, expected = _is_int(value), "an integer"
        if not ok:
            raise ValueError(f"{path}: field {key!r}={value!r} has the wrong type: expected {expected}")

    try:
        return ProgramConfig(**data)
    except ValueError as e:
        # ProgramConfig's message starts with the field name and value.
        raise ValueError(f"{path}: {e}") from e
