// LZFSE decoding (blocks bvx2, bvx1, bvxn, bvx-, ending with bvx$): see apple_compression.h. Written for this
// project from the format's description (the public reference implementation, lzfse/lzfse, was read as
// documentation; no code of it is here).
//
// Safety model: every length read from the stream is checked against what is left of the source before a byte
// of it is read, and against what is left of the block's declared output (itself checked against the caller's
// capacity) before a byte is written. Wide (8/16-byte) copies are used only when the whole over-write still lies
// inside the caller's buffer. Each loop advances the source or counts down a bounded number, so every input ends.
// Working memory (~48 KiB: FSE tables and one block's literals) lives on the stack; nothing is allocated.
#include "apple_compression.h"
#include "lzfse_internal.h"

#include <stdbool.h>

#if defined(__GNUC__) || defined(__clang__)
#define AC_LIKELY(x) __builtin_expect(!!(x), 1)
#define AC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define AC_INLINE static inline __attribute__((always_inline))
#else
#define AC_LIKELY(x) (x)
#define AC_UNLIKELY(x) (x)
#define AC_INLINE static inline
#endif

// Room the fast paths may write past the end of a literal or match (the widest copy is 16 bytes).
#define AC_COPY_SLACK 32

// The whole output: matches may reach back into earlier blocks, so `begin` is the start of the stream's output.
typedef struct {
    uint8_t *begin;
    uint8_t *pos;
    uint8_t *end; // end of the caller's buffer (wide copies may scribble up to here)
} ac_out;

// MARK: - FSE tables

// One state of a literal decoder: read `bits` bits, add them to `delta`: that is the next state.
typedef struct {
    uint8_t bits;
    uint8_t symbol;
    int16_t delta;
} ac_fse_entry;

// One state of an L, M or D decoder: the state's bits and the symbol's extra bits are read in one go.
typedef struct {
    uint8_t total_bits; // state bits + value bits
    uint8_t value_bits;
    int16_t delta;
    int32_t base;
} ac_fse_value_entry;

static unsigned ac_log2(unsigned v) {
    unsigned r = 0;
    while (v >>= 1) r++;
    return r;
}

// Gives each symbol `freq[s]` consecutive states and, for each, how many bits lead to the next state (tANS:
// the encoder's state x for a symbol of frequency f is in [n, 2n), and f << k lands there; the first states
// of a symbol cover 2^k successors each, the rest 2^(k-1)). Returns the sum of the frequencies; the table is
// complete (and every next state below `nstates`) exactly when that sum is `nstates`.
static unsigned fse_build(unsigned nstates, unsigned nsymbols, const uint16_t *freq, ac_fse_entry *table) {
    const unsigned log_n = ac_log2(nstates);
    unsigned used = 0;
    for (unsigned s = 0; s < nsymbols; s++) {
        const unsigned f = freq[s];
        if (f == 0) continue;
        if (f > nstates - used) return nstates + 1; // over-full: reported as a wrong sum
        const unsigned k = log_n - ac_log2(f);
        const unsigned wide = ((2 * nstates) >> k) - f;
        for (unsigned j = 0; j < f; j++) {
            ac_fse_entry *e = &table[used + j];
            e->symbol = (uint8_t)s;
            if (j < wide) {
                e->bits = (uint8_t)k;
                e->delta = (int16_t)(((f + j) << k) - nstates);
            } else {
                e->bits = (uint8_t)(k - 1);
                e->delta = (int16_t)((j - wide) << (k - 1));
            }
        }
        used += f;
    }
    return used;
}

// An L, M or D table: fse_build's states plus each symbol's extra bits and base value (base of symbol s is the
// sum of 2^extra over the symbols before it). `scratch` holds `nstates` entries.
static unsigned fse_build_values(unsigned nstates, unsigned nsymbols, const uint16_t *freq,
                                 unsigned (*extra_bits)(unsigned), ac_fse_entry *scratch,
                                 ac_fse_value_entry *table) {
    const unsigned sum = fse_build(nstates, nsymbols, freq, scratch);
    if (sum != nstates) return sum;
    int32_t base[AC_LZFSE_D_SYMBOLS];
    uint8_t extra[AC_LZFSE_D_SYMBOLS];
    int32_t next = 0;
    for (unsigned s = 0; s < nsymbols; s++) {
        extra[s] = (uint8_t)extra_bits(s);
        base[s] = next;
        next += (int32_t)1 << extra[s];
    }
    for (unsigned i = 0; i < nstates; i++) {
        const ac_fse_entry e = scratch[i];
        table[i].total_bits = (uint8_t)(e.bits + extra[e.symbol]);
        table[i].value_bits = extra[e.symbol];
        table[i].delta = e.delta;
        table[i].base = base[e.symbol];
    }
    return sum;
}

