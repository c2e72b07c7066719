import Foundation

/// The one encoder of the JSON that users and scripts read: `ba-sync --json` lines, `ba-mock`'s control API
/// and request log, and the dashboard's events. Each shape is an `Encodable` type; keys are sorted and
/// slashes unescaped, so one value always gives the same bytes. A value JSON cannot hold (a NaN or an
/// infinite `Double`) is an error that names its key, never an empty or partial document.
public enum JSONOutput {
    /// `value` as one JSON document; `pretty` indents it for a reader (`ba-mock validate --json`).
    /// - Throws: `EncodingError` when a value cannot be written as JSON.
    public static func data(_ value: some Encodable, pretty: Bool = false) throws -> Data {
        let encoder = JSONEncoder.sorted
        if pretty { encoder.outputFormatting.insert(.prettyPrinted) }
        return try encoder.encode(value)
    }

    /// `value` as one JSON document, as text.
    /// - Throws: `EncodingError` when a value cannot be written as JSON.
    public static func text(_ value: some Encodable, pretty: Bool) throws -> String {
        String(decoding: try data(value, pretty: pretty), as: UTF8.self)
    }

    /// `value` as one line of JSON (no newline: JSON output never holds one outside a string).
    /// - Throws: `EncodingError` when a value cannot be written as JSON.
    public static func line(_ value: some Encodable) throws -> String {
        String(decoding: try data(value), as: UTF8.self)
    }
}

/// An optional property that is written as `null` when absent, where a synthesized `Encodable` would leave
/// the key out: a shape whose reader expects every key (`"installSize": null`) keeps it.
@propertyWrapper
public struct Nullable<Wrapped: Encodable & Sendable>: Encodable, Sendable {
    public var wrappedValue: Wrapped?

    public init(wrappedValue: Wrapped?) {
        self.wrappedValue = wrappedValue
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

extension Nullable: Equatable where Wrapped: Equatable {}
