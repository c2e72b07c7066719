import AssetPackFormat

/// The table of packs `ba-mock serve` prints at start.
public enum PackTable {
    /// Renders one row per pack: id, policy, version, files, install size, download size, digest prefix.
    public static func render(_ snapshot: CatalogSnapshot) -> String {
        let header = ["PACK", "POLICY", "VERSION", "FILES", "INSTALL", "DOWNLOAD", "SHA256"]
        let rows = snapshot.packs.map { pack in
            [
                pack.id,
                pack.downloadPolicy.name,
                String(pack.version),
                String(pack.fileCount),
                ByteFormat.string(pack.installSize),
                ByteFormat.string(pack.downloadSize),
                String(pack.sha256.prefix(12)),
            ]
        }
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { column, cell in
                let pad = String(repeating: " ", count: widths[column] - cell.count)
                return column == row.count - 1 ? cell : cell + pad
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}