// MARK: - Backward bit stream

// FSE payloads are written forwards and read backwards: the last bytes hold the first bits, taken from the top
// of a 64-bit accumulator. Refills keep 56..63 bits available, so a literal step (4 x 10 bits) or an L/M/D step
// (14 + 17 + 23 bits) never runs dry between refills.
typedef struct {
    uint64_t accum; // the valid bits are the low `nbits`; higher bits are stale and masked off on reading
    int nbits;
    const uint8_t *pos; // bytes [start, pos) are not yet in the accumulator
    const uint8_t *start;
} ac_bits;

// `extra` (-7..0 in the stream's header) says how many bits of the last byte are padding: the stream ends on
// 64 + extra valid bits (56 when extra is 0, from seven bytes, so that the accumulator never holds 64 bits).
// A valid stream's loads may take up to 7 bytes from before its first byte (bits never used: the accumulator
// never holds more than 63 bits beyond those consumed, and the reference decoder reads them too). Every payload
// has at least its 32-byte block header before it, so `start` - 7 is still inside the input.
static int bits_init(ac_bits *b, int32_t extra, const uint8_t *start, const uint8_t *end) {
    b->start = start - 7;
    if (extra < -7 || extra > 0) return -1;
    const size_t take = extra == 0 ? 7 : 8;
    if ((size_t)(end - b->start) < take) return -1; // a short payload's first load also reaches before it
    b->pos = end - take;
    b->accum = 0;
    memcpy(&b->accum, b->pos, take);
    b->nbits = extra == 0 ? 56 : 64 + extra;
    if ((b->accum >> b->nbits) != 0) return -1; // the encoder leaves the padding bits zero
    return 0;
}

AC_INLINE int bits_refill(ac_bits *b) {
    const int nbytes = (63 - b->nbits) >> 3;
    if (nbytes == 0) return 0;
    if (b->pos - b->start < nbytes) return -1;
    b->pos -= nbytes;
    // pos + 8 <= the old pos + 7 <= the stream's end (init left pos at least 7 bytes before it).
    const uint64_t incoming = ac_load_le64(b->pos);
    const int add = nbytes * 8;
    b->accum = (b->accum << add) | (incoming & ((UINT64_C(1) << add) - 1));
    b->nbits += add;
    return 0;
}

AC_INLINE uint64_t bits_take(ac_bits *b, unsigned n) {
    b->nbits -= (int)n;
    return (b->accum >> b->nbits) & ((UINT64_C(1) << n) - 1);
}

AC_INLINE uint8_t fse_decode(const ac_fse_entry *table, uint32_t *state, ac_bits *b) {
    const ac_fse_entry e = table[*state];
    *state = (uint32_t)((int32_t)e.delta + (int32_t)bits_take(b, e.bits));
    return e.symbol;
}

AC_INLINE size_t fse_decode_value(const ac_fse_value_entry *table, uint32_t *state, ac_bits *b) {
    const ac_fse_value_entry e = table[*state];
    const uint64_t all = bits_take(b, e.total_bits);
    *state = (uint32_t)((int32_t)e.delta + (int32_t)(all >> e.value_bits));
    return (size_t)e.base + (size_t)(all & ((UINT64_C(1) << e.value_bits) - 1));
}

// MARK: - Copies

AC_INLINE void copy8(uint8_t *d, const uint8_t *s) { memcpy(d, s, 8); }

AC_INLINE void copy16(uint8_t *d, const uint8_t *s) { memcpy(d, s, 16); }

// Copies n bytes in 16-byte steps: writes up to 15 bytes past d + n and reads as far past s + n.
AC_INLINE void copy_wide(uint8_t *d, const uint8_t *s, size_t n) {
    size_t i = 0;
    do {
        copy16(d + i, s + i);
        i += 16;
    } while (i < n);
}

