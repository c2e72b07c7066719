/// The compression filter of a pack archive. The archive itself is always pax tar.
public enum PackCompression: String, Sendable, Hashable, Codable, CaseIterable {
    /// Zstandard (the default): fast to decode, good ratio, multi-threaded when encoding.
    case zstd
    /// gzip (deflate), for tools that know nothing newer.
    case gzip
    /// xz (LZMA2): smallest, slowest.
    case xz
    /// LZ4: fastest, largest.
    case lz4
    /// No compression: a plain pax tar.
    case none

    /// The level used when none is given.
    public var defaultLevel: Int? {
        switch self {
        case .zstd: 3
        case .gzip: 6
        case .xz: 6
        case .lz4: 1
        case .none: nil
        }
    }

    /// The levels the filter accepts.
    public var levels: ClosedRange<Int>? {
        switch self {
        case .zstd: 1...19
        case .gzip: 1...9
        case .xz: 0...9
        case .lz4: 1...9
        case .none: nil
        }
    }
}
