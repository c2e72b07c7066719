/// The answer to a `Range` header for a representation of a given size (RFC 9110 §14).
enum ByteRange: Equatable {
    /// No usable range: send the whole representation with 200 (no header, another unit, bad syntax,
    /// or several ranges, which this server does not combine into multipart bodies).
    case full
    /// Send these bytes with 206.
    case partial(ClosedRange<Int64>)
    /// The range starts past the end: 416.
    case unsatisfiable

    /// Interprets a `Range` header value against a representation of `size` bytes.
    static func parse(_ header: String?, size: Int64) -> ByteRange {
        guard let header else { return .full }
        let trimmed = header.trimmingWhitespace()
        guard trimmed.lowercased().hasPrefix("bytes=") else { return .full }
        let spec = trimmed.dropFirst(6).trimmingWhitespace()
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .full }
        let first = spec[..<dash].trimmingWhitespace()
        let last = spec[spec.index(after: dash)...].trimmingWhitespace()
        if first.isEmpty {
            guard let suffix = Int64(digits: last) else { return .full }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .partial(max(0, size - suffix)...(size - 1))
        }
        guard let start = Int64(digits: first) else { return .full }
        let end: Int64
        if last.isEmpty {
            end = size - 1
        } else {
            guard let value = Int64(digits: last), value >= start else { return .full }
            end = min(value, size - 1)
        }
        guard start < size else { return .unsatisfiable }
        return .partial(start...end)
    }
}

extension Int64 {
    /// Parses a run of ASCII digits only (no sign, no spaces); `nil` on overflow.
    fileprivate init?(digits: Substring) {
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        guard let value = Int64(digits) else { return nil }
        self = value
    }
}

extension StringProtocol {
    fileprivate func trimmingWhitespace() -> Substring {
        let text = Substring(self)
        guard let start = text.firstIndex(where: { $0 != " " && $0 != "\t" }),
            let end = text.lastIndex(where: { $0 != " " && $0 != "\t" })
        else { return "" }
        return text[start...end]
    }
}
