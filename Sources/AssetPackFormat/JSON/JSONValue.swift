import Foundation

/// A JSON document: manifests are validated key by key through it, and a manifest's `userInfo` travels in
/// it, as written, to the download manifest.
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            // Whole numbers stay whole: 2 is written 2, not 2.0.
            if value.rounded() == value, abs(value) < 1e15 {
                try container.encode(Int64(value))
            } else {
                try container.encode(value)
            }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// A short name of the JSON type, for error messages.
    var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// The line a `/* */` comment that is never closed starts on (1 first), or `nil`: what
    /// ``stripComments(_:)`` would otherwise read past without a word.
    static func unterminatedComment(in text: [UInt8]) -> Int? {
        var index = 0
        var line = 1
        var inString = false
        while index < text.count {
            let byte = text[index]
            if byte == UInt8(ascii: "\n") { line += 1 }
            if inString {
                if byte == UInt8(ascii: "\\") {
                    index += 2
                    continue
                }
                if byte == UInt8(ascii: "\"") { inString = false }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: "/"), index + 1 < text.count, text[index + 1] == UInt8(ascii: "/") {
                while index + 1 < text.count, text[index + 1] != UInt8(ascii: "\n") { index += 1 }
            } else if byte == UInt8(ascii: "/"), index + 1 < text.count, text[index + 1] == UInt8(ascii: "*") {
                let start = line
                index += 2
                while index < text.count {
                    if text[index] == UInt8(ascii: "*"), index + 1 < text.count, text[index + 1] == UInt8(ascii: "/") {
                        break
                    }
                    if text[index] == UInt8(ascii: "\n") { line += 1 }
                    index += 1
                }
                if index >= text.count { return start }
                index += 1
            }
            index += 1
        }
        return nil
    }

    /// Removes `//` and `/* */` comments outside strings, keeping line numbers intact, so that
    /// manifests written from Apple's commented template parse as JSON.
    static func stripComments(_ text: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        var index = 0
        var inString = false
        while index < text.count {
            let byte = text[index]
            if inString {
                out.append(byte)
                if byte == UInt8(ascii: "\\"), index + 1 < text.count {
                    out.append(text[index + 1])
                    index += 2
                    continue
                }
                if byte == UInt8(ascii: "\"") { inString = false }
                index += 1
                continue
            }
            if byte == UInt8(ascii: "\"") {
                inString = true
                out.append(byte)
                index += 1
            } else if byte == UInt8(ascii: "/"), index + 1 < text.count, text[index + 1] == UInt8(ascii: "/") {
                while index < text.count, text[index] != UInt8(ascii: "\n") { index += 1 }
            } else if byte == UInt8(ascii: "/"), index + 1 < text.count, text[index + 1] == UInt8(ascii: "*") {
                index += 2
                while index < text.count,
                    !(text[index] == UInt8(ascii: "*") && index + 1 < text.count
                        && text[index + 1] == UInt8(ascii: "/"))
                {
                    if text[index] == UInt8(ascii: "\n") { out.append(text[index]) }
                    index += 1
                }
                index += 2
            } else {
                out.append(byte)
                index += 1
            }
        }
        return out
    }
}

extension JSONEncoder {
    /// An encoder with sorted keys: the same value always gives the same bytes.
    static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
