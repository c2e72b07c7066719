import Foundation
import Testing

@testable import AssetPackFormat

@Suite("Glob matching stays bounded")
struct GlobTests {
    /// The pattern and path lengths in Unicode scalars: the matcher may visit at most
    /// `(pattern + 1) * (path + 1)` states, whatever the pattern.
    static func bound(_ pattern: String, _ path: String) -> Int {
        (pattern.unicodeScalars.count + 1) * (path.unicodeScalars.count + 1)
    }

    static let a60 = String(repeating: "a", count: 60)

    /// Patterns that made the recursive matcher backtrack without bound: `*a*a*a*a*a*a*b` against 60 `a`s took
    /// over a minute, and a server matching it stopped publishing other packs meanwhile.
    @Test(arguments: [
        ("*a*a*a*a*b", String(repeating: "a", count: 20), false),
        ("*a*a*a*a*a*a*a*a*b", a60, false),
        ("*a*a*a*a*a*a*b", a60, false),
        ("*a*a*a*a*a*a*b", a60 + "b", true),
        ("*?*?*?*?*?*?*?*?c", a60, false),
        ("*[a-c]*[!b]*a*a*a*a*a*?*x", String(repeating: "ab", count: 40), false),
        ("*" + String(repeating: "a*", count: 50) + "b", String(repeating: "a", count: 200), false),
        ("**/**/**/**/**/x", String(repeating: "a/", count: 30) + "y", false),
        ("**/a/**/a/**/a/**/a/**/a/**/b", String(repeating: "a/", count: 40) + "a", false),
        ("**/*a*a*a*a*a*b/**/x", String(repeating: a60 + "/", count: 8) + "x", false),
        ("**/*a*a*a*a*a*b/**/x", String(repeating: a60 + "/", count: 8) + a60 + "b/x", true),
    ])
    func hostilePatternsVisitBoundedStates(_ pattern: String, _ path: String, _ expected: Bool) throws {
        var steps = 0
        #expect(try Glob(pattern).matches(path, steps: &steps) == expected, "\(pattern)")
        #expect(steps <= Self.bound(pattern, path), "\(pattern): \(steps) steps for \(Self.bound(pattern, path))")
    }

    /// Random patterns and paths answer as the recursive matcher (kept below as the reference) answers.
    @Test func randomPatternsMatchAsTheReferenceDoes() throws {
        var random = SplitMix64(seed: 27)
        let tokens = ["a", "b", "é", "*", "?", "[ab]", "[!a]", "[a-c]", "[^é]", "\\*", "\\[", "**", "."]
        let letters = ["a", "b", "c", "é", "e\u{301}", "*", "["]
        func pick(_ choices: [String]) -> String { choices[Int(random.next() % UInt64(choices.count))] }
        func count(_ upTo: UInt64) -> Int { Int(random.next() % (upTo + 1)) }
        var compared = 0
        var matched = 0
        // `make fuzz` raises the count with BA_FUZZ_ITERATIONS.
        let rounds = max(4000, Int(ProcessInfo.processInfo.environment["BA_FUZZ_ITERATIONS"] ?? "") ?? 0)
        for _ in 0..<rounds {
            let pattern = (0..<(1 + count(3))).map { _ in
                random.next() % 4 == 0 ? "**" : (0..<count(4)).map { _ in pick(tokens) }.joined()
            }.joined(separator: "/")
            let path = (0..<(1 + count(3))).map { _ in (0..<count(5)).map { _ in pick(letters) }.joined() }
                .joined(separator: "/")
            guard let reference = try? ReferenceGlob(pattern) else {
                #expect(throws: GlobError.self, "\(pattern)") { try Glob(pattern) }
                continue
            }
            var steps = 0
            let answer = try Glob(pattern).matches(path, steps: &steps)
            #expect(answer == reference.matches(path), "\(pattern) vs \(path)")
            #expect(steps <= Self.bound(pattern, path), "\(pattern) vs \(path): \(steps) steps")
            compared += 1
            if answer { matched += 1 }
        }
        #expect(compared > 3000 && matched > 200, "\(compared) compared, \(matched) matched")
    }
}

/// The recursive matcher `Glob` used before it was made linear, as the reference for small inputs: exponential
/// on hostile patterns, exact on the rest. It matches `Glob`'s own parse of the pattern: what is compared is the
/// matching alone.
private struct ReferenceGlob {
    private typealias Token = Glob.Token
    private typealias Component = Glob.Component

    private let components: [Component]

    init(_ pattern: String) throws(GlobError) {
        components = try Glob(pattern).components
    }

    func matches(_ path: String) -> Bool {
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
}
