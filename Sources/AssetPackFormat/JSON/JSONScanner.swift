import Foundation
import SystemPackage

/// The one JSON scanner of this package. It reads a document a byte at a time from memory or from a file
/// (64 KiB at a time), never holding it whole: strings, numbers and literals as JSONDecoder reads them, values
/// skipped or captured with a bound on depth. ``IndexParser`` reads an index's fields and rows with it;
/// ``document(_:comments:)`` reads a packaging manifest into a ``JSONValue`` in the same pass that reads past
/// its comments and notes what JSON readers disagree on (commas before a closing bracket, keys given twice).
struct JSONScanner {
    /// Why a document is refused: in the index's words with a byte offset (`description`), and as a kind in
    /// JSONSerialization's words with a place, which a packaging manifest's message shows.
    struct Failure: Error, CustomStringConvertible {
        /// What is wrong.
        enum Kind: Equatable, Sendable {
            case unexpectedEnd
            case invalidValue
            case leadingZero
            case invalidEscape
            case controlCharacter
            case invalidUTF8
            case tooDeep
            /// A number out of a Double's range, as written.
            case unrepresentable(String)
            case unclosedComment

            /// What it is in JSONSerialization's words, which manifest messages keep.
            var words: String {
                switch self {
                case .unexpectedEnd: "Unexpected end of file"
                case .invalidValue: "Invalid value"
                case .leadingZero: "Number with leading zero"
                case .invalidEscape: "Invalid escape sequence"
                case .controlCharacter: "Unescaped control character"
                case .invalidUTF8: "Invalid UTF-8 sequence"
                case .tooDeep: "Too many nested arrays or dictionaries"
                case .unrepresentable(let number): "Number \(number) is not representable in Swift"
                case .unclosedComment: "A /* comment is never closed"
                }
            }
        }

        var description: String
        var kind = Kind.invalidValue
        /// Where it is: a byte offset from the document's first byte (comments and byte order mark counted).
        var offset: Int?
        /// The line and column of `offset`, for a document read whole by ``JSONScanner/document(_:comments:)``.
        var place: TextPlace?
    }

    private(set) var bytes: [UInt8]
    var position = 0
    private var count = 0
    private let fd: FileDescriptor?
    private var fileOffset: Int64 = 0
    private var base: Int64 = 0  // where bytes[0] is in the document
    /// Whether `//` and `/* */` comments outside strings are read past as spaces (documents in memory only).
    private let allowsComments: Bool
    /// The offsets of commas right before a closing bracket, when they are being noted.
    var trailingCommas: [Int]?
    static let maximumDepth = 512  // JSONDecoder's bound on nested arrays and objects

    /// Parses bytes in memory.
    /// - Parameters:
    ///   - data: The document.
    ///   - comments: Whether `//` and `/* */` comments outside strings are read past as spaces.
    init(_ data: some Collection<UInt8>, comments: Bool = false) {
        bytes = Array(data)
        count = bytes.count
        fd = nil
        allowsComments = comments
    }

    /// Parses a file from its start, 64 KiB at a time.
    init(reading fd: FileDescriptor) {
        bytes = [UInt8](repeating: 0, count: 64 << 10)
        self.fd = fd
        allowsComments = false
    }

    // MARK: - Structure

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

    /// Reads the elements of the array or object whose `opening` bracket is next, calling `element` for each
    /// (at a key, for an object) up to the closing bracket.
    mutating func container(_ opening: UInt8, _ element: (inout JSONScanner) throws -> Void) throws {
        try expect(opening)
        let closing = opening == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
        if try peekSkippingSpace() == closing {
            position += 1
            return
        }
        repeat { try element(&self) } while try separator(closing: closing)
    }

    /// After an element: true for a comma (another follows), false for `closing`. A comma before the
    /// closing bracket is allowed, as JSONDecoder allows it, and noted in ``trailingCommas``.
    mutating func separator(closing: UInt8) throws -> Bool {
        switch try peekSkippingSpace() {
        case UInt8(ascii: ","):
            let comma = offset
            position += 1
            if try peekSkippingSpace() == closing {
                position += 1
                trailingCommas?.append(comma)
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

    /// The next byte that is neither a space nor in a comment, without taking it; `nil` at the end.
    mutating func peekSkippingSpace() throws -> UInt8? {
        while let byte = try peek() {
            switch byte {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            case UInt8(ascii: "/") where allowsComments:
                guard try skipComment() else { return byte }
            default: return byte
            }
        }
        return nil
    }

    /// Reads past the `//` or `/* */` comment at `position` (comments are read in memory only, so the whole
    /// comment is in `bytes`); false when the `/` begins none.
    private mutating func skipComment() throws -> Bool {
        guard position + 1 < count else { return false }
        switch bytes[position + 1] {
        case UInt8(ascii: "/"):
            position = bytes[position..<count].firstIndex(of: UInt8(ascii: "\n")) ?? count
            return true
        case UInt8(ascii: "*"):
            var end = position + 2
            while end + 1 < count, bytes[end] != UInt8(ascii: "*") || bytes[end + 1] != UInt8(ascii: "/") { end += 1 }
            guard end + 1 < count else { throw failure("a /* comment is never closed", .unclosedComment) }
            position = end + 2
            return true
        default: return false
        }
    }

    // MARK: - Bytes

    /// The byte offset of the next byte in the document.
    var offset: Int { Int(base) + position }

    /// The next byte without taking it; `nil` at the end.
    @inline(__always)
    mutating func peek() throws -> UInt8? {
        if position < count { return bytes[position] }
        return try refill() ? bytes[position] : nil
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

    /// A failure at the current byte (or at `offset`): of `kind`, or when none is given an invalid value, or
    /// the end of the document when no byte is left in memory.
    func failure(_ what: String, _ kind: Failure.Kind? = nil, at offset: Int? = nil) -> Failure {
        Failure(
            description: "\(what) (near byte \(base + Int64(position)))",
            kind: kind ?? (position < count ? .invalidValue : .unexpectedEnd),
            offset: offset ?? self.offset
        )
    }
}
