/// Human-readable byte counts for tables and logs.
public enum ByteFormat {
    /// `1536` → `1.5 KiB`; exact bytes below 1 KiB.
    public static func string(_ bytes: Int64) -> String {
        let units = ["KiB", "MiB", "GiB", "TiB"]
        guard bytes >= 1024 else { return "\(bytes) B" }
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        let rounded = (value * 10).rounded() / 10
        return "\(rounded) \(units[unit])"
    }

    /// `1, "file"` → `1 file`; `2, "file"` → `2 files`.
    public static func count(_ count: some BinaryInteger, _ noun: String) -> String {
        "\(count) \(noun)\(count == 1 ? "" : "s")"
    }
}
