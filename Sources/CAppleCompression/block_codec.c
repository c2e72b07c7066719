// One pbz block through the algorithm its stream names: see apple_compression.h. Written for this project.
// Decoding (ac_block_decode) is below; LZFSE is this target's own decoder, the others go through Debian's
// liblz4, liblzma and zlib with Apple's framing around them, as Apple documents it:
//
// - LZ4 (COMPRESSION_LZ4): a sequence of blocks, each with a header: "bv41", uint32 LE decoded size, uint32 LE
//   encoded size, then a raw LZ4 block; "bv4-", uint32 LE size, then that many plain bytes; "bv4$" ends the
//   stream. "A compressed block may refer to data from the previous block", so each block is decoded with the
//   output so far as its dictionary. Source: Apple's COMPRESSION_LZ4 page
//   (developer.apple.com/documentation/compression/compression_algorithm/compression_lz4, as mirrored at
//   apple-docs.everest.mt/docs/compression/compression_lz4/). An older revision of that page gives "bv4-" two
//   sizes (decoded, encoded), and a third-party reader (Avarel/silicate, libs/lz4_flex) reads it that way; we
//   read the one-size form and fall back to the two-size form when only it lands on the next block's magic.
//   COMPRESSION_LZ4_RAW is the bare LZ4 block without this frame; we accept it too when the data does not start
//   with "bv4".
// - LZMA (COMPRESSION_LZMA): an xz stream; a .lzma ("alone") stream is accepted too (liblzma's auto decoder).
// - ZLIB (COMPRESSION_ZLIB): raw DEFLATE (RFC 1951), no zlib header; data that starts with a valid zlib header
//   is tried as zlib-wrapped first.
#include "apple_compression.h"
#include "lzfse_internal.h"

#include <limits.h>
#include <lz4.h>
#include <lzma.h>
#include <zlib.h>

#define AC_LZ4_MAGIC_COMPRESSED 0x31347662u // "bv41"
#define AC_LZ4_MAGIC_RAW 0x2d347662u        // "bv4-"
#define AC_LZ4_MAGIC_END 0x24347662u        // "bv4$"
#define AC_LZ4_MAX_DICT 65536               // LZ4's window: matches reach at most 64 KiB back

// liblzma may allocate this much for a stream's dictionary before it refuses (Apple's encoder uses far less).
#define AC_LZMA_MEMLIMIT (UINT64_C(256) << 20)

// MARK: - LZ4

static int is_lz4_magic(const uint8_t *p, const uint8_t *end) {
    return end - p >= 4 && p[0] == 'b' && p[1] == 'v' && p[2] == '4';
}

// The decoded size of a raw LZ4 block, by walking its sequences without writing; -1 if malformed (cut short).
// Lets a bare block too large for the caller's buffer be told from a corrupt one.
static int64_t lz4_raw_size(const uint8_t *p, const uint8_t *end) {
    int64_t size = 0;
    for (;;) {
        if (p >= end) return -1;
        const unsigned token = *p++;
        size_t lit = token >> 4;
        if (lit == 15) {
            unsigned b;
            do {
                if (p >= end) return -1;
                b = *p++;
                lit += b;
            } while (b == 255);
        }
        if (lit > (size_t)(end - p)) return -1;
        p += lit;
        size += (int64_t)lit;
        if (p == end) return size; // the last sequence has literals only
        if (end - p < 2) return -1;
        p += 2; // offset (validated by liblz4 when decoding)
        int64_t match = (token & 15) + 4;
        if ((token & 15) == 15) {
            unsigned b;
            do {
                if (p >= end) return -1;
                b = *p++;
                match += b;
            } while (b == 255);
        }
        size += match;
    }
}

static ptrdiff_t lz4_bare(uint8_t *dst, size_t cap, const uint8_t *src, size_t n) {
    if (n > INT_MAX) return AC_ERROR_CORRUPT;
    const int64_t size = lz4_raw_size(src, src + n);
    if (size < 0) return AC_ERROR_CORRUPT;
    if ((uint64_t)size > cap) return AC_ERROR_OUTPUT_FULL;
    if (size == 0) return n == 1 && src[0] == 0 ? 0 : AC_ERROR_CORRUPT;
    if (size > INT_MAX) return AC_ERROR_CORRUPT;
    const int r = LZ4_decompress_safe((const char *)src, (char *)dst, (int)n, (int)size);
    return r == size ? (ptrdiff_t)r : AC_ERROR_CORRUPT;
}

