// The block codecs of Apple's Compression library, as Apple Archive (`.aar`, "pbz" streams) uses them, written
// for this project: LZFSE (with its LZVN and stored blocks) decoded and encoded here; LZ4 (Apple's "bv41"
// framing around raw LZ4 blocks), LZMA (an xz stream) and zlib (raw DEFLATE) through Debian's liblz4, liblzma
// and zlib. Every function works on whole buffers (one pbz block), never allocates more than it says, and
// never reads or writes outside the buffers it is given, whatever the input.
#ifndef APPLE_COMPRESSION_H
#define APPLE_COMPRESSION_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Algorithm numbers, as Apple's `compression_algorithm` gives them (and as pbz magics map to them).
enum {
    AC_ALGORITHM_LZ4 = 0x100,
    AC_ALGORITHM_ZLIB = 0x205,
    /// AppleArchive's zlib (`AA_COMPRESSION_ALGORITHM_ZLIB`): an RFC 1950 stream (header, DEFLATE, Adler-32),
    /// what pbz `z` blocks hold. Decoding takes either form under either number.
    AC_ALGORITHM_AA_ZLIB = 0x505,
    AC_ALGORITHM_LZMA = 0x306,
    AC_ALGORITHM_LZBITMAP = 0x702,
    AC_ALGORITHM_LZFSE = 0x801,
};

/// Results below zero: what went wrong.
enum {
    /// The input is not a valid stream of the algorithm (or is cut short).
    AC_ERROR_CORRUPT = -1,
    /// The output would be larger than the capacity given.
    AC_ERROR_OUTPUT_FULL = -2,
    /// An algorithm this code cannot read or write (LZBITMAP, or an unknown number).
    AC_ERROR_UNSUPPORTED = -3,
    /// Memory could not be allocated (liblzma's state).
    AC_ERROR_NO_MEMORY = -4,
};

/// Decodes one complete LZFSE stream (blocks `bvx2`, `bvx1`, `bvxn`, `bvx-`, ending with `bvx$`).
/// Bytes after `bvx$`, or a stream without it, are `AC_ERROR_CORRUPT`. Bytes of `dst` past the returned length
/// (up to `dst_capacity`) may be overwritten by wide copies; on an error, `dst` holds nothing meaningful. Uses
/// about 48 KiB of stack (one block's FSE tables and literals) and allocates nothing.
/// @return The bytes written to `dst` (at most `dst_capacity`), or an `AC_ERROR_*` value.
ptrdiff_t ac_lzfse_decode(uint8_t *dst, size_t dst_capacity, const uint8_t *src, size_t src_size);

/// The bytes of working memory `ac_lzfse_encode` needs.
size_t ac_lzfse_encode_scratch_size(void);

/// Encodes `src` as one LZFSE stream that the reference decoder reads; the same input always gives the
/// same bytes.
/// @param scratch At least `ac_lzfse_encode_scratch_size()` bytes, suitably aligned (malloc'd).
/// @return The bytes written to `dst`, or `AC_ERROR_OUTPUT_FULL` when they do not fit.
ptrdiff_t ac_lzfse_encode(uint8_t *dst, size_t dst_capacity, const uint8_t *src, size_t src_size, void *scratch);

/// Decodes one block of `algorithm` (an `AC_ALGORITHM_*`) into `dst`: the whole of `src` must be one stream
/// (trailing bytes are `AC_ERROR_CORRUPT`). LZBITMAP and unknown numbers are `AC_ERROR_UNSUPPORTED`.
/// @return The bytes written, or an `AC_ERROR_*` value.
ptrdiff_t ac_block_decode(uint32_t algorithm, uint8_t *dst, size_t dst_capacity, const uint8_t *src, size_t src_size);

/// Encodes one block with `algorithm` as Apple's Compression library would, reproducibly.
/// @return The bytes written, or an `AC_ERROR_*` value (`AC_ERROR_OUTPUT_FULL` when the encoding does not
///   fit: the caller then stores the block raw).
ptrdiff_t ac_block_encode(uint32_t algorithm, uint8_t *dst, size_t dst_capacity, const uint8_t *src, size_t src_size);

#ifdef __cplusplus
}
#endif

#endif
