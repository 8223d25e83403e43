// SPDX-License-Identifier: Apache-2.0
//
// FlashDecode reader, on RISCV_1 (NCRISC) over NoC 0: ttnn.ReaderConfigDescriptor, tt-metal's DRAM-read NoC.
// In a DRAM-bound plan every eighth reading core (fourth on Blackhole; plan/rules.py: reads_over_noc1) runs it over
// NoC 1 instead, because NoC 0's links out of the DRAM columns saturate before the banks do.
// For every group (batch b, kv head h) this core serves:
//   1. reads the group's query rows into one block of Q tiles (zero rows pad the tile),
//   2. streams the K chunks (and V chunks) of this core's share of [window_start, cur_pos] from interleaved
//      DRAM, reading no tile past cur_pos's tile or before the window's first tile; K in blocks of one position
//      tile x k_head_block head-dim tiles, V in column blocks of the chunk x v_head_block tiles, so the K and V
//      buffers need not grow with head_dim,
//   3. builds the additive mask tiles for chunks that hold hidden positions (causal edge, window edge).
// It also reads the cur_pos tensor once, checks it against the position contract (flash_decode_common.hpp:
// checked_cur_pos; paged: every block a user needs must exist) and hands the checked copy to compute and the
// writer, and it fills the constant tiles compute needs.
// Garbage never reaches compute: positions outside [window_start, cur_pos] are never read from DRAM (whole tiles
// are zero-filled) or, inside the first and last live tiles, zeroed after the read, and so are the positions a user
// mask hides from every query row of the group, so NaN or Inf a cache holds where no row looks cannot turn into
// 0 * NaN in P . V.
// Consecutive users sharing a page-table row (upstream's spec_multi_pos_tiles: the speculative candidates of a batch
// row) are one group: their rows are stacked user by user in the group's Q tiles, each row masked at its own user's
// causal bound, and the row's chunks up to the newest bound are read once for all of them.
// Options (compile-time): a paged cache (K/V tiles found through the user's page-table row), a shared cache
// (every user reads user 0's K/V), a user attention mask streamed with K instead of the generated causal
// mask, attention sinks (one logit per q head, handed to compute as an extra (m, l) partial), and MLA's V taken
// from K's rows already in L1 (no second DRAM read of the latent cache).
//
// Arguments (ttflashdecode/ops/decode/args.py): positional compile-time args for what shapes the code, arg i being
// READER_ARGS[i] (each read below as `constexpr ... <name> = get_compile_time_arg_val(i)`), then the TensorAccessorArgs
// of the tensors read, at the offsets the "*_cta_offset" args give; common runtime args (buffer addresses and the
// run-time shape) in the order of kernel_args.ReaderCommonArgs.

#include <cstdint>

#include "api/dataflow/dataflow_api.h"
#include "api/dataflow/noc.h"
#include "api/dataflow/circular_buffer.h"
#include "api/dataflow/endpoints.h"
#include "api/semaphore.h"
#include "api/core_local_mem.h"
#include "api/tensor/tensor_accessor.h"
#include "api/tensor/noc_traits.h"
#include "flash_decode_common.hpp"

using namespace flash_decode;

