// Private to CAppleCompression: the LZFSE stream facts that the decoder and the encoder share (block magics,
// table sizes, the L/M/D value classes) and unaligned little-endian loads. Written for this project from the
// LZFSE format's description (the public reference implementation, lzfse/lzfse, read as documentation).
#ifndef AC_LZFSE_INTERNAL_H
#define AC_LZFSE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the loads below assume a little-endian host"
#endif

// Block magics, as little-endian uint32 ("bvx$" is the bytes 62 76 78 24).
#define AC_LZFSE_MAGIC_END 0x24787662u          // "bvx$": end of stream, nothing follows
#define AC_LZFSE_MAGIC_RAW 0x2d787662u          // "bvx-": uint32 size, then the bytes
#define AC_LZFSE_MAGIC_V1 0x31787662u           // "bvx1": FSE block, header with plain tables
#define AC_LZFSE_MAGIC_V2 0x32787662u           // "bvx2": FSE block, header with packed tables
#define AC_LZFSE_MAGIC_LZVN 0x6e787662u         // "bvxn": uint32 raw size, uint32 payload size, LZVN

// Symbols and states of the four FSE alphabets. States are powers of two; a table's frequencies sum to it.
#define AC_LZFSE_L_SYMBOLS 20
#define AC_LZFSE_M_SYMBOLS 20
#define AC_LZFSE_D_SYMBOLS 64
#define AC_LZFSE_LITERAL_SYMBOLS 256
#define AC_LZFSE_L_STATES 64
#define AC_LZFSE_M_STATES 64
#define AC_LZFSE_D_STATES 256
#define AC_LZFSE_LITERAL_STATES 1024
#define AC_LZFSE_ALL_SYMBOLS (AC_LZFSE_L_SYMBOLS + AC_LZFSE_M_SYMBOLS + AC_LZFSE_D_SYMBOLS + AC_LZFSE_LITERAL_SYMBOLS)

// Per-block limits the encoder keeps to (the decoder rejects more).
#define AC_LZFSE_MATCHES_PER_BLOCK 10000
#define AC_LZFSE_LITERALS_PER_BLOCK (4 * AC_LZFSE_MATCHES_PER_BLOCK)

// Fixed sizes of block headers. v1's is the C struct of the reference (seven uint32, int32, four uint16,
// int32, three uint16, 360 uint16 frequencies = 770 bytes) padded to its 4-byte alignment: 772 on disk.
#define AC_LZFSE_V1_HEADER_SIZE 772
#define AC_LZFSE_V2_FIXED_HEADER_SIZE 32 // magic, raw size, three packed uint64; then the frequencies
#define AC_LZFSE_LZVN_HEADER_SIZE 12
#define AC_LZFSE_RAW_HEADER_SIZE 8

// L, M and D are each coded as a symbol (FSE) plus raw low bits. A symbol's base is the previous symbol's base
// plus 2^(previous extra bits), so only the extra-bit counts need stating: L and M have 16 symbols of 0 bits
// (values 0..15) then a few wider ones; D's extra bits grow by one every four symbols.
static inline unsigned ac_lzfse_l_extra_bits(unsigned symbol) {
    static const uint8_t tail[4] = {2, 3, 5, 8};
    return symbol < 16 ? 0 : tail[symbol - 16];
}

static inline unsigned ac_lzfse_m_extra_bits(unsigned symbol) {
    static const uint8_t tail[4] = {3, 5, 8, 11};
    return symbol < 16 ? 0 : tail[symbol - 16];
}

static inline unsigned ac_lzfse_d_extra_bits(unsigned symbol) { return symbol >> 2; }

static inline uint16_t ac_load_le16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v; // little-endian hosts only (x86-64, arm64), as the project's Linux targets are
}

static inline uint32_t ac_load_le32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint64_t ac_load_le64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

#endif
