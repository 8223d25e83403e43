// Emulator implementation of api/tensor/tensor_accessor.h for DRAM-INTERLEAVED tensors: page `id` lives in bank
// id % 12 at row id / 12 of the buffer (row stride = the aligned page size), as tt-metal's InterleavedAddrGen.
#pragma once

#include <cstddef>
#include <cstdint>

#include "api/tensor/tensor_accessor_args.h"
#include "emu/runtime.h"

template <typename Args>
struct TensorAccessor {
    static constexpr bool is_dram = true;

    TensorAccessor(const Args& args, const std::size_t bank_base_address_in, const uint32_t page_size_in)
        : bank_base_address(uint32_t(bank_base_address_in)), aligned_page_size(page_size_in), args_(args) {}
    TensorAccessor(const Args& args, const std::size_t bank_base_address_in)
        : bank_base_address(uint32_t(bank_base_address_in)), aligned_page_size(args.get_aligned_page_size()),
          args_(args) {}

    uint32_t get_aligned_page_size() const { return aligned_page_size; }
    uint32_t get_bank_base_address() const { return bank_base_address; }

    uint64_t get_noc_addr(const uint32_t page_id, const uint32_t offset = 0, uint8_t noc = 0) const {
        (void)noc;
        const uint32_t nb = emu::num_dram_banks();
        const uint32_t row = page_id / nb, bank = page_id - row * nb;
        const uint32_t stride = (aligned_page_size + 31u) & ~31u;
        const uint32_t addr = row * stride + bank_base_address + offset + emu::dram_bank_offset(bank);
        return (uint64_t(emu::dram_bank_noc_y(bank)) << 42) | (uint64_t(emu::dram_bank_noc_x(bank)) << 36) | addr;
    }

    const uint32_t bank_base_address;
    const uint32_t aligned_page_size;

private:
    Args args_;
};

template <std::size_t CTA_OFFSET, std::size_t CRTA_OFFSET>
TensorAccessor(const TensorAccessorArgs<CTA_OFFSET, CRTA_OFFSET>&, std::size_t)
    -> TensorAccessor<TensorAccessorArgs<CTA_OFFSET, CRTA_OFFSET>>;
template <std::size_t CTA_OFFSET, std::size_t CRTA_OFFSET>
TensorAccessor(const TensorAccessorArgs<CTA_OFFSET, CRTA_OFFSET>&, std::size_t, uint32_t)
    -> TensorAccessor<TensorAccessorArgs<CTA_OFFSET, CRTA_OFFSET>>;