namespace {

// ---- circular buffers (the planner's CB table, ttflashdecode/plan/cbs.py)
constexpr uint32_t cb_q = get_compile_time_arg_val(0);
constexpr uint32_t cb_k = get_compile_time_arg_val(1);
constexpr uint32_t cb_v = get_compile_time_arg_val(2);
constexpr uint32_t cb_mask = get_compile_time_arg_val(3);
constexpr uint32_t cb_scale = get_compile_time_arg_val(4);
constexpr uint32_t cb_ones = get_compile_time_arg_val(5);
// A merge's constant one-hot tiles (plan/cbs.py merge_select_tiles; 0: none): P_k at (0, k) for k < F, then T_c at
// (0, 0) and (0, c+1..31) for c = 1..F-1, full 32 x 32 bfloat16 tiles (compute's merge_row_factors).
constexpr uint32_t cb_merge_select = get_compile_time_arg_val(6);
constexpr uint32_t merge_select_tiles = get_compile_time_arg_val(7);
constexpr uint32_t cb_cur_pos = get_compile_time_arg_val(8);
constexpr uint32_t cb_writer_cur_pos = get_compile_time_arg_val(9);
constexpr uint32_t cb_page_table = get_compile_time_arg_val(10);
constexpr uint32_t cb_sink = get_compile_time_arg_val(11);
constexpr uint32_t cb_mask_stage = get_compile_time_arg_val(12);

// ---- compile-time shape of the problem
constexpr uint32_t DHt = get_compile_time_arg_val(13);   // K head dim in tiles
constexpr uint32_t vDHt = get_compile_time_arg_val(14);  // V head dim in tiles
constexpr uint32_t Sk_t = get_compile_time_arg_val(15);  // k_chunk_size in tiles
constexpr uint32_t PNHt = get_compile_time_arg_val(16);  // Q row tiles per group
// Rows of the tiles holding a group's rows (Q, the masks and sinks handed to compute): 16 (upstream's half tiles, at
// most 16 query rows a group) or 32. A 16 x 32 tile is the first two faces of a 32 x 32 one, so a row's bytes sit at
// the same tile_datum_offset in either.
constexpr uint32_t q_tile_rows = get_compile_time_arg_val(17);
constexpr uint32_t q_len = get_compile_time_arg_val(18);  // query tokens per user
constexpr uint32_t heads_per_group = get_compile_time_arg_val(19);  // q heads per kv head
constexpr uint32_t NQt = get_compile_time_arg_val(20);  // tile rows of q heads per user in DRAM
constexpr uint32_t num_kv_heads = get_compile_time_arg_val(21);
constexpr uint32_t n_q_heads = get_compile_time_arg_val(22);
constexpr bool is_causal = get_compile_time_arg_val(23) == 1;  // else every query sees all kv_len
constexpr uint32_t k_head_block = get_compile_time_arg_val(24);  // head-dim tiles per K block
constexpr uint32_t v_head_block = get_compile_time_arg_val(25);  // head-dim tiles per V block
// Paged cache: K/V tile rows found through the user's page-table row; blocks of tiles_per_block position tiles.
constexpr bool is_paged = get_compile_time_arg_val(26) == 1;
constexpr uint32_t tiles_per_block = get_compile_time_arg_val(27);
constexpr bool share_cache = get_compile_time_arg_val(28) == 1;
// Consecutive users reading one page-table row (upstream's spec_multi_pos_tiles: a batch row's candidates), one group.
constexpr uint32_t users_per_page_row = get_compile_time_arg_val(29);
constexpr uint32_t users_per_group = users_per_page_row;
// A user mask [b, 1 or n_q_heads, q_len, kv_len] (bfloat16 or bfloat8_b), or upstream's decode mask
// [b, 1, n_q_heads, kv_len] (q_len 1) whose rows are the heads.
constexpr bool use_attn_mask = get_compile_time_arg_val(30) == 1;
constexpr uint32_t mask_heads = get_compile_time_arg_val(31);  // attn_mask dim 1: 1 or n_q_heads
constexpr bool mask_is_bfp8 = get_compile_time_arg_val(32) == 1;
constexpr bool mask_rows_are_heads = get_compile_time_arg_val(33) == 1;
// Attention sinks: ours [1, n_q_heads] (head h's logit at (0, h)), or upstream's [32 k, 32] with head h's value at
// (h, 0) in unscaled score space (its logit is scale * value).
constexpr bool use_sink = get_compile_time_arg_val(34) == 1;
constexpr bool sink_rows_are_heads = get_compile_time_arg_val(35) == 1;
// Multi-latent attention (DeepSeek MLA): V is the first vDHt head-dim tiles of K's rows, so the cache is read once.
// V column blocks are copied from the chunk's K rows in this core's L1, which needs whole K rows per chunk.
constexpr bool v_from_k = get_compile_time_arg_val(36) == 1;
static_assert(!v_from_k || (k_head_block == DHt && vDHt <= DHt), "MLA reads V out of whole K rows");
// Fused cache update + attention (ttflashdecode/ops/fused): the cache update's kernels run on other cores
// of this program, and after its write barrier an update core adds, on semaphore sem_cache_updated of every core
// serving a (user, kv head) group, one count per cache row of that group it wrote (or skipped). The update touches
// only the chunk holding cur_pos, so a core waits for all wait_for_cache_update (rows per group: K and V) x num_groups
// counts before it reads that chunk, and reads every other chunk at once. 0: no update in the program.
constexpr uint32_t wait_for_cache_update = get_compile_time_arg_val(37);
constexpr uint32_t sem_cache_updated = get_compile_time_arg_val(38);
static_assert(users_per_group == 1 || (!use_attn_mask && wait_for_cache_update == 0),
              "users sharing a page-table row take no user mask and no fused cache update");
// Slots of a group mapped to users (shared-prefix decode, ttflashdecode/ops/shared_prefix): the group's "users" are
// slots, and slot s reads the Q rows of user get_common_arg_val(s) (NO_USER: a padding slot, whose rows stay zero and
// are never written), so the users of one prefix group need not be consecutive nor the groups equally large; group of
// slots j reads page-table row get_common_arg_val(batch + j). 0: slot s is user s.
constexpr bool slot_users = get_compile_time_arg_val(39) == 1;
// Q read once a group where it can: a group's cores are consecutive, row by row, in the work table's box, and its root
// reads the group's Q rows and multicasts them into the same Q slot of the group's cores in the rectangle from the
// root (its lowest corner) over the group's whole rows, or over its cores in the root's row (q_multicast_region:
// ops/decode/factory.py; the far corner's NOC coordinates are in the root's work entry, in the parent fields a root
// does not use), then sets their sem_q_arrived; they read no Q. The group's other cores read their own. Each core of
// a group would otherwise read the same rows from DRAM (MLA: 18 KiB a core).
constexpr bool q_multicast = get_compile_time_arg_val(40) == 1;
constexpr uint32_t sem_q_arrived = get_compile_time_arg_val(41);
// Common runtime args before this kernel's own (the shard table or the slot map): its addresses start there.
constexpr uint32_t work_args_at = get_compile_time_arg_val(42);
// Where Q lives: TILE or ROW_MAJOR pages, DRAM or L1 interleaved, or L1 height-sharded (shard s on the core whose NOC
// coordinates are common runtime args 2s, 2s + 1; what nlp_create_qkv_heads_decode hands over: a user per core).
constexpr bool q_tiled = get_compile_time_arg_val(43) == 1;
constexpr auto q_placement = static_cast<Placement>(get_compile_time_arg_val(44));
constexpr uint32_t q_shard_pages = get_compile_time_arg_val(45);  // height-sharded: pages/shard
constexpr uint32_t q_page_bytes = get_compile_time_arg_val(46);  // a tile, or a row of head_dim
// The group's query rows are whole tile rows of Q (q_len 1, one kv head, TILE layout: a user's heads and their padding
// rows belong to this group alone), so Q arrives as whole tiles: one read per tile instead of two per row and tile.
constexpr bool q_whole_tiles = get_compile_time_arg_val(47) == 1;
static_assert(!q_whole_tiles || (q_tiled && q_len == 1 && num_kv_heads == 1), "whole Q tiles need one group a user");
static_assert(!q_whole_tiles || users_per_group == 1 || PNHt == users_per_group * NQt,
              "users of one group own whole Q tiles only when their heads fill them");
static_assert(!slot_users || (q_len == 1 && !q_whole_tiles && q_placement != Placement::L1_HEIGHT_SHARDED),
              "slots mapped to users: one token, rows gathered one by one, the map in the common runtime args");

// ---- run-time shape of the problem: common runtime args (kernel_args.ReaderCommonArgs), set once at the top of
// kernel_main. Nothing here shapes the code (no loop is unrolled over them, no buffer sized by them), so one build
// serves every batch, cache length, window, scale and block pool of a head configuration and chunk size.
uint32_t batch;
uint32_t kv_len;  // cur_pos must be below it: the logical positions per user
uint32_t St;      // cache positions per user in tiles (tile-padded)
uint32_t sliding_window;  // positions (0: none)
uint32_t scale_bits;      // float32 bits of the softmax scale
uint32_t num_blocks;      // paged: blocks in the K/V tensors
// Ring cache (upstream's cache_position_modulo): logical positions grow past the cache and position tile t lives in the
// page-table slot of block (t / tiles_per_block) % ring_blocks; the chunk, window and causal rules stay on logical
// positions. 0: no ring.
uint32_t ring_blocks;

// ---- tensors read through TensorAccessors: where each one's TensorAccessorArgs start among the compile-time args
// (after the fixed ones above: their lengths vary with the tensor's layout). An absent optional tensor's offset is
// K's: its accessor is declared over valid args and never used.
constexpr uint32_t q_cta_offset = get_compile_time_arg_val(48);
constexpr uint32_t k_cta_offset = get_compile_time_arg_val(49);
constexpr uint32_t v_cta_offset = get_compile_time_arg_val(50);
constexpr uint32_t cur_pos_cta_offset = get_compile_time_arg_val(51);
constexpr uint32_t page_table_cta_offset = get_compile_time_arg_val(52);
constexpr uint32_t mask_cta_offset = get_compile_time_arg_val(53);
constexpr uint32_t sink_cta_offset = get_compile_time_arg_val(54);
constexpr auto q_args = TensorAccessorArgs<q_cta_offset>();
constexpr auto k_args = TensorAccessorArgs<k_cta_offset>();
constexpr auto v_args = TensorAccessorArgs<v_cta_offset>();
constexpr auto cur_pos_args = TensorAccessorArgs<cur_pos_cta_offset>();
constexpr auto page_table_args = TensorAccessorArgs<page_table_cta_offset>();
constexpr auto mask_args = TensorAccessorArgs<mask_cta_offset>();
constexpr auto sink_args = TensorAccessorArgs<sink_cta_offset>();

constexpr uint32_t k_blocks_per_row = DHt / k_head_block;
constexpr uint32_t k_chunk_size = Sk_t * TILE_HW;
constexpr uint32_t user_rows = q_len * heads_per_group;  // a user's rows in its group: token-major
constexpr uint32_t q_rows = users_per_group * user_rows;    // the group's rows: user-major
constexpr uint32_t q_tile_bytes = get_tile_size(cb_q);  // bfloat16
constexpr uint32_t k_tile_bytes = get_tile_size(cb_k);
constexpr uint32_t v_tile_bytes = get_tile_size(cb_v);

constexpr uint32_t BF16_BYTES = 2;
constexpr uint32_t ROW_TILE_BYTES = q_tile_rows * TILE_HW * BF16_BYTES;  // a bfloat16 mask / sink / constant tile
static_assert(q_tile_rows == TILE_HW || (q_tile_rows == FACE_HW && PNHt == 1), "16-row tiles hold a whole group");
constexpr uint32_t FACE_ROW_BYTES = FACE_HW * BF16_BYTES;  // one 16-datum row of a bfloat16 face

using Bf16Tile = CoreLocalMem<volatile uint16_t>;

float softmax_scale() { return __builtin_bit_cast(float, scale_bits); }

void fill_tile_bf16(Bf16Tile tile, uint16_t bits) {
    for (uint32_t i = 0; i < q_tile_rows * TILE_HW; ++i) {
        tile[i] = bits;
    }
}

void zero_bytes(uint32_t l1_addr, uint32_t num_bytes) {
    CoreLocalMem<volatile uint32_t> words(l1_addr);
    for (uint32_t i = 0; i < num_bytes / sizeof(uint32_t); ++i) {
        words[i] = 0;
    }
}

// The merge's one-hot tiles (see cb_merge_select): row 0 of a 32 x 32 tile is row 0 of faces 0 (columns 0-15) and 1
// (columns 16-31).
void fill_merge_select() {
    constexpr uint32_t radix = (merge_select_tiles + 1) / 2;
    constexpr uint32_t FULL_TILE_BYTES = TILE_HW * TILE_HW * BF16_BYTES;
    const uint16_t one = float_to_bfloat16(1.0f);
    auto row0 = [](uint32_t col) { return col / FACE_HW * FACE_HW * FACE_HW + col % FACE_HW; };
    CircularBuffer select_buf(cb_merge_select);
    select_buf.reserve_back(merge_select_tiles);
    const uint32_t base = select_buf.get_write_ptr();
    zero_bytes(base, merge_select_tiles * FULL_TILE_BYTES);
    for (uint32_t k = 0; k < radix; ++k) {
        Bf16Tile(base + k * FULL_TILE_BYTES)[row0(k)] = one;
    }
    for (uint32_t c = 1; c < radix; ++c) {
        Bf16Tile tail(base + (radix - 1 + c) * FULL_TILE_BYTES);
        tail[row0(0)] = one;
        for (uint32_t col = c + 1; col < TILE_HW; ++col) {
            tail[row0(col)] = one;
        }
    }
    select_buf.push_back(merge_select_tiles);
}

// Zeroes the rows (cache positions) of one K or V tile at `tile_l1` whose bit is set in `rows` (bit r: row r),
// whatever they held. A bfloat16 tile is four 16 x 16 faces of 2-byte datums; a block-float tile holds 64 shared
// exponents (one per face row, faces in order) and then its face-ordered datums, one byte each (bfloat8_b) or a
// nibble (bfloat4_b). A zeroed row has zero datums and a zero exponent, so it unpacks to 0 in every format.
template <uint32_t tile_bytes>
void zero_rows(uint32_t tile_l1, uint32_t rows) {
    static_assert(tile_bytes == 2048 || tile_bytes == 1088 || tile_bytes == 576, "bfloat16, bfloat8_b or bfloat4_b");
    constexpr bool block_float = tile_bytes != 2048;
    constexpr uint32_t exponent_bytes = block_float ? 64 : 0;
    constexpr uint32_t face_row_bytes = tile_bytes == 2048 ? FACE_HW * BF16_BYTES : tile_bytes == 1088 ? FACE_HW : FACE_HW / 2;
    CoreLocalMem<volatile uint8_t> exponents(tile_l1);
    for (uint32_t row = 0; row < TILE_HW; ++row) {
        if (((rows >> row) & 1u) == 0) {
            continue;
        }
        for (uint32_t half = 0; half < 2; ++half) {  // the row's left and right face
            const uint32_t face_row = ((row / FACE_HW) * 2 + half) * FACE_HW + row % FACE_HW;
            if constexpr (block_float) {
                exponents[face_row] = 0;
            }
            zero_bytes(tile_l1 + exponent_bytes + face_row * face_row_bytes, face_row_bytes);
        }
    }
}

// Transaction ids (noc_async_read_barrier_with_trid waits for one id's reads only; 0 is what untagged reads use).
// Q's reads, issued with cur_pos's and waited for only once a group's first K reads are issued.
constexpr uint32_t Q_TRID = 1;
// cur_pos and page-table reads: the reads the K/V stream's addresses depend on, waited for without waiting for Q's
// (or, when a later group loads its page-table row, for the K/V reads in flight).
constexpr uint32_t SETUP_TRID = 2;
// MLA's V, copied out of K's rows in this core's L1.
constexpr uint32_t V_COPY_TRID = 3;
// Parts of the K/V stream (see kernel_main): part n of a group's stream reads with id PART_TRID + n % PART_TRIDS.
constexpr uint32_t PART_TRID = 4;
constexpr uint32_t PART_TRIDS = NOC_MAX_TRANSACTION_ID + 1 - PART_TRID;

// The K/V stream is read in parts of at most PART_TILES tiles, each behind its own transaction id and pushed as soon
// as it lands, with at most READS_IN_FLIGHT tiles requested and not yet landed. That is deep enough to keep a core's
// share of the DRAM channels busy (a few tile reads cover the round trip when every core of the grid streams, and
// 16 at 1 KiB cover it for a handful of cores), and shallow enough that issuing never waits for the NIU to free a
// read slot (its outstanding-read limit is not published; 20 is the low end assumed, docs/TIMING.md section 3b): a
// part that landed is pushed to compute at once instead of behind a queue of reads of the next fetch.
constexpr uint32_t READS_IN_FLIGHT = 16;
constexpr uint32_t PART_TILES = 8;
static_assert(PART_TILES <= READS_IN_FLIGHT, "a part fits the reads in flight");

// One fetch of the K/V stream: K fetch `block` (Sk_t blocks of k_head_block head-dim tiles) or V column block `block`
// (v_head_block head-dim tiles of every position tile) of `chunk`, in the order compute consumes them. MLA's stream
// is its K fetches: each chunk's V is copied out of its K rows once they landed.
struct KvFetch {
    enum Kind : uint8_t { K, V };
    uint32_t chunk;
    Kind kind;
    uint32_t block;