// One "bv4-" block at p: its header length (8, or 12 in the two-size form), or -1.
static int lz4_raw_header(const uint8_t *p, const uint8_t *end) {
    if (end - p < 8) return -1;
    const uint32_t n = ac_load_le32(p + 4);
    const size_t left = (size_t)(end - p);
    if ((size_t)n + 8 <= left && is_lz4_magic(p + 8 + n, end)) return 8;
    if (left >= 12 && ac_load_le32(p + 8) == n && (size_t)n + 12 <= left && is_lz4_magic(p + 12 + n, end)) return 12;
    return 8; // neither lands on a magic: the one-size form, which then fails where it fails
}

static ptrdiff_t lz4_block(const uint8_t **src, const uint8_t *end, uint8_t *begin, uint8_t **pos, uint8_t *cap_end) {
    const uint8_t *p = *src;
    if (end - p < 12) return AC_ERROR_CORRUPT;
    const uint32_t raw = ac_load_le32(p + 4), enc = ac_load_le32(p + 8);
    p += 12;
    if (enc > (size_t)(end - p) || enc > INT_MAX || raw > INT_MAX) return AC_ERROR_CORRUPT;
    if (raw > (size_t)(cap_end - *pos)) return AC_ERROR_OUTPUT_FULL;
    const size_t dict = (size_t)(*pos - begin) < AC_LZ4_MAX_DICT ? (size_t)(*pos - begin) : AC_LZ4_MAX_DICT;
    const int r = LZ4_decompress_safe_usingDict((const char *)p, (char *)*pos, (int)enc, (int)raw,
                                                (const char *)(*pos - dict), (int)dict);
    if (r < 0 || (uint32_t)r != raw) return AC_ERROR_CORRUPT;
    *pos += raw;
    *src = p + enc;
    return 0;
}

static ptrdiff_t lz4_decode(uint8_t *dst, size_t cap, const uint8_t *src, size_t n) {
    const uint8_t *p = src, *const end = src + n;
    if (!is_lz4_magic(p, end)) return lz4_bare(dst, cap, src, n);
    uint8_t *pos = dst, *const cap_end = dst + cap;
    for (;;) {
        if (end - p < 4) return AC_ERROR_CORRUPT; // no bv4$
        const uint32_t magic = ac_load_le32(p);
        if (magic == AC_LZ4_MAGIC_END) return end - p == 4 ? (ptrdiff_t)(pos - dst) : AC_ERROR_CORRUPT;
        if (magic == AC_LZ4_MAGIC_COMPRESSED) {
            const ptrdiff_t r = lz4_block(&p, end, dst, &pos, cap_end);
            if (r < 0) return r;
        } else if (magic == AC_LZ4_MAGIC_RAW) {
            const int header = lz4_raw_header(p, end);
            if (header < 0) return AC_ERROR_CORRUPT;
            const uint32_t size = ac_load_le32(p + 4);
            if (size > (size_t)(end - p) - (size_t)header) return AC_ERROR_CORRUPT;
            if (size > (size_t)(cap_end - pos)) return AC_ERROR_OUTPUT_FULL;
            memcpy(pos, p + header, size);
            pos += size;
            p += (size_t)header + size;
        } else {
            return AC_ERROR_CORRUPT;
        }
    }
}

// MARK: - LZMA

static ptrdiff_t lzma_decode(uint8_t *dst, size_t cap, const uint8_t *src, size_t n) {
    lzma_stream s = LZMA_STREAM_INIT;
    lzma_ret ret = lzma_auto_decoder(&s, AC_LZMA_MEMLIMIT, 0);
    if (ret == LZMA_MEM_ERROR) return AC_ERROR_NO_MEMORY;
    if (ret != LZMA_OK) return AC_ERROR_CORRUPT;
    s.next_in = src;
    s.avail_in = n;
    s.next_out = dst;
    s.avail_out = cap;
    do ret = lzma_code(&s, LZMA_FINISH); // LZMA_OK means progress; LZMA_BUF_ERROR, none was possible
    while (ret == LZMA_OK);
    const size_t produced = cap - s.avail_out;
    if (ret == LZMA_BUF_ERROR && s.avail_out == 0) {
        // Stuck with the buffer full: either more output is due, or only the stream's end (index, footer) is
        // left, or the input is cut short. One spare byte of room tells them apart.
        uint8_t probe;
        s.next_out = &probe;
        s.avail_out = 1;
        do ret = lzma_code(&s, LZMA_FINISH);
        while (ret == LZMA_OK && s.avail_out == 1);
        if (s.avail_out == 0) ret = LZMA_BUF_ERROR; // it wrote a byte: the output does not fit
        else if (ret == LZMA_BUF_ERROR) ret = LZMA_DATA_ERROR; // no byte and no end: cut short
    }
    ptrdiff_t result;
    if (ret == LZMA_STREAM_END) result = s.avail_in == 0 ? (ptrdiff_t)produced : AC_ERROR_CORRUPT;
    else if (ret == LZMA_BUF_ERROR) result = s.avail_out == 0 ? AC_ERROR_OUTPUT_FULL : AC_ERROR_CORRUPT;
    else if (ret == LZMA_MEM_ERROR) result = AC_ERROR_NO_MEMORY;
    else result = AC_ERROR_CORRUPT; // data, format, options or memlimit errors
    lzma_end(&s);
    return result;
}

