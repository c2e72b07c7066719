import CAppleCompression
import Foundation
import Testing

/// The block decoders of CAppleCompression against independent encoders: Apple's reference LZFSE (PyPI `lzfse`),
/// liblz4 (PyPI `lz4`), and Python's lzma and zlib, whose output is checked in (`BlockVectors/`). Hostile streams
/// must end in a clean error.
@Suite("LZFSE and block decoders")
struct LZFSEDecoderTests {
    /// One encoded block and what it must decode to.
    struct Vector {
        let name: String
        let algorithm: UInt32
        let original: [UInt8]
        let encoded: [UInt8]
    }

    /// The vectors checked in under `BlockVectors/` (made once by `scripts/codec/make_block_vectors.py` with the
    /// Python references; every machine tests the same bytes). `vectors.txt`: name, algorithm (hex), encoded
    /// file and original file, tab-separated.
    static func referenceVectors() throws -> [Vector] {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("BlockVectors")
        let list = try String(contentsOf: folder.appendingPathComponent("vectors.txt"), encoding: .utf8)
        return try list.split(separator: "\n").map { line in
            let fields = line.split(separator: "\t").map(String.init)
            try #require(fields.count == 4, "vectors.txt: \(line)")
            let algorithm = try #require(UInt32(fields[1].dropFirst(2), radix: 16), "vectors.txt: \(line)")
            return Vector(
                name: fields[0],
                algorithm: algorithm,
                original: Array(try Data(contentsOf: folder.appendingPathComponent(fields[3]))),
                encoded: Array(try Data(contentsOf: folder.appendingPathComponent(fields[2])))
            )
        }
    }

    /// Decodes `encoded` into a buffer of exactly `capacity` bytes; the result and the bytes written.
    static func decode(_ algorithm: UInt32, _ encoded: [UInt8], capacity: Int) -> (Int, [UInt8]) {
        var output = [UInt8](repeating: 0, count: max(capacity, 1))
        let result = output.withUnsafeMutableBufferPointer { dst in
            encoded.withUnsafeBufferPointer { src in
                ac_block_decode(algorithm, dst.baseAddress, capacity, src.baseAddress, src.count)
            }
        }
        return (result, result > 0 ? Array(output.prefix(result)) : [])
    }

    static let errors = [Int(AC_ERROR_CORRUPT), Int(AC_ERROR_OUTPUT_FULL)]

    @Test("Every block kind of the reference encoder, and lz4/xz/zlib blocks, decode to the exact original")
    func referenceBlocksDecode() throws {
        let vectors = try Self.referenceVectors().filter { !$0.name.hasPrefix("hostile") }
        #expect(vectors.count == 16)
        for vector in vectors {
            let (result, bytes) = Self.decode(vector.algorithm, vector.encoded, capacity: vector.original.count)
            #expect(result == vector.original.count, "\(vector.name)")
            #expect(bytes == vector.original, "\(vector.name)")
            if !vector.original.isEmpty {
                let (short, _) = Self.decode(vector.algorithm, vector.encoded, capacity: vector.original.count - 1)
                #expect(short == Int(AC_ERROR_OUTPUT_FULL), "\(vector.name) one byte short")
            }
        }
    }

    @Test("LZFSE streams cut short at every byte fail cleanly")
    func truncatedStreamsFail() throws {
        let vectors = try Self.referenceVectors().filter { $0.algorithm == UInt32(AC_ALGORITHM_LZFSE) }
        for vector in vectors where !vector.name.hasPrefix("hostile") {
            for cut in 0..<vector.encoded.count {
                let (result, _) = Self.decode(
                    vector.algorithm,
                    Array(vector.encoded.prefix(cut)),
                    capacity: vector.original.count
                )
                #expect(Self.errors.contains(result), "\(vector.name) cut at \(cut): \(result)")
            }
        }
    }

    @Test("Frequency tables that do not sum to their state count are corrupt")
    func tableSumsWrong() throws {
        for vector in try Self.referenceVectors() where vector.name.hasPrefix("hostile") {
            let (result, _) = Self.decode(vector.algorithm, vector.encoded, capacity: 1 << 20)
            #expect(result == Int(AC_ERROR_CORRUPT), "\(vector.name)")
        }
    }

    /// An LZVN block (`bvxn`) of `raw` output bytes around hand-written opcodes, ending the stream.
    static func lzvn(raw: UInt32, _ opcodes: [UInt8]) -> [UInt8] {
        let eos: [UInt8] = [0x06, 0, 0, 0, 0, 0, 0, 0]
        let payload = opcodes + eos
        func le(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        return Array("bvxn".utf8) + le(raw) + le(UInt32(payload.count)) + payload + Array("bvx$".utf8)
    }

    @Test("Hand-made LZVN: a valid block decodes; literal runs past the output and distances before the start fail")
    func hostileLZVN() {
        // 0xE4: four literals; 0x00 0x03: match of 3 at distance 3.
        let good = Self.decode(
            UInt32(AC_ALGORITHM_LZFSE),
            Self.lzvn(raw: 7, [0xE4] + Array("abcd".utf8) + [0, 3]),
            capacity: 7
        )
        #expect(good.0 == 7 && good.1 == Array("abcdbcd".utf8))
        let cases: [(String, [UInt8])] = [
            ("literal run past the output", Self.lzvn(raw: 4, [0xE8] + Array("abcdefgh".utf8))),
            ("distance before the start", Self.lzvn(raw: 4, [0xE1, 0x61, 0x00, 0x05])),
            ("match before any distance", Self.lzvn(raw: 4, [0xF4])),
            ("undefined opcode", Self.lzvn(raw: 1, [0xE1, 0x61, 0x70])),
            ("stored block past the input", Array("bvx-".utf8) + [100, 0, 0, 0] + Array("abcbvx$".utf8)),
            ("no end marker", Array("bvx-".utf8) + [1, 0, 0, 0, 0x61]),
            ("garbage after the end marker", Array("bvx-".utf8) + [1, 0, 0, 0, 0x61] + Array("bvx$x".utf8)),
        ]
        for (name, stream) in cases {
            let (result, _) = Self.decode(UInt32(AC_ALGORITHM_LZFSE), stream, capacity: 1 << 16)
            #expect(result == Int(AC_ERROR_CORRUPT), "\(name)")
        }
        // A literal run past a small buffer (the block says 8 bytes, the caller has 4): output full.
        let (full, _) = Self.decode(
            UInt32(AC_ALGORITHM_LZFSE),
            Self.lzvn(raw: 8, [0xE8] + Array("abcdefgh".utf8)),
            capacity: 4
        )
        #expect(full == Int(AC_ERROR_OUTPUT_FULL))
    }

    @Test("LZBITMAP and unknown algorithms are unsupported")
    func unsupported() {
        let data: [UInt8] = Array("ZBM\u{9}".utf8) + [UInt8](repeating: 0, count: 12)
        #expect(Self.decode(UInt32(AC_ALGORITHM_LZBITMAP), data, capacity: 64).0 == Int(AC_ERROR_UNSUPPORTED))
        #expect(Self.decode(0x999, data, capacity: 64).0 == Int(AC_ERROR_UNSUPPORTED))
    }
}