    KvFetch next() const {
        if (kind == K) {
            if (block + 1 < k_blocks_per_row) {
                return {chunk, K, block + 1};
            }
            return v_from_k ? KvFetch{chunk + 1, K, 0} : KvFetch{chunk, V, 0};
        }
        return (block + 1) * v_head_block < vDHt ? KvFetch{chunk, V, block + 1} : KvFetch{chunk + 1, K, 0};
    }
    // Tiles of the fetch (each K and V buffer holds two fetches: plan/cbs.py).
    uint32_t tiles() const { return Sk_t * (kind == K ? k_head_block : v_head_block); }
    // Sequence (position) tile of the fetch's tile `i` (K: block-major, head-dim tiles inner; V: position-major).
    uint32_t seq_tile(uint32_t i) const {
        if (kind == K) {
            return chunk * Sk_t + (block * Sk_t + i / k_head_block) / k_blocks_per_row;
        }
        return chunk * Sk_t + i / v_head_block;
    }
    // Head-dim tile of the fetch's tile `i` in its K or V row.
    uint32_t head_tile(uint32_t i) const {
        if (kind == K) {
            return ((block * Sk_t + i / k_head_block) % k_blocks_per_row) * k_head_block + i % k_head_block;
        }
        return block * v_head_block + i % v_head_block;
    }
};

// Copies one 16-datum bfloat16 face row (row `src_row`, columns col..col+15 of tile page `src_page`) into row
// `dst_row` of the L1 tile at `dst_tile_l1`.
template <typename Accessor>
void read_face_row(const Noc& noc, const Accessor& src, uint32_t src_page, uint32_t src_row, uint32_t col,
                   uint32_t dst_tile_l1, uint32_t dst_row) {
    noc.async_read(src, Bf16Tile(dst_tile_l1), FACE_ROW_BYTES,
                   {.page_id = src_page, .offset_bytes = tile_datum_offset(src_row, col, BF16_BYTES)},
                   {.offset_bytes = tile_datum_offset(dst_row, col, BF16_BYTES)});
}

// bfloat8_b tile: 64 shared exponents (one per 16-datum face row, faces in order), then one byte per datum,
// face by face: bit 7 = sign, bits 6..0 = magnitude with the leading one explicit, value = magnitude * 2^(e - 133).
constexpr uint32_t BFP8_EXPONENT_BYTES = 64;

// bfloat16 bits of one bfloat8_b datum. Exact: a 7-bit magnitude fits bfloat16's 8-bit significand.
inline uint16_t bfp8_to_bfloat16(uint8_t code, uint8_t shared_exponent) {
    const uint32_t magnitude = code & 0x7Fu;
    if (magnitude == 0) {
        return 0;
    }
    uint32_t msb = 6;
    while (((magnitude >> msb) & 1u) == 0) {
        --msb;
    }
    const int32_t exponent = int32_t(shared_exponent) - 6 + int32_t(msb);
    if (exponent <= 0) {
        return 0;  // below bfloat16's normal range: flushed, as the unpacker does
    }
    const uint32_t sign = (code & 0x80u) << 8;
    return uint16_t(sign | (uint32_t(exponent) << 7) | ((magnitude << (7 - msb)) & 0x7Fu));
}

// Copies row `src_row` of the bfloat8_b tile staged at `stage_l1` into row `dst_row` of a bfloat16 L1 tile.
void unpack_bfp8_row(uint32_t stage_l1, uint32_t src_row, uint32_t dst_tile_l1, uint32_t dst_row) {
    const CoreLocalMem<volatile uint8_t> stage(stage_l1);
    Bf16Tile dst(dst_tile_l1);
    for (uint32_t col = 0; col < TILE_HW; ++col) {
        const uint32_t face = (src_row / FACE_HW) * 2 + col / FACE_HW;
        const uint32_t face_row = face * FACE_HW + src_row % FACE_HW;  // index of the shared exponent
        const uint8_t code = stage[BFP8_EXPONENT_BYTES + face_row * FACE_HW + col % FACE_HW];
        dst[tile_datum_offset(dst_row, col, 1)] = bfp8_to_bfloat16(code, stage[face_row]);
    }
}

// Smallest bfloat16 magnitude (bits) at or above |MASKED_SCORE|: the float32 bits rounded up to bfloat16.
constexpr uint32_t MASKED_MAGNITUDE_BF16 = (__builtin_bit_cast(uint32_t, -MASKED_SCORE) + 0xFFFFu) >> 16;

// Whether a bfloat16 mask value is at or below MASKED_SCORE (-inf, a dtype's lowest finite value; not NaN), as
// compute's threshold selects it. Integer compares: the reader's RISC-V has no full float unit, and this runs for every
// position of a masked chunk.
inline bool hides_position(uint16_t bits) {
    const uint32_t magnitude = bits & 0x7FFFu;
    return (bits & 0x8000u) != 0 && magnitude >= MASKED_MAGNITUDE_BF16 && magnitude <= 0x7F80u;
}

// The user mask rows of this group for one chunk: row (token t, head g) of the group's tiles comes from
// attn_mask[b, mask head, t, chunk positions] (mask head = 0 when the mask is shared by all heads).
// A bfloat16 mask is gathered by 32-byte face-row reads; a bfloat8_b row has no such contiguous bytes (its
// exponents sit apart from its datums), so each source tile is staged whole once and its rows unpacked.
// Also fills `hidden_rows` (bit r of word kt: position r of the chunk's position tile kt) with the positions every
// query row of the group hides (a mask value at or below MASKED_SCORE: -inf, or a dtype's lowest finite value),
// whose K and V rows the caller then zeroes: compute selects such a score to MASKED_SCORE and weighs it
// exp(MASKED_SCORE - m) == 0, but V still meets that 0 (or, in a row hidden everywhere, a weight of 1) in P . V,
// and NaN or Inf there would reach the output. A position only some rows hide is genuinely used: left as read.
template <typename Accessor>
void read_attn_mask_chunk(const Noc& noc, const Accessor& mask_pages, uint32_t b, uint32_t kv_head, uint32_t chunk,
                          uint32_t last_pos, uint32_t (&hidden_rows)[Sk_t]) {
    constexpr uint32_t mask_tile_rows = (q_len + TILE_HW - 1) / TILE_HW;  // q_len padded to tiles
    CircularBuffer mask_buf(cb_mask);
    mask_buf.reserve_back(PNHt * Sk_t);
    const uint32_t mask_l1 = mask_buf.get_write_ptr();
    zero_bytes(mask_l1, PNHt * Sk_t * ROW_TILE_BYTES);
    CircularBuffer stage_buf(cb_mask_stage);
    if constexpr (mask_is_bfp8) {
        stage_buf.reserve_back(1);  // a scratch page, never pushed
    }
    uint32_t staged_page = SKIPPED_USER;  // no page staged yet
    for (uint32_t kt = 0; kt < Sk_t; ++kt) {
        for (uint32_t row = 0; row < q_rows; ++row) {
            const uint32_t token = row / heads_per_group;
            const uint32_t q_head = kv_head * heads_per_group + row % heads_per_group;
            const uint32_t head = mask_heads == 1 ? 0 : q_head;
            // Tile row and row within it of this query row's mask: [b, heads, q_len, S] keeps one tile row per
            // (user, head, 32 tokens); upstream's [b, 1, heads, S] (q_len 1) one per (user, 32 heads).
            const uint32_t src_tile_row = mask_rows_are_heads ? b * NQt + q_head / TILE_HW
                                                              : (b * mask_heads + head) * mask_tile_rows + token / TILE_HW;
            const uint32_t src_row = mask_rows_are_heads ? q_head % TILE_HW : token % TILE_HW;
            const uint32_t src_page = src_tile_row * St + chunk * Sk_t + kt;
            const uint32_t dst_tile = mask_l1 + ((row / q_tile_rows) * Sk_t + kt) * ROW_TILE_BYTES;
            if constexpr (mask_is_bfp8) {
                if (src_page != staged_page) {
                    noc.async_read(mask_pages, stage_buf, mask_pages.get_aligned_page_size(),
                                   {.page_id = src_page}, {});
                    noc.async_read_barrier();
                    staged_page = src_page;
                }
                unpack_bfp8_row(stage_buf.get_write_ptr(), src_row, dst_tile, row % q_tile_rows);
            } else {
                for (uint32_t col = 0; col < TILE_HW; col += FACE_HW) {
                    read_face_row(noc, mask_pages, src_page, src_row, col, dst_tile, row % q_tile_rows);
                }
            }
        }
    }
    noc.async_read_barrier();
    // Positions past the cache's last one (the tile padding of a cache of, say, 1000 positions) are hidden whatever
    // the mask says there: their K/V rows were zeroed, and a zero score would still take a share of the softmax.
    for (uint32_t key_pos = last_pos + 1; key_pos < (chunk + 1) * k_chunk_size; ++key_pos) {
        const uint32_t kt = (key_pos / TILE_HW) % Sk_t;
        for (uint32_t row = 0; row < q_rows; ++row) {
            Bf16Tile tile(mask_l1 + ((row / q_tile_rows) * Sk_t + kt) * ROW_TILE_BYTES);
            tile[tile_datum_offset(row % q_tile_rows, key_pos % TILE_HW, 1)] = float_to_bfloat16(MASKED_SCORE);
        }
    }
    // Position by position, stopping at the first row that sees it: a chunk most rows see costs one load a position.
    for (uint32_t kt = 0; kt < Sk_t; ++kt) {
        hidden_rows[kt] = 0;
        for (uint32_t c = 0; c < TILE_HW; ++c) {
            bool hidden = true;
            for (uint32_t row = 0; row < q_rows && hidden; ++row) {
                Bf16Tile tile(mask_l1 + ((row / q_tile_rows) * Sk_t + kt) * ROW_TILE_BYTES);
                hidden = hides_position(tile[tile_datum_offset(row % q_tile_rows, c, 1)]);
            }
            hidden_rows[kt] |= uint32_t(hidden) << c;
        }
    }
    mask_buf.push_back(PNHt * Sk_t);
}

// The generated mask of a chunk that holds positions some query row may not see (the causal edge, the window's
// first chunk, or the positions past cur_pos of a non-causal cache).
// `row_position(row)`: the position of query row `row` (its causal bound), or, non-causal, cur_pos.
template <typename RowPosition>
void push_generated_mask(uint32_t chunk, const RowPosition& row_position) {
    CircularBuffer mask_buf(cb_mask);
    mask_buf.reserve_back(PNHt * Sk_t);
    const uint32_t mask_l1 = mask_buf.get_write_ptr();
    const uint16_t hidden = float_to_bfloat16(MASKED_SCORE);
    for (uint32_t rt = 0; rt < PNHt; ++rt) {
        for (uint32_t kt = 0; kt < Sk_t; ++kt) {
            Bf16Tile tile(mask_l1 + (rt * Sk_t + kt) * ROW_TILE_BYTES);
            for (uint32_t r = 0; r < q_tile_rows; ++r) {
                const uint32_t row = rt * q_tile_rows + r;
                // Padding rows see every position: they must not become fully masked (NaN).
                const bool real_row = row < q_rows;
                const uint32_t pos = row_position(row);
                const uint32_t row_window_start = sliding_window == 0 ? 0 : window_start(pos, 1, sliding_window);
                for (uint32_t c = 0; c < TILE_HW; ++c) {
                    const uint32_t key_pos = (chunk * Sk_t + kt) * TILE_HW + c;
                    const bool visible = !real_row || (key_pos <= pos && key_pos >= row_window_start);
                    tile[tile_datum_offset(r, c, 1)] = visible ? 0 : hidden;
                }
            }
        }
    }
    mask_buf.push_back(PNHt * Sk_t);
}

// Attention sinks as one more partial for compute to merge at the root: m = the head's sink logit, l = 1,
// O = 0 (a sink joins the softmax denominator and carries no value). Sinks are a [1, n_q_heads] bfloat16
// tensor, so head j's logit is datum (0, j % 32) of tile j / 32. Without sinks but with a user mask, the same
// partial carries m = SCORE_FLOOR instead, so a row the mask hides entirely comes out as zeros (see
// SCORE_FLOOR). Padding rows get m = MASKED_SCORE, l = 0, which leaves them untouched by the merge.
template <typename Accessor>
void push_sink_partial(const Noc& noc, const Accessor& sink_pages, uint32_t kv_head) {
    CircularBuffer sink_buf(cb_sink);
    sink_buf.reserve_back(2 * PNHt);
    const uint32_t m_l1 = sink_buf.get_write_ptr();
    const uint32_t l_l1 = m_l1 + PNHt * ROW_TILE_BYTES;
    zero_bytes(m_l1, 2 * PNHt * ROW_TILE_BYTES);
    // Gather each head's logit into column 0 of its row of the m tiles, reading the face row that holds it
    // into column 0..15 of that row first.
    for (uint32_t row = 0; row < PNHt * q_tile_rows; ++row) {
        const uint32_t m_tile_l1 = m_l1 + (row / q_tile_rows) * ROW_TILE_BYTES;
        Bf16Tile m_tile(m_tile_l1);
        Bf16Tile l_tile(l_l1 + (row / q_tile_rows) * ROW_TILE_BYTES);
        if (row >= q_rows) {
            m_tile[tile_datum_offset(row % q_tile_rows, 0, 1)] = float_to_bfloat16(MASKED_SCORE);
            continue;
        }
        l_tile[tile_datum_offset(row % q_tile_rows, 0, 1)] = float_to_bfloat16(1.0f);
        if constexpr (!use_sink) {
            m_tile[tile_datum_offset(row % q_tile_rows, 0, 1)] = float_to_bfloat16(SCORE_FLOOR);
            continue;
        }
        const uint32_t q_head = kv_head * heads_per_group + row % heads_per_group;
        // Head h's value: datum (0, h % 32) of tile h / 32 ([1, n_q_heads] form), or (h % 32, 0) ([32k, 32] form).
        const uint32_t src_row = sink_rows_are_heads ? q_head % TILE_HW : 0;
        const uint32_t src_col = sink_rows_are_heads ? 0 : q_head % TILE_HW;
        const uint32_t face_col = src_col / FACE_HW * FACE_HW;
        read_face_row(noc, sink_pages, q_head / TILE_HW, src_row, face_col, m_tile_l1, row % q_tile_rows);
        noc.async_read_barrier();
        // The face row landed at columns face_col..face_col+15 of this row: keep only the head's datum, in column 0.
        uint16_t logit = m_tile[tile_datum_offset(row % q_tile_rows, src_col, 1)];
        for (uint32_t c = 0; c < FACE_HW; ++c) {
            m_tile[tile_datum_offset(row % q_tile_rows, face_col + c, 1)] = 0;
        }
        if constexpr (sink_rows_are_heads) {
            logit = float_to_bfloat16(bfloat16_to_float(logit) * softmax_scale());  // upstream's sinks are unscaled
        }
        m_tile[tile_datum_offset(row % q_tile_rows, 0, 1)] = logit;
    }
    sink_buf.push_back(2 * PNHt);
}

// Page-table slot of logical block `block` (a ring cache wraps it; at most ring_blocks distinct slots).
inline uint32_t page_table_slot(uint32_t block) { return ring_blocks > 0 ? block % ring_blocks : block; }

// Page-table row of user `b`: row 0 for every user with share_cache, else its own (shared with the other candidates
// of its batch row under spec_multi_pos_tiles). With slot_users the row of the group of slots is the common runtime
// arg after the slot map (batch + group of slots): several groups of slots may read one prefix's row.
inline uint32_t page_table_row(uint32_t b) {
    if constexpr (slot_users) {
        return get_common_arg_val<uint32_t>(batch + b / users_per_page_row);
    }
    return share_cache ? 0 : b / users_per_page_row;
}

// Whether every block of position tiles [first_tile, last_tile] named by the page-table row at `row` exists.
// Entries are int32; a negative one is a huge uint32 and fails the same test as one past the last block.
bool blocks_exist(CoreLocalMem<volatile uint32_t> row, uint32_t first_tile, uint32_t last_tile) {
    for (uint32_t block = first_tile / tiles_per_block; block <= last_tile / tiles_per_block; ++block) {
        if (row[page_table_slot(block)] >= num_blocks) {
            return false;
        }
    }
    return true;
}

// Rows [first, last] of position tile `seq_tile` that lie in [window_start, cur_pos]: all 32 inside the range.
struct LiveRows {
    uint32_t first;
    uint32_t last;
    bool whole() const { return first == 0 && last == TILE_HW - 1; }
    // Bit r set for every row r outside [first, last].
    uint32_t outside() const { return ~((~0u >> (TILE_HW - 1 - last)) & (~0u << first)); }
};

inline LiveRows live_rows(uint32_t seq_tile, uint32_t first_pos, uint32_t last_pos) {
    const uint32_t tile_first_pos = seq_tile * TILE_HW;
    return {first_pos > tile_first_pos ? first_pos - tile_first_pos : 0,
            last_pos < tile_first_pos + TILE_HW - 1 ? last_pos - tile_first_pos : TILE_HW - 1};
}

}  // namespace

