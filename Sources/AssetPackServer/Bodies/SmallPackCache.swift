import AssetPackFormat
import Foundation
import NIOCore
import Synchronization
import SystemPackage

/// Keeps the bytes of small packs in memory, by digest, so that serving one costs no file I/O: a
/// request for a 64 KiB pack would otherwise spend more time hopping to the thread pool to open, read and
/// close the file than sending it. Archives are immutable (a new version is a new file and digest), so an
/// entry never goes stale; the cache is emptied when it would pass its budget.
final class SmallPackCache: Sendable {
    /// Packs up to this size are kept.
    static let largestPack: Int64 = 1 << 20
    /// The most bytes kept at once.
    static let budget = 32 << 20

    private let entries = Mutex<(packs: [String: ByteBuffer], bytes: Int)>(([:], 0))

    /// The whole archive of `pack` if it is held already, else `nil` (the event loop's question: it must not
    /// read a file).
    func held(_ pack: ServedPack) -> ByteBuffer? {
        entries.withLock { $0.packs[pack.sha256] }
    }

    /// The whole archive of `pack`, read once.
    func bytes(of pack: ServedPack) async throws -> ByteBuffer {
        if let cached = held(pack) { return cached }
        let path = pack.archive
        let bytes = try await BlockingIO.shortCall {
            ByteBuffer(bytes: try Data(contentsOf: URL(fileURLWithPath: path.string)))
        }
        guard Int64(bytes.readableBytes) == pack.downloadSize else {
            throw AssetPackServerError(
                code: .state,
                message: "pack \(pack.id) at \(path) has \(bytes.readableBytes) bytes, not \(pack.downloadSize)"
            )
        }
        entries.withLock { entries in
            if entries.bytes + bytes.readableBytes > Self.budget { entries = ([:], 0) }
            entries.packs[pack.sha256] = bytes
            entries.bytes += bytes.readableBytes
        }
        return bytes
    }
}
