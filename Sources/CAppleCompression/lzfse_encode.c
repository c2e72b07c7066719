// LZFSE encoder: see apple_compression.h. Written for this project from the description of the LZFSE
// format (the block layout and FSE coding that the public reference decoder reads); no code was taken
// from another implementation.
//
// Shape of the output: a series of "bvx2" blocks (FSE-coded literals and L/M/D records, with the frequency
// tables packed in the header) and "bvx-" blocks (stored bytes) for the stretches where coding does not
// pay, ended by "bvx$". Matches may reach back into earlier blocks: a decoder keeps the whole output.
//
// The match finder hashes the 4 bytes at each position into a bucket of the 4 latest positions with
// those bytes, takes the longest candidate, looks one byte further when that match is short (lazy
// matching), and extends a match backwards over the pending literals. Long runs without a match are
// stepped through faster, so incompressible input costs little.
#include "apple_compression.h"
#include "lzfse_encode_internal.h"

#include <string.h>

// MARK: - Small helpers

static inline uint32_t load_u32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint64_t load_u64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

// Little-endian stores: the stream's integers are little-endian whatever the host.
static inline void store_le32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline void store_le64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

// The hash of 4 source bytes as loaded in host order: the output is the same on every little-endian host
// (all the platforms this project builds for); a big-endian one would pick other (equally valid) matches.
static inline uint32_t hash4(uint32_t x, uint32_t bits) { return (x * 2654435761u) >> (32 - bits); }

// log2(x) in 1/256ths, for x >= 1: integer part from the top bit, fraction by repeated squaring.
static uint32_t log2_q8(uint32_t x) {
    int e = 31 - __builtin_clz(x);
    uint32_t r = (uint32_t)e << 8;
    uint64_t m = ((uint64_t)x << 16) >> e; // in [1, 2) as Q16
    for (int i = 7; i >= 0; i--) {
        m = (m * m) >> 16;
        if (m >= (2u << 16)) {
            m >>= 1;
            r |= 1u << i;
        }
    }
    return r;
}

// MARK: - L, M, D value coding (fixed by the format)

static const uint8_t l_extra[LZFSE_ENC_L_SYMBOLS] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 3, 5, 8};
static const uint16_t l_base[LZFSE_ENC_L_SYMBOLS] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 20, 28, 60};
static const uint8_t m_extra[LZFSE_ENC_M_SYMBOLS] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 5, 8, 11};
static const uint16_t m_base[LZFSE_ENC_M_SYMBOLS] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 24, 56, 312};

static inline uint32_t l_symbol(uint32_t l) {
    if (l < 16) return l;
    if (l < 20) return 16;
    if (l < 28) return 17;
    if (l < 60) return 18;
    return 19;
}

static inline uint32_t m_symbol(uint32_t m) {
    if (m < 16) return m;
    if (m < 24) return 16;
    if (m < 56) return 17;
    if (m < 312) return 18;
    return 19;
}

// D symbols: 0..3 stand for themselves; from 4 on they come in groups of four, group g (1..15) carrying g
// extra bits and starting at 2^(g+2) - 4.
static inline uint32_t d_symbol(uint32_t d) {
    if (d < 4) return d;
    uint32_t g = (uint32_t)(31 - __builtin_clz(d + 4)) - 2;
    uint32_t start = (1u << (g + 2)) - 4;
    return 4 * g + ((d - start) >> g);
}

static inline uint32_t d_extra(uint32_t sym) { return sym < 4 ? 0 : sym >> 2; }

static inline uint32_t d_base(uint32_t sym) {
    if (sym < 4) return sym;
    uint32_t g = sym >> 2;
    return (1u << (g + 2)) - 4 + ((sym & 3) << g);
}

// MARK: - FSE tables

