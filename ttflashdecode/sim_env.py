"""Tenstorrent's simulator (ttsim) as a ttnn backend: build it from source, find it, and point ttnn at it.

ttsim is one ``libttsim.so`` that tt-metal loads when ``TT_METAL_SIMULATOR`` names it; the folder holding it must also
hold the chip's SOC descriptor as ``soc_descriptor.yaml`` (ttsim's README). It is a functional simulator (no silicon
timing). ttnn then JIT-builds firmware and kernels with Tenstorrent's RISC-V compiler (sfpi), which ships only as a
GitHub release binary; without it ttnn stops at its JIT build (docs/RUNTIME.md).

``python -m ttflashdecode.sim_env setup`` (``./run sim-setup``) builds libttsim from the vendored source tarball named
by ``$TTFLASHDECODE_TTSIM_SRC`` (default: the newest ``ttsim-*-src.tar.gz`` in ``../shared/vendor`` beside the
checkout) into ``$TTFLASHDECODE_TTSIM_DIR`` (default ``~/.cache/ttflashdecode/ttsim``), once per tarball content.
:func:`configure` sets the process environment for it; it must run before the first ``import ttnn``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

SOURCE_ENV = "TTFLASHDECODE_TTSIM_SRC"
DIR_ENV = "TTFLASHDECODE_TTSIM_DIR"
SIMULATOR_ENV = "TT_METAL_SIMULATOR"
DEFAULT_DIR = Path.home() / ".cache" / "ttflashdecode" / "ttsim"
# ttsim's build configs (src/rules.py) for the boards the package targets.
CONFIGS = {"n150": "wh", "n300": "wh_x2", "t3k": "wh_x8"}
# The SOC descriptor each Wormhole config needs beside libttsim.so (ttsim README: wormhole_b0_80_arch.yaml).
SOC_DESCRIPTOR = "wormhole_b0_80_arch.yaml"
# Where tt-metal looks for sfpi (the wheel's libtt_metal: "sfpi not found at {} or {}").
SFPI_RELATIVE = Path("runtime") / "sfpi"
SFPI_SYSTEM = Path("/opt/tenstorrent/sfpi")
SFPI_GXX = Path("compiler") / "bin" / "riscv-tt-elf-g++"


class SimSetupError(RuntimeError):
    """ttsim could not be built or found; the message says what to do."""


def _wheel_root() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("ttnn")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def default_source() -> Path | None:
    """The newest vendored ttsim source tarball beside the checkout (``../shared/vendor``), or None."""
    vendor = Path(__file__).resolve().parents[2] / "shared" / "vendor"
    found = sorted(vendor.glob("ttsim-*-src.tar.gz")) if vendor.is_dir() else []
    return found[-1] if found else None


def source_tarball() -> Path:
    """The tarball to build from: ``$TTFLASHDECODE_TTSIM_SRC`` or :func:`default_source`."""
    env = os.environ.get(SOURCE_ENV)
    path = Path(env) if env else default_source()
    if path is None:
        raise SimSetupError(
            f"no ttsim source: set {SOURCE_ENV} to a ttsim-<version>-src.tar.gz "
            f"(https://github.com/tenstorrent/ttsim, Apache-2.0)"
        )
    if not path.is_file():
        raise SimSetupError(f"{SOURCE_ENV}={str(path)!r}: expected an existing ttsim-<version>-src.tar.gz")
    return path


def install_dir() -> Path:
    return Path(os.environ.get(DIR_ENV) or DEFAULT_DIR)


def simulator_dir(board: str = "n150") -> Path:
    """The folder holding ``libttsim.so`` and ``soc_descriptor.yaml`` for ``board``."""
    if board not in CONFIGS:
        raise ValueError(f"board={board!r}: expected one of {', '.join(CONFIGS)}")
    return install_dir() / CONFIGS[board]


def simulator_path(board: str = "n150") -> Path | None:
    """The built ``libttsim.so`` for ``board`` with its SOC descriptor beside it, or None."""
    d = simulator_dir(board)
    lib = d / "libttsim.so"
    return lib if lib.is_file() and (d / "soc_descriptor.yaml").is_file() else None


def sfpi_compiler() -> Path | None:
    """Tenstorrent's RISC-V compiler where tt-metal looks for it (the ttnn wheel's runtime/sfpi, then
    /opt/tenstorrent/sfpi), or None."""
    wheel = _wheel_root()
    for root in ([wheel / SFPI_RELATIVE] if wheel else []) + [SFPI_SYSTEM]:
        if (root / SFPI_GXX).is_file():
            return root / SFPI_GXX
    return None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def build(board: str = "n150", jobs: int | None = None, log=print) -> Path:
    """Builds libttsim for ``board`` from :func:`source_tarball` into :func:`simulator_dir` (skipped when that tarball
    was built there already) and places the SOC descriptor beside it. Returns the library's path."""
    tarball = source_tarball()
    dest = simulator_dir(board)
    stamp = dest / "source.sha256"
    digest = _sha256(tarball)
    if simulator_path(board) and stamp.is_file() and stamp.read_text().strip() == digest:
        log(f"ttsim: {dest / 'libttsim.so'} is up to date (built from {tarball.name})")
        return dest / "libttsim.so"
    wheel = _wheel_root()
    soc = wheel / "tt_metal" / "soc_descriptors" / SOC_DESCRIPTOR if wheel else None
    if soc is None or not soc.is_file():
        raise SimSetupError(f"the ttnn wheel's SOC descriptor {SOC_DESCRIPTOR} was not found (is ttnn installed?)")
    if shutil.which("g++") is None:
        raise SimSetupError("building ttsim needs g++ with C++20 support (not found on PATH)")
    config = CONFIGS[board]
    jobs = jobs or os.cpu_count() or 1
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".build-{config}-") as tmp:
        log(f"ttsim: unpacking {tarball}")
        with tarfile.open(tarball) as tar:
            tar.extractall(tmp, filter="data")
        (top,) = [p for p in Path(tmp).iterdir() if p.is_dir()]
        target = f"_out/release_{config}/libttsim.so"
        log(f"ttsim: building {target} with {jobs} job(s) (about 4 minutes on one core)")
        start = time.monotonic()
        r = subprocess.run(
            [sys.executable, "../make.py", "-j", str(jobs), target], cwd=top / "src", capture_output=True, text=True
        )
        if r.returncode != 0:
            raise SimSetupError(f"ttsim build failed (exit {r.returncode}):\n{(r.stdout + r.stderr)[-4000:]}")
        staged = Path(tmp) / "out"
        staged.mkdir()
        shutil.copy2(top / "src" / target, staged / "libttsim.so")
        shutil.copyfile(soc, staged / "soc_descriptor.yaml")
        (staged / "source.sha256").write_text(digest + "\n")
        if dest.exists():
            shutil.rmtree(dest)
        staged.rename(dest)
        log(f"ttsim: built {dest / 'libttsim.so'} in {time.monotonic() - start:.0f} s")
    return dest / "libttsim.so"


