import Foundation
import NIOPosix

/// The one way blocking work leaves async code.
///
/// Swift's cooperative pool has as many threads as cores (two here), and the server's request handlers and
/// the client's downloads share them: an `fsync`, an `unlink` of a large file, a file read or write, or
/// hashing on one of them stalls everything else. Short blocking calls go to NIO's thread pool; work that
/// blocks for long or waits on other tasks (an extraction fed by a download, a benchmark) gets a thread of
/// its own, so that it holds neither pool.
public enum BlockingIO {
    /// Runs short blocking work (file I/O, `fsync`, `unlink`, hashing a file) on NIO's thread pool.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or NIO's error if the pool has shut down.
    public static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(body)
    }

    /// Runs work that blocks for long, or waits on other tasks, on a thread of its own and awaits it.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public static func runOnThreadOfItsOwn<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            startThread { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Starts `body` on a new thread (1 MiB of stack) and returns at once: for a stage of a pipeline that
    /// hands its work over through a queue of its own.
    public static func startThread(_ body: @escaping @Sendable () -> Void) {
        let thread = Thread(block: body)
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Runs `body(index)` on `count` threads of their own at once, and waits for them all (blocking the
    /// calling thread, which must not be one of the pools').
    public static func runOnThreadsOfTheirOwn(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            startThread {
                body(index)
                group.leave()
            }
        }
        group.wait()
    }
}