// Turns symbol counts into frequencies summing to `nstates` (every symbol seen gets at least 1).
static void normalize(const uint32_t *count, int nsym, uint32_t total, uint32_t nstates, uint16_t *freq) {
    if (total == 0) {
        memset(freq, 0, sizeof(uint16_t) * (size_t)nsym);
        return;
    }
    int32_t sum = 0;
    int best = 0;
    for (int i = 0; i < nsym; i++) {
        uint32_t f = 0;
        if (count[i]) {
            f = (uint32_t)(((uint64_t)count[i] * nstates) / total);
            if (f == 0) f = 1;
        }
        freq[i] = (uint16_t)f;
        sum += (int32_t)f;
        if (count[i] > count[best]) best = i;
    }
    int32_t excess = sum - (int32_t)nstates;
    if (excess <= 0) {
        // Rounding down left states over: the most frequent symbol gains the least from more of them
        // relative to what it has, and its cost changes least.
        freq[best] = (uint16_t)(freq[best] - excess);
        return;
    }
    // Symbols raised to 1 took more than there was: take it back from the largest frequencies, a slice at
    // a time so no one symbol pays for all.
    while (excess > 0) {
        int top = 0;
        for (int i = 1; i < nsym; i++)
            if (freq[i] > freq[top]) top = i;
        int32_t take = freq[top] / 8;
        if (take < 1) take = 1;
        if (take > excess) take = excess;
        if (take > (int32_t)freq[top] - 1) take = (int32_t)freq[top] - 1;
        freq[top] = (uint16_t)(freq[top] - take);
        excess -= take;
    }
}

// One symbol of an FSE encoder. The decoder gives symbol s the states [offset, offset+f); state
// offset+j, read with k bits when j < 2N/2^k - f and k-1 bits otherwise, leads to a next state. The
// encoder runs that backwards: from the state the decoder must reach next, it writes the low bits and
// moves to the state that leads there.
typedef struct {
    int32_t s0;     // next-states >= s0 take k bits, those below take k-1
    int32_t k;
    int32_t delta0; // new state = delta0 + (state >> k)
    int32_t delta1; // new state = delta1 + (state >> (k-1))
} fse_enc_entry;

static void build_encoder(uint32_t nstates, int nsym, const uint16_t *freq, fse_enc_entry *t) {
    int nclz = __builtin_clz(nstates);
    int32_t offset = 0;
    for (int i = 0; i < nsym; i++) {
        int32_t f = freq[i];
        if (f == 0) {
            memset(&t[i], 0, sizeof t[i]);
            continue;
        }
        int32_t k = __builtin_clz((uint32_t)f) - nclz; // nstates <= f << k < 2 nstates
        t[i].k = k;
        t[i].s0 = (f << k) - (int32_t)nstates;
        t[i].delta0 = offset - f + (int32_t)(nstates >> k);
        // With k == 0 (a symbol owning every state) the k-1 branch is never taken.
        t[i].delta1 = k > 0 ? offset - f + (int32_t)(nstates >> (k - 1)) : 0;
        offset += f;
    }
}

// A backward bit writer: bits go in at the top of what is there; the decoder reads the stream from its end,
// so the last bits written are read first.
typedef struct {
    uint64_t acc;
    int32_t nbits;
    uint8_t *p;
    uint8_t *end;
} bit_writer;

static inline void bw_put(bit_writer *w, uint64_t bits, int32_t n) {
    w->acc |= bits << w->nbits;
    w->nbits += n;
}

// Writes out the whole bytes of the accumulator; needs 8 bytes of room (checked by the caller).
static inline void bw_flush(bit_writer *w) {
    int32_t bytes = w->nbits >> 3;
    store_le64(w->p, w->acc);
    w->p += bytes;
    w->acc = bytes == 8 ? 0 : w->acc >> (8 * bytes);
    w->nbits -= 8 * bytes;
}

static inline void fse_put(bit_writer *w, uint16_t *state, const fse_enc_entry *e) {
    uint32_t s = *state;
    int32_t n = (int32_t)s >= e->s0 ? e->k : e->k - 1;
    int32_t delta = (int32_t)s >= e->s0 ? e->delta0 : e->delta1;
    bw_put(w, s & ((1u << n) - 1u), n);
    *state = (uint16_t)(delta + (int32_t)(s >> n));
}