def environment(board: str = "n150") -> dict[str, str]:
    """The variables that make ttnn open the simulated ``board`` (ttsim README; TTSIM.md): the simulator, slow
    dispatch (ttsim does not support fast dispatch) and no SFPLOADMACRO (advised for ttsim)."""
    lib = simulator_path(board)
    if lib is None:
        raise SimSetupError(f"ttsim for {board} is not built in {simulator_dir(board)}: run ./run sim-setup")
    return {SIMULATOR_ENV: str(lib), "TT_METAL_SLOW_DISPATCH_MODE": "1", "TT_METAL_DISABLE_SFPLOADMACRO": "1"}


def configure(board: str = "n150") -> dict[str, str]:
    """Sets :func:`environment` in this process, replacing a mock cluster descriptor (the simulator is the cluster).
    Must run before the first ``import ttnn``."""
    if "ttnn" in sys.modules:
        raise SimSetupError("sim_env.configure must run before ttnn is imported (ttnn reads its environment once)")
    env = environment(board)
    os.environ.pop("TT_METAL_MOCK_CLUSTER_DESC_PATH", None)
    os.environ.update(env)
    return env


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ttflashdecode.sim_env", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("setup", help="build libttsim from the vendored source (once per tarball)")
    s.add_argument("--board", default="n150", choices=sorted(CONFIGS))
    s.add_argument("-j", "--jobs", type=int, default=None)
    sub.add_parser("status", help="where ttsim and sfpi are, or why not")
    args = p.parse_args(argv)
    if args.cmd == "setup":
        try:
            lib = build(args.board, args.jobs)
        except SimSetupError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        print(f"{SIMULATOR_ENV}={lib}")
        return 0
    for board in CONFIGS:
        print(f"ttsim {board}: {simulator_path(board) or 'not built (./run sim-setup --board ' + board + ')'}")
    print(f"sfpi: {sfpi_compiler() or 'absent (ttnn looks in <ttnn>/runtime/sfpi and /opt/tenstorrent/sfpi)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
