"""The public function, :func:`shared_prefix_decode`: one planned
:class:`~ttflashdecode.ops.shared_prefix.wrapper.SharedPrefixDecodeWrapper` per (configs, groups, shapes) on the device,
kept in the device's cache, run per call."""

from __future__ import annotations

from ttflashdecode.backend import backend_of, import_ttnn
from ttflashdecode.checks import KV_DTYPES, as_int, check_bool, check_device_tensor, dtype_name
from ttflashdecode.config import ProgramConfig
from ttflashdecode.device_cache import device_cache
from ttflashdecode.ops.descriptors import ComputeSettings
from ttflashdecode.ops.shared_prefix.plan import MAX_GROUP_ROWS
from ttflashdecode.ops.shared_prefix.validate import table_width
from ttflashdecode.ops.shared_prefix.wrapper import SharedPrefixDecodeWrapper


def shared_prefix_decode(
    q,
    k,
    v,
    *,
    groups,
    prefix_lens,
    prefix_page_table,
    suffix_page_table,
    suffix_cur_pos=None,
    suffix_cur_pos_tensor=None,
    scale: float | None = None,
    program_config=None,
    compute_kernel_config=None,
    dtype=None,
    output_tensor=None,
    max_group_rows: int = MAX_GROUP_ROWS,
    prefix_program_config=None,
    return_stats: bool = False,
):
    """Decode attention over a two-level paged cache: a prefix shared by each group of users, then each user's own
    suffix (cascade attention, :mod:`ttflashdecode.ops.shared_prefix`). Every prefix K/V tile is read from DRAM once per
    (group, kv head), whatever the group's size.

    q: ``[1, b, n_q_heads, head_dim]`` bfloat16, TILE, interleaved. k, v: paged ``[num_blocks, n_kv_heads,
    block_size, head_dim]`` (bfloat16 / bfloat8_b / bfloat4_b); both levels' blocks live in them.
    groups: ``groups[g]`` lists the users sharing prefix g (every user in exactly one group; any sizes).
    prefix_lens: ``prefix_lens[g]`` positions of prefix g (>= 1), at positions ``0 .. prefix_lens[g] - 1`` of row g
        of ``prefix_page_table`` (int32 ``[len(groups), max_prefix_blocks]``).
    suffix_page_table: int32 ``[b, max_suffix_blocks]``: user u's suffix position p (0 = the first token after its
        prefix) is in block ``suffix_page_table[u, p // block_size]``.
    suffix_cur_pos / suffix_cur_pos_tensor: each user's last suffix position (-1: none; the user sees its prefix
        alone): ints, or an int32 ``[b]`` device tensor the kernels read at run time.
    scale, program_config, compute_kernel_config: as the decode op's. dtype: output dtype (bfloat16, float32).
    prefix_program_config: the prefix level's own program config (default: program_config). The default rule sizes
        a group's cores for one row tile of queries; a prefix sub-group has up to max_group_rows / 32 and few groups,
        so a long prefix can run faster on more cores with an explicit k_chunk_size (docs/SHARED_PREFIX.md).
    max_group_rows: query rows of one prefix sub-group (:class:`PrefixGroups`).
    Page tables may be torch tensors (checked and uploaded) or int32 row-major device tensors.

    The output equals the decode over each user's concatenated cache (prefix, then suffix) with cur_pos =
    ``prefix_lens[g] + suffix_cur_pos[u]``. Returns ``[1, b, n_q_heads, v_head_dim]`` (and the
    :class:`SharedPrefixResult` with ``return_stats=True``).
    """
    return_stats = check_bool("return_stats", return_stats)
    check_device_tensor("q", q, 4, ("bfloat16",), layout="TILE", dram=False)
    backend = backend_of(q)
    kshape = check_device_tensor("k", k, 4, KV_DTYPES, device=backend.device)
    vshape = check_device_tensor("v", v, 4, KV_DTYPES, device=backend.device)
    _, batch, n_q_heads, head_dim = (int(d) for d in q.shape)
    if int(q.shape[0]) != 1:
        raise ValueError(f"q: q_len={int(q.shape[0])}; shared-prefix decode takes one query token per user (q_len 1)")
    prefix_width = table_width("prefix_page_table", prefix_page_table)
    suffix_width = table_width("suffix_page_table", suffix_page_table)
    max_suffix = None
    if isinstance(suffix_cur_pos, (list, tuple)) and any(as_int(c) is not None for c in suffix_cur_pos):
        # rounded up to a power of two, as the decode op does, so a growing decode loop meets a handful of plans
        max_suffix = 1 << max(max(as_int(c) for c in suffix_cur_pos if as_int(c) is not None), 0).bit_length()
    ttnn = import_ttnn()
    plan_args = dict(
        groups=groups,
        prefix_lens=prefix_lens,
        batch=batch,
        n_q_heads=n_q_heads,
        n_kv_heads=kshape[1],
        head_dim=head_dim,
        block_size=kshape[2],
        max_prefix_blocks=prefix_width,
        max_suffix_blocks=suffix_width,
        kv_dtype=getattr(ttnn, dtype_name(k)),
        v_dtype=getattr(ttnn, dtype_name(v)),
        v_head_dim=vshape[3],
        scale=scale,
        dtype=dtype,
        max_suffix_pos=max_suffix,
        max_group_rows=max_group_rows,
    )
    # One planned wrapper per (config, compute settings, groups, shapes) on the device: a decode loop calling the op
    # plans, uploads the prefix positions, allocates the partials and builds its programs once. Arguments that cannot
    # key a cache (unhashable ones) are planned afresh; plan() names what is wrong with them.
    wrapper = None
    try:
        key = (
            "shared_prefix",
            _config_key(program_config),
            _config_key(prefix_program_config),
            ComputeSettings.coerce(compute_kernel_config),
            *((n, _frozen(val)) for n, val in sorted(plan_args.items())),
        )
        hash(key)
    except TypeError:
        key = None
    if key is not None:
        wrapper = device_cache(backend.device).lookup(
            "decoders",
            key,
            lambda: _planned_wrapper(
                backend.device, program_config, compute_kernel_config, prefix_program_config, plan_args
            ),
        )
    else:
        wrapper = _planned_wrapper(
            backend.device, program_config, compute_kernel_config, prefix_program_config, plan_args
        )
    out = wrapper.run(
        q,
        k,
        v,
        prefix_page_table=prefix_page_table,
        suffix_page_table=suffix_page_table,
        suffix_cur_pos=suffix_cur_pos,
        suffix_cur_pos_tensor=suffix_cur_pos_tensor,
        output_tensor=output_tensor,
    )
    return (out, wrapper.last_run) if return_stats else out


def _planned_wrapper(
    device, program_config, compute_kernel_config, prefix_program_config, plan_args
) -> SharedPrefixDecodeWrapper:
    wrapper = SharedPrefixDecodeWrapper(device, program_config, compute_kernel_config, prefix_program_config)
    wrapper.plan(**plan_args)
    return wrapper


def _config_key(program_config):
    if program_config is None or isinstance(program_config, (str, ProgramConfig)):
        return program_config
    return ProgramConfig.coerce(program_config)  # ttnn.SDPAProgramConfig: by value


def _frozen(value):
    """Lists (groups, prefix lengths) as tuples, so a call's plan arguments can key the device cache."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


__all__ = ["shared_prefix_decode"]