// An LZ match: d[i] = d[i - dist] in increasing i (it may overlap itself). The caller checked that dist bytes
// precede d and that 16 bytes of slack follow d + n. A zero distance is only allowed with n == 0.
AC_INLINE void match_wide(uint8_t *d, size_t dist, size_t n) {
    if (n == 0) return; // also keeps dist == 0 (a literal-only LZVN opcode) away from the loop below
    if (AC_LIKELY(dist >= 16)) {
        copy_wide(d, d - dist, n);
        return;
    }
    // A short distance repeats a pattern of `dist` bytes; any multiple of dist is as good a distance, so write
    // the first (period - dist) bytes one by one, then copy 8 at a time from `period` (>= 8) bytes back.
    size_t period = dist;
    while (period < 8) period += dist;
    const uint8_t *from = d - dist; // (never d[i - dist]: an unsigned index that wraps is not a pointer step back)
    size_t i = 0;
    for (; i < period - dist && i < n; i++) d[i] = from[i];
    for (; i < n; i += 8) copy8(d + i, d + i - period);
}

// MARK: - Compressed (FSE) blocks

typedef struct {
    uint32_t n_raw, n_literals, n_matches, n_literal_payload, n_lmd_payload;
    int32_t literal_bits, lmd_bits;
    uint32_t literal_state[4], l_state, m_state, d_state;
    size_t header_size;
    uint16_t freq[AC_LZFSE_ALL_SYMBOLS]; // L, then M, then D, then literal frequencies
} ac_fse_header;

typedef struct {
    ac_fse_value_entry l[AC_LZFSE_L_STATES], m[AC_LZFSE_M_STATES], d[AC_LZFSE_D_STATES];
    ac_fse_entry literal[AC_LZFSE_LITERAL_STATES];
    ac_fse_entry scratch[AC_LZFSE_D_STATES];
    // Literals are decoded four at a time and copied 16 at a time: room for both overruns.
    uint8_t literals[AC_LZFSE_LITERALS_PER_BLOCK + 64];
} ac_fse_block;

// One frequency of a v2 header, from the low bits of `bits` (a prefix code: the lowest bits say the length).
static unsigned freq_code(uint32_t bits, unsigned *len) {
    if ((bits & 1) == 0) { *len = 2; return (bits >> 1) & 1; }       // x0: 0..1
    if ((bits & 2) == 0) { *len = 3; return 2 + ((bits >> 2) & 1); } // x01: 2..3
    if ((bits & 4) == 0) { *len = 5; return 4 + ((bits >> 3) & 3); } // xx011: 4..7
    if ((bits & 8) == 0) { *len = 8; return 8 + ((bits >> 4) & 15); } // 4 bits, 0111: 8..23
    *len = 14;
    return 24 + ((bits >> 4) & 1023); // 10 bits, 1111: 24..1047
}

// The frequencies of a v2 header: bytes [p, end) read LSB first; they must be used up to the last byte.
static int read_v2_freqs(const uint8_t *p, const uint8_t *end, uint16_t *freq) {
    if (p == end) { // a block whose tables are all empty stores none
        memset(freq, 0, AC_LZFSE_ALL_SYMBOLS * sizeof *freq);
        return 0;
    }
    uint64_t accum = 0;
    unsigned nbits = 0;
    for (unsigned i = 0; i < AC_LZFSE_ALL_SYMBOLS; i++) {
        while (nbits <= 56 && p < end) {
            accum |= (uint64_t)*p++ << nbits;
            nbits += 8;
        }
        unsigned len;
        freq[i] = (uint16_t)freq_code((uint32_t)accum, &len);
        if (len > nbits) return -1;
        accum >>= len;
        nbits -= len;
    }
    return (p == end && nbits < 8) ? 0 : -1;
}

