/// The container of a pack archive.
public enum PackFormat: String, Sendable, Hashable, Codable, CaseIterable {
    /// pax tar through libarchive, compressed with a filter, with `Index.json` last (ba-mock's own layout,
    /// and the default).
    case tar
    /// Apple Archive (`.aar`), what Apple's `ba-package` writes and App Store Connect takes: a pbz stream of
    /// compressed blocks holding `AA01` entries, files under `Contents/` with their SHA-256 (`SH2`), and the
    /// packaging manifest.
    case aar

    /// The compressions the format takes.
    public var compressions: [PackCompression] {
        switch self {
        case .tar: [.zstd, .gzip, .xz, .lz4, .none]
        case .aar: [.lzfse, .lzma, .zlib, .lz4, .none]
        }
    }

    /// The compression used when none is given.
    public var defaultCompression: PackCompression { self == .tar ? .zstd : .lzfse }

    /// The format an output name asks for: `.aar` means Apple Archive; anything else says nothing.
    public static func named(by path: String) -> PackFormat? {
        path.lowercased().hasSuffix(".aar") ? .aar : nil
    }
}

/// The compression of a pack archive: a libarchive filter around a tar, or the block algorithm of an Apple
/// Archive (see ``PackFormat/compressions``).
public enum PackCompression: String, Sendable, Hashable, Codable, CaseIterable {
    /// Zstandard (the default): fast to decode, good ratio, multi-threaded when encoding.
    case zstd
    /// gzip (deflate), for tools that know nothing newer.
    case gzip
    /// xz (LZMA2): smallest, slowest.
    case xz
    /// LZ4: fastest, largest.
    case lz4
    /// No compression: a plain pax tar, or a plain Apple Archive (its entries with no pbz stream around them).
    case none
    /// LZFSE (Apple Archive only, its default): Apple's own, decoded and encoded by code of this project.
    case lzfse
    /// LZMA (Apple Archive only): each block an xz stream.
    case lzma
    /// zlib (Apple Archive only): each block raw DEFLATE.
    case zlib

    /// The level used when none is given.
    public var defaultLevel: Int? {
        switch self {
        case .zstd: 3
        case .gzip: 6
        case .xz: 6
        case .lz4: 1
        case .none, .lzfse, .lzma, .zlib: nil
        }
    }

    /// The levels the filter accepts.
    public var levels: ClosedRange<Int>? {
        switch self {
        case .zstd: 1...19
        case .gzip: 1...9
        case .xz: 0...9
        case .lz4: 1...9
        case .none, .lzfse, .lzma, .zlib: nil
        }
    }

    /// The compression of a pbz stream whose fourth byte is `magic`, as Apple's AppleArchive maps them.
    static func appleArchive(magic: UInt8) -> PackCompression? {
        allCases.first { $0.appleMagic == magic }
    }

    /// The fourth byte of a pbz stream of this compression (`nil`: not an Apple Archive compression).
    var appleMagic: UInt8? {
        switch self {
        case .lzfse: UInt8(ascii: "e")
        case .lzma: UInt8(ascii: "x")
        case .zlib: UInt8(ascii: "z")
        case .lz4: UInt8(ascii: "4")
        case .none, .zstd, .gzip, .xz: nil  // an uncompressed Apple Archive has no pbz stream around it
        }
    }

    /// The algorithm number of Apple's Compression library (`AC_ALGORITHM_*`), 0 for none. zlib is
    /// AppleArchive's own (0x505: a zlib stream with its header, level 5), not the Compression library's raw
    /// DEFLATE (0x205); the decoder takes either.
    var appleAlgorithm: UInt32 {
        switch self {
        case .lzfse: 0x801
        case .lzma: 0x306
        case .zlib: 0x505
        case .lz4: 0x100
        default: 0
        }
    }
}
