"""Wormhole's packer writing bfloat16 values into a block-float tile, on the host: what the emulator models and the
tests compare device output against (shared by the cache update tests and the bfloat8_b output test)."""

from __future__ import annotations

import torch

MANTISSA_BITS = {"bfloat8_b": 7, "bfloat4_b": 3}


def packed_by_the_packer(row: torch.Tensor, dtype: str) -> torch.Tensor:
    """``row`` (bfloat16 values, last dim a multiple of 16) as Wormhole's packer writes it into a ``dtype`` tile: each
    16-datum face row gets the largest exponent of its datums, and each 24-bit significand shifted to it is rounded to
    the format's magnitude bits with ties rounding up in magnitude, saturating (tt-metal#15889, #14822: the device
    packer the emulator models; bfloat16 datums go through unchanged)."""
    if dtype == "bfloat16":
        return row.to(torch.bfloat16).float()
    mbits = MANTISSA_BITS[dtype]
    bits = row.to(torch.bfloat16).float().contiguous().view(torch.int32).long() & 0xFFFFFFFF
    groups = bits.reshape(-1, 16)
    exponent = (groups >> 23) & 0xFF
    shared = exponent.max(dim=1, keepdim=True).values
    significand = ((1 << 23) | (groups & 0x7FFFFF)) >> (shared - exponent).clamp(max=40)
    shift = 24 - mbits
    magnitude = ((significand + (1 << (shift - 1))) >> shift).clamp(max=(1 << mbits) - 1)
    magnitude = torch.where((groups & 0x7FFFFFFF) == 0, 0, magnitude)
    value = magnitude.double() * torch.pow(2.0, (shared - 127 - (mbits - 1)).double())
    value = torch.where((groups >> 31) == 1, -value, value)
    return value.float().reshape(row.shape)
