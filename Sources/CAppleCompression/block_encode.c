// The encode side of one pbz block, as Apple's Compression library (compression_encode_buffer) writes each
// algorithm: see apple_compression.h. Written for this project. LZFSE is our own encoder (lzfse_encode.c);
// LZ4, LZMA and zlib go through Debian's liblz4, liblzma and zlib, inside the framing Apple uses.
//
// What is confirmed about the framings, and from where:
//
// - ZLIB: raw DEFLATE (RFC 1951, no zlib header or Adler-32), level 5. Apple's documentation of
//   COMPRESSION_ZLIB / Algorithm.zlib says the encoder works "at level 5 only", the format is "the raw DEFLATE
//   format as described in IETF RFC 1951", and gives the equivalent call
//   deflateInit2(zstream, 5, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), which is what we call. (Our bytes match
//   Apple's only as far as Debian's zlib matches Apple's; any inflater reads either.)
//
// - LZMA: Apple's documentation of COMPRESSION_LZMA / Algorithm.lzma says the encoder works "at level 6
//   only" (liblzma's default preset). The container is the .xz format (what Apple's decoder and every
//   third-party reader of pbz "lzma" blocks expect); the integrity check inside it is NOT confirmed from a
//   public source: we use CRC64, liblzma's and xz(1)'s default. Any xz decoder accepts any check type, so
//   this only matters for byte-identical output. lzma_easy_buffer_encode is single-threaded, so the output
//   is reproducible.
//
// - LZ4: Apple's documentation of COMPRESSION_LZ4 describes the frame: a sequence of blocks, "bv41" +
//   uint32 LE decoded size + uint32 LE encoded size + a raw LZ4 block; "bv4-" + uint32 LE size + the bytes
//   themselves (stored); "bv4$" ends the stream; all little-endian. (An older revision of that page said a
//   bv4- header carries two sizes; the current page says one, and the third-party readers of Apple's output
//   we found — a Spotlight-store parser, LZ4CompressorX, a Procreate tile decoder — read one.) The same
//   page says "a compressed block may refer to data from the previous block", so blocks are chained, not
//   independent. The block size is NOT documented: a third-party decoder of Procreate's Apple-LZ4 tiles
//   rejects blocks over 65536 decoded bytes and keeps a shared 64 KiB history between them, which suggests
//   Apple's encoder cuts at 64 KiB. We cut at 64 KiB, chain the blocks through liblz4's streaming API (a
//   match may reach up to 64 KiB back, into the blocks before), and store a block as bv4- when LZ4 does
//   not make it smaller. A reader must therefore decode each bv41 block with the output before it as its
//   dictionary (as Apple's decoder does).
#include "apple_compression.h"

#include <lz4.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static void put_le32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

// MARK: - LZ4

#define AC_LZ4_BLOCK 65536u

static ptrdiff_t encode_lz4(uint8_t *dst, size_t cap, const uint8_t *src, size_t n) {
    if (n > 0xffffffffu) return AC_ERROR_OUTPUT_FULL;
    LZ4_stream_t *stream = malloc(sizeof(LZ4_stream_t));
    if (!stream || !LZ4_initStream(stream, sizeof *stream)) {
        free(stream);
        return AC_ERROR_NO_MEMORY;
    }
    size_t len = 0;
    ptrdiff_t result = 0;
    for (size_t at = 0; at < n; at += AC_LZ4_BLOCK) {
        size_t chunk = n - at < AC_LZ4_BLOCK ? n - at : AC_LZ4_BLOCK;
        size_t room = cap - len;
        int written = 0;
        // Compressed only if it fits and is smaller than storing (bv41's header is 4 bytes longer).
        if (room > 12) {
            size_t limit = room - 12;
            if (limit > chunk + 3) limit = chunk + 3;
            // The stream keeps the previous blocks (they stay in place in `src`) as its history.
            written = LZ4_compress_fast_continue(stream, (const char *)src + at, (char *)dst + len + 12,
                                                 (int)chunk, (int)limit, 1);
        }
        if (written > 0 && (size_t)written + 4 < chunk) {
            put_le32(dst + len, 0x31347662u); // "bv41"
            put_le32(dst + len + 4, (uint32_t)chunk);
            put_le32(dst + len + 8, (uint32_t)written);
            len += 12 + (size_t)written;
        } else {
            if (written <= 0 && room > 12) {
                // A failed call leaves the stream unusable for chaining: start a fresh history from the
                // bytes this block stores (they are in the decoder's output too).
                LZ4_resetStream_fast(stream);
                LZ4_loadDict(stream, (const char *)src + at, (int)chunk);
            }
            if (room < 8 + chunk) {
                result = AC_ERROR_OUTPUT_FULL;
                break;
            }
            put_le32(dst + len, 0x2d347662u); // "bv4-"
            put_le32(dst + len + 4, (uint32_t)chunk);
            memcpy(dst + len + 8, src + at, chunk);
            len += 8 + chunk;
        }
    }
    free(stream);
    if (result < 0) return result;
    if (cap - len < 4) return AC_ERROR_OUTPUT_FULL;
    put_le32(dst + len, 0x24347662u); // "bv4$"
    return (ptrdiff_t)(len + 4);
}