// The fixed variable-length code of a frequency in a bvx2 header, read from the low bit: `*nbits` set.
static uint32_t freq_code(uint32_t v, int *nbits) {
    static const uint8_t small_code[8] = {0, 2, 1, 5, 3, 11, 19, 27};
    static const uint8_t small_bits[8] = {2, 2, 3, 3, 5, 5, 5, 5};
    if (v < 8) {
        *nbits = small_bits[v];
        return small_code[v];
    }
    if (v < 24) {
        *nbits = 8;
        return 7 + ((v - 8) << 4);
    }
    *nbits = 14;
    return 15 + ((v - 24) << 4);
}

// MARK: - Blocks

// Writes the gathered records as one bvx2 block at `out` if it fits in `limit` bytes.
// @return The block's size, or 0 when it does not fit (or would clearly not be worth it).
static size_t write_bvx2(lzfse_enc_state *st, uint8_t *out, size_t limit) {
    uint32_t nrec = st->n_records;
    // Literals go in four interleaved streams, so their count is padded to a multiple of 4 (at least 4,
    // which keeps the literal stream non-empty); the padding bytes are never used.
    while (st->n_lits < 4 || (st->n_lits & 3)) st->lit[st->n_lits++] = 0;
    uint32_t nlit = st->n_lits;

    uint32_t lcount[LZFSE_ENC_L_SYMBOLS] = {0}, mcount[LZFSE_ENC_M_SYMBOLS] = {0};
    uint32_t dcount[LZFSE_ENC_D_SYMBOLS] = {0}, litcount[LZFSE_ENC_LIT_SYMBOLS] = {0};
    // D = 0 stands for "the D before" (within the block).
    uint32_t prev = 0;
    for (uint32_t i = 0; i < nrec; i++) {
        uint32_t d = st->d[i];
        if (d == prev) st->d[i] = 0;
        else prev = d;
        lcount[l_symbol(st->l[i])]++;
        mcount[m_symbol(st->m[i])]++;
        dcount[d_symbol(st->d[i])]++;
    }
    for (uint32_t i = 0; i < nlit; i++) litcount[st->lit[i]]++;

    uint16_t freq[LZFSE_ENC_L_SYMBOLS + LZFSE_ENC_M_SYMBOLS + LZFSE_ENC_D_SYMBOLS + LZFSE_ENC_LIT_SYMBOLS];
    uint16_t *lfreq = freq, *mfreq = lfreq + LZFSE_ENC_L_SYMBOLS, *dfreq = mfreq + LZFSE_ENC_M_SYMBOLS;
    uint16_t *litfreq = dfreq + LZFSE_ENC_D_SYMBOLS;
    normalize(lcount, LZFSE_ENC_L_SYMBOLS, nrec, LZFSE_ENC_L_STATES, lfreq);
    normalize(mcount, LZFSE_ENC_M_SYMBOLS, nrec, LZFSE_ENC_M_STATES, mfreq);
    normalize(dcount, LZFSE_ENC_D_SYMBOLS, nrec, LZFSE_ENC_D_STATES, dfreq);
    normalize(litcount, LZFSE_ENC_LIT_SYMBOLS, nlit, LZFSE_ENC_LIT_STATES, litfreq);

    // The literals alone, at their coded cost, must come in under the limit; this skips the coding of
    // incompressible stretches, which the caller then stores.
    uint64_t lit_cost_q8 = 0;
    for (int i = 0; i < LZFSE_ENC_LIT_SYMBOLS; i++)
        if (litcount[i]) lit_cost_q8 += (uint64_t)litcount[i] * ((10u << 8) - log2_q8(litfreq[i]));
    if (lit_cost_q8 / (8 * 256) + 32 >= limit) return 0;

    fse_enc_entry lenc[LZFSE_ENC_L_SYMBOLS], menc[LZFSE_ENC_M_SYMBOLS], denc[LZFSE_ENC_D_SYMBOLS];
    fse_enc_entry litenc[LZFSE_ENC_LIT_SYMBOLS];
    build_encoder(LZFSE_ENC_L_STATES, LZFSE_ENC_L_SYMBOLS, lfreq, lenc);
    build_encoder(LZFSE_ENC_M_STATES, LZFSE_ENC_M_SYMBOLS, mfreq, menc);
    build_encoder(LZFSE_ENC_D_STATES, LZFSE_ENC_D_SYMBOLS, dfreq, denc);
    build_encoder(LZFSE_ENC_LIT_STATES, LZFSE_ENC_LIT_SYMBOLS, litfreq, litenc);

    uint8_t *end = out + limit;
    // Header: magic, raw size, three packed words (filled last), then the frequency tables.
    if (limit < 32 + 8) return 0;
    uint8_t *p = out + 32;
    {
        uint32_t acc = 0;
        int nbits = 0;
        for (size_t i = 0; i < sizeof freq / sizeof freq[0]; i++) {
            int n;
            uint32_t code = freq_code(freq[i], &n);
            acc |= code << nbits;
            nbits += n;
            while (nbits >= 8) {
                if (p >= end) return 0;
                *p++ = (uint8_t)acc;
                acc >>= 8;
                nbits -= 8;
            }
        }
        if (nbits > 0) {
            if (p >= end) return 0;
            *p++ = (uint8_t)acc;
        }
    }
    uint32_t header_size = (uint32_t)(p - out);

    // Literals, from the last group of four to the first, so the decoder reads them first to last.
    uint16_t ls[4] = {0, 0, 0, 0};
    bit_writer w = {0, 0, p, end};
    for (uint32_t i = nlit; i > 0;) {
        if (end - w.p < 8) return 0;
        i -= 4;
        fse_put(&w, &ls[3], &litenc[st->lit[i + 3]]);
        fse_put(&w, &ls[2], &litenc[st->lit[i + 2]]);
        fse_put(&w, &ls[1], &litenc[st->lit[i + 1]]);
        fse_put(&w, &ls[0], &litenc[st->lit[i + 0]]);
        bw_flush(&w);
    }
    if (end - w.p < 8) return 0;
    // The last partial byte; the header says how many of its top bits are padding.
    int32_t lit_pad = (8 - (w.nbits & 7)) & 7;
    w.nbits += lit_pad;
    bw_flush(&w);
    uint32_t lit_bytes = (uint32_t)(w.p - p);
    int32_t lit_bits = -lit_pad;

    // L, M, D records, last first. The stream starts with 8 zero bytes: the decoder reads whole 8-byte
    // words backwards and must not step before the start of this payload.
    uint8_t *lmd = w.p;
    if (end - lmd < 16) return 0;
    memset(lmd, 0, 8);
    w.p = lmd + 8;
    w.acc = 0;
    w.nbits = 0;
    uint16_t lst = 0, mst = 0, dst = 0;
    for (uint32_t i = nrec; i > 0;) {
        if (end - w.p < 8) return 0;
        i--;
        uint32_t d = st->d[i], ds = d_symbol(d);
        bw_put(&w, d - d_base(ds), (int32_t)d_extra(ds));
        fse_put(&w, &dst, &denc[ds]);
        uint32_t m = st->m[i], ms = m_symbol(m);
        bw_put(&w, m - m_base[ms], m_extra[ms]);
        fse_put(&w, &mst, &menc[ms]);
        uint32_t l = st->l[i], lsy = l_symbol(l);
        bw_put(&w, l - l_base[lsy], l_extra[lsy]);
        fse_put(&w, &lst, &lenc[lsy]);
        bw_flush(&w);
    }
    if (end - w.p < 8) return 0;
    int32_t lmd_pad = (8 - (w.nbits & 7)) & 7;
    w.nbits += lmd_pad;
    bw_flush(&w);
    uint32_t lmd_bytes = (uint32_t)(w.p - lmd);
    int32_t lmd_bits = -lmd_pad;

    store_le32(out, LZFSE_ENC_MAGIC_V2);
    store_le32(out + 4, (uint32_t)st->block_raw);
    uint64_t f0 = (uint64_t)nlit | ((uint64_t)lit_bytes << 20) | ((uint64_t)nrec << 40) |
                  ((uint64_t)(7 + lit_bits) << 60);
    uint64_t f1 = (uint64_t)ls[0] | ((uint64_t)ls[1] << 10) | ((uint64_t)ls[2] << 20) | ((uint64_t)ls[3] << 30) |
                  ((uint64_t)lmd_bytes << 40) | ((uint64_t)(7 + lmd_bits) << 60);
    uint64_t f2 = (uint64_t)header_size | ((uint64_t)lst << 32) | ((uint64_t)mst << 42) | ((uint64_t)dst << 52);
    store_le64(out + 8, f0);
    store_le64(out + 16, f1);
    store_le64(out + 24, f2);
    return (size_t)(w.p - out);
}

