/// Rules for asset pack IDs, shared by manifests, the server's routes and the client's store.
public enum AssetPackID {
    /// Why `id` cannot be a pack ID, or `nil` when it can.
    ///
    /// IDs become URL path segments and folder names, so only ASCII letters, digits, `-`, `_` and `.`
    /// are allowed, at most 128 characters, and not `.` or `..` or a leading dot.
    /// - Parameter id: The candidate ID.
    /// - Returns: A phrase that completes "the ID ...", or `nil`.
    public static func problem(with id: String) -> String? {
        if id.isEmpty { return "is empty" }
        if id.utf8.count > 128 { return "is longer than 128 characters" }
        if id.hasPrefix(".") { return "starts with '.'" }
        for scalar in id.unicodeScalars {
            let allowed =
                (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z") || (scalar >= "0" && scalar <= "9")
                || scalar == "-" || scalar == "_" || scalar == "."
            if !allowed {
                return "contains \(describe(scalar)), which is not allowed in a pack ID"
            }
        }
        return nil
    }

    /// `id` with control characters escaped, safe to print.
    public static func printable(_ id: String) -> String {
        id.unicodeScalars.map { $0.properties.generalCategory == .control ? describe($0) : String($0) }.joined()
    }

    private static func describe(_ scalar: Unicode.Scalar) -> String {
        if scalar == "/" { return "'/'" }
        if scalar.value < 0x20 || scalar.value == 0x7F { return "a control character (U+\(hex(scalar)))" }
        if scalar == " " { return "a space" }
        return "'\(scalar)' (U+\(hex(scalar)))"
    }

    private static func hex(_ scalar: Unicode.Scalar) -> String {
        let digits = String(scalar.value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
