import Foundation

/// Runs blocking work (an extraction fed by a download, benchmark reads) on a thread of its own and awaits
/// it. Such work waits on other tasks for long stretches, so it must hold neither a thread of the
/// concurrency pool nor one of NIO's thread pool, whose threads are as few as the cores.
func runOnThreadOfItsOwn<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            continuation.resume(with: Result { try body() })
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
}

/// Runs `body(index)` on `count` threads of their own at once, and waits for them all (blocking).
func runOnThreadsOfTheirOwn(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        let thread = Thread {
            body(index)
            group.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    group.wait()
}
