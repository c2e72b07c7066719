/// A JSON document read whole by ``JSONScanner/document(_:comments:)``: its value, and what in it JSON readers
/// disagree on: commas before a closing bracket, which some readers take and JSON does not allow, and a key
/// twice in one object, which readers resolve differently (Foundation keeps the first, most others the last).
struct JSONDocument {
    /// A key written twice in one object.
    struct DuplicateKey: Equatable {
        /// Where it is, as a manifest key: `platforms`, `downloadPolicy.prefetch`.
        var path: String
        /// The byte offset of its second appearance.
        var offset: Int
    }

    /// The value, objects keeping the first of a key given twice, as JSONDecoder does.
    var value: JSONValue
    /// The bytes that offsets count in: the document as given, or turned into UTF-8 from UTF-16 or UTF-32.
    var text: [UInt8]
    /// The byte offsets of commas right before `}` or `]`.
    var trailingCommas: [Int]
    var duplicateKeys: [DuplicateKey]

    /// The line and column of a byte offset of ``text``.
    func place(of offset: Int) -> TextPlace {
        TextPlace(of: offset, in: text)
    }
}

/// A line and a column of a text, both counted from 1, the column in bytes.
struct TextPlace: Equatable, CustomStringConvertible {
    var line: Int
    var column: Int

    /// The place of a byte offset of `text` (its end for an offset past it).
    init(of offset: Int, in text: [UInt8]) {
        let before = text.prefix(min(offset, text.count))
        line = before.filter { $0 == UInt8(ascii: "\n") }.count + 1
        column = before.count - (before.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0) + 1
    }

    var description: String { "line \(line), column \(column)" }
}

/// A whole document read into a ``JSONValue``.
extension JSONScanner {
    /// Reads a document in memory in one pass: its value, the trailing commas and keys given twice in it.
    /// - Parameters:
    ///   - bytes: The document, in UTF-8 (or UTF-16 or UTF-32 with JSONDecoder's detection).
    ///   - comments: Whether `//` and `/* */` comments outside strings are read past as spaces.
    /// - Throws: ``Failure`` with its ``Failure/place`` for the first thing that is not JSON.
    static func document(_ bytes: [UInt8], comments: Bool) throws -> JSONDocument {
        var scanner = JSONScanner(bytes, comments: comments)
        scanner.trailingCommas = []
        var duplicates: [JSONDocument.DuplicateKey] = []
        do {
            try scanner.skipByteOrderMark()
            let value = try scanner.value(path: "", depth: 0, duplicates: &duplicates)
            if try scanner.peekSkippingSpace() != nil { throw scanner.failure("text after the end of the document") }
            return JSONDocument(
                value: value,
                text: scanner.bytes,
                trailingCommas: scanner.trailingCommas ?? [],
                duplicateKeys: duplicates
            )
        } catch var failure as Failure {
            failure.place = failure.offset.map { TextPlace(of: $0, in: scanner.bytes) }
            throw failure
        }
    }

    /// The next value. `path` is where it is (keys joined with dots; an array's elements share its path),
    /// `depth` the number of arrays and objects it is in.
    private mutating func value(
        path: String,
        depth: Int,
        duplicates: inout [JSONDocument.DuplicateKey]
    ) throws -> JSONValue {
        guard let byte = try peekSkippingSpace() else { throw failure("a value is missing") }
        switch byte {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            guard depth < Self.maximumDepth else {
                throw failure("nests deeper than \(Self.maximumDepth) levels", .tooDeep)
            }
            if byte == UInt8(ascii: "[") {
                var elements: [JSONValue] = []
                try container(byte) {
                    elements.append(try $0.value(path: path, depth: depth + 1, duplicates: &duplicates))
                }
                return .array(elements)
            }
            return .object(try object(path: path, depth: depth, duplicates: &duplicates))
        case UInt8(ascii: "\""): return .string(try text())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        default: return .number(try number())
        }
    }

    /// The object whose `{` is next; of a key given twice, the first value counts and the second is noted.
    private mutating func object(
        path: String,
        depth: Int,
        duplicates: inout [JSONDocument.DuplicateKey]
    ) throws -> [String: JSONValue] {
        var object: [String: JSONValue] = [:]
        try container(UInt8(ascii: "{")) { scanner in
            _ = try scanner.peekSkippingSpace()
            let offset = scanner.offset
            let key = try scanner.text()
            try scanner.expect(UInt8(ascii: ":"))
            let keyPath = path.isEmpty ? key : path + "." + key
            let first = object[key] == nil
            if !first { duplicates.append(JSONDocument.DuplicateKey(path: keyPath, offset: offset)) }
            let value = try scanner.value(path: keyPath, depth: depth + 1, duplicates: &duplicates)
            if first { object[key] = value }
        }
        return object
    }

    /// A string, which must be UTF-8.
    private mutating func text() throws -> String {
        _ = try peekSkippingSpace()
        let start = offset
        guard let text = try decodedString() else { throw failure("a string is not UTF-8", .invalidUTF8, at: start) }
        return text
    }

    /// A number as JSONDecoder reads a Double: refused when out of a Double's range (an overflow, or digits
    /// that are not all zero read as zero).
    private mutating func number() throws -> Double {
        let start = offset
        let spelled = try numberText("a number").spelled
        let significand = spelled.prefix { $0 != "e" && $0 != "E" }
        guard let value = Double(spelled), value.isFinite,
            value != 0 || !significand.contains(where: { "1"..."9" ~= $0 })
        else {
            throw failure("\(spelled) is out of range", .unrepresentable(spelled), at: start)
        }
        return value
    }
}