// Writes the gathered records as a block: bvx2 when that is smaller than storing the bytes, else stored
// (merged into the stored block before it when there is one).
static int flush_block(lzfse_enc_state *st) {
    if (st->n_records == 0) return 0;
    size_t raw = st->block_raw;
    size_t room = st->cap - st->len;
    int merge = st->raw_header != SIZE_MAX &&
                (uint64_t)load_u32(st->dst + st->raw_header + 4) + raw <= (uint64_t)INT32_MAX;
    size_t raw_cost = raw + (merge ? 0 : 8);
    size_t limit = raw_cost - 1 < room ? raw_cost - 1 : room;
    size_t n = write_bvx2(st, st->dst + st->len, limit);
    if (n > 0) {
        st->len += n;
        st->raw_header = SIZE_MAX;
    } else {
        if (raw_cost > room) return AC_ERROR_OUTPUT_FULL;
        if (merge) {
            uint8_t *h = st->dst + st->raw_header;
            store_le32(h + 4, load_u32(h + 4) + (uint32_t)raw);
        } else {
            st->raw_header = st->len;
            store_le32(st->dst + st->len, LZFSE_ENC_MAGIC_RAW);
            store_le32(st->dst + st->len + 4, (uint32_t)raw);
            st->len += 8;
        }
        memcpy(st->dst + st->len, st->src + st->block_start, raw);
        st->len += raw;
    }
    st->block_start += raw;
    st->block_raw = 0;
    st->n_records = 0;
    st->n_lits = 0;
    st->last_d = 0;
    return 0;
}

