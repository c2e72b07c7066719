import CAppleCompression
import Foundation
import Testing

/// Our LZFSE encoder (CAppleCompression's `ac_lzfse_encode`) against the reference decoder: Apple's reference
/// code through the PyPI `lzfse` package (`make deps` installs it), run in a `python3` subprocess. The C-level
/// harness in scripts/codec covers far more inputs; this keeps the round trip inside `swift test`.
@Suite("LZFSE encoder round-trips through the reference decoder")
struct LZFSEEncoderTests {
    static func encode(_ input: [UInt8]) throws -> [UInt8] {
        let capacity = input.count + input.count / 8 + 4096
        var output = [UInt8](repeating: 0, count: capacity)
        let scratch = UnsafeMutableRawPointer.allocate(byteCount: ac_lzfse_encode_scratch_size(), alignment: 16)
        defer { scratch.deallocate() }
        let written = input.withUnsafeBufferPointer { src in
            output.withUnsafeMutableBufferPointer { dst in
                ac_lzfse_encode(dst.baseAddress, capacity, src.baseAddress, src.count, scratch)
            }
        }
        try #require(written > 0)
        return Array(output[..<written])
    }

    /// Decodes `stream` with the reference implementation (the stream goes through a temporary file, the
    /// decoded bytes come back on python3's stdout).
    static func referenceDecode(_ stream: [UInt8]) throws -> [UInt8] {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("lzfse-encoder-test-\(UUID().uuidString).lzfse")
        try Data(stream).write(to: path)
        defer { try? FileManager.default.removeItem(at: path) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c",
            "import sys, lzfse; sys.stdout.buffer.write(lzfse.decompress(open(sys.argv[1], 'rb').read()))",
            path.path,
        ]
        let stdout = Pipe()
        process.standardOutput = stdout
        try process.run()
        let decoded = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0)
        return [UInt8](decoded)
    }

    static func input(_ kind: String, _ count: Int) -> [UInt8] {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt8 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        }
        switch kind {
        case "random": return (0..<count).map { _ in next() }
        case "zeros": return [UInt8](repeating: 0, count: count)
        default:
            let words = ["asset ", "pack ", "archive ", "block ", "the ", "of ", "compression\n", "lzfse "]
            var out = [UInt8]()
            while out.count < count { out += Array(words[Int(next()) % words.count].utf8) }
            return Array(out.prefix(count))
        }
    }

    @Test(arguments: ["text", "random", "zeros"], [1, 100, 4095, 65536, 1 << 20])
    func roundTrip(kind: String, count: Int) throws {
        let data = Self.input(kind, count)
        let stream = try Self.encode(data)
        #expect(try Self.referenceDecode(stream) == data)
        #expect(try Self.encode(data) == stream, "the same input must give the same bytes")
    }
}
