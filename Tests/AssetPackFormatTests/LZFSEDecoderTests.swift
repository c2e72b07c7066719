import CAppleCompression
import Foundation
import Testing

/// The block decoders of CAppleCompression against independent encoders: Apple's reference LZFSE (PyPI `lzfse`),
/// liblz4 (PyPI `lz4`), and Python's lzma and zlib, run at test time. Hostile streams must end in a clean error.
@Suite("LZFSE and block decoders")
struct LZFSEDecoderTests {
    /// One encoded block and what it must decode to.
    struct Vector {
        let name: String
        let algorithm: UInt32
        let original: [UInt8]
        let encoded: [UInt8]
    }

    /// Encodes with the Python references; prints one JSON object a line. `bvx1` is made from `bvx2` (the
    /// reference encoder never writes v1) and checked with the reference decoder.
    static let script = #"""
        import base64, json, lzma, os, random, struct, sys, zlib
        try:
            import lzfse, lz4.block
        except ImportError as e:
            print(f"missing {e}", file=sys.stderr); sys.exit(3)

        def freqs(data):
            bits, out = int.from_bytes(data, "little"), []
            for _ in range(360):
                if bits & 1 == 0: n, v = 2, (bits >> 1) & 1
                elif bits & 2 == 0: n, v = 3, 2 + ((bits >> 2) & 1)
                elif bits & 4 == 0: n, v = 5, 4 + ((bits >> 3) & 3)
                elif bits & 8 == 0: n, v = 8, 8 + ((bits >> 4) & 15)
                else: n, v = 14, 24 + ((bits >> 4) & 1023)
                out.append(v); bits >>= n
            return out

        def to_v1(stream, bump=None):
            assert stream[:4] == b"bvx2" and stream[-4:] == b"bvx$"
            v0, v1, v2 = struct.unpack_from("<QQQ", stream, 8)
            size = v2 & 0xFFFFFFFF
            f = freqs(stream[32:size])
            if bump is not None: f[bump] += 1
            lit, lmd = (v0 >> 20) & 0xFFFFF, (v1 >> 40) & 0xFFFFF
            head = b"bvx1" + struct.pack("<IIIIIIi4Hi3H", struct.unpack_from("<I", stream, 4)[0], lit + lmd,
                v0 & 0xFFFFF, (v0 >> 40) & 0xFFFFF, lit, lmd, ((v0 >> 60) & 7) - 7,
                *[(v1 >> (10 * i)) & 0x3FF for i in range(4)], ((v1 >> 60) & 7) - 7,
                (v2 >> 32) & 0x3FF, (v2 >> 42) & 0x3FF, (v2 >> 52) & 0x3FF)
            head += struct.pack("<360H", *f) + b"\0\0"
            rest = stream[size:size + lit + lmd]
            assert stream[size + lit + lmd:] == b"bvx$", "one block only"
            return head + rest + b"bvx$"

        def emit(name, algorithm, original, encoded):
            print(json.dumps({"name": name, "algorithm": algorithm, "original": base64.b64encode(original).decode(),
                              "encoded": base64.b64encode(encoded).decode()}))

        text = b"".join(open(os.path.join("/usr/include", n), "rb").read()
                        for n in sorted(os.listdir("/usr/include")) if n.endswith(".h"))[:65536]
        rng = random.Random(7)
        noise = rng.randbytes(5000)
        cases = [("stored", "bvx-", noise), ("lzvn", "bvxn", text[:3000]), ("v2", "bvx2", text),
                 ("v2 zeros", "bvx2", bytes(20000)), ("empty", "bvx-", b"")]
        for name, kind, data in cases:
            enc = lzfse.compress(data)
            assert enc[:4].decode() == kind, (name, enc[:4])
            emit("lzfse " + name, 0x801, data, enc)
        v1 = to_v1(lzfse.compress(text))
        assert lzfse.decompress(v1) == text
        emit("lzfse bvx1", 0x801, text, v1)
        emit("hostile l-sum", 0x801, b"", to_v1(lzfse.compress(text), bump=0))
        emit("hostile literal-sum", 0x801, b"", to_v1(lzfse.compress(text), bump=104))
        for name, data in [("text", text), ("noise", noise)]:
            blocks, out = [data[i:i + 16384] for i in range(0, len(data), 16384)], b""
            for i, b in enumerate(blocks):
                if i % 2:
                    out += b"bv4-" + struct.pack("<I", len(b)) + b
                else:
                    e = lz4.block.compress(b, store_size=False)
                    out += b"bv41" + struct.pack("<II", len(b), len(e)) + e
            emit("lz4 " + name, 0x100, data, out + b"bv4$")
            emit("lz4 raw " + name, 0x100, data, lz4.block.compress(data, store_size=False))
            emit("xz " + name, 0x306, data, lzma.compress(data, format=lzma.FORMAT_XZ))
            c = zlib.compressobj(9, zlib.DEFLATED, -15)
            emit("deflate " + name, 0x205, data, c.compress(data) + c.flush())
            emit("zlib " + name, 0x205, data, zlib.compress(data))
        """#

    /// Runs the script with `python3` (the one `make deps` installs the references for).
    static func referenceVectors() throws -> [Vector] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try #require(
            process.terminationStatus != 3,
            "the Python references (lzfse, lz4) are missing: run `make deps` (\(errors))"
        )
        try #require(process.terminationStatus == 0, "vector script failed: \(errors)")
        return try String(decoding: data, as: UTF8.self).split(separator: "\n").map { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let original = try #require(Data(base64Encoded: object["original"] as? String ?? ""))
            let encoded = try #require(Data(base64Encoded: object["encoded"] as? String ?? ""))
            return Vector(
                name: object["name"] as? String ?? "?",
                algorithm: UInt32(object["algorithm"] as? Int ?? 0),
                original: Array(original),
                encoded: Array(encoded)
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
        #expect(vectors.count >= 16)
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
