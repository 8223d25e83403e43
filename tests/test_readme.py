"""The usage examples of the README and the user guide run as written, on the emulator, and every op call they make
matches the golden model (a page that drifts from the API, or shows an example that computes the wrong thing, fails
here)."""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

import torch

import ttflashdecode
from decode_harness import check_close, seed_for, tag
from ttflashdecode import golden

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PAGES = (README, REPO / "docs" / "USER_GUIDE.md")  # the pages whose examples run
OPS = (
    "scaled_dot_product_attention_decode",
    "paged_scaled_dot_product_attention_decode",
    "flash_multi_latent_attention_decode",
    "paged_flash_multi_latent_attention_decode",
)


CARD_ONLY = "# on a card"  # the first line of an example that needs a Wormhole card


def _python_blocks() -> list[tuple[Path, str]]:
    """Every runnable example: (page, code), the README's first."""
    blocks = [
        (page, block) for page in PAGES for block in re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
    ]
    return [(page, block) for page, block in blocks if not block.startswith(CARD_ONLY)]


def test_readme_has_runnable_examples():
    blocks = _python_blocks()
    assert sum(page == README for page, _ in blocks) >= 2, "README lost its usage examples"
    assert sum(page != README for page, _ in blocks) >= 4, "the user guide lost its usage examples"


def _host(x):
    """A device tensor's stored values (what the kernels read) as torch; a mesh tensor's as a list with one chip's
    values each; anything else unchanged."""
    if hasattr(x, "shards"):
        return _PerChip(_host(shard) for shard in x.shards)
    if hasattr(x, "device") and hasattr(x, "buffer_address"):
        return x.device().to_torch(x)
    return x


class _PerChip(list):
    """A mesh tensor's values, one chip's each (a plain list argument, such as cur_pos, is not one)."""


def _chip_calls(call) -> list[dict]:
    """A call on a mesh is one independent decode per chip (each chip holds its share of the heads): one call per
    chip, with that chip's values of every mesh tensor. A single-chip call is itself."""
    chips = {len(v) for v in [*call["args"].values(), call["out"]] if isinstance(v, _PerChip)}
    if not chips:
        return [call]
    (n,) = chips
    pick = lambda v, i: v[i] if isinstance(v, _PerChip) else v  # noqa: E731
    return [
        {
            **call,
            "args": {k: pick(v, i) for k, v in call["args"].items()},
            "out": pick(call["out"], i),
            "op": f"{call['op']} (chip {i})",
        }
        for i in range(n)
    ]


def _dtype_name(x) -> str:
    return str(x.dtype).rsplit(".", 1)[-1].lower()  # DataType.BFLOAT8_B -> bfloat8_b


def _called_from_readme(frame) -> bool:
    """Whether an op call is written in a README example (directly, or as ``ttnn.transformer.X(...)`` patched by
    ``ttflashdecode.patch_ttnn()``) rather than made by a library the example uses (the transformers integration)."""
    while frame is not None and frame.f_code.co_filename.endswith("ttnn_patch.py"):
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename in {str(page) for page in PAGES}


def _recording(op, calls: list):
    """``op``, recording each call: its arguments and output read back to torch at once (the example closes the
    device at its end, and later lines may reuse the names). ``ttnn.transformer``'s ops patched by
    ``ttflashdecode.patch_ttnn()`` call the package's functions, so their calls are recorded too."""
    signature = inspect.signature(op)

    def call(*args, **kwargs):
        direct = _called_from_readme(sys._getframe(1))
        returned = op(*args, **kwargs)
        out = returned[0] if kwargs.get("return_stats") else returned  # (output, DecodeResult) with return_stats
        arguments = signature.bind(*args, **kwargs).arguments
        calls.append(
            {
                "op": op.__name__,
                "direct": direct,
                "given": sorted(kwargs),
                "kv_dtype": _dtype_name(arguments["k"]),
                "k_is_v": arguments["k"] is arguments.get("v"),
                "args": {name: _host(value) for name, value in arguments.items()},
                "out": _float(_host(out)),
            }
        )
        return returned

    return call


def _float(x):
    return _PerChip(t.float() for t in x) if isinstance(x, _PerChip) else x.float()