static int parse_v2_header(const uint8_t *p, size_t avail, ac_fse_header *h) {
    if (avail < AC_LZFSE_V2_FIXED_HEADER_SIZE) return -1;
    const uint64_t v0 = ac_load_le64(p + 8), v1 = ac_load_le64(p + 16), v2 = ac_load_le64(p + 24);
    h->n_raw = ac_load_le32(p + 4);
    h->n_literals = (uint32_t)(v0 & 0xfffff);
    h->n_literal_payload = (uint32_t)((v0 >> 20) & 0xfffff);
    h->n_matches = (uint32_t)((v0 >> 40) & 0xfffff);
    h->literal_bits = (int32_t)((v0 >> 60) & 7) - 7;
    for (unsigned i = 0; i < 4; i++) h->literal_state[i] = (uint32_t)((v1 >> (10 * i)) & 0x3ff);
    h->n_lmd_payload = (uint32_t)((v1 >> 40) & 0xfffff);
    h->lmd_bits = (int32_t)((v1 >> 60) & 7) - 7;
    h->header_size = (size_t)(v2 & 0xffffffff);
    h->l_state = (uint32_t)((v2 >> 32) & 0x3ff);
    h->m_state = (uint32_t)((v2 >> 42) & 0x3ff);
    h->d_state = (uint32_t)((v2 >> 52) & 0x3ff);
    if (h->header_size < AC_LZFSE_V2_FIXED_HEADER_SIZE || h->header_size > avail) return -1;
    return read_v2_freqs(p + AC_LZFSE_V2_FIXED_HEADER_SIZE, p + h->header_size, h->freq);
}

// v1: the same fields unpacked, little-endian, at the offsets of the reference's C struct (see
// AC_LZFSE_V1_HEADER_SIZE); n_payload_bytes (offset 8) is redundant and, as in the reference, not used.
static int parse_v1_header(const uint8_t *p, size_t avail, ac_fse_header *h) {
    if (avail < AC_LZFSE_V1_HEADER_SIZE) return -1;
    h->n_raw = ac_load_le32(p + 4);
    h->n_literals = ac_load_le32(p + 12);
    h->n_matches = ac_load_le32(p + 16);
    h->n_literal_payload = ac_load_le32(p + 20);
    h->n_lmd_payload = ac_load_le32(p + 24);
    h->literal_bits = (int32_t)ac_load_le32(p + 28);
    for (unsigned i = 0; i < 4; i++) h->literal_state[i] = ac_load_le16(p + 32 + 2 * i);
    h->lmd_bits = (int32_t)ac_load_le32(p + 40);
    h->l_state = ac_load_le16(p + 44);
    h->m_state = ac_load_le16(p + 46);
    h->d_state = ac_load_le16(p + 48);
    for (unsigned i = 0; i < AC_LZFSE_ALL_SYMBOLS; i++) h->freq[i] = ac_load_le16(p + 50 + 2 * i);
    h->header_size = AC_LZFSE_V1_HEADER_SIZE;
    return 0;
}

// Builds the four decoders. A table must hold all its states; an empty one is accepted only where the block
// does not use it (no literals, or no matches).
static int build_tables(const ac_fse_header *h, ac_fse_block *t) {
    const uint16_t *l_freq = h->freq, *m_freq = l_freq + AC_LZFSE_L_SYMBOLS;
    const uint16_t *d_freq = m_freq + AC_LZFSE_M_SYMBOLS, *lit_freq = d_freq + AC_LZFSE_D_SYMBOLS;
    unsigned sum = fse_build(AC_LZFSE_LITERAL_STATES, AC_LZFSE_LITERAL_SYMBOLS, lit_freq, t->literal);
    if (sum != AC_LZFSE_LITERAL_STATES && !(sum == 0 && h->n_literals == 0)) return -1;
    const bool lmd_used = h->n_matches != 0;
    sum = fse_build_values(AC_LZFSE_L_STATES, AC_LZFSE_L_SYMBOLS, l_freq, ac_lzfse_l_extra_bits, t->scratch, t->l);
    if (sum != AC_LZFSE_L_STATES && !(sum == 0 && !lmd_used)) return -1;
    sum = fse_build_values(AC_LZFSE_M_STATES, AC_LZFSE_M_SYMBOLS, m_freq, ac_lzfse_m_extra_bits, t->scratch, t->m);
    if (sum != AC_LZFSE_M_STATES && !(sum == 0 && !lmd_used)) return -1;
    sum = fse_build_values(AC_LZFSE_D_STATES, AC_LZFSE_D_SYMBOLS, d_freq, ac_lzfse_d_extra_bits, t->scratch, t->d);
    if (sum != AC_LZFSE_D_STATES && !(sum == 0 && !lmd_used)) return -1;
    return 0;
}

