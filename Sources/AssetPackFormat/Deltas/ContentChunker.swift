import CXXHash

/// Content-defined chunking (FastCDC, with a gear hash): cuts a stream of bytes where its content says, so
/// that bytes inserted or removed in a file move the cuts with the data instead of shifting every chunk after
/// them (fixed-size blocks would all change after an insertion). The same bytes always give the same cuts.
///
/// Sizes: at least 4 KiB, about 16 KiB on average, at most 64 KiB. A change costs the chunks it touches, so
/// the bytes a delta sends past the change are about two average chunks (32 KiB around a 1 MiB edit, 3%);
/// casync's 64 KiB average would cost 128 KiB there, and rsync's bytes are the goal. Smaller chunks cost only
/// the server (a 1 GiB pack's list is 65 536 chunks, 1.5 MiB): the client reads recipes of merged runs.
public struct ContentChunker: Sendable {
    /// The smallest chunk, but for a file's last one.
    public static let minimumSize = 4 << 10
    /// The size chunks gather around.
    public static let averageSize = 16 << 10
    /// The largest chunk: a cut is made here when the content gives none.
    public static let maximumSize = 64 << 10
    /// Files smaller than this are sent whole: below it a recipe saves less than it costs.
    public static let wholeFileBelow: Int64 = 64 << 10

    /// One chunk: its length and its digest.
    public struct Chunk: Sendable, Hashable {
        /// Its bytes.
        public var length: Int
        /// The XXH3-128 of its bytes (see ``ChunkDigest`` for why not SHA-256).
        public var digest: ChunkDigest
    }

    /// Bytes fed that no chunk holds yet, from `start` (bytes before it are in chunks already cut): fewer than
    /// ``maximumSize`` between feeds, as a cut is made only once a whole window of ``maximumSize`` bytes is
    /// there, or at the end.
    private var pending: [UInt8] = []
    private var start = 0

    /// A chunker at the start of a stream.
    public init() {}

    /// Feeds bytes; returns the chunks they complete. Chunks wholly inside `bytes` are cut and hashed where
    /// they are; only the bytes around a chunk that spans two feeds are gathered into a buffer of its own
    /// (less than two windows of ``maximumSize``). The cuts are the same however the stream is split.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> [Chunk] {
        var chunks: [Chunk] = []
        var offset = 0
        if start > 0 {  // chunks cut in an earlier feed that ended before a whole window
            pending.removeFirst(start)
            start = 0
        }
        // First the bytes left from earlier feeds, topped up from this one a window at a time, until the
        // chunks cut hold all of them: what is left then is this feed's, cut in place like the rest.
        let earlier = pending.count
        while start < pending.count {
            let take = min(Self.maximumSize - (pending.count - start), bytes.count - offset)
            pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + take]))
            offset += take
            guard pending.count - start >= Self.maximumSize else { return chunks }  // this feed is all in it
            chunks.append(pending.withUnsafeBytes { Self.cutOne($0, from: &start) })
            if start >= earlier {
                offset -= pending.count - start  // read the rest of this feed where it is
                pending.removeAll(keepingCapacity: true)
                start = 0
            }
        }
        var at = offset
        while bytes.count - at >= Self.maximumSize {
            chunks.append(Self.cutOne(bytes, from: &at))
        }
        pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[at...]))
        return chunks
    }

    /// Bytes held between feeds (never more than two windows of ``maximumSize``).
    var bufferedBytes: Int { pending.count }

    /// Ends the stream; returns the chunks left.
    public mutating func finish() -> [Chunk] {
        var chunks: [Chunk] = []
        pending.withUnsafeBytes { all in
            while start < all.count { chunks.append(Self.cutOne(all, from: &start)) }
        }
        pending = []
        start = 0
        return chunks
    }

    /// The chunk of `bytes` from `start` (looking at most ``maximumSize`` bytes ahead), and `start` moved past
    /// it.
    private static func cutOne(_ bytes: UnsafeRawBufferPointer, from start: inout Int) -> Chunk {
        let window = UnsafeRawBufferPointer(rebasing: bytes[start..<min(bytes.count, start + maximumSize)])
        let length = cut(window.assumingMemoryBound(to: UInt8.self))
        let digest = ChunkDigest(of: UnsafeRawBufferPointer(rebasing: window[0..<length]))
        start += length
        return Chunk(length: length, digest: digest)
    }

    /// Where the first chunk of `bytes` ends (FastCDC's normalized chunking: a harder mask before the
    /// average size, an easier one after, so sizes gather around the average). The mask tests the hash's top
    /// bits, which depend on the last 64 bytes.
    static func cut(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        let count = bytes.count
        guard count > minimumSize else { return count }
        let normal = min(averageSize, count)
        let hard: UInt64 = ~0 << (64 - 16)  // 16 bits: rarer than one in 16 KiB
        let easy: UInt64 = ~0 << (64 - 12)
        return gear.withUnsafeBufferPointer { gear in
            var hash: UInt64 = 0
            var at = minimumSize
            while at < normal {
                hash = (hash << 1) &+ gear[Int(bytes[at])]
                if hash & hard == 0 { return at + 1 }
                at += 1
            }
            while at < count {
                hash = (hash << 1) &+ gear[Int(bytes[at])]
                if hash & easy == 0 { return at + 1 }
                at += 1
            }
            return count
        }
    }

    /// 256 random 64-bit values, fixed for ever (SplitMix64 from a constant seed): changing them would
    /// change every cut, and so every chunk list kept.
    static let gear: [UInt64] = {
        var state: UInt64 = 0x6261_2D6D_6F63_6B31  // "ba-mock1"
        return (0..<256).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }()
}
