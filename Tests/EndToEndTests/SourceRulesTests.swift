import Foundation
import TestSupport
import Testing

/// Rules of the house that a reading of the sources checks, so that a change that breaks one fails here.
@Suite("Rules the sources keep")
struct SourceRulesTests {
    /// The Swift sources, path and text.
    func swiftSources() throws -> [(path: String, text: String)] {
        let root = repositoryRoot().appendingPathComponent("Sources")
        let walker = FileManager.default.enumerator(atPath: root.path)
        var sources: [(String, String)] = []
        while let relative = walker?.nextObject() as? String {
            guard relative.hasSuffix(".swift") else { continue }
            sources.append((relative, try String(contentsOf: root.appendingPathComponent(relative), encoding: .utf8)))
        }
        return sources
    }

    /// The Linux calls that are not POSIX are made in `Sources/CLinux` only (as swift-nio's CNIOLinux): a port
    /// replaces that target. They were spread over five targets, O_DIRECT as a number per architecture.
    @Test func linuxOnlyCallsLiveInCLinux() throws {
        let calls = [
            #"\bsyncfs\("#, #"\bmallopt\("#, #"\bposix_fadvise\("#, #"\bPOSIX_FADV_"#, #"\bM_TRIM_THRESHOLD\b"#,
            #"\bO_DIRECT\b"#,
        ]
        let patterns = try calls.map { try Regex($0) }
        var found: [String] = []
        for (path, text) in try swiftSources() {
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                guard !code.hasPrefix("//") else { continue }
                let beforeComment = code.components(separatedBy: "//").first ?? code
                for (call, pattern) in zip(calls, patterns) where beforeComment.contains(pattern) {
                    found.append("Sources/\(path):\(number + 1): \(call)")
                }
            }
        }
        #expect(found.isEmpty, "call through CLinux (FileDescriptor.advise, AtomicFile.syncFileSystem):\n\(found)")
    }
}