def _recording_wrapper_run(run, calls: list):
    """``FlashDecodeWrapper.run``, recording each run like :func:`_recording`, with the options the wrapper's plan
    fixed (causality, window, scale, shared cache) among its arguments."""
    signature = inspect.signature(run)

    def call(self, *args, **kwargs):
        out = run(self, *args, **kwargs)
        arguments = dict(signature.bind(self, *args, **kwargs).arguments)
        del arguments["self"]
        planned = self.planned_call
        s = planned.shapes
        options = {
            "is_causal": s.is_causal,
            "sliding_window_size": s.sliding_window_size or None,
            "share_cache": s.share_cache,
            "scale": planned.scale,
        }
        if s.v_from_k:
            options["head_dim_v"] = s.v_head_dim
        calls.append(
            {
                "op": "FlashDecodeWrapper.run",
                "direct": False,
                "given": sorted(kwargs),
                "kv_dtype": _dtype_name(arguments["k"]),
                "k_is_v": arguments["k"] is arguments.get("v"),
                "args": {**options, **{name: _host(value) for name, value in arguments.items()}},
                "out": _float(_host(out[0] if isinstance(out, tuple) else out)),
            }
        )
        return out

    return call


def _golden(call) -> torch.Tensor:
    a = call["args"]
    q, k = a["q"].float(), a["k"].float()
    v = k[..., : a["head_dim_v"]] if "head_dim_v" in a else a["v"].float()  # MLA: V is K's first head_dim_v columns
    scale = a.get("scale")
    sink = a.get("attention_sink")
    if sink is not None and sink.shape[0] != 1:  # upstream's form: head h's unscaled value at (h, 0)
        n_q = q.shape[2]
        sink = (scale or k.shape[-1] ** -0.5) * sink.float()[:n_q, 0].reshape(1, n_q)
    cur_pos = a.get("cur_pos")
    if cur_pos is None and a.get("cur_pos_tensor") is not None:
        cur_pos = [int(p) for p in a["cur_pos_tensor"].reshape(-1).tolist()]
    is_causal = a.get("is_causal", True)
    mask = a.get("attn_mask")
    return golden.sdpa_decode(
        q,
        k,
        v,
        is_causal=is_causal,
        cur_pos=list(cur_pos) if is_causal else None,
        attn_mask=None if mask is None else mask.float(),
        scale=scale,
        sliding_window_size=a.get("sliding_window_size"),
        attention_sink=None if sink is None else sink.float(),
        page_table=a.get("page_table_tensor"),
        share_cache=bool(a.get("share_cache", False)),
    )


def test_readme_examples_run_and_match_golden(capsys, monkeypatch):
    """Every example block runs as written (seeded: the examples draw their tensors from torch's global generator),
    and each op call's output matches the golden on the values its tensors hold."""
    seed = seed_for("README examples")
    calls: list = []
    for name in OPS:
        monkeypatch.setattr(ttflashdecode, name, _recording(getattr(ttflashdecode, name), calls))
    wrapper = ttflashdecode.FlashDecodeWrapper
    monkeypatch.setattr(wrapper, "run", _recording_wrapper_run(wrapper.run, calls))
    pages_and_blocks = _python_blocks()
    blocks = [block for _, block in pages_and_blocks]
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        for page, block in pages_and_blocks:
            namespace: dict = {}
            exec(compile(block, str(page), "exec"), namespace)  # noqa: S102 - our own docs
            assert "out" in namespace, f"{tag(seed)} a README example must produce `out`"
    printed = capsys.readouterr().out
    assert printed.strip(), f"{tag(seed)} the README example prints the output shape"

    written = sum(
        len(re.findall(rf"\b(?:ttflashdecode|ttnn\.transformer)\.{name}\(", block)) for block in blocks for name in OPS
    )
    op_calls = sum(call["direct"] for call in calls)  # calls the transformers example's model makes are checked too
    assert op_calls == written, f"{tag(seed)} {written} op calls in the README, {op_calls} ran"
    runs_written = sum(len(re.findall(r"\bwrapper\.run\(", block)) for block in blocks)
    runs = sum(call["op"] == "FlashDecodeWrapper.run" for call in calls)
    assert runs >= runs_written > 0, f"{tag(seed)} {runs_written} wrapper.run calls in the README, {runs} ran"
    for i, call in enumerate(calls):
        for chip_call in _chip_calls(call):
            what = f"README call {i + 1} ({chip_call['op']}, {', '.join(call['given'])})"
            assert not call["k_is_v"], f"{tag(seed)} {what}: K passed as V (would hide a K/V swap)"
            check_close(chip_call["out"], _golden(chip_call), call["kv_dtype"], seed, what)