// MARK: - LZMA

static ptrdiff_t encode_lzma(uint8_t *dst, size_t cap, const uint8_t *src, size_t n) {
    size_t pos = 0;
    lzma_ret r = lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, NULL, src, n, dst, &pos, cap);
    if (r == LZMA_OK) return (ptrdiff_t)pos;
    if (r == LZMA_BUF_ERROR) return AC_ERROR_OUTPUT_FULL;
    if (r == LZMA_MEM_ERROR) return AC_ERROR_NO_MEMORY;
    return AC_ERROR_UNSUPPORTED;
}

// MARK: - zlib

// window_bits -15: raw DEFLATE (the Compression library's COMPRESSION_ZLIB); 15: an RFC 1950 zlib stream with its
// 2-byte header and Adler-32, which AppleArchive's own zlib (AA_COMPRESSION_ALGORITHM_ZLIB, 0x505) writes:
// AADefs.h, "ZLIB level 5 (RFC1950 zlib format, includes 2 bytes header before raw deflate)".
static ptrdiff_t encode_zlib(uint8_t *dst, size_t cap, const uint8_t *src, size_t n, int window_bits) {
    z_stream z;
    memset(&z, 0, sizeof z);
    int r = deflateInit2(&z, 5, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
    if (r == Z_MEM_ERROR) return AC_ERROR_NO_MEMORY;
    if (r != Z_OK) return AC_ERROR_UNSUPPORTED;
    // zlib counts in uInt: feed and drain in pieces so buffers over 4 GiB work too.
    const uInt piece = 1u << 30;
    size_t in_left = n, out_left = cap;
    z.next_in = (Bytef *)(uintptr_t)src;
    z.next_out = dst;
    ptrdiff_t result = 0;
    for (;;) {
        uInt in_now = in_left > piece ? piece : (uInt)in_left;
        uInt out_now = out_left > piece ? piece : (uInt)out_left;
        z.avail_in = in_now;
        z.avail_out = out_now;
        r = deflate(&z, in_left == in_now ? Z_FINISH : Z_NO_FLUSH);
        in_left -= in_now - z.avail_in;
        out_left -= out_now - z.avail_out;
        if (r == Z_STREAM_END) {
            result = (ptrdiff_t)(cap - out_left);
            break;
        }
        if (r != Z_OK && r != Z_BUF_ERROR) {
            result = AC_ERROR_UNSUPPORTED;
            break;
        }
        if (out_left == 0) {
            result = AC_ERROR_OUTPUT_FULL;
            break;
        }
    }
    deflateEnd(&z);
    return result;
}

// MARK: - Dispatch

ptrdiff_t ac_block_encode(uint32_t algorithm, uint8_t *dst, size_t dst_capacity, const uint8_t *src, size_t src_size) {
    switch (algorithm) {
    case AC_ALGORITHM_LZFSE: {
        void *scratch = malloc(ac_lzfse_encode_scratch_size());
        if (!scratch) return AC_ERROR_NO_MEMORY;
        ptrdiff_t r = ac_lzfse_encode(dst, dst_capacity, src, src_size, scratch);
        free(scratch);
        return r;
    }
    case AC_ALGORITHM_LZ4:
        return encode_lz4(dst, dst_capacity, src, src_size);
    case AC_ALGORITHM_LZMA:
        return encode_lzma(dst, dst_capacity, src, src_size);
    case AC_ALGORITHM_ZLIB:
        return encode_zlib(dst, dst_capacity, src, src_size, -15);
    case AC_ALGORITHM_AA_ZLIB:
        return encode_zlib(dst, dst_capacity, src, src_size, 15);
    default:
        return AC_ERROR_UNSUPPORTED;
    }
}
