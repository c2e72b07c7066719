import SystemPackage

/// What `ba-mock inspect` shows of a pack archive, told apart by its bytes: a tar pack by its index, an Apple
/// Archive entry by entry.
public enum PackInspection: Sendable, Encodable {
    /// A tar pack (ba-mock's own), described by its `Index.json`; `verified` when every file was read and
    /// checked against it.
    case tar(PackIndex, verified: Bool)
    /// An Apple Archive.
    case appleArchive(AppleArchiveInspection)

    /// Encodes what `inspect --json` prints: the index of a tar pack; the format, compression, manifest,
    /// entries and `verified` of an Apple Archive.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .tar(let index, _): try index.encode(to: encoder)
        case .appleArchive(let inspection): try inspection.encode(to: encoder)
        }
    }
}

/// An Apple Archive as `inspect` shows it: its entries, the pack it describes, and what was verified.
public struct AppleArchiveInspection: Sendable, Encodable {
    /// Every entry, with the pack's description as ``summary`` says it.
    public var listing: PackArchiveListing
    /// Whether the archive carries a packaging manifest that reads (else ``summary`` is made from its name).
    public var carriesManifest: Bool
    /// The number of files read whole and checked against the SHA-256 each carries, when verified.
    public var verifiedFiles: Int?

    /// The pack it describes: the carried manifest's fields, or those made from the file name.
    public var summary: PackagingManifestSummary {
        listing.manifest
            ?? PackagingManifestSummary(assetPackID: "", downloadPolicy: .onDemand, platforms: [], language: nil)
    }

    /// The pack's files (entries under `Contents/`).
    public var files: [PackArchiveEntry] {
        listing.entries.filter { $0.type == "file" && $0.path.hasPrefix(PackPath.contentsPrefix) }
    }

    /// Encodes the listing's keys (format, compression, manifest, entries) and `verified`.
    public func encode(to encoder: any Encoder) throws {
        try listing.encode(to: encoder)
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(verifiedFiles != nil, forKey: .verified)
    }

    private enum Key: String, CodingKey { case verified }
}

extension PackArchiveReader {
    /// Reads what an archive holds, and with `verify` reads every file and checks it against its index (or the
    /// SHA-256 each entry of an Apple Archive carries).
    /// - Parameters:
    ///   - archive: A tar pack or an Apple Archive, told apart by its bytes.
    ///   - verify: Whether to read and check every file.
    ///   - warn: Told, before any file is verified, when an Apple Archive carries no manifest that reads.
    /// - Throws: ``AssetPackFormatError`` for an archive that does not read or does not verify.
    public static func inspect(
        at archive: FilePath,
        verify: Bool,
        warn: (String) -> Void = { _ in }
    ) throws -> PackInspection {
        let listing = try list(at: archive)
        guard listing.format == .aar else {
            return .tar(verify ? try self.verify(at: archive) : try readIndex(at: archive), verified: verify)
        }
        let fallback = listing.fallbackDescription(of: archive, doing: "it is shown as")
        if let fallback { warn(fallback.warning) }
        let verified = verify ? try self.verify(at: archive, describedAs: fallback?.index).fileCount : nil
        var shown = listing
        shown.manifest =
            listing.manifest
            ?? PackagingManifestSummary(
                assetPackID: fallback?.index.assetPackID ?? "",
                downloadPolicy: .onDemand,
                platforms: [],
                language: nil
            )
        return .appleArchive(
            AppleArchiveInspection(listing: shown, carriesManifest: listing.manifest != nil, verifiedFiles: verified)
        )
    }
}