void kernel_main() {
    // ---- common runtime args (kernel_args.ReaderCommonArgs) after the shard table / slot map, then the work table
    uint32_t arg = work_args_at;
    const uint32_t q_addr = get_common_arg_val<uint32_t>(arg++);
    const uint32_t k_addr = get_common_arg_val<uint32_t>(arg++);
    const uint32_t v_addr = get_common_arg_val<uint32_t>(arg++);
    const uint32_t cur_pos_addr = get_common_arg_val<uint32_t>(arg++);
    const uint32_t page_table_addr = get_common_arg_val<uint32_t>(arg++);  // paged only
    const uint32_t mask_addr = get_common_arg_val<uint32_t>(arg++);        // use_attn_mask only
    const uint32_t sink_addr = get_common_arg_val<uint32_t>(arg++);        // use_sink only
    batch = get_common_arg_val<uint32_t>(arg++);
    kv_len = get_common_arg_val<uint32_t>(arg++);
    St = get_common_arg_val<uint32_t>(arg++);
    sliding_window = get_common_arg_val<uint32_t>(arg++);
    scale_bits = get_common_arg_val<uint32_t>(arg++);
    num_blocks = get_common_arg_val<uint32_t>(arg++);
    ring_blocks = get_common_arg_val<uint32_t>(arg++);
    const CoreWork work = core_work(arg);
    const uint32_t first_group = work.first_group;
    const uint32_t num_groups = work.num_groups;
    const uint32_t core_index = work.core_index;
    const uint32_t num_cores_per_head = work.num_cores_per_head;
    // Q multicast (every core of a group of several serves that group only): whether this core's Q comes from its
    // group's root, and the root's count of cores it multicasts Q to.
    bool q_from_root = false;
    uint32_t q_receivers = 0;
    if (q_multicast && num_cores_per_head > 1) {
        const WorkTableBox box = work_table_box(arg);
        const uint32_t root_x = (box.index - core_index) % box.width;
        const uint32_t region = root_x == 0 && num_cores_per_head % box.width == 0
                                    ? num_cores_per_head
                                    : (box.width - root_x < num_cores_per_head ? box.width - root_x : num_cores_per_head);
        q_from_root = core_index != 0 && core_index < region;
        q_receivers = core_index == 0 ? region - 1 : 0;
    }

    Noc noc;
    CircularBuffer q_buf(cb_q);
    CircularBuffer k_buf(cb_k);
    CircularBuffer v_buf(cb_v);
    // The K and V buffers' first halves: a kernel starts with every CB's write pointer at its base.
    const uint32_t k_base = k_buf.get_write_ptr();
    const uint32_t v_base = v_buf.get_write_ptr();
    CircularBuffer cur_pos_buf(cb_cur_pos);
    CircularBuffer writer_cur_pos_buf(cb_writer_cur_pos);
    CircularBuffer page_table_buf(cb_page_table);

    const TensorPages<q_placement, q_shard_pages, decltype(TensorAccessor(q_args, q_addr))> q_pages{
        TensorAccessor(q_args, q_addr), q_addr, q_page_bytes};
    const auto k_pages = TensorAccessor(k_args, k_addr);
    const auto v_pages = TensorAccessor(v_args, v_addr);
    const auto cur_pos_pages = TensorAccessor(cur_pos_args, cur_pos_addr);
    const auto page_table_pages = TensorAccessor(page_table_args, page_table_addr);
    const auto mask_pages = TensorAccessor(mask_args, mask_addr);
    const auto sink_pages = TensorAccessor(sink_args, sink_addr);

    // Q of group `group` (token-major rows gathered from the user's rows into rows 0..q_rows-1 of the Q tiles), read
    // into the Q slot tagged Q_TRID; pushed by the caller once the reads landed.
    auto read_q = [&](uint32_t group) {
        const uint32_t b = group / num_kv_heads * users_per_group;  // the group's first user
        const uint32_t kv_head = group % num_kv_heads;
        q_buf.reserve_back(PNHt * DHt);
        if (q_from_root) {
            return;  // the root multicasts it into this slot
        }
        const uint32_t q_l1 = q_buf.get_write_ptr();
        if constexpr (q_whole_tiles) {
            // Padding rows come along: compute keeps every row to itself (row-wise softmax, P . V by rows), so
            // whatever they hold never reaches a real row.
            for (uint32_t t = 0; t < PNHt * DHt; ++t) {
                q_pages.template read<NocOptions::TXN_ID>(noc, q_buf, t * q_tile_bytes, q_tile_bytes,
                                                          {.page = b * NQt * DHt + t, .offset = 0}, Q_TRID);
            }
            return;
        }
        zero_bytes(q_l1, PNHt * DHt * q_tile_bytes);
        // A run of rows (face_row_run: consecutive heads of one token inside one face on both sides) is one read per
        // face column.
        for (uint32_t row = 0; row < q_rows;) {
            const uint32_t slot = b + row / user_rows;
            const uint32_t user = slot_users ? get_common_arg_val<uint32_t>(slot) : slot;
            const uint32_t token = row % user_rows / heads_per_group;
            const uint32_t q_head = kv_head * heads_per_group + row % heads_per_group;
            // Row of Q's [q_len * b * heads, head_dim] view: tile layout pads each user's heads to whole tiles.
            const uint32_t src_row = (token * batch + user) * (q_tiled ? NQt * TILE_HW : n_q_heads) + q_head;
            const uint32_t run = face_row_run(row, q_rows, heads_per_group, q_tile_rows, src_row, q_tiled);
            if (slot_users && user == NO_USER) {  // a padding slot: its rows stay zero (a run never spans two slots)
                row += run;
                continue;
            }
            for (uint32_t d = 0; d < DHt; ++d) {
                const uint32_t dst_tile = ((row / q_tile_rows) * DHt + d) * q_tile_bytes;
                for (uint32_t col = d * TILE_HW; col < (d + 1) * TILE_HW; col += FACE_HW) {
                    const PageOffset at = datum_page<q_tiled>(src_row, col, DHt * TILE_HW, BF16_BYTES);
                    q_pages.template read<NocOptions::TXN_ID>(
                        noc, q_buf, dst_tile + tile_datum_offset(row % q_tile_rows, col % TILE_HW, BF16_BYTES),
                        run * FACE_ROW_BYTES, at, Q_TRID);
                }
            }
            row += run;
        }
    };

    // ---- The first round trip: cur_pos of every user (one row-major int32 page), the page-table row of this core's
    // first user (paged) and the first group's Q are read together, since none depends on another: a core's first
    // K read then waits for one DRAM round trip instead of three in a row (cur_pos, page table, Q). The Q slot is
    // only pushed if the group has chunks for this core; otherwise the next group's Q overwrites it.
    cur_pos_buf.reserve_back(1);
    noc.async_read<NocOptions::TXN_ID>(cur_pos_pages, cur_pos_buf, cur_pos_pages.get_aligned_page_size(),
                                       {.page_id = 0}, {}, {.trid = SETUP_TRID});
    uint32_t page_table_l1 = 0;  // paged: the page-table row of the user being read
    uint32_t loaded_page_row = SKIPPED_USER;  // the page-table row in page_table_l1 (none yet)
    auto load_page_row = [&](uint32_t b) {
        if (page_table_row(b) != loaded_page_row) {
            noc.async_read<NocOptions::TXN_ID>(page_table_pages, page_table_buf,
                                               page_table_pages.get_aligned_page_size(),
                                               {.page_id = page_table_row(b)}, {}, {.trid = SETUP_TRID});
            noc.async_read_barrier<NocOptions::TXN_ID>({.trid = SETUP_TRID});
            loaded_page_row = page_table_row(b);
        }
    };
    if constexpr (is_paged) {
        page_table_buf.reserve_back(1);  // scratch: reserved, never pushed
        page_table_l1 = page_table_buf.get_write_ptr();
        loaded_page_row = page_table_row(first_group / num_kv_heads * users_per_group);
        noc.async_read<NocOptions::TXN_ID>(page_table_pages, page_table_buf, page_table_pages.get_aligned_page_size(),
                                           {.page_id = loaded_page_row}, {}, {.trid = SETUP_TRID});
    }
    if (num_groups > 0) {
        read_q(first_group);
    }
    // ---- constants for compute, filled while the first reads are in flight: the softmax scale (broadcast as a
    // scalar) and the reduce scaler (all ones)
    CircularBuffer scale_buf(cb_scale);
    scale_buf.reserve_back(1);
    fill_tile_bf16(Bf16Tile(scale_buf.get_write_ptr()), float_to_bfloat16(softmax_scale()));
    scale_buf.push_back(1);
    CircularBuffer ones_buf(cb_ones);
    ones_buf.reserve_back(1);
    fill_tile_bf16(Bf16Tile(ones_buf.get_write_ptr()), float_to_bfloat16(1.0f));
    ones_buf.push_back(1);
    if constexpr (merge_select_tiles > 0) {
        fill_merge_select();
    }

    // cur_pos and the page-table row only: an untagged barrier would wait for Q's reads too (it counts every read
    // the NIU issued), and Q is not needed before the first K fetch lands.
    noc.async_read_barrier<NocOptions::TXN_ID>({.trid = SETUP_TRID});
    CoreLocalMem<volatile uint32_t> cur_pos_of_user(cur_pos_buf.get_write_ptr());
    for (uint32_t b = 0; b < batch; ++b) {
        cur_pos_of_user[b] = checked_cur_pos(cur_pos_of_user[b], kv_len, q_len);
    }
    if constexpr (is_paged) {
        // A user whose page table names a block that does not exist is skipped rather than read out of bounds.
        // Every core of a group reads the same row, so the group agrees. Entries past cur_pos are never looked at.
        for (uint32_t group = first_group; group < first_group + num_groups; ++group) {
            const uint32_t first_user = group / num_kv_heads * users_per_group;
            for (uint32_t b = first_user; b < first_user + users_per_group; ++b) {
                const uint32_t cur_pos = cur_pos_of_user[b];
                if (cur_pos == SKIPPED_USER) {
                    continue;
                }
                load_page_row(b);
                const uint32_t first_tile = window_start(cur_pos, q_len, sliding_window) / TILE_HW;
                if (!blocks_exist(CoreLocalMem<volatile uint32_t>(page_table_l1), first_tile, cur_pos / TILE_HW)) {
                    cur_pos_of_user[b] = SKIPPED_USER;
                }
            }
        }
    }
    writer_cur_pos_buf.reserve_back(1);
    {
        CoreLocalMem<volatile uint32_t> writer_copy(writer_cur_pos_buf.get_write_ptr());
        for (uint32_t b = 0; b < batch; ++b) {
            writer_copy[b] = cur_pos_of_user[b];
        }
    }
    writer_cur_pos_buf.push_back(1);
    cur_pos_buf.push_back(1);

    for (uint32_t group = first_group; group < first_group + num_groups; ++group) {
        const uint32_t b = group / num_kv_heads * users_per_group;  // the group's first user
        const uint32_t kv_head = group % num_kv_heads;
        const GroupBounds bounds =
            group_bounds([&](uint32_t u) { return uint32_t(cur_pos_of_user[u]); }, b, users_per_group, q_len);
        const uint32_t cur_pos = bounds.last;  // the newest query's position; bounds.span stands in for q_len below
        const ChunkRange chunks =
            chunk_range(cur_pos, k_chunk_size, core_index, num_cores_per_head, bounds.span, sliding_window);
        if (chunks.count == 0) {
            continue;  // skipped user, or no chunk left for this core: compute does nothing either
        }

        if (group != first_group) {
            read_q(group);  // the first group's Q was read with cur_pos
        }

        if constexpr (use_sink || use_attn_mask) {
            if (core_index == 0) {  // the root merges the sinks (or the score floor), once, after the tree
                push_sink_partial(noc, sink_pages, kv_head);
            }
        }

        // K/V tiles that hold live positions; the rest of a chunk is zero-filled locally and masked. Inside the
        // first and last live tiles, rows outside [first_live_pos, cur_pos] are zeroed after the read.
        const uint32_t first_live_pos = window_start(cur_pos, bounds.span, sliding_window);
        const uint32_t first_live_tile = first_live_pos / TILE_HW;
        const uint32_t last_live_tile = cur_pos / TILE_HW;
        // Causal bound of query row `row` of the group: its user's token position (a skipped user's rows see the
        // group's range: the writer writes zeros for them). Non-causal: every row sees up to cur_pos.
        auto row_position = [&](uint32_t row) -> uint32_t {
            if constexpr (!is_causal) {
                return cur_pos;
            } else if constexpr (users_per_group == 1) {
                return query_position(row, cur_pos, q_len, heads_per_group);
            } else {
                const uint32_t user_pos = cur_pos_of_user[b + row / user_rows];
                return user_pos == SKIPPED_USER ? cur_pos
                                                : query_position(row % user_rows, user_pos, q_len, heads_per_group);
            }
        };
        const uint32_t kv_user = share_cache ? 0 : b;
        if constexpr (is_paged) {  // the user's page-table row (scratch reserved above, never pushed)
            load_page_row(b);
        }
        // DRAM page (tile row of heads x head-dim tiles) of sequence tile `seq_tile` of this group's K or V.
        auto kv_tile_row = [&](uint32_t seq_tile) -> uint32_t {
            if constexpr (is_paged) {
                const uint32_t block =
                    CoreLocalMem<volatile uint32_t>(page_table_l1)[page_table_slot(seq_tile / tiles_per_block)];
                return (block * num_kv_heads + kv_head) * tiles_per_block + seq_tile % tiles_per_block;
            } else {
                return (kv_user * num_kv_heads + kv_head) * St + seq_tile;
            }
        };

        // ---- the K/V stream. Compute consumes, chunk by chunk, the chunk's mask, its K fetches (k_blocks_per_row
        // of them, Sk_t blocks each: half the K buffer, the whole chunk when blocks are whole rows; position tile
        // outer, head-dim block inner, so compute keeps a position tile's scores in DST while its blocks stream
        // through) and its V column blocks (v_head_block head-dim tiles of the whole chunk); MLA's V is copied out of
        // the chunk's K rows once they landed. Each fetch is read in parts (PART_TILES, READS_IN_FLIGHT), completed
        // in order: a part's reads are waited for by its transaction id, its hidden rows zeroed and its tiles pushed
        // (compute waits for a whole K fetch, or a V part of position tiles: a CB wait counts tiles, not pushes).
        // Two fetches are open at a time, the one being completed and the next one, and every part that completes
        // makes room for a part of either to be issued, so a core keeps its reads in flight across fetch and chunk
        // boundaries instead of draining the NoC at every barrier. A fetch's slot is reserved when it opens; each
        // buffer holds two fetches, so opening the next never waits on compute for a fetch not yet pushed, and the
        // mask of a chunk is pushed before its first K part.
        // Positions of the chunk being completed that its user mask hides from every row (read_attn_mask_chunk):
        // set when the chunk's first K part completes, used by its K and V parts, which complete before the next
        // chunk's first K part does. None without a user mask.
        uint32_t masked_rows[Sk_t] = {};

        // Rows of a read position tile to zero before compute sees them: outside [first_live_pos, cur_pos] (inside
        // the first and last live tiles), and the positions the chunk's user mask hides from every row of the group.
        // Tiles outside the live range were zero-filled, not read.
        auto hidden_rows_of = [&](uint32_t seq_tile) -> uint32_t {
            if (seq_tile < first_live_tile || seq_tile > last_live_tile) {
                return 0;
            }
            return live_rows(seq_tile, first_live_pos, cur_pos).outside() | masked_rows[seq_tile % Sk_t];
        };

        struct OpenFetch {
            KvFetch fetch;
            uint32_t l1;         // its slot in the K or V buffer
            uint32_t issued;     // tiles requested (or zero-filled) so far
            uint32_t completed;  // tiles landed and pushed so far
        };
        struct Part {
            uint32_t open;  // index in `open`
            uint32_t first, count;
            uint32_t trid;
        };
        OpenFetch open[2];
        uint32_t current = 0;   // open[current]: the fetch being completed; open[current ^ 1]: the next, if has_next
        bool has_next = false;
        Part parts[PART_TRIDS];  // parts in flight, oldest at parts[oldest]
        uint32_t oldest = 0, parts_in_flight = 0, tiles_in_flight = 0, next_trid = 0;
        const uint32_t end_chunk = chunks.start + chunks.count;
        KvFetch upcoming{chunks.start, KvFetch::K, 0};  // the next fetch to open

        // Opens `upcoming` in open[slot], reserving its slot. When the fetch being completed is in the same buffer,
        // the new one takes the buffer's other half (each holds two fetches: plan/cbs.py) and the reservation counts
        // the tiles of the open one not yet pushed.
        auto open_fetch = [&](uint32_t slot) {
            const KvFetch f = upcoming;
            upcoming = upcoming.next();
            const bool is_k = f.kind == KvFetch::K;
            if constexpr (wait_for_cache_update > 0) {
                if (is_k && f.block == 0 && f.chunk == cur_pos / k_chunk_size) {  // the chunk the update writes
                    Semaphore<>(sem_cache_updated).wait_min(wait_for_cache_update * num_groups);
                }
            }
            CircularBuffer& buf = is_k ? k_buf : v_buf;
            const OpenFetch& other = open[current];
            uint32_t l1;
            if (slot != current && other.fetch.kind == f.kind) {
                buf.reserve_back(other.fetch.tiles() - other.completed + f.tiles());
                const uint32_t base = is_k ? k_base : v_base;
                l1 = other.l1 == base ? base + f.tiles() * (is_k ? k_tile_bytes : v_tile_bytes) : base;
            } else {
                buf.reserve_back(f.tiles());
                l1 = buf.get_write_ptr();
            }
            open[slot] = {f, l1, 0, 0};
        };

        // Requests the next `count` tiles of open[slot] as one part, or zero-fills those of position tiles this core
        // may not see (nothing past cur_pos's tile or before the window is read; compute still multiplies the zeros,
        // which the mask then hides).
        auto issue_part = [&](uint32_t slot, uint32_t count) {
            OpenFetch& o = open[slot];
            const KvFetch& f = o.fetch;
            const bool is_k = f.kind == KvFetch::K;
            const uint32_t tile_bytes = is_k ? k_tile_bytes : v_tile_bytes;
            const uint32_t trid = PART_TRID + next_trid;
            next_trid = (next_trid + 1) % PART_TRIDS;
            for (uint32_t i = o.issued; i < o.issued + count; ++i) {
                const uint32_t seq_tile = f.seq_tile(i);
                const CoreLocalMem<uint32_t> dst(o.l1 + i * tile_bytes);
                if (seq_tile < first_live_tile || seq_tile > last_live_tile) {
                    zero_bytes(o.l1 + i * tile_bytes, tile_bytes);
                } else if (is_k) {
                    noc.async_read<NocOptions::TXN_ID>(k_pages, dst, tile_bytes,
                                                       {.page_id = kv_tile_row(seq_tile) * DHt + f.head_tile(i)}, {},
                                                       {.trid = trid});
                } else {
                    noc.async_read<NocOptions::TXN_ID>(v_pages, dst, tile_bytes,
                                                       {.page_id = kv_tile_row(seq_tile) * vDHt + f.head_tile(i)},
                                                       {}, {.trid = trid});
                }
            }
            parts[(oldest + parts_in_flight) % PART_TRIDS] = {slot, o.issued, count, trid};
            ++parts_in_flight;
            tiles_in_flight += count;
            o.issued += count;
        };

        // Issues parts of the open fetches, opening the next one once the current one is all issued, while the reads
        // in flight allow (always at least one part in flight).
        auto fill = [&]() {
            while (parts_in_flight < PART_TRIDS) {
                uint32_t slot = current;
                if (open[slot].issued == open[slot].fetch.tiles()) {
                    if (!has_next) {
                        if (upcoming.chunk >= end_chunk) {
                            return;
                        }
                        open_fetch(current ^ 1);
                        has_next = true;
                    }
                    slot = current ^ 1;
                    if (open[slot].issued == open[slot].fetch.tiles()) {
                        return;
                    }
                }
                const uint32_t left = open[slot].fetch.tiles() - open[slot].issued;
                const uint32_t count = left < PART_TILES ? left : PART_TILES;
                if (tiles_in_flight > 0 && tiles_in_flight + count > READS_IN_FLIGHT) {
                    return;
                }
                issue_part(slot, count);
            }
        };

        // Waits for the oldest part in flight, zeroes its hidden rows (hidden_rows_of) and pushes it (a chunk's first K
        // part after the chunk's mask, which also finds the rows the mask hides: compute waits for the mask first).
        auto complete_part = [&]() {
            const Part p = parts[oldest];
            oldest = (oldest + 1) % PART_TRIDS;
            --parts_in_flight;
            tiles_in_flight -= p.count;
            OpenFetch& o = open[p.open];
            const KvFetch& f = o.fetch;
            const bool is_k = f.kind == KvFetch::K;
            if (is_k && f.block == 0 && p.first == 0) {
                if constexpr (use_attn_mask) {
                    read_attn_mask_chunk(noc, mask_pages, b, kv_head, f.chunk, cur_pos, masked_rows);
                } else if (chunk_is_masked(is_causal, f.chunk, k_chunk_size, cur_pos, bounds.span, sliding_window)) {
                    push_generated_mask(f.chunk, row_position);
                }
            }
            noc.async_read_barrier<NocOptions::TXN_ID>({.trid = p.trid});
            for (uint32_t i = p.first; i < p.first + p.count; ++i) {
                const uint32_t rows = hidden_rows_of(f.seq_tile(i));
                if (rows != 0) {
                    if (is_k) {
                        zero_rows<k_tile_bytes>(o.l1 + i * k_tile_bytes, rows);
                    } else {
                        zero_rows<v_tile_bytes>(o.l1 + i * v_tile_bytes, rows);
                    }
                }
            }
            (is_k ? k_buf : v_buf).push_back(p.count);
            o.completed += p.count;
        };

        // MLA: the chunk's V column blocks, copied by local NOC reads out of its K rows (landed, their hidden rows
        // zeroed, pushed to compute). Their slot is not rewritten before the next K fetch but one opens, after this.
        auto copy_v_from_k = [&](const OpenFetch& k) {
            const uint8_t noc_id = noc.get_noc_id();
            for (uint32_t c0 = 0; c0 < vDHt; c0 += v_head_block) {
                v_buf.reserve_back(Sk_t * v_head_block);
                for (uint32_t kt = 0; kt < Sk_t; ++kt) {
                    noc.async_read<NocOptions::TXN_ID>(
                        UnicastEndpoint{}, v_buf, v_head_block * v_tile_bytes,
                        {.noc_x = my_x[noc_id], .noc_y = my_y[noc_id], .addr = k.l1 + (kt * DHt + c0) * k_tile_bytes},
                        {.offset_bytes = kt * v_head_block * v_tile_bytes}, {.trid = V_COPY_TRID});
                }
                noc.async_read_barrier<NocOptions::TXN_ID>({.trid = V_COPY_TRID});
                v_buf.push_back(Sk_t * v_head_block);
            }
        };

        open_fetch(current);
        fill();
        // Q is first needed with the first K fetch: its reads land while that fetch's are issued. A core whose Q the
        // root multicasts pushes it once its first K fetch landed, when compute can first use it.
        bool q_pending = q_from_root;
        if (!q_from_root) {
            noc.async_read_barrier<NocOptions::TXN_ID>({.trid = Q_TRID});
            if (q_receivers > 0) {
                const uint8_t noc_id = noc.get_noc_id();
                const uint32_t others = q_receivers;
                // The reader runs on NOC 0, whose multicast rectangle starts at its lowest corner: this root.
                const uint32_t q_l1 = q_buf.get_write_ptr();  // the reserved slot, not yet pushed
                noc.async_write_multicast(CoreLocalMem<uint32_t>(q_l1), MulticastEndpoint{}, PNHt * DHt * q_tile_bytes,
                                          others, {},
                                          {.noc_x_start = my_x[noc_id],
                                           .noc_y_start = my_y[noc_id],
                                           .noc_x_end = work.parent_noc_x,
                                           .noc_y_end = work.parent_noc_y,
                                           .addr = q_l1});
                noc.async_write_barrier();  // Q must land before its receivers are told
                Semaphore<> q_arrived(sem_q_arrived);
                q_arrived.set(1);
                q_arrived.set_multicast(noc, my_x[noc_id], my_y[noc_id], work.parent_noc_x, work.parent_noc_y, others);
            }
            q_buf.push_back(PNHt * DHt);
        }
        while (true) {
            complete_part();
            if (open[current].completed == open[current].fetch.tiles()) {
                if (q_pending) {
                    Semaphore<>(sem_q_arrived).wait(1);
                    q_buf.push_back(PNHt * DHt);
                    q_pending = false;
                }
                if constexpr (v_from_k) {
                    copy_v_from_k(open[current]);
                }
                if (!has_next) {
                    if (upcoming.chunk >= end_chunk) {
                        break;
                    }
                    open_fetch(current ^ 1);
                }
                current ^= 1;
                has_next = false;
            }
            fill();
        }
    }
}
