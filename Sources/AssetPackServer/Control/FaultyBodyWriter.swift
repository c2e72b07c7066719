import HTTPTypes
import Hummingbird
import NIOCore

/// Wraps a response body writer to misbehave: cut the connection after some bytes, flip a byte, pace the
/// bytes, or stop for a while halfway.
struct FaultyBodyWriter: ResponseBodyWriter {
    /// What the body does wrong; offsets count from the first byte this response sends.
    struct Plan: Sendable {
        var cutAfter: Int?
        var corruptAt: Int?
        var bytesPerSecond: Int?
        var stallAt: Int?
        var stallSeconds = 0
        var extraByte = false

        var isEmpty: Bool {
            cutAfter == nil && corruptAt == nil && bytesPerSecond == nil && stallAt == nil && !extraByte
        }
    }

    /// Thrown to drop the connection mid-body on purpose.
    struct InjectedReset: Error {}

    var base: any ResponseBodyWriter
    let plan: Plan
    var sent = 0

    mutating func write(_ buffer: ByteBuffer) async throws {
        var buffer = buffer
        // Pieces of at most 16 KiB, so that pacing, stalls and cuts land where asked.
        while buffer.readableBytes > 0 {
            var piece = buffer.readSlice(length: min(16 * 1024, buffer.readableBytes)) ?? ByteBuffer()
            let start = sent
            if let stallAt = plan.stallAt, start <= stallAt, stallAt < start + piece.readableBytes {
                try await Task.sleep(for: .seconds(plan.stallSeconds))
            }
            if let corruptAt = plan.corruptAt, start <= corruptAt, corruptAt < start + piece.readableBytes,
                let byte = piece.getInteger(at: piece.readerIndex + corruptAt - start, as: UInt8.self)
            {
                piece.setInteger(byte ^ 0xFF, at: piece.readerIndex + corruptAt - start)
            }
            if let cutAfter = plan.cutAfter, start + piece.readableBytes > cutAfter {
                let keep = cutAfter - start
                if keep > 0, let head = piece.getSlice(at: piece.readerIndex, length: keep) {
                    try await base.write(head)
                    sent += keep
                }
                throw InjectedReset()
            }
            try await base.write(piece)
            sent += piece.readableBytes
            if let rate = plan.bytesPerSecond {
                try await Task.sleep(for: .nanoseconds(Int64(piece.readableBytes) * 1_000_000_000 / Int64(rate)))
            }
        }
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        if plan.extraByte { try await base.write(ByteBuffer(bytes: [0x0A])) }
        try await base.finish(trailingHeaders)
    }
}