// Adds one record (L <= MAX_L, M <= MAX_M) whose literals are at `lits`, writing the block first if it is
// full.
static inline int push_record(lzfse_enc_state *st, const uint8_t *lits, uint32_t l, uint32_t m, uint32_t d) {
    if (st->n_records == LZFSE_ENC_MAX_RECORDS || st->n_lits + l > LZFSE_ENC_MAX_LITERALS - 4) {
        int r = flush_block(st);
        if (r < 0) return r;
    }
    uint32_t i = st->n_records++;
    st->l[i] = l;
    st->m[i] = m;
    st->d[i] = d;
    memcpy(st->lit + st->n_lits, lits, l);
    st->n_lits += l;
    st->block_raw += (size_t)l + m;
    st->last_d = d;
    return 0;
}

// Adds `l` literals at `lits` followed by a match of `m` bytes at distance `d` (m may be 0: literals only),
// split into records within the format's limits.
static int push_match(lzfse_enc_state *st, const uint8_t *lits, size_t l, size_t m, uint32_t d) {
    int r;
    while (l > LZFSE_ENC_MAX_L) {
        // A literal-only record still carries a D the decoder checks; the last one used (coded as a
        // repeat) is valid here and costs least, 1 at a block start.
        uint32_t dd = st->last_d ? st->last_d : 1;
        if ((r = push_record(st, lits, LZFSE_ENC_MAX_L, 0, dd)) < 0) return r;
        lits += LZFSE_ENC_MAX_L;
        l -= LZFSE_ENC_MAX_L;
    }
    if (m == 0) {
        if (l == 0) return 0;
        uint32_t dd = st->last_d ? st->last_d : 1;
        return push_record(st, lits, (uint32_t)l, 0, dd);
    }
    while (m > 0) {
        uint32_t mm = m > LZFSE_ENC_MAX_M ? LZFSE_ENC_MAX_M : (uint32_t)m;
        if ((r = push_record(st, lits, (uint32_t)l, mm, d)) < 0) return r;
        lits += l;
        l = 0;
        m -= mm;
    }
    return 0;
}

