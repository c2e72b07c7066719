// Private declarations of the LZFSE encoder (lzfse_encode.c): the format's limits and the layout of the
// scratch memory the caller hands in. Written for this project from the description of the LZFSE format
// (block headers, FSE tables and L/M/D coding as the public reference decoder reads them).
#ifndef LZFSE_ENCODE_INTERNAL_H
#define LZFSE_ENCODE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

// Block magics, little-endian as they appear in the stream ("bvx2", "bvx-", "bvx$").
#define LZFSE_ENC_MAGIC_V2 0x32787662u
#define LZFSE_ENC_MAGIC_RAW 0x2d787662u
#define LZFSE_ENC_MAGIC_END 0x24787662u

// Format limits. A decoder rejects a bvx2 block with more than 10000 L/M/D records or 40000 literal bytes
// (it sizes its buffers by these), and the value codings end at these L, M and D.
#define LZFSE_ENC_MAX_RECORDS 10000u
#define LZFSE_ENC_MAX_LITERALS 40000u
#define LZFSE_ENC_MAX_L 315u
#define LZFSE_ENC_MAX_M 2359u
#define LZFSE_ENC_MAX_D 262139u

// Symbol alphabets and FSE state counts (fixed by the format).
#define LZFSE_ENC_L_SYMBOLS 20
#define LZFSE_ENC_M_SYMBOLS 20
#define LZFSE_ENC_D_SYMBOLS 64
#define LZFSE_ENC_LIT_SYMBOLS 256
#define LZFSE_ENC_L_STATES 64
#define LZFSE_ENC_M_STATES 64
#define LZFSE_ENC_D_STATES 256
#define LZFSE_ENC_LIT_STATES 1024

// Match finder tuning (ours). A bucket keeps the last 4 positions whose first 4 bytes hash alike, with those
// 4 bytes beside them so a false candidate costs no load from the source. Up to 2^16 buckets (2 MiB): that
// many make our output slightly smaller than the reference encoder's (2^14) at about its speed; small inputs
// use fewer (see ac_lzfse_encode), so clearing the table does not dominate their cost.
#define LZFSE_ENC_HASH_BITS 16
#define LZFSE_ENC_HASH_BITS_MIN 12
#define LZFSE_ENC_HASH_WAYS 4
// A match at least this long is taken at once, without looking one byte further for a longer one.
#define LZFSE_ENC_GOOD_MATCH 40
// Positions in the table are int32 relative to a base; when they reach this, the base moves forward by half of
// it (forgetting only entries far beyond the maximum distance). Tests build with a small value (it must stay
// above 2 * LZFSE_ENC_MAX_D to lose no candidate) to run this path on small inputs.
#ifndef LZFSE_ENC_REBASE_AT
#define LZFSE_ENC_REBASE_AT ((size_t)1 << 30)
#endif
// An empty bucket slot: far enough below any position that its distance is always out of range.
#define LZFSE_ENC_NO_POS (INT32_MIN / 2)

typedef struct {
    int32_t pos[LZFSE_ENC_HASH_WAYS];
    uint32_t val[LZFSE_ENC_HASH_WAYS];
} lzfse_enc_bucket;

// Everything the encoder works in; it lives in the caller's scratch memory.
typedef struct {
    lzfse_enc_bucket table[1u << LZFSE_ENC_HASH_BITS];
    // The records of the block being gathered, and its literal bytes (16 spare bytes for the padding to a
    // multiple of 4).
    uint32_t l[LZFSE_ENC_MAX_RECORDS];
    uint32_t m[LZFSE_ENC_MAX_RECORDS];
    uint32_t d[LZFSE_ENC_MAX_RECORDS];
    uint8_t lit[LZFSE_ENC_MAX_LITERALS + 16];
    uint32_t n_records;
    uint32_t n_lits;
    // Source bytes the gathered records decode to, and where in the source they start.
    size_t block_raw;
    size_t block_start;
    // The last D pushed in this block (0 at a block start), reused by literal-only records.
    uint32_t last_d;
    // Output.
    const uint8_t *src;
    uint8_t *dst;
    size_t cap;
    size_t len;
    // Offset of the header of the last block written if that block is an uncompressed one (so the next
    // uncompressed block can be merged into it), else SIZE_MAX.
    size_t raw_header;
    // The positions in `table` are relative to `src + base` (rebased every 1 GiB so they fit in int32).
    size_t base;
    // Buckets in use: 2^hash_bits (chosen from the input size, so the same input always uses the same).
    uint32_t hash_bits;
} lzfse_enc_state;

#endif
