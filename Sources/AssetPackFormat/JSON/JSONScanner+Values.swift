import Foundation

/// Strings, numbers and literals as JSONDecoder reads them, and values read past or captured.
extension JSONScanner {
    mutating func strings(_ key: String) throws -> [String] {
        var result: [String] = []
        try container(UInt8(ascii: "[")) { result.append(try $0.string()) }
        return result
    }

    /// A JSON number that is a whole number fitting an Int64: digits as they are, or with a fraction or an
    /// exponent (`6.0`, `6e0`, `60e-1`) when its value is whole, as JSONDecoder reads integer fields.
    mutating func integer(_ key: String) throws -> Int64 {
        guard try peekSkippingSpace() != nil else { throw failure("\(key) has no value") }
        let (spelled, exact) = try numberText(key)
        if exact {
            guard let value = Int64(spelled) else { throw failure("\(key) does not fit in 64 bits") }
            return value
        }
        guard let value = Double(spelled), value.isFinite, value.rounded() == value,
            value >= -9_223_372_036_854_775_808, value < 9_223_372_036_854_775_808
        else {
            throw failure("\(key) is not a whole number of 64 bits")
        }
        return Int64(value)
    }

    /// A number as JSON spells it (a minus, digits with no leading zero, then a fraction and an exponent if
    /// any), and whether it has neither fraction nor exponent.
    mutating func numberText(_ key: String) throws -> (spelled: String, exact: Bool) {
        var text: [UInt8] = []
        func digits() throws -> Int {
            var count = 0
            while let byte = try peek(), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                text.append(byte)
                position += 1
                count += 1
            }
            return count
        }
        let start = offset
        if try peek() == UInt8(ascii: "-") {
            text.append(UInt8(ascii: "-"))
            position += 1
        }
        let whole = try digits()
        guard whole > 0 else { throw failure("\(key) is not a number") }
        if whole > 1 && text[text.count - whole] == UInt8(ascii: "0") {
            throw failure("\(key) has a leading zero", .leadingZero, at: start)
        }
        var exact = true
        if try peek() == UInt8(ascii: ".") {
            text.append(UInt8(ascii: "."))
            position += 1
            guard try digits() > 0 else { throw failure("\(key) is not a number") }
            exact = false
        }
        if let byte = try peek(), byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
            text.append(byte)
            position += 1
            if let sign = try peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                text.append(sign)
                position += 1
            }
            guard try digits() > 0 else { throw failure("\(key) is not a number") }
            exact = false
        }
        return (String(decoding: text, as: UTF8.self), exact)
    }

    /// A JSON string, its escapes decoded; the bytes must be UTF-8.
    mutating func string() throws -> String {
        guard let text = try decodedString() else { throw failure("a string is not UTF-8", .invalidUTF8) }
        return text
    }

    /// A string whose value is not used (an unknown key's), read past as JSONDecoder does: up to its closing
    /// quote, its bytes unchecked.
    mutating func skipString() throws {
        try expect(UInt8(ascii: "\""))
        while true {
            guard let byte = try peek() else { throw failure("a string does not end") }
            position += 1
            if byte == UInt8(ascii: "\\"), try peek() != nil {
                position += 1
            } else if byte == UInt8(ascii: "\"") {
                return
            }
        }
    }

    /// The string's text, or `nil` when its bytes are not UTF-8.
    mutating func decodedString() throws -> String? {
        try expect(UInt8(ascii: "\""))
        var out: [UInt8] = []
        while true {
            guard let byte = try peek() else { throw failure("a string does not end") }
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(validating: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let escape = try peek() else { throw failure("a string does not end") }
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"): out.append(contentsOf: Array(String(try unicodeEscape()).utf8))
                default:
                    throw failure(
                        "a string has the escape \\\(Character(UnicodeScalar(escape)))",
                        .invalidEscape,
                        at: offset - 2
                    )
                }
            case 0..<0x20: throw failure("a string holds a control character", .controlCharacter, at: offset - 1)
            default: out.append(byte)
            }
        }
    }

    /// The scalar of a `\u` escape after its `u`, with the low surrogate's escape that must follow a high one.
    mutating func unicodeEscape() throws -> Unicode.Scalar {
        var scalar = try hex4()
        if (0xD800..<0xDC00).contains(scalar) {
            guard try peek() == UInt8(ascii: "\\") else {
                throw failure("a lone surrogate in a string", .invalidEscape)
            }
            position += 1
            guard try peek() == UInt8(ascii: "u") else { throw failure("a lone surrogate in a string", .invalidEscape) }
            position += 1
            let low = try hex4()
            guard (0xDC00..<0xE000).contains(low) else {
                throw failure("a lone surrogate in a string", .invalidEscape)
            }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        }
        guard let unicode = Unicode.Scalar(scalar) else {
            throw failure("a lone surrogate in a string", .invalidEscape)
        }
        return unicode
    }

    mutating func hex4() throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = try peek() else { throw failure("a string does not end") }
            position += 1
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("a \\u escape is not hexadecimal", .invalidEscape)
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// The bytes of the next value, as written (for the few fields decoded by JSONDecoder).
    mutating func capturedValue() throws -> [UInt8] {
        guard try peekSkippingSpace() != nil else { throw failure("a value is missing") }
        var captured: [UInt8]? = []
        try skipValue(depth: 0, into: &captured)
        return captured ?? []
    }

    mutating func skipValue(depth: Int) throws {
        var ignored: [UInt8]?
        try skipValue(depth: depth, into: &ignored)
    }

    /// Reads past one value of any type, checking its syntax; appends its bytes to `sink` when given. `depth`
    /// counts from inside the index's object, one of JSONDecoder's levels.
    mutating func skipValue(depth: Int, into sink: inout [UInt8]?) throws {
        let limit = Self.maximumDepth - 1
        guard depth < limit else { throw failure("nests deeper than \(limit) levels", .tooDeep) }
        guard let byte = try peekSkippingSpace() else { throw failure("a value is missing") }
        switch byte {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let closing = byte == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
            position += 1
            sink?.append(byte)
            if try peekSkippingSpace() == closing {
                position += 1
                sink?.append(closing)
                return
            }
            repeat {
                if byte == UInt8(ascii: "{") {
                    if sink != nil {
                        sink?.append(contentsOf: Self.quoted(try string()) + [UInt8(ascii: ":")])
                    } else {
                        try skipString()
                    }
                    try expect(UInt8(ascii: ":"))
                }
                try skipValue(depth: depth + 1, into: &sink)
                if try peekSkippingSpace() == UInt8(ascii: ",") { sink?.append(UInt8(ascii: ",")) }
            } while try separator(closing: closing)
            sink?.append(closing)
        case UInt8(ascii: "\""):
            if sink != nil {
                sink?.append(contentsOf: Self.quoted(try string()))
            } else {
                try skipString()
            }
        case UInt8(ascii: "t"): try literal("true", into: &sink)
        case UInt8(ascii: "f"): try literal("false", into: &sink)
        case UInt8(ascii: "n"): try literal("null", into: &sink)
        default:
            guard byte == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else {
                throw failure("a value begins with \"\(Character(UnicodeScalar(byte)))\"")
            }
            while let next = try peek(), Self.numberBytes.contains(next) {
                sink?.append(next)
                position += 1
            }
        }
    }

    private static let numberBytes = Set("+-.eE0123456789".utf8)

    static func quoted(_ text: String) -> [UInt8] {
        (try? JSONEncoder().encode(text)).map(Array.init) ?? []
    }

    mutating func literal(_ word: String) throws {
        var ignored: [UInt8]?
        try literal(word, into: &ignored)
    }

    mutating func literal(_ word: String, into sink: inout [UInt8]?) throws {
        _ = try peekSkippingSpace()
        for expected in word.utf8 {
            guard try peek() == expected else { throw failure("a value is not \(word)") }
            position += 1
        }
        sink?.append(contentsOf: Array(word.utf8))
    }
}