// MARK: - Match finding

// Bytes equal at a and b, at most `max`.
static inline size_t match_length(const uint8_t *a, const uint8_t *b, size_t max) {
    size_t n = 0;
    while (n + 8 <= max) {
        uint64_t x = load_u64(a + n) ^ load_u64(b + n);
        // The first differing byte is the lowest one in memory order.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        if (x) return n + ((size_t)__builtin_clzll(x) >> 3);
#else
        if (x) return n + ((size_t)__builtin_ctzll(x) >> 3);
#endif
        n += 8;
    }
    while (n < max && a[n] == b[n]) n++;
    return n;
}

typedef struct {
    size_t len;
    size_t ref;
} match_t;

// The best candidate at `pos` from its bucket, then `pos` goes into the bucket.
static inline match_t find_and_insert(lzfse_enc_state *st, const uint8_t *src, size_t n, size_t pos) {
    match_t best = {0, 0};
    uint32_t x = load_u32(src + pos);
    lzfse_enc_bucket *b = &st->table[hash4(x, st->hash_bits)];
    int32_t rel = (int32_t)(pos - st->base);
    size_t max = n - pos;
    for (int w = 0; w < LZFSE_ENC_HASH_WAYS; w++) {
        if (b->val[w] != x) continue;
        uint32_t dist = (uint32_t)(rel - b->pos[w]);
        if (dist - 1 >= LZFSE_ENC_MAX_D) continue; // also rejects empty slots
        size_t ref = pos - dist;
        size_t len = 4 + match_length(src + pos + 4, src + ref + 4, max - 4);
        if (len > best.len) {
            best.len = len;
            best.ref = ref;
        }
    }
    for (int w = LZFSE_ENC_HASH_WAYS - 1; w > 0; w--) {
        b->pos[w] = b->pos[w - 1];
        b->val[w] = b->val[w - 1];
    }
    b->pos[0] = rel;
    b->val[0] = x;
    return best;
}

static inline void insert_only(lzfse_enc_state *st, const uint8_t *src, size_t pos) {
    uint32_t x = load_u32(src + pos);
    lzfse_enc_bucket *b = &st->table[hash4(x, st->hash_bits)];
    for (int w = LZFSE_ENC_HASH_WAYS - 1; w > 0; w--) {
        b->pos[w] = b->pos[w - 1];
        b->val[w] = b->val[w - 1];
    }
    b->pos[0] = (int32_t)(pos - st->base);
    b->val[0] = x;
}

// Keeps table positions within int32 on inputs over 1 GiB: moves the base forward and forgets what falls
// out of range (all far beyond the maximum distance anyway).
static void rebase(lzfse_enc_state *st, size_t shift) {
    for (size_t i = 0; i < ((size_t)1 << st->hash_bits); i++)
        for (int w = 0; w < LZFSE_ENC_HASH_WAYS; w++) {
            int64_t p = (int64_t)st->table[i].pos[w] - (int64_t)shift;
            st->table[i].pos[w] = p < (int64_t)LZFSE_ENC_NO_POS ? LZFSE_ENC_NO_POS : (int32_t)p;
        }
    st->base += shift;
}

// MARK: - API

size_t ac_lzfse_encode_scratch_size(void) { return sizeof(lzfse_enc_state); }

