import Crypto
import Foundation
import SystemPackage

extension Sequence where Element == UInt8 {
    /// Lower-case hexadecimal, as digests are written in manifests and indexes.
    public var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in self {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// SHA-256 helpers shared by the server and the client.
public enum FileDigest {
    /// The lower-case hex SHA-256 of a file, read in 1 MiB chunks.
    /// - Parameter path: The file to hash.
    /// - Returns: 64 hex characters.
    /// - Throws: ``AssetPackFormatError`` with code `.io` when the file cannot be read.
    public static func sha256(of path: FilePath) throws -> String {
        do {
            let fd = try FileDescriptor.open(path, .readOnly)
            return try fd.closeAfter {
                var hasher = SHA256()
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
                defer { buffer.deallocate() }
                while true {
                    let count = try fd.read(into: buffer, retryOnInterrupt: true)
                    if count == 0 { break }
                    hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                }
                return hasher.finalize().hexString
            }
        } catch let errno as Errno {
            throw AssetPackFormatError.io("hash", path, errno)
        }
    }

    /// The lower-case hex SHA-256 of some bytes.
    public static func sha256(of bytes: some DataProtocol) -> String {
        SHA256.hash(data: bytes).hexString
    }
}