// MARK: - zlib

// A zlib header (RFC 1950): deflate with a window of at most 32 KiB, no preset dictionary, check bits valid.
static int looks_like_zlib(const uint8_t *src, size_t n) {
    if (n < 2) return 0;
    const unsigned cmf = src[0], flg = src[1];
    return (cmf & 15) == 8 && (cmf >> 4) <= 7 && (flg & 0x20) == 0 && (cmf * 256 + flg) % 31 == 0;
}

static ptrdiff_t inflate_with(int window_bits, uint8_t *dst, size_t cap, const uint8_t *src, size_t n) {
    z_stream z;
    memset(&z, 0, sizeof z);
    int ret = inflateInit2(&z, window_bits);
    if (ret == Z_MEM_ERROR) return AC_ERROR_NO_MEMORY;
    if (ret != Z_OK) return AC_ERROR_CORRUPT;
    // zlib counts in uInt: feed buffers over 4 GiB in pieces.
    size_t in_left = n, out_left = cap;
    z.next_in = (Bytef *)(uintptr_t)src;
    z.next_out = dst;
    for (;;) {
        if (z.avail_in == 0 && in_left > 0) {
            z.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
            in_left -= z.avail_in;
        }
        if (z.avail_out == 0 && out_left > 0) {
            z.avail_out = out_left > UINT_MAX ? UINT_MAX : (uInt)out_left;
            out_left -= z.avail_out;
        }
        ret = inflate(&z, Z_FINISH);
        const int more_pieces = (z.avail_in == 0 && in_left > 0) || (z.avail_out == 0 && out_left > 0);
        if ((ret == Z_OK || ret == Z_BUF_ERROR) && more_pieces) continue;
        break;
    }
    const size_t produced = (size_t)(z.next_out - dst);
    const int trailing = z.avail_in != 0 || in_left != 0;
    const int full = z.avail_out == 0 && out_left == 0;
    inflateEnd(&z);
    if (ret == Z_STREAM_END) return trailing ? AC_ERROR_CORRUPT : (ptrdiff_t)produced;
    if (ret == Z_MEM_ERROR) return AC_ERROR_NO_MEMORY;
    if ((ret == Z_OK || ret == Z_BUF_ERROR) && full) return AC_ERROR_OUTPUT_FULL; // more to come, no room
    return AC_ERROR_CORRUPT; // data error, need dictionary, or input cut short
}

static ptrdiff_t zlib_decode(uint8_t *dst, size_t cap, const uint8_t *src, size_t n) {
    if (looks_like_zlib(src, n)) {
        const ptrdiff_t r = inflate_with(15, dst, cap, src, n);
        if (r != AC_ERROR_CORRUPT) return r;
        // A raw stream may start with bytes that pass the header check: fall through and read it as raw.
    }
    return inflate_with(-15, dst, cap, src, n);
}

// MARK: - Dispatch

ptrdiff_t ac_block_decode(uint32_t algorithm, uint8_t *dst, size_t dst_capacity, const uint8_t *src, size_t src_size) {
    static const uint8_t no_input[1];
    uint8_t no_output[1];
    if (src == NULL) {
        if (src_size != 0) return AC_ERROR_CORRUPT;
        src = no_input;
    }
    if (dst == NULL) {
        dst = no_output;
        dst_capacity = 0;
    }
    if (dst_capacity > PTRDIFF_MAX) dst_capacity = PTRDIFF_MAX;
    switch (algorithm) {
    case AC_ALGORITHM_LZFSE: return ac_lzfse_decode(dst, dst_capacity, src, src_size);
    case AC_ALGORITHM_LZ4: return lz4_decode(dst, dst_capacity, src, src_size);
    case AC_ALGORITHM_LZMA: return lzma_decode(dst, dst_capacity, src, src_size);
    case AC_ALGORITHM_ZLIB:
    case AC_ALGORITHM_AA_ZLIB: return zlib_decode(dst, dst_capacity, src, src_size);
    default: return AC_ERROR_UNSUPPORTED; // LZBITMAP, or a number we do not know
    }
}
