/// A path pattern, as the Xcode 27 selectors `filePattern` and `fileExclusion` take them.
///
/// `*` matches any run of characters within one path component, `?` one character, `[abc]`, `[a-z]` and
/// `[!a]` (or `[^a]`) one character of (or not of) a set, and `**` as a whole component any number of
/// components, none included (`Levels/**/*.json` matches `Levels/a.json` and `Levels/w/1/a.json`). A
/// backslash makes the next character literal. Paths are relative to the source root, components are
/// separated by `/`, and characters are Unicode scalars (no normalization, as everywhere else).
public struct Glob: Sendable, Hashable, CustomStringConvertible {
    // Token, Component and components are internal, not private, so that the tests' reference matcher reads the
    // same parse and checks only the matching.
    enum Token: Sendable, Hashable {
        case literal(Unicode.Scalar)
        case one
        case star
        case set(ranges: [ClosedRange<UInt32>], negated: Bool)

        /// Whether this token, one that is not `*`, takes `scalar`.
        func accepts(_ scalar: Unicode.Scalar) -> Bool {
            switch self {
            case .literal(let literal): literal == scalar
            case .one: true
            case .star: false
            case .set(let ranges, let negated): ranges.contains { $0.contains(scalar.value) } != negated
            }
        }
    }

    enum Component: Sendable, Hashable {
        case anyDepth
        case segment([Token])
    }

    /// The pattern as written.
    public let pattern: String
    let components: [Component]

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
    ///
    /// Time is bounded by the product of the pattern's and the path's lengths, whatever the pattern: no
    /// backtracking without bound (`*a*a*a*a*b` against a long name of `a`s once took minutes).
    public func matches(_ path: String) -> Bool {
        var steps = 0
        return matches(path, steps: &steps)
    }

    /// Whether `path` matches, counting in `steps` the states the matcher visited: at most
    /// `(pattern length + 1) * (path length + 1)`, in Unicode scalars (for the tests of that bound).
    func matches(_ path: String, steps: inout Int) -> Bool {
        let parts = Substring(path).utf8.split(separator: UInt8(ascii: "/")).map {
            Array(String(Substring($0)).unicodeScalars)
        }
        // Dynamic programming over (component, part), from the last component back: `rest[at]` says whether
        // the components after this one match `parts[at...]`. Each pair is decided once.
        var rest = [Bool](repeating: false, count: parts.count + 1)
        rest[parts.count] = true
        var here = rest
        for component in components.reversed() {
            switch component {
            case .anyDepth:
                // `**` takes parts[at..<k] for some k: it matches here if the rest matches at `at`, or if it
                // matches one part further on.
                here[parts.count] = rest[parts.count]
                for at in stride(from: parts.count - 1, through: 0, by: -1) {
                    steps += 1
                    here[at] = rest[at] || here[at + 1]
                }
            case .segment(let tokens):
                here[parts.count] = false
                for at in 0..<parts.count {
                    here[at] = rest[at + 1] && Self.match(tokens, parts[at], &steps)
                }
            }
            swap(&here, &rest)
            guard rest.contains(true) else { return false }
        }
        return rest[0]
    }

    /// Whether one component matches a name: the greedy two-pointer wildcard match, which only ever goes back
    /// to just after the last `*` seen (a later `*` makes any earlier choice irrelevant), so it takes at most
    /// `(tokens + 1) * (name + 1)` steps.
    private static func match(_ tokens: [Token], _ text: [Unicode.Scalar], _ steps: inout Int) -> Bool {
        var token = 0
        var at = 0
        var star: (token: Int, at: Int)?
        while at < text.count {
            steps += 1
            if token < tokens.count, tokens[token] == .star {
                star = (token, at)
                token += 1
            } else if token < tokens.count, tokens[token].accepts(text[at]) {
                token += 1
                at += 1
            } else if let last = star {
                // The last `*` takes one more character, and the tokens after it start again from there.
                star = (last.token, last.at + 1)
                token = last.token + 1
                at = last.at + 1
            } else {
                return false
            }
        }
        while token < tokens.count, tokens[token] == .star { token += 1 }
        return token == tokens.count
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
