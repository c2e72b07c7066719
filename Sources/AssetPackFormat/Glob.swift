/// A path pattern, as the Xcode 27 selectors `filePattern` and `fileExclusion` take them.
///
/// `*` matches any run of characters within one path component, `?` one character, `[abc]`, `[a-z]` and
/// `[!a]` (or `[^a]`) one character of (or not of) a set, and `**` as a whole component any number of
/// components, none included (`Levels/**/*.json` matches `Levels/a.json` and `Levels/w/1/a.json`). A
/// backslash makes the next character literal. Paths are relative to the source root, components are
/// separated by `/`, and characters are Unicode scalars (no normalization, as everywhere else).
public struct Glob: Sendable, Hashable, CustomStringConvertible {
    private enum Token: Sendable, Hashable {
        case literal(Unicode.Scalar)
        case one
        case star
        case set(ranges: [ClosedRange<UInt32>], negated: Bool)
    }

    private enum Component: Sendable, Hashable {
        case anyDepth
        case segment([Token])
    }

    /// The pattern as written.
    public let pattern: String
    private let components: [Component]

    /// Parses a pattern.
    /// - Throws: A phrase that completes "the pattern ..." (for a manifest error): empty, absolute, with a
    ///   `..` component, or with an unclosed `[`.
    public init(_ pattern: String) throws(GlobError) {
        self.pattern = pattern
        guard !pattern.isEmpty else { throw GlobError("is empty") }
        guard pattern.utf8.first != UInt8(ascii: "/") else { throw GlobError("is absolute") }
        var components: [Component] = []
        for part in Substring(pattern).utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
            let text = String(Substring(part))
            if text == "**" {
                if components.last != .anyDepth { components.append(.anyDepth) }
                continue
            }
            if text == ".." { throw GlobError("climbs out of the source root with '..'") }
            if text == "." { continue }
            components.append(.segment(try Self.tokens(text)))
        }
        guard !components.isEmpty else { throw GlobError("matches nothing but the source root") }
        self.components = components
    }

    public var description: String { pattern }

    /// Whether `path` (relative, `/`-separated) matches the whole pattern.
    public func matches(_ path: String) -> Bool {
        let parts = Substring(path).utf8.split(separator: UInt8(ascii: "/")).map {
            Array(String(Substring($0)).unicodeScalars)
        }
        var memo: [Int: Bool] = [:]
        return match(0, parts, 0, &memo)
    }

    private func match(_ index: Int, _ parts: [[Unicode.Scalar]], _ at: Int, _ memo: inout [Int: Bool]) -> Bool {
        let key = index * (parts.count + 1) + at
        if let known = memo[key] { return known }
        let result: Bool
        if index == components.count {
            result = at == parts.count
        } else {
            switch components[index] {
            case .anyDepth:
                result = (at...parts.count).contains { match(index + 1, parts, $0, &memo) }
            case .segment(let tokens):
                result =
                    at < parts.count && Self.match(tokens[...], parts[at][...])
                    && match(index + 1, parts, at + 1, &memo)
            }
        }
        memo[key] = result
        return result
    }

    private static func match(_ tokens: ArraySlice<Token>, _ text: ArraySlice<Unicode.Scalar>) -> Bool {
        guard let token = tokens.first else { return text.isEmpty }
        switch token {
        case .star:
            var rest = text
            while true {
                if match(tokens.dropFirst(), rest) { return true }
                guard !rest.isEmpty else { return false }
                rest = rest.dropFirst()
            }
        case .one:
            return !text.isEmpty && match(tokens.dropFirst(), text.dropFirst())
        case .literal(let scalar):
            return text.first == scalar && match(tokens.dropFirst(), text.dropFirst())
        case .set(let ranges, let negated):
            guard let scalar = text.first else { return false }
            let inSet = ranges.contains { $0.contains(scalar.value) }
            return inSet != negated && match(tokens.dropFirst(), text.dropFirst())
        }
    }

    private static func tokens(_ text: String) throws(GlobError) -> [Token] {
        let scalars = Array(text.unicodeScalars)
        var tokens: [Token] = []
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            index += 1
            switch scalar {
            case "*":
                if tokens.last != .star { tokens.append(.star) }
            case "?":
                tokens.append(.one)
            case "\\":
                guard index < scalars.count else { throw GlobError("ends with a backslash") }
                tokens.append(.literal(scalars[index]))
                index += 1
            case "[":
                var negated = false
                if index < scalars.count, scalars[index] == "!" || scalars[index] == "^" {
                    negated = true
                    index += 1
                }
                var ranges: [ClosedRange<UInt32>] = []
                var first = true
                while index < scalars.count, scalars[index] != "]" || first {
                    first = false
                    let low = scalars[index].value
                    if index + 2 < scalars.count, scalars[index + 1] == "-", scalars[index + 2] != "]" {
                        let high = scalars[index + 2].value
                        guard low <= high else { throw GlobError("has a reversed range in [...]") }
                        ranges.append(low...high)
                        index += 3
                    } else {
                        ranges.append(low...low)
                        index += 1
                    }
                }
                guard index < scalars.count else { throw GlobError("has a '[' that is never closed") }
                index += 1  // the "]"
                tokens.append(.set(ranges: ranges, negated: negated))
            default:
                tokens.append(.literal(scalar))
            }
        }
        return tokens
    }
}

/// Why a pattern cannot be used: a phrase that completes "the pattern ...".
public struct GlobError: Error, Sendable, Hashable, CustomStringConvertible {
    public let problem: String
    init(_ problem: String) { self.problem = problem }
    public var description: String { problem }
}
