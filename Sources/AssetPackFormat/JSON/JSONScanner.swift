import Foundation
import SystemPackage

/// A JSON tokenizer that reads a document a byte at a time from memory or from a file (64 KiB at a time),
/// never holding it whole: strings, integers and literals as JSONDecoder reads them, values skipped or
/// captured with a bound on depth. ``IndexParser`` reads an index's fields and rows with it.
struct JSONScanner {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private var bytes: [UInt8]
    var position = 0
    private var count = 0
    private let fd: FileDescriptor?
    private var fileOffset: Int64 = 0
    private var base: Int64 = 0  // where bytes[0] is in the document
    private static let numberBytes = Set("+-.eE0123456789".utf8)
    private static let maximumDepth = 511  // JSONDecoder takes 512 levels, the index object one of them

    /// Parses bytes in memory.
    init(_ data: some Collection<UInt8>) {
        bytes = Array(data)
        count = bytes.count
        fd = nil
    }

    /// Parses a file from its start, 64 KiB at a time.
    init(reading fd: FileDescriptor) {
        bytes = [UInt8](repeating: 0, count: 64 << 10)
        self.fd = fd
    }

    // MARK: - Values

    mutating func strings(_ key: String) throws -> [String] {
        var result: [String] = []
        try expect(UInt8(ascii: "["))
        if try peekSkippingSpace() == UInt8(ascii: "]") {
            position += 1
            return result
        }
        repeat { result.append(try string()) } while try separator(closing: UInt8(ascii: "]"))
        return result
    }

    /// A JSON number that is a whole number fitting an Int64: digits as they are, or with a fraction or an
    /// exponent (`6.0`, `6e0`, `60e-1`) when its value is whole, as JSONDecoder reads integer fields.
    mutating func integer(_ key: String) throws -> Int64 {
        guard try peekSkippingSpace() != nil else { throw failure("\(key) has no value") }
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
        if try peek() == UInt8(ascii: "-") {
            text.append(UInt8(ascii: "-"))
            position += 1
        }
        let whole = try digits()
        guard whole > 0 else { throw failure("\(key) is not a number") }
        if whole > 1 && text[text.count - whole] == UInt8(ascii: "0") { throw failure("\(key) has a leading zero") }
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
        let spelled = String(decoding: text, as: UTF8.self)
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

    /// A JSON string, its escapes decoded; the bytes must be UTF-8.
    mutating func string() throws -> String {
        guard let text = try decodedString() else { throw failure("a string is not UTF-8") }
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
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard try peek() == UInt8(ascii: "\\") else { throw failure("a lone surrogate in a string") }
                        position += 1
                        guard try peek() == UInt8(ascii: "u") else { throw failure("a lone surrogate in a string") }
                        position += 1
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw failure("a lone surrogate in a string") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw failure("a lone surrogate in a string") }
                    out.append(contentsOf: Array(String(unicode).utf8))
                default: throw failure("a string has the escape \\\(Character(UnicodeScalar(escape)))")
                }
            case 0..<0x20: throw failure("a string holds a control character")
            default: out.append(byte)
            }
        }
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
            default: throw failure("a \\u escape is not hexadecimal")
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

    /// Reads past one value of any type, checking its syntax; appends its bytes to `sink` when given.
    mutating func skipValue(depth: Int, into sink: inout [UInt8]?) throws {
        guard depth < Self.maximumDepth else { throw failure("nests deeper than \(Self.maximumDepth) levels") }
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

    // MARK: - Bytes

    /// Reads past a UTF-8 byte order mark; a document in UTF-16 or UTF-32 (which JSONDecoder reads too,
    /// and no index this tool writes is) is read whole and turned into UTF-8 first.
    mutating func skipByteOrderMark() throws {
        var head: [UInt8] = []
        while head.count < 4 {
            if position + head.count >= count, !(try refillKeeping()) { break }
            head.append(bytes[position + head.count])
        }
        if head.starts(with: [0xEF, 0xBB, 0xBF]) {
            position += 3
            return
        }
        let encoding: String.Encoding?
        switch head.count >= 2 ? (head[0], head[1]) : (1, 1) {
        case (0xFE, 0xFF), (0xFF, 0xFE): encoding = .utf16
        case (0, 0): encoding = .utf32BigEndian
        case (0, _): encoding = .utf16BigEndian
        case (_, 0):
            encoding = head.count >= 4 && head[2] == 0 && head[3] == 0 ? .utf32LittleEndian : .utf16LittleEndian
        default: encoding = nil
        }
        guard let encoding else { return }
        var all = Array(bytes[position..<count])
        while try refill() { all += bytes[0..<count] }
        guard let text = String(data: Data(all), encoding: encoding) else {
            throw failure("the index is in no encoding JSON allows")
        }
        bytes = Array(text.utf8)
        count = bytes.count
        position = 0
        if bytes.first == 0xEF, bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
    }

    /// Reads more of the file after what is in the buffer, keeping the buffer's unread bytes; whether any
    /// came.
    mutating func refillKeeping() throws -> Bool {
        guard let fd else { return false }
        let kept = Array(bytes[position..<count])
        var more = [UInt8](repeating: 0, count: 64 << 10)
        let read = try Self.read(fd, at: fileOffset, into: &more)
        guard read > 0 else { return false }
        base += Int64(position)
        fileOffset += Int64(read)
        bytes = kept + more[0..<read]
        position = 0
        count = bytes.count
        return true
    }

    /// After an element: true for a comma (another follows), false for `closing`. A comma before the
    /// closing bracket is allowed, as JSONDecoder allows it.
    mutating func separator(closing: UInt8) throws -> Bool {
        switch try peekSkippingSpace() {
        case UInt8(ascii: ","):
            position += 1
            if try peekSkippingSpace() == closing {
                position += 1
                return false
            }
            return true
        case closing:
            position += 1
            return false
        default: throw failure("expected \",\" or \"\(Character(UnicodeScalar(closing)))\"")
        }
    }

    mutating func expect(_ byte: UInt8) throws {
        guard try peekSkippingSpace() == byte else { throw failure("expected \"\(Character(UnicodeScalar(byte)))\"") }
        position += 1
    }

    mutating func peekSkippingSpace() throws -> UInt8? {
        while let byte = try peek() {
            switch byte {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return byte
            }
        }
        return nil
    }

    /// The next byte without taking it; `nil` at the end.
    @inline(__always)
    mutating func peek() throws -> UInt8? {
        if position < count { return bytes[position] }
        return try refill() ? bytes[position] : nil
    }

    mutating func refill() throws -> Bool {
        guard let fd else { return false }
        let read = try Self.read(fd, at: fileOffset, into: &bytes)
        base = fileOffset
        fileOffset += Int64(read)
        position = 0
        count = read
        return read > 0
    }

    static func read(_ fd: FileDescriptor, at offset: Int64, into buffer: inout [UInt8]) throws -> Int {
        do {
            return try buffer.withUnsafeMutableBytes {
                try fd.read(fromAbsoluteOffset: offset, into: $0, retryOnInterrupt: true)
            }
        } catch {
            throw Failure(description: "cannot read the index: \(error)")
        }
    }

    func failure(_ what: String) -> Failure {
        Failure(description: "\(what) (near byte \(base + Int64(position)))")
    }
}