// The literal payload [start, end): four interleaved FSE states, n_literals (rounded up to 4) symbols.
static int decode_literals(const ac_fse_header *h, ac_fse_block *t, const uint8_t *start, const uint8_t *end) {
    ac_bits b;
    if (bits_init(&b, h->literal_bits, start, end)) return -1;
    uint32_t s0 = h->literal_state[0], s1 = h->literal_state[1];
    uint32_t s2 = h->literal_state[2], s3 = h->literal_state[3];
    const ac_fse_entry *table = t->literal;
    uint8_t *out = t->literals;
    for (uint32_t i = 0; i < h->n_literals; i += 4) {
        if (AC_UNLIKELY(bits_refill(&b))) return -1;
        out[i + 0] = fse_decode(table, &s0, &b);
        out[i + 1] = fse_decode(table, &s1, &b);
        out[i + 2] = fse_decode(table, &s2, &b);
        out[i + 3] = fse_decode(table, &s3, &b);
    }
    return 0;
}

// Copies L literals then an M-byte match at distance D, one byte at a time (near the end of the buffer).
static void execute_slow(uint8_t *d, const uint8_t *lit, size_t L, size_t M, size_t D) {
    for (size_t i = 0; i < L; i++) d[i] = lit[i];
    d += L;
    const uint8_t *from = d - D;
    for (size_t i = 0; i < M; i++) d[i] = from[i];
}

// The L, M, D payload [start, end), executed into `out` up to `block_end` (checked to lie within the buffer).
static int decode_lmd(const ac_fse_header *h, const ac_fse_block *t, const uint8_t *start, const uint8_t *end,
                      ac_out *out, uint8_t *block_end) {
    ac_bits b;
    if (bits_init(&b, h->lmd_bits, start, end)) return -1;
    uint32_t ls = h->l_state, ms = h->m_state, ds = h->d_state;
    const uint8_t *lit = t->literals, *lit_end = t->literals + h->n_literals;
    uint8_t *dst = out->pos;
    uint8_t *const begin = out->begin, *const cap_end = out->end;
    size_t D = SIZE_MAX; // "the previous distance" before any: no match may use it
    for (uint32_t n = h->n_matches; n > 0; n--) {
        if (AC_UNLIKELY(bits_refill(&b))) return -1;
        const size_t L = fse_decode_value(t->l, &ls, &b);
        const size_t M = fse_decode_value(t->m, &ms, &b);
        const size_t new_d = fse_decode_value(t->d, &ds, &b);
        D = new_d ? new_d : D;
        if (AC_UNLIKELY(L > (size_t)(lit_end - lit) || L + M > (size_t)(block_end - dst))) return -1;
        if (AC_UNLIKELY(D > (size_t)(dst - begin) + L)) return -1;
        if (AC_LIKELY((size_t)(cap_end - dst) >= L + M + AC_COPY_SLACK)) {
            copy_wide(dst, lit, L); // reads at most 15 bytes past lit_end: inside the literals' padding
            dst += L;
            match_wide(dst, D, M);
            dst += M;
        } else {
            execute_slow(dst, lit, L, M, D);
            dst += L + M;
        }
        lit += L;
    }
    out->pos = dst;
    return 0;
}

// A bvx1/bvx2 block at *src (header already parsed into h). Consumes header and both payloads.
static ptrdiff_t fse_block(const ac_fse_header *h, const uint8_t **src, const uint8_t *src_end, ac_out *out) {
    const uint8_t *lit_start = *src + h->header_size;
    if ((uint64_t)h->n_literal_payload + h->n_lmd_payload > (uint64_t)(src_end - lit_start)) return AC_ERROR_CORRUPT;
    if (h->n_literals > AC_LZFSE_LITERALS_PER_BLOCK || h->n_matches > AC_LZFSE_MATCHES_PER_BLOCK)
        return AC_ERROR_CORRUPT;
    for (unsigned i = 0; i < 4; i++)
        if (h->literal_state[i] >= AC_LZFSE_LITERAL_STATES) return AC_ERROR_CORRUPT;
    if (h->l_state >= AC_LZFSE_L_STATES || h->m_state >= AC_LZFSE_M_STATES || h->d_state >= AC_LZFSE_D_STATES)
        return AC_ERROR_CORRUPT;
    if (h->n_raw > (size_t)(out->end - out->pos)) return AC_ERROR_OUTPUT_FULL;
    ac_fse_block t;
    if (build_tables(h, &t)) return AC_ERROR_CORRUPT;
    const uint8_t *lmd_start = lit_start + h->n_literal_payload, *lmd_end = lmd_start + h->n_lmd_payload;
    if (decode_literals(h, &t, lit_start, lmd_start)) return AC_ERROR_CORRUPT;
    uint8_t *block_end = out->pos + h->n_raw;
    if (decode_lmd(h, &t, lmd_start, lmd_end, out, block_end)) return AC_ERROR_CORRUPT;
    // The header's raw size is what the block must produce (the reference encoder always writes it so).
    if (out->pos != block_end) return AC_ERROR_CORRUPT;
    *src = lmd_end;
    return 0;
}

