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

    /// No function, initializer or closure-bodied declaration runs past 80 lines, and no file past 400 (issue
    /// 33: a reader holds a function in one screen, and a file's concern in its name).
    @Test func functionsAndFilesStayShort() throws {
        var long: [String] = []
        for (path, text) in try swiftSources() {
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            if lines.count > 401 { long.append("Sources/\(path): \(lines.count) lines (at most 400)") }
            for (start, length) in Self.functions(in: lines) where length > 80 {
                long.append("Sources/\(path):\(start + 1): a function of \(length) lines (at most 80)")
            }
        }
        #expect(long.isEmpty, "split these by what they do:\n\(long.joined(separator: "\n"))")
    }

    /// The JSON users read is typed (`JSONOutput` and its `Encodable` shapes): no dictionary of `Any` is
    /// written as JSON, no `NSNull` stands for a missing value. `[String: Any]` remains where a property list
    /// is read (Info.plist), which Foundation gives as one.
    @Test func jsonOutputIsTyped() throws {
        var found: [String] = []
        for (path, text) in try swiftSources() {
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.components(separatedBy: "//").first ?? ""
                if code.contains("JSONSerialization.data(") || code.contains("NSNull")
                    || (code.contains("[String: Any]") && !path.hasPrefix("AssetPackFormat/InfoPlist/"))
                {
                    found.append("Sources/\(path):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(found.isEmpty, "write an Encodable type through JSONOutput:\n\(found.joined(separator: "\n"))")
    }

    /// The executables only parse, call and print (issue 33): the work of a command (building a catalog or a
    /// server, claiming a folder, reading archives on a thread of their own, loading a baseline) is a library
    /// call that tests reach without a process, and no command's `run()` passes 45 lines. `serve` built its
    /// catalog, TLS and server in the executable, `export` its catalog, `bench` read its baseline (a `run()` of
    /// 79 lines).
    @Test func commandsOnlyParseCallAndPrint() throws {
        let work = [
            "BlockingIO.longJob", "PackCatalog(", "AssetFolder(", "claimState(", "buildApplication(",
            "runUntilSignalled(", "TLSSetup.make(", "Data(contentsOf:", "mkdtemp", "PackSource.resolve(",
            "ServedPack.archive(", "ReadBenchmark(",
        ]
        var found: [String] = []
        for (path, text) in try swiftSources() where path.hasPrefix("ba-mock/") || path.hasPrefix("ba-sync/") {
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            for (number, line) in lines.enumerated() {
                let code = line.components(separatedBy: "//").first ?? ""
                for call in work where code.contains(call) {
                    found.append("Sources/\(path):\(number + 1): \(call) (make it a library call)")
                }
            }
            for (start, length) in Self.functions(in: lines) where length > 45 && lines[start].contains("func run(") {
                found.append("Sources/\(path):\(start + 1): a run() of \(length) lines (at most 45)")
            }
        }
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }

    /// Every command names itself (`commandName:`): without it argument-parser derives the name with
    /// `String(describing:)` of the command's type, a scan of every conformance in every loaded image (Foundation,
    /// NIO, …), 12% of `ba-mock --version`'s samples and about 3 ms of every run (issue 31: a pack of 1 000 small
    /// files takes 95 ms, of which 30 ms is starting the process).
    @Test func everyCommandNamesItself() throws {
        var found: [String] = []
        for (path, text) in try swiftSources() where path.hasPrefix("ba-mock/") || path.hasPrefix("ba-sync/") {
            let configurations = text.components(separatedBy: "CommandConfiguration(").count - 1
            let named = text.components(separatedBy: "commandName: \"").count - 1
            if configurations != named {
                found.append("Sources/\(path): \(configurations) configurations, \(named) with a commandName")
            }
        }
        #expect(found.isEmpty, "give each CommandConfiguration its commandName:\n\(found.joined(separator: "\n"))")
    }

    /// The sendfile path names NIO's file types in one file (issue 33): they stood in three, and an upgrade of
    /// NIO or Hummingbird that moved them touched each.
    @Test func nioFileTypesLiveInTheSendfileTransport() throws {
        var found: [String] = []
        for (path, text) in try swiftSources() where path != "AssetPackServer/Bodies/SendfileTransport.swift" {
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.components(separatedBy: "//").first ?? ""
                if code.contains("NIOFileHandle") || code.contains("FileRegion(") || code.contains(".fileRegion(") {
                    found.append("Sources/\(path):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(found.isEmpty, "go through SendfileTransport:\n\(found.joined(separator: "\n"))")
    }

    /// Each declaration with a body (`func`, `init`, `deinit`, `subscript`): its first line and its length in
    /// lines, signature to closing brace. Braces in strings, comments and multi-line string literals are not
    /// counted.
    static func functions(in lines: [String]) -> [(start: Int, length: Int)] {
        let declaration =
            /^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|private|fileprivate|internal|static|override|mutating|nonisolated|final|class|convenience|required)(?:\(set\))?\s+)*(?:func\s|init[?!]?\s*[(<]|deinit\b|subscript\s*[(<])/
        // Each line's braces, outside strings and comments.
        var inBlockString = false
        let braces: [Int?] = lines.map { line in
            let quotes = line.components(separatedBy: "\"\"\"").count - 1
            if inBlockString || quotes % 2 == 1 {
                if quotes % 2 == 1 { inBlockString.toggle() }
                return nil
            }
            let code = line.replacing(/"(?:[^"\\]|\\.)*"/, with: "\"\"").components(separatedBy: "//")[0]
            return code.reduce(0) { $0 + ($1 == "{" ? 1 : $1 == "}" ? -1 : 0) }
        }
        let opens: [Bool] = lines.map { line in
            line.replacing(/"(?:[^"\\]|\\.)*"/, with: "\"\"").components(separatedBy: "//")[0].contains("{")
        }
        var found: [(Int, Int)] = []
        for start in lines.indices where lines[start].contains(declaration) {
            var depth = 0
            var opened = false
            var index = start
            while index < lines.count {
                if let change = braces[index] {
                    if opens[index] { opened = true }
                    depth += change
                }
                if opened && depth <= 0 { break }
                // A declaration without a body (a protocol's requirement) has no brace within its signature.
                if !opened && index > start + 20 { break }
                index += 1
            }
            if opened && index < lines.count { found.append((start, index - start + 1)) }
        }
        return found
    }
}
