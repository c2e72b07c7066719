import Foundation
import NIOPosix
import Synchronization

/// The one way blocking work leaves async code, with names that say where it runs.
///
/// Swift's cooperative pool has as many threads as cores (two here), and the server's request handlers and
/// the client's downloads share them: an `fsync`, an `unlink` of a large file, a file read or write, or
/// hashing on one of them stalls everything else. So:
/// - ``shortCall(_:)``: a short blocking call (open, stat, read or write a small file, `fsync` one file) on
///   NIO's thread pool (two threads here, shared with the server's file reads);
/// - ``longJob(_:)``: work that blocks for long or waits on other tasks (a pack or delta build, an
///   extraction, an install's flush and recursive delete, a benchmark) on a thread of its own, so that it
///   starves neither pool.
///
/// The blocking primitives (file I/O, hashing, archive work, locks) call ``checkOffPool(_:)``: with
/// `BA_CHECK_BLOCKING=1` in the environment, one of them reached on the cooperative pool or on a NIO event
/// loop stops the process with the call's name, which is how the end-to-end tests prove that no blocking
/// call runs there.
public enum BlockingIO {
    /// Runs a short blocking call (file I/O, `fsync`, `unlink`, hashing a small file) on NIO's thread pool.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or NIO's error if the pool has shut down.
    public static func shortCall<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(body)
    }

    /// Runs work that blocks for long, or waits on other tasks, on a thread of its own and awaits it.
    ///
    /// Cancelling the awaiting task is passed on to the thread: ``checkCancellation()`` throws
    /// `CancellationError` there from then on, so a loop that calls it between chunks (a pack build reading
    /// its files) stops at the next one and cleans up as after any error. Work that does not check runs to
    /// its end, and is awaited: nothing of a job outlives its caller.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public static func longJob<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let job = JobCancellation()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                startLongJob { continuation.resume(with: Result { try $currentJob.withValue(job) { try body() } }) }
            }
        } onCancel: {
            job.cancel()
        }
    }

    /// Whether the task awaiting the long job this runs in was cancelled (`false` outside a long job).
    public static var isCancelled: Bool { currentJob?.isCancelled ?? false }

    /// Throws `CancellationError` when the task awaiting the long job this runs in was cancelled: called
    /// between the chunks of long loops.
    public static func checkCancellation() throws {
        if isCancelled { throw CancellationError() }
    }

    /// The cancellation of the long job on this thread, bound for the duration of its body.
    @TaskLocal private static var currentJob: JobCancellation?

    /// Starts `body` on a new thread (1 MiB of stack) and returns at once: for a stage of a pipeline that
    /// hands its work over through a queue of its own.
    public static func startLongJob(_ body: @escaping @Sendable () -> Void) {
        let thread = Thread(block: body)
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Runs `body(index)` on `count` threads of their own at once, and waits for them all (blocking the
    /// calling thread, which must not be one of the pools').
    public static func longJobs(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        checkOffPool("BlockingIO.longJobs")
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            startLongJob {
                body(index)
                group.leave()
            }
        }
        group.wait()
    }

    /// Whether the calling code runs inside a Swift task off the main thread, that is on the cooperative pool
    /// (this code base sets no task executors): blocking there stalls every other task. A command line
    /// tool's main thread is its own, not the pool's.
    public static var isOnCooperativePool: Bool {
        !Thread.isMainThread && withUnsafeCurrentTask { $0 != nil }
    }

    /// Whether the calling code runs on one of NIO's event loops (the server's connections, the HTTP client's
    /// downloads): blocking there stalls every connection of that loop. NIO's thread pool (``shortCall(_:)``)
    /// is not one.
    public static var isOnEventLoop: Bool { MultiThreadedEventLoopGroup.currentEventLoop != nil }

    /// What ``checkOffPool(_:)`` does, from `BA_CHECK_BLOCKING`: `1` stops the process at the first blocking
    /// call on the pool; `report` prints each one's call stack once (raw symbols: pipe through
    /// `swift demangle`) and goes on, to find them all in one run.
    enum CheckMode { case off, stop, report }

    static let checkMode: CheckMode =
        switch ProcessInfo.processInfo.environment["BA_CHECK_BLOCKING"] {
        case "1": .stop
        case "report": .report
        default: .off
        }

    private static let reported = Mutex(Set<[String]>())

    /// Called by the blocking primitives: when checking, stops the process if `call` runs on the cooperative
    /// pool or on a NIO event loop, naming it and the thread (or reports it), so that a test run shows where
    /// blocking work escaped this layer.
    public static func checkOffPool(_ call: @autoclosure () -> String) {
        guard checkMode != .off else { return }
        let place: String
        if isOnCooperativePool {
            place = "Swift's cooperative pool"
        } else if isOnEventLoop {
            place = "a NIO event loop"
        } else {
            return
        }
        let message = "BA_CHECK_BLOCKING: blocking call \(call()) ran on \(place)\n"
        if checkMode == .report {
            let stack = Array(Thread.callStackSymbols.dropFirst(2).prefix(12))
            guard reported.withLock({ $0.insert(stack).inserted }) else { return }
            FileHandle.standardError.write(Data((message + stack.joined(separator: "\n") + "\n\n").utf8))
            return
        }
        FileHandle.standardError.write(Data(message.utf8))
        fatalError(message)
    }
}

/// Set once the task awaiting a long job is cancelled; read by the job's thread.
private final class JobCancellation: Sendable {
    private let cancelled = Atomic(false)

    var isCancelled: Bool { cancelled.load(ordering: .relaxed) }

    func cancel() { cancelled.store(true, ordering: .relaxed) }
}
