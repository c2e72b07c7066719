/// What a JSON text has that readers disagree on, found in one pass over its bytes (comments already
/// stripped): commas before a closing bracket, which some readers take and JSON does not allow, and a key
/// twice in one object, which readers resolve differently (Foundation keeps the first, most others the last).
struct JSONLint {
    /// A key written twice in one object.
    struct DuplicateKey: Equatable {
        /// Where it is, as a manifest key: `platforms`, `downloadPolicy.prefetch`.
        var path: String
        /// The byte offset of its second appearance.
        var offset: Int
    }

    /// The byte offsets of commas right before `}` or `]`.
    var trailingCommas: [Int] = []
    var duplicateKeys: [DuplicateKey] = []

    /// Scans `text`. Malformed JSON gives what was found up to where it breaks (the parser says the rest).
    init(_ text: [UInt8]) {
        struct Container {
            var isObject: Bool
            var path: String
            var keys: Set<[UInt8]> = []
        }
        var stack: [Container] = []
        var inString = false
        var escaped = false
        var stringStart = 0
        var lastString: (bytes: [UInt8], offset: Int)?
        var pendingComma: Int?
        var pendingKey: String?  // the key whose value comes next, for the path of a nested container
        for (offset, byte) in text.enumerated() {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                    lastString = (Array(text[(stringStart + 1)..<offset]), stringStart)
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
                stringStart = offset
                pendingComma = nil
            case UInt8(ascii: ":"):
                pendingComma = nil
                guard let key = lastString, let top = stack.indices.last, stack[top].isObject else { break }
                let name = String(decoding: key.bytes, as: UTF8.self)
                let path = stack[top].path.isEmpty ? name : stack[top].path + "." + name
                if !stack[top].keys.insert(key.bytes).inserted {
                    duplicateKeys.append(DuplicateKey(path: path, offset: key.offset))
                }
                pendingKey = path
                lastString = nil
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                pendingComma = nil
                let parent = stack.last
                let path = parent?.isObject == true ? (pendingKey ?? "") : (parent?.path ?? "")
                stack.append(Container(isObject: byte == UInt8(ascii: "{"), path: path))
                pendingKey = nil
            case UInt8(ascii: ","):
                pendingComma = offset
                lastString = nil
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if let comma = pendingComma { trailingCommas.append(comma) }
                pendingComma = nil
                if !stack.isEmpty { stack.removeLast() }
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): break
            default: pendingComma = nil
            }
        }
    }
}