// MARK: - LZVN blocks

// One LZVN instruction, decoded: `len` opcode bytes, then L literal bytes, then a match of M at distance D.
typedef struct {
    size_t len, L, M;
    int kind; // 0: literal and/or match, 1: no-op, 2: end of stream
} ac_lzvn_op;

enum { AC_LZVN_COPY, AC_LZVN_NOP, AC_LZVN_EOS };

// Decodes the opcode at p (avail > 0 bytes left); updates *D when the opcode carries a distance.
// Returns -1 for undefined opcodes or opcodes cut short.
static int lzvn_opcode(const uint8_t *p, size_t avail, size_t *D, ac_lzvn_op *op) {
    const unsigned c = p[0];
    op->kind = AC_LZVN_COPY;
    op->L = op->M = 0;
    if (c >= 0xe0) { // 1110LLLL literal only, 1111MMMM match only (previous distance); 0 in the nibble: 1 more byte
        const bool literal = c < 0xf0;
        size_t n = c & 15;
        op->len = 1;
        if (n == 0) {
            if (avail < 2) return -1;
            n = (size_t)p[1] + 16;
            op->len = 2;
        }
        if (literal) op->L = n;
        else op->M = n;
        return 0;
    }
    if ((c & 0xf0) == 0x70 || (c & 0xf0) == 0xd0) return -1; // undefined
    if (c >= 0xa0 && c < 0xc0) { // 101LLMMM DDDDDDMM DDDDDDDD: medium distance
        if (avail < 3) return -1;
        op->len = 3;
        op->L = (c >> 3) & 3;
        op->M = (((size_t)(c & 7) << 2) | (p[1] & 3)) + 3;
        *D = ((size_t)p[1] >> 2) | ((size_t)p[2] << 6);
        return 0;
    }
    op->L = c >> 6; // LLMMMxxx: the common shape of the small, large and previous distance opcodes
    op->M = ((c >> 3) & 7) + 3;
    switch (c & 7) {
    case 7: // LLMMM111 DDDDDDDD DDDDDDDD: large distance
        if (avail < 3) return -1;
        op->len = 3;
        *D = ac_load_le16(p + 1);
        return 0;
    case 6:
        op->len = 1;
        if (c >= 0x40) return 0; // LLMMM110: previous distance
        op->L = op->M = 0;
        if (c == 0x06) { // end of stream: the opcode and seven bytes
            op->kind = AC_LZVN_EOS;
            op->len = 8;
            return avail < 8 ? -1 : 0;
        }
        if (c == 0x0e || c == 0x16) { op->kind = AC_LZVN_NOP; return 0; }
        return -1; // 0x1e..0x3e: undefined
    default: // LLMMMDDD DDDDDDDD: small distance
        if (avail < 2) return -1;
        op->len = 2;
        *D = ((size_t)(c & 7) << 8) | p[1];
        return 0;
    }
}

// The LZVN payload [p, end) into out, producing exactly up to block_end and ending on its end-of-stream
// opcode at the payload's last byte.
static int lzvn_payload(const uint8_t *p, const uint8_t *end, ac_out *out, uint8_t *block_end) {
    uint8_t *dst = out->pos;
    uint8_t *const begin = out->begin, *const cap_end = out->end;
    size_t D = 0; // no previous distance yet: a match using it is rejected
    for (;;) {
        if (AC_UNLIKELY(p >= end)) return -1; // no end-of-stream opcode
        ac_lzvn_op op;
        if (AC_UNLIKELY(lzvn_opcode(p, (size_t)(end - p), &D, &op))) return -1;
        if (op.kind == AC_LZVN_EOS) {
            if (p + op.len != end || dst != block_end) return -1;
            out->pos = dst;
            return 0;
        }
        p += op.len;
        if (AC_UNLIKELY(op.L > (size_t)(end - p) || op.L + op.M > (size_t)(block_end - dst))) return -1;
        if (op.M != 0 && AC_UNLIKELY(D == 0 || D > (size_t)(dst - begin) + op.L)) return -1;
        if (AC_LIKELY((size_t)(cap_end - dst) >= op.L + op.M + AC_COPY_SLACK)) {
            if (op.L <= 16 && (size_t)(end - p) >= 16) copy16(dst, p);
            else memcpy(dst, p, op.L);
            if (op.M != 0) match_wide(dst + op.L, D, op.M);
        } else {
            execute_slow(dst, p, op.L, op.M, D);
        }
        p += op.L;
        dst += op.L + op.M;
    }
}

