import Foundation

// Values given on the command line, checked and parsed here (where tests reach them); the commands turn the
// messages into usage errors.

/// Checks a number of seconds given on the command line: finite, within a week, and at least `minimum`
/// (or more than 0 when `positive`). Returns the message of a usage error, or `nil`.
public func secondsProblem(_ value: Double, option: String, positive: Bool) -> String? {
    guard value.isFinite, value <= 7 * 86400 else {
        return "\(option) must be a number of seconds up to a week (7 × 86400), not \(value)"
    }
    if positive ? value <= 0 : value < 0 {
        return "\(option) must be \(positive ? "more than 0" : "0 or more") seconds"
    }
    return nil
}

/// Parses `a,b,c` with `make`.
/// - Returns: The values, or the message of a usage error naming the bad item (`what` names the kind).
public func listValues<T>(_ text: String, _ make: (String) -> T?, _ what: String) -> Result<[T], OptionValueError> {
    let items = text.split(separator: ",", omittingEmptySubsequences: false).map {
        $0.trimmingCharacters(in: .whitespaces)
    }
    guard items.contains(where: { !$0.isEmpty }) else { return .failure(OptionValueError("empty \(what) list")) }
    var values: [T] = []
    for item in items {
        guard let value = make(item) else {
            return .failure(
                OptionValueError(item.isEmpty ? "an empty \(what) in the list" : "unknown \(what) '\(item)'")
            )
        }
        values.append(value)
    }
    return .success(values)
}

/// `4096`, `4k`, `64K`, `1m`, `2g` (binary: 1k = 1024), `64KiB`, `1MiB`, `2GiB` (binary too), `200MB`, `1GB`,
/// `500kB` (decimal: 1MB = 1 000 000, as a disk's or a phone's storage is labelled), `4096B` → bytes; `nil` for
/// anything else, a count that does not fit in an `Int` included.
public func byteCount(_ text: String) -> Int? {
    let lower = text.lowercased()
    let units: [(suffix: String, multiplier: Int)] = [
        ("kib", 1 << 10), ("mib", 1 << 20), ("gib", 1 << 30), ("kb", 1000), ("mb", 1_000_000),
        ("gb", 1_000_000_000), ("k", 1 << 10), ("m", 1 << 20), ("g", 1 << 30), ("b", 1),
    ]
    let unit = units.first { lower.hasSuffix($0.suffix) }
    let digits = lower.dropLast(unit?.suffix.count ?? 0)
    guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), let count = Int(digits) else {
        return nil
    }
    let (bytes, overflow) = count.multipliedReportingOverflow(by: unit?.multiplier ?? 1)
    return overflow ? nil : bytes
}

/// A value on the command line that cannot be used: the message says which and why.
public struct OptionValueError: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