static ptrdiff_t store_raw(uint8_t *dst, size_t cap, const uint8_t *src, size_t n) {
    if (n > INT32_MAX || cap < n + 12) return AC_ERROR_OUTPUT_FULL;
    store_le32(dst, LZFSE_ENC_MAGIC_RAW);
    store_le32(dst + 4, (uint32_t)n);
    if (n) memcpy(dst + 8, src, n);
    store_le32(dst + 8 + n, LZFSE_ENC_MAGIC_END);
    return (ptrdiff_t)(n + 12);
}

ptrdiff_t ac_lzfse_encode(uint8_t *dst, size_t dst_capacity, const uint8_t *src, size_t src_size, void *scratch) {
    // Too short for any match to pay: stored as it is (as the reference encoder does).
    if (src_size < 16) return store_raw(dst, dst_capacity, src, src_size);

    lzfse_enc_state *st = scratch;
    // About one bucket per 8 input bytes, within bounds: a 64 KiB block clears 256 KiB of table, not 2 MiB.
    st->hash_bits = LZFSE_ENC_HASH_BITS_MIN;
    while (st->hash_bits < LZFSE_ENC_HASH_BITS && ((size_t)8 << st->hash_bits) < src_size) st->hash_bits++;
    for (size_t i = 0; i < ((size_t)1 << st->hash_bits); i++)
        for (int w = 0; w < LZFSE_ENC_HASH_WAYS; w++) {
            st->table[i].pos[w] = LZFSE_ENC_NO_POS;
            st->table[i].val[w] = 0;
        }
    st->n_records = 0;
    st->n_lits = 0;
    st->block_raw = 0;
    st->block_start = 0;
    st->last_d = 0;
    st->src = src;
    st->dst = dst;
    st->cap = dst_capacity;
    st->len = 0;
    st->raw_header = SIZE_MAX;
    st->base = 0;

    const size_t n = src_size;
    // Matches start no later than 8 bytes before the end (so 4-byte loads stay inside); a match may run
    // to the very end.
    const size_t last = n - 8;
    size_t pos = 0, lit = 0;
    int r;
    while (pos < last) {
        if (pos - st->base >= LZFSE_ENC_REBASE_AT) rebase(st, LZFSE_ENC_REBASE_AT / 2);
        match_t m = find_and_insert(st, src, n, pos);
        if (m.len == 0) {
            // The longer the run without a match, the bigger the step (up to 16): incompressible data is
            // crossed quickly, and the first match ends the run.
            size_t run = pos - lit;
            size_t step = 1 + (run >> 8);
            pos += step > 16 ? 16 : step;
            continue;
        }
        // Lazy matching: a longer match one byte on wins over this one. `done`: first position not yet
        // in the table.
        size_t done = pos + 1;
        while (m.len < LZFSE_ENC_GOOD_MATCH && pos + 1 < last) {
            match_t next = find_and_insert(st, src, n, pos + 1);
            done = pos + 2;
            if (next.len <= m.len) break;
            m = next;
            pos++;
        }
        size_t start = pos, ref = m.ref, len = m.len;
        // Extend backwards over the literals before it.
        while (start > lit && ref > 0 && src[start - 1] == src[ref - 1]) {
            start--;
            ref--;
            len++;
        }
        if ((r = push_match(st, src + lit, start - lit, len, (uint32_t)(start - ref))) < 0) return r;
        size_t end = start + len;
        // Remember the positions inside the match: later matches start anywhere in it (worth 0.5% on text
        // against keeping only its last few). Inside a very long match (runs, copies) only the end matters.
        size_t ins = done;
        if (end > ins + 8192) ins = end - 512;
        for (; ins < end && ins < last; ins++) insert_only(st, src, ins);
        pos = lit = end;
    }
    if ((r = push_match(st, src + lit, n - lit, 0, 0)) < 0) return r;
    if ((r = flush_block(st)) < 0) return r;
    if (st->cap - st->len < 4) return AC_ERROR_OUTPUT_FULL;
    store_le32(dst + st->len, LZFSE_ENC_MAGIC_END);
    st->len += 4;
    return (ptrdiff_t)st->len;
}