static ptrdiff_t lzvn_block(const uint8_t **src, const uint8_t *src_end, ac_out *out) {
    const uint8_t *p = *src;
    if ((size_t)(src_end - p) < AC_LZFSE_LZVN_HEADER_SIZE) return AC_ERROR_CORRUPT;
    const uint32_t n_raw = ac_load_le32(p + 4), n_payload = ac_load_le32(p + 8);
    p += AC_LZFSE_LZVN_HEADER_SIZE;
    if (n_payload > (size_t)(src_end - p)) return AC_ERROR_CORRUPT;
    if (n_raw > (size_t)(out->end - out->pos)) return AC_ERROR_OUTPUT_FULL;
    if (lzvn_payload(p, p + n_payload, out, out->pos + n_raw)) return AC_ERROR_CORRUPT;
    *src = p + n_payload;
    return 0;
}

// MARK: - Stored blocks and the stream

static ptrdiff_t raw_block(const uint8_t **src, const uint8_t *src_end, ac_out *out) {
    const uint8_t *p = *src;
    if ((size_t)(src_end - p) < AC_LZFSE_RAW_HEADER_SIZE) return AC_ERROR_CORRUPT;
    const uint32_t n = ac_load_le32(p + 4);
    p += AC_LZFSE_RAW_HEADER_SIZE;
    if (n > (size_t)(src_end - p)) return AC_ERROR_CORRUPT;
    if (n > (size_t)(out->end - out->pos)) return AC_ERROR_OUTPUT_FULL;
    memcpy(out->pos, p, n);
    out->pos += n;
    *src = p + n;
    return 0;
}

static ptrdiff_t compressed_block(uint32_t magic, const uint8_t **src, const uint8_t *src_end, ac_out *out) {
    ac_fse_header h;
    const size_t avail = (size_t)(src_end - *src);
    const int bad = magic == AC_LZFSE_MAGIC_V2 ? parse_v2_header(*src, avail, &h) : parse_v1_header(*src, avail, &h);
    if (bad) return AC_ERROR_CORRUPT;
    return fse_block(&h, src, src_end, out);
}

ptrdiff_t ac_lzfse_decode(uint8_t *dst, size_t dst_capacity, const uint8_t *src, size_t src_size) {
    // Pointer arithmetic on NULL is undefined even by zero: stand in empty buffers for NULL ones.
    static const uint8_t no_input[1];
    uint8_t no_output[1];
    if (src == NULL) {
        if (src_size != 0) return AC_ERROR_CORRUPT;
        src = no_input;
    }
    if (dst == NULL) {
        dst_capacity = 0;
        dst = no_output;
    }
    if (dst_capacity > PTRDIFF_MAX) dst_capacity = PTRDIFF_MAX; // the result must fit the return type
    ac_out out = {dst, dst, dst + dst_capacity};
    const uint8_t *p = src, *const end = src + src_size;
    for (;;) {
        if ((size_t)(end - p) < 4) return AC_ERROR_CORRUPT; // no bvx$
        const uint32_t magic = ac_load_le32(p);
        ptrdiff_t r;
        switch (magic) {
        case AC_LZFSE_MAGIC_END:
            // The stream is the whole input (one pbz block): anything after its end marker is damage.
            return end - p == 4 ? (ptrdiff_t)(out.pos - out.begin) : AC_ERROR_CORRUPT;
        case AC_LZFSE_MAGIC_RAW: r = raw_block(&p, end, &out); break;
        case AC_LZFSE_MAGIC_LZVN: r = lzvn_block(&p, end, &out); break;
        case AC_LZFSE_MAGIC_V1:
        case AC_LZFSE_MAGIC_V2: r = compressed_block(magic, &p, end, &out); break;
        default: return AC_ERROR_CORRUPT;
        }
        if (r < 0) return r;
    }
}
