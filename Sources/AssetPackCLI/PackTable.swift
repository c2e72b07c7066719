import AssetPackFormat
import AssetPackServer

/// The table of packs `ba-mock serve` and `export` print.
public enum PackTable {
    /// Renders one row per pack: id, policy, language (`-` for a pack of every language), format and
    /// compression, version, files, install size, download size, digest prefix.
    public static func render(_ snapshot: CatalogSnapshot) -> String {
        let header = [
            "PACK", "POLICY", "LANGUAGE", "FORMAT", "VERSION", "FILES", "INSTALL", "DOWNLOAD", "SHA256",
        ]
        let rows = snapshot.packs.map { pack in
            [
                pack.id,
                pack.downloadPolicy.name,
                pack.language ?? "-",
                "\(pack.format.rawValue) \(pack.compression.rawValue)",
                String(pack.version),
                String(pack.fileCount),
                ByteFormat.string(pack.installSize),
                ByteFormat.string(pack.downloadSize),
                String(pack.sha256.prefix(12)),
            ]
        }
        return Table.render([header] + rows)
    }
}
